"""The graphed step (--cuda-graphs) computes the eager step's loss and gradients; on a CPU it is the
eager module itself, on a GPU each batch shape's forward and backward are captured once and replayed."""

import dataclasses

import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training.compile_probe import eager_loss
from annotated_transformer.training.execution import choose_execution
from annotated_transformer.training.graphed_step import BatchLoss, GraphedLosses
from annotated_transformer.training.settings import TrainSettings
from annotated_transformer.training.teacher_forcing import batch_loss
from annotated_transformer.training.trainer import Trainer
from tests.support.gpu import on_a_gpu
from tests.support.training import (
    VOCAB,
    FakeTokenizer,
    copy_pairs,
    make_trainer,
    tiny_profile,
)


def batches(shapes, seed=0):
    """Copy-task batches (src, tgt) of the given (rows, source width, target width), some rows
    padded, as collate_pairs lays them out (bos ... eos pad)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for rows, s, t in shapes:
        src = torch.randint(4, VOCAB, (rows, s), generator=g)
        tgt = torch.randint(4, VOCAB, (rows, t), generator=g)
        tgt[:, 0] = 1
        for i in range(rows):
            n = int(torch.randint(2, t + 1, (1,), generator=g))
            tgt[i, n - 1], tgt[i, n:] = 2, 0
            m = int(torch.randint(1, s + 1, (1,), generator=g))
            src[i, m - 1], src[i, m:] = 2, 0
        out.append((src, tgt))
    return out


def tiny_model(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    profile = tiny_profile(dropout=dropout)
    return Transformer(profile.model_config(), VOCAB, VOCAB).train()


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


# ------------------------------------------------------------------------------------- the settings
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(cuda_graphs="yes"), "cuda_graphs must be true or false"),
        (dict(cuda_graphs=True), "add --length-buckets"),
        (
            dict(cuda_graphs=True, length_buckets=True, compile=True),
            "pass --no-compile",
        ),
        (
            dict(cuda_graphs=True, length_buckets=True, compile="auto"),
            "pass --no-compile",
        ),
    ],
)
def test_graphs_need_buckets_and_an_eager_step(fields, message):
    with pytest.raises(ValueError, match=message):
        TrainSettings(max_steps=1, **fields)
    assert TrainSettings(max_steps=1, cuda_graphs=True, length_buckets=True).cuda_graphs


def test_graphs_refuse_ddp(tmp_path):
    profile = tiny_profile(length_buckets=True, cuda_graphs=True)
    model = Transformer(profile.model_config(), VOCAB, VOCAB)
    settings, train = profile.train_settings(), copy_pairs(40, 0)
    two = DistributedContext(rank=0, world_size=2)
    with pytest.raises(ValueError, match="leave --cuda-graphs out under torchrun"):
        Trainer(
            model,
            FakeTokenizer(),
            train,
            None,
            settings,
            tmp_path,
            execution=choose_execution(model, settings, train, DistributedContext()),
            context=two,
            show_progress=False,
        )


# ----------------------------------------------------------------------------------- on any device
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_batch_loss_module_is_the_eager_forward_and_loss(precision):
    model = tiny_model()
    ((src, tgt),) = batches([(5, 7, 9)])
    module = BatchLoss(model, eager_loss(), smoothing=0.1, pad_id=0, precision=precision)
    loss, nll, tokens = module(src, tgt)
    loss.backward()
    mine = grads(model)
    model.zero_grad(set_to_none=True)
    ref = batch_loss(
        model, src, tgt, smoothing=0.1, pad_id=0, precision=precision,
        real_rows_only=False, loss_fn=eager_loss(),
    )  # fmt: skip
    ref.loss.backward()
    assert torch.equal(loss, ref.loss) and torch.equal(nll, ref.nll)
    assert int(tokens) == int(ref.tokens) == int((tgt[:, 1:] != 0).sum())
    assert all(torch.equal(a, b) for a, b in zip(mine, grads(model)))


def test_on_a_cpu_graphed_losses_run_the_module_eagerly():
    model = tiny_model()
    graphed = GraphedLosses(
        model, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32"
    )
    assert not graphed.graphed
    for src, tgt in batches([(5, 7, 9), (3, 12, 12)]):
        parts = graphed(src, tgt)
        ref = BatchLoss(model, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32")(
            src, tgt
        )
        assert torch.equal(parts.loss, ref[0]) and torch.equal(parts.nll, ref[1])
    assert graphed.shapes == []  # nothing captured


def shapes_by_step(trainer):
    """Record the (src, tgt) shapes of every micro-batch, step by step."""
    steps, collate, take = [], trainer._micro_batch, trainer.train_step

    def recorded_collate(indices):
        src, tgt = collate(indices)
        steps[-1].append((tuple(src.shape), tuple(tgt.shape)))
        return src, tgt

    def recorded_step(batch):
        steps.append([])
        return take(batch)

    trainer._micro_batch, trainer.train_step = recorded_collate, recorded_step
    return steps


def test_a_graphed_run_on_a_cpu_trains_as_the_bucketed_eager_run(tmp_path):
    # On a CPU --cuda-graphs runs the same module eagerly. It projects every target row, as the
    # eager step does on a GPU; the CPU's eager step, told to do the same, is then the same run
    # bit for bit (gradients added into zeros, Adam alike). Weights after Adam are compared
    # exactly because approximately would not do: a key's bias has a gradient of pure rounding,
    # which Adam scales up to a full step.
    profile = tiny_profile(length_buckets=True, max_steps=8, dropout=0.0)
    eager = make_trainer(profile, tmp_path / "eager")
    eager.execution = dataclasses.replace(eager.execution, real_rows_only=False)
    graphed = make_trainer(profile.replace(cuda_graphs=True), tmp_path / "graphed")
    assert eager.graphed is None and isinstance(graphed.graphed, GraphedLosses)
    steps = shapes_by_step(graphed)
    a, b = eager.train(), graphed.train()
    assert a.progress.step == b.progress.step == 8
    # The plan the GPU test below trains on too: some step accumulates two micro-batches of one
    # shape (the case keep_gradients exists for), and more than one shape is met.
    assert any(len(set(step)) < len(step) for step in steps)
    assert len({shape for step in steps for shape in step}) > 1
    for (name, x), (_, y) in zip(
        eager.model.state_dict().items(), graphed.model.state_dict().items()
    ):
        assert torch.equal(x, y), name


class _GradientInOneBuffer(torch.autograd.Function):
    """What a graph's backward does: every call writes the gradient into the same tensor and
    returns it (detached)."""

    buffer = torch.zeros(1, 3)

    @staticmethod
    def forward(ctx, param, value):
        ctx.value = value
        return (param * value).sum()

    @staticmethod
    def backward(ctx, grad):
        _GradientInOneBuffer.buffer.copy_(ctx.value * grad)
        return _GradientInOneBuffer.buffer.detach(), None


@pytest.mark.parametrize("kept", [False, True])
def test_kept_gradients_add_every_micro_batch_where_backward_reuses_its_memory(kept):
    holder = torch.nn.Linear(3, 1, bias=False)
    param = holder.weight
    if kept:
        GraphedLosses(
            holder, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32"
        ).keep_gradients()
    first, second = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([10.0, 20.0, 30.0])
    for value in (first, second):
        _GradientInOneBuffer.apply(param, value).backward()
    # autograd takes the returned tensor itself as the gradient when there is none yet, so the
    # second micro-batch overwrites the first's before adding itself
    expected = first + second if kept else 2 * second
    assert torch.equal(param.grad.flatten(), expected)


def test_a_graphed_trainer_zeroes_its_gradients_and_keeps_them(tmp_path, caplog):
    profile = tiny_profile(length_buckets=True, cuda_graphs=True, max_steps=2)
    with caplog.at_level("WARNING"):
        trainer = make_trainer(profile, tmp_path)
    assert "--cuda-graphs on cpu: no CUDA graphs there" in caplog.text
    trainer.train()
    assert all(
        p.grad is not None and not p.grad.any() for p in trainer.model.parameters()
    )


class _Recorded:
    """A stand-in for a shape's graphs: the eager module, counting its calls."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def __call__(self, src, tgt):
        self.calls += 1
        return self.module(src, tgt)


