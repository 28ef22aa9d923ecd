"""Training: the learning-rate schedule, checkpoints and the trainer (each in its own module)."""
