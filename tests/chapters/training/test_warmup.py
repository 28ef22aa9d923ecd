"""The warm-up experiment's summary of its runs: the final loss is a mean over the last tenth of
the steps, with the standard error of that mean."""

import math

import pandas as pd
import pytest

from annotated_transformer.chapters.training import warmup


def test_final_losses_give_the_mean_and_its_standard_error():
    log = pd.DataFrame(
        {"run": ["a"] * 20, "step": range(1, 21), "nll": [5.0] * 10 + [4.0, 6.0] * 5}
    )
    final = warmup.final_losses(log, 20)
    assert final.iloc[0, 1] == pytest.approx(5.0)
    # the last tenth: 4.0 and 6.0, standard deviation sqrt(2), over sqrt(2) values
    assert final["standard error"].iloc[0] == pytest.approx(math.sqrt(2) / math.sqrt(2))
