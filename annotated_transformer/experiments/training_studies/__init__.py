"""Chapter 04's own experiments beside the profile's run: the copy task (`copy_task`), why the
paper needs a warm-up, post-norm against pre-norm (`warmup`), and the chapter's tables and
sentences about section 5 (`write_up`)."""
