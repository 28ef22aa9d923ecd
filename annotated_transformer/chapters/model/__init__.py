"""The model's parts and their sizes (chapter 02, sections 3.1 and 3.3-3.5 of the paper): what
the chapter counts and checks of the feed-forward share, the shared embedding matrix, the
positional encoding's shifts and the parameters of Table 3's models, as one results record
(`record`) and the sentences that read it (`sentences`)."""
