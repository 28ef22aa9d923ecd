"""Chapter 04's own experiments beside the profile's run: the copy task (`copy_task`), why the
paper needs a warm-up, post-norm against pre-norm (`warmup`), the chapter's tables (`tables`) and
run folders (`runs`), its sentences and closing section (`sentences`), and its results
record (`record`)."""
