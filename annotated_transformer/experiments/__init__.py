"""The chapters' experiments, one module each: the copy task, Table 1 (`complexity`), section 6.1
(`translation_report`), Table 3 (`variations`), Table 4 (`parsing`) and Figures 3-5
(`attention_figures`). They train through `training.fit`, the same door as the pipeline."""
