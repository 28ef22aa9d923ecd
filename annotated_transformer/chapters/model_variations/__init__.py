"""Table 3 (chapter 06): each row's change on a scaled-down base (`rows`), a resumable extended
run of every row and seed (`extended`), the statistics behind the verdicts (`statistics`), the
findings in words and the extended run as the chapter reads it (`verdicts`), the committed
calibration of its warm-up and peak (`calibration`), and the chapter's tables (`tables`), sentences
(`sentences`) and results record (`record`)."""
