"""Table 1 of the paper (chapter 03): per-layer cost, sequential operations and maximum path
length of self-attention, recurrence and convolution, measured on this machine (`table1`); the
chapter's results record (`record`) and its sentences and closing section (`sentences`)."""
