"""Tiny end-to-end training that must learn: the copy task through the package's own pieces."""

import pytest

from annotated_transformer.experiments.training_studies.copy_task import train_copy_task

pytestmark = pytest.mark.slow  # 1,600 training steps: a minute and a half on 2 idle cores


def test_copy_task_learns_to_copy():
    result = train_copy_task("copy", steps=1600, verbose=False)
    # 1,000 held-out sequences of 1-10 symbols; a model that had not learned would score ~0.
    assert result["accuracy"] >= 0.99, result["accuracy"]
    losses = [h["loss"] for h in result["history"]]
    assert losses[-1] < losses[0]
