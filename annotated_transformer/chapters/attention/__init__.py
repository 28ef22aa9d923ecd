"""Scaled dot-product and multi-head attention (chapter 01, section 3.2 of the paper): what the
chapter measures of q·k's variance, the softmax's saturation, additive scores, the cost of h
heads and the timings of its two projections and two code paths, as one results record
(`record`) and the sentences that read it (`sentences`)."""
