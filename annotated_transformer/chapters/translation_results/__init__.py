"""Table 2 and section 6.1 applied to our runs (chapter 05): which snapshots to average and what
training cost (`table2`), the chapter's tables (`tables`) and sentences (`sentences`), and how the
`cpu` and `gpu` recipes were chosen on validation (`recipe_choice`)."""
