"""Figures 3-5 (chapter 08): the attention pictures and an explorer drawn from a checkpoint
(`figures`), and the per-head scores that test Figures 3 and 4 on captions (`head_scores`)."""
