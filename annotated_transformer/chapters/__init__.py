"""The chapters' experiments, one sub-package per reproduced artefact of the paper:

- `complexity`: Table 1 (chapter 03), measured;
- `training_studies`: chapter 04's own experiments (the copy task, the warm-up) and its write-up;
- `translation`: Table 2 and section 6.1 applied to our runs (chapter 05), and how the recipes
  were chosen on validation;
- `table3`: Table 3's rows (chapter 06), their resumable extended run, the statistics of the
  verdicts, and the chapter's tables and sentences;
- `parsing`: Table 4's constituency parser (chapter 07), its learning curves and extended run;
- `attention`: Figures 3-5 (chapter 08) and the per-head scores behind Figures 3 and 4.

Each package imports the layers below (`model`, `data`, `training`, `evaluation`, `profiles`,
`pipeline`) and the shared `wording` (how numbers are written in sentences and tables), never
another artefact's package (tests/test_layout.py). Everything trains through `training.fit`, the
same door as the pipeline.
"""
