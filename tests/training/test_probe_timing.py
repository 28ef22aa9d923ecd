"""The probes' timing loop: a warm-up call each, then an order that turns every round, and the run's
random generators left as they were."""

import torch

from annotated_transformer.training.probe_timing import time_alternately


def test_variants_warm_up_then_alternate_and_leave_the_generators_alone():
    calls = []

    def variant(name):
        return lambda: calls.append(name) or torch.rand(3)

    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    first, median = time_alternately({"a": variant("a"), "b": variant("b")}, rounds=3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert set(first) == set(median) == {"a", "b"}
    assert all(v >= 0 for v in [*first.values(), *median.values()])
    assert torch.equal(torch.rand(4), expected)  # the variants' draws were put back
