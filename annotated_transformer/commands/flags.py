"""The flag of `train` that sets each profile field, and of each model field it sets directly.

`commands/train.py` makes its options from these tables, and a message about a field names its
flag. adam_betas and the splits have none.
"""

from __future__ import annotations

FLAGS: dict[str, str] = {
    "corpus": "--corpus",
    "src_lang": "--src-lang",
    "tgt_lang": "--tgt-lang",
    "max_train_pairs": "--max-train-pairs",
    "max_valid_pairs": "--max-valid-pairs",
    "max_sentence_words": "--max-sentence-words",
    "vocab_size": "--vocab-size",
    "preset": "--preset",
    "batch_tokens": "--batch-tokens",
    "accumulation": "--accumulation",
    "peak_lr": "--lr",
    "warmup_steps": "--warmup",
    "adam_eps": "--adam-eps",
    "clip_norm": "--clip-norm",
    "max_steps": "--max-steps",
    "max_epochs": "--max-epochs",
    "time_budget_minutes": "--minutes",
    "budget_clock": "--budget-clock",
    "precision": "--precision",
    "compile": "--compile",
    "compile_mode": "--compile-mode",
    "length_buckets": "--length-buckets",
    "cuda_graphs": "--cuda-graphs",
    "threads": "--threads",
    "seed": "--seed",
    "log_every": "--log-every",
    "eval_every": "--eval-every",
    "save_every_steps": "--save-every-steps",
    "save_every_minutes": "--save-every-minutes",
    "keep_snapshots": "--keep-snapshots",
    "average_last": "--average-last",
    "beam_size": "--beam",
    "length_penalty_alpha": "--alpha",
    "max_len_a": "--max-len-a",
    "max_len_b": "--max-len-b",
    "eval_batch_tokens": "--eval-batch-tokens",
    "eval_max_sentences": "--eval-max-sentences",
}
# The model's fields that `train` sets directly (into `model_overrides`), with their flags.
MODEL_FLAGS: dict[str, str] = {
    "n_layers": "--layers",
    "d_model": "--d-model",
    "d_ff": "--d-ff",
    "n_heads": "--heads",
    "dropout": "--dropout",
    "label_smoothing": "--label-smoothing",
}


def flag_of(field: str) -> str | None:
    """The flag that sets `field` (a profile or model field), or None."""
    return FLAGS.get(field) or MODEL_FLAGS.get(field)
