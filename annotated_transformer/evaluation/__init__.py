"""Measuring a translation model: sacreBLEU and tokenized BLEU (`scoring`), the results files every
number of the book is read from (`results`), and the paper's own numbers to compare with (`paper`)."""