def test_each_shape_is_captured_once_and_eval_and_shapes_past_the_budget_run_eagerly(
    caplog,
):
    # the capture itself needs a GPU; what decides when to capture is tested with a stand-in
    model = tiny_model()
    graphed = GraphedLosses(
        model, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32"
    )
    graphed.graphed, graphed.max_shapes = True, 2
    captured = []

    def capture(src, tgt):
        captured.append(_Recorded(graphed._eager))
        return captured[-1]

    graphed._capture = capture
    a, b, c = batches([(5, 8, 12), (3, 12, 16), (2, 16, 24)])
    with caplog.at_level("WARNING"):
        for src, tgt in (a, b, a, c, b, c):
            graphed(src, tgt)
    assert graphed.shapes == [(tuple(x.shape), tuple(y.shape)) for x, y in (a, b)]
    assert [r.calls for r in captured] == [2, 2]  # shape c: past the budget, eager
    assert caplog.text.count("as many as the gradient budget allows") == 1
    model.eval()
    graphed(*a)
    assert [r.calls for r in captured] == [2, 2]  # the graphs hold training's dropout
    assert all(p.grad is not None for p in model.parameters())  # kept by every call


def test_the_gradient_budget_counts_copies_of_the_parameters():
    model = tiny_model()
    size = sum(p.numel() * 4 for p in model.parameters())
    for budget, shapes in ((size * 3, 3), (size * 3 - 1, 2), (1, 1)):
        graphed = GraphedLosses(
            model, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32",
            gradient_budget_bytes=budget,
        )  # fmt: skip
        assert graphed.max_shapes == shapes


