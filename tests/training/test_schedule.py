"""Section 5.3's optimizer and schedule: a linear warm-up to the peak at warmup_steps, then inverse
square-root decay; `peak_lr` rescales the curve so its top is that rate."""

import pytest
import torch

from annotated_transformer.training.schedule import (
    NoamSchedule,
    build_optimizer,
    noam_lr,
    peak_lr,
    schedule_factor,
)
from annotated_transformer.training.settings import TrainSettings
from tests.support.training import tiny_profile


def rates(schedule: NoamSchedule, optimizer, steps: int) -> list[float]:
    """The rate each of the first `steps` updates uses (update k reads it before `schedule.step()`)."""
    seen = []
    for _ in range(steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return seen


def one_parameter_adam(groups: int = 1) -> torch.optim.Adam:
    params = [{"params": [torch.nn.Parameter(torch.zeros(1))]} for _ in range(groups)]
    return torch.optim.Adam(params, lr=1.0)


def test_schedule_equals_formula_and_resumes_from_state_dict():
    d_model, warmup = 512, 400
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([param], lr=1.0)
    schedule = NoamSchedule(optimizer, d_model, warmup)
    seen = {}
    for step in range(1, 801):
        seen[step] = optimizer.param_groups[0][
            "lr"
        ]  # the rate used by update number `step`
        optimizer.step()
        schedule.step()
    for step in (1, 100, 399, 400, 401, 800):
        by_hand = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert seen[step] == pytest.approx(by_hand, rel=1e-12)
    assert max(seen.values()) == pytest.approx(peak_lr(d_model, warmup), rel=1e-12)
    assert peak_lr(512, 4000) == pytest.approx(7.0e-4, rel=2e-3)  # the paper's base model

    resumed_optimizer = torch.optim.Adam([param], lr=1.0)
    resumed = NoamSchedule(resumed_optimizer, d_model, warmup)
    resumed.load_state_dict(schedule.state_dict())
    resumed_optimizer.param_groups[0]["lr"] = resumed.get_last_lr()[0]
    assert resumed_optimizer.param_groups[0]["lr"] == pytest.approx(
        noam_lr(801, d_model, warmup), rel=1e-12
    )


def test_profile_peak_lr_sets_the_top_of_the_curve():
    profile = tiny_profile(peak_lr=2e-3, warmup_steps=400)
    factor = schedule_factor(profile, 256)
    assert noam_lr(400, 256, 400, factor) == pytest.approx(2e-3)
    assert schedule_factor(tiny_profile(peak_lr=None), 256) == 1.0


@pytest.mark.parametrize("warmup", [1, 2, 7, 50])
@pytest.mark.parametrize("top", [1e-4, 3e-3])
def test_the_peak_is_at_warmup_steps_and_equals_peak_lr(warmup, top):
    settings = TrainSettings(max_steps=1, peak_lr=top, warmup_steps=warmup)
    optimizer = one_parameter_adam()
    schedule = NoamSchedule(optimizer, 64, warmup, schedule_factor(settings, d_model=64))
    seen = rates(schedule, optimizer, 4 * warmup + 3)
    assert seen.index(max(seen)) + 1 == warmup
    assert max(seen) == pytest.approx(top, rel=1e-12)


@pytest.mark.parametrize("d_model,warmup", [(512, 4000), (32, 5), (1024, 16000)])
def test_without_peak_lr_the_curve_is_the_papers(d_model, warmup):
    factor = schedule_factor(
        TrainSettings(max_steps=1, warmup_steps=warmup), d_model=d_model
    )
    assert factor == 1.0
    for step in (1, warmup // 2 + 1, warmup, warmup + 1, 3 * warmup):
        paper = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert noam_lr(step, d_model, warmup, factor) == pytest.approx(paper, rel=1e-12)


def test_warm_up_is_linear_and_decay_halves_the_rate_at_four_times_the_step():
    d_model, warmup = 64, 10
    top = peak_lr(d_model, warmup)
    for step in range(1, warmup + 1):
        assert noam_lr(step, d_model, warmup) == pytest.approx(top * step / warmup)
    assert noam_lr(4 * warmup, d_model, warmup) == pytest.approx(top / 2)


def test_factor_scales_the_whole_curve():
    for step in (1, 5, 10, 40):
        assert noam_lr(step, 64, 10, factor=3.0) == pytest.approx(
            3.0 * noam_lr(step, 64, 10)
        )


def test_every_parameter_group_gets_the_same_rate():
    optimizer = one_parameter_adam(groups=3)
    schedule = NoamSchedule(optimizer, 64, 4)
    rates(schedule, optimizer, 5)
    assert len({group["lr"] for group in optimizer.param_groups}) == 1
    assert optimizer.param_groups[0]["lr"] == pytest.approx(noam_lr(6, 64, 4))


def test_steps_count_from_one_and_warmup_must_be_positive():
    with pytest.raises(ValueError, match="counts steps from 1, got 0"):
        noam_lr(0, 512)
    with pytest.raises(ValueError, match="warmup_steps must be >= 1, got 0"):
        NoamSchedule(one_parameter_adam(), 512, warmup_steps=0)


def test_adam_takes_the_settings_betas_and_eps_and_only_trainable_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    model[0].weight.requires_grad_(False)
    settings = TrainSettings(max_steps=1, adam_betas=(0.8, 0.95), adam_eps=1e-6)
    optimizer = build_optimizer(model, settings, torch.device("cpu"))
    (group,) = optimizer.param_groups
    assert group["betas"] == (0.8, 0.95) and group["eps"] == 1e-6
    assert group["fused"] is True
    # the base rate is 1.0, so the schedule's value is the rate itself
    assert group["lr"] == 1.0
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert {id(p) for p in group["params"]} == trainable
    assert id(model[0].weight) not in trainable


def test_the_papers_adam_by_default():
    settings = TrainSettings(max_steps=1)
    optimizer = build_optimizer(torch.nn.Linear(2, 2), settings, torch.device("cpu"))
    (group,) = optimizer.param_groups
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
