"""The introduction's own figures: Table 2's systems by cost and quality, and the profiles side by
side (the summary table it reads from every chapter's record is `book.summary`)."""