# ------------------------------------------------------------------------------------------ on a GPU
@on_a_gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_on_a_gpu_replayed_graphs_give_the_eager_loss_and_gradients(precision):
    # two shapes, in an order that returns to each: the graphs share one memory pool
    model = tiny_model().cuda()
    shapes = [(5, 8, 12), (3, 12, 16), (5, 8, 12), (3, 12, 16), (5, 8, 12)]
    data = [(s.cuda(), t.cuda()) for s, t in batches(shapes, seed=1)]
    graphed = GraphedLosses(
        model, eager_loss(), smoothing=0.1, pad_id=0, precision=precision
    )
    eager = BatchLoss(model, eager_loss(), smoothing=0.1, pad_id=0, precision=precision)
    assert graphed.graphed
    for src, tgt in data:
        model.zero_grad(set_to_none=True)
        parts = graphed(src, tgt)
        (parts.loss * 0.5).backward()
        got = grads(model), parts.loss.detach().clone(), parts.nll.clone()
        model.zero_grad(set_to_none=True)
        loss, nll, _ = eager(src, tgt)
        (loss * 0.5).backward()
        torch.testing.assert_close(got[1], loss.detach(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got[2], nll, rtol=1e-5, atol=1e-5)
        for a, b in zip(got[0], grads(model)):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert len(graphed.shapes) == 2


@on_a_gpu
def test_on_a_gpu_replays_draw_fresh_dropout_and_capture_leaves_the_generator_as_it_was():
    model = tiny_model(dropout=0.3).cuda()
    ((src, tgt),) = [(s.cuda(), t.cuda()) for s, t in batches([(5, 8, 12)], seed=2)]
    graphed = GraphedLosses(
        model, eager_loss(), smoothing=0.1, pad_id=0, precision="fp32"
    )
    before = torch.cuda.get_rng_state()
    graphed._step_for(src, tgt)  # captures, replays nothing
    assert graphed.shapes and torch.equal(torch.cuda.get_rng_state(), before)
    first = graphed(src, tgt).loss.detach().clone()
    second = graphed(src, tgt).loss.detach().clone()
    assert not torch.equal(first, second)  # new dropout masks at every replay
    assert not torch.equal(
        torch.cuda.get_rng_state(), before
    )  # drawn from the run's stream
    model.zero_grad(set_to_none=True)


def _cuda_trainer(profile, folder, on_step=None):
    return make_trainer(profile, folder, on_step=on_step, device="cuda")


@on_a_gpu
def test_on_a_gpu_an_interrupted_graphed_run_resumes_with_the_same_dropout(tmp_path):
    # dropout on: the resumed run captures its shapes again, and must draw what the first drew
    import os
    import signal

    # (compared by the steps' losses: other dropout masks move a loss by far more than 1e-4, where
    # a GPU's atomics may leave last bits apart between any two runs)
    profile = tiny_profile(length_buckets=True, cuda_graphs=True, max_steps=10)
    straight = _cuda_trainer(profile, tmp_path / "straight")
    straight_losses = _logging_losses(straight)
    straight.train()

    def interrupt_at_step_5(trainer):
        if trainer.progress.step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    _cuda_trainer(profile, tmp_path / "stopped", on_step=interrupt_at_step_5).train()
    resumed = _cuda_trainer(profile, tmp_path / "stopped")
    resumed.resume_from(tmp_path / "stopped" / "last.pt")
    resumed_losses = _logging_losses(resumed)
    resumed.train()
    assert len(straight_losses) == 10 and len(resumed_losses) == 5
    torch.testing.assert_close(resumed_losses, straight_losses[5:], rtol=1e-4, atol=0)


def _logging_losses(trainer) -> list[float]:
    """The summed loss of every step `trainer` takes from now on, in a list it fills."""
    losses, take = [], trainer.train_step

    def step(batch):
        stats = take(batch)
        losses.append(float(stats.values[0]))
        return stats

    trainer.train_step = step
    return losses


@on_a_gpu
def test_on_a_gpu_a_graphed_run_trains_as_the_eager_run(tmp_path):
    # the plan accumulates two micro-batches of one shape in a step (asserted on the CPU above)
    profile = tiny_profile(length_buckets=True, max_steps=10, dropout=0.0)
    # Compared by the loss of every step, not by the weights: a key's bias has a gradient of
    # pure rounding, which Adam scales to a full step, and does not change what the model computes.
    losses = {}
    for name, p in (("eager", profile), ("graphed", profile.replace(cuda_graphs=True))):
        trainer = _cuda_trainer(p, tmp_path / name)
        losses[name] = _logging_losses(trainer)
        trainer.train()
        if name == "graphed":
            assert trainer.graphed.graphed and len(trainer.graphed.shapes) > 1
    assert len(losses["eager"]) == 10
    torch.testing.assert_close(losses["graphed"], losses["eager"], rtol=1e-4, atol=0)
