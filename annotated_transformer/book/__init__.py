"""The book: find and execute chapters (`runner`), stage and build the site (`site`), keep the
.py/.ipynb pairs in step (`sync`); the chart helpers (`viz`) and the introduction's summary table
(`summary`) that the chapters import."""
