"""The graphed step (--cuda-graphs) computes the eager step's loss and gradients; on a CPU it is the
eager module itself, on a GPU each batch shape's forward and backward are captured once and replayed."""

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
            "leave out one of --cuda-graphs and --compile",
        ),
        (
            dict(cuda_graphs=True, length_buckets=True, compile="auto"),
            "leave out one of --cuda-graphs and --compile",
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


def test_a_graphed_run_on_a_cpu_trains_as_the_bucketed_eager_run(tmp_path):
    # On a CPU --cuda-graphs runs the same module eagerly: every target row projected, where the
    # eager CPU step projects the real ones only; the losses agree to float rounding.
    profile = tiny_profile(length_buckets=True, max_steps=8, dropout=0.0)
    eager = make_trainer(profile, tmp_path / "eager")
    graphed = make_trainer(profile.replace(cuda_graphs=True), tmp_path / "graphed")
    assert eager.graphed is None and isinstance(graphed.graphed, GraphedLosses)
    a, b = eager.train(), graphed.train()
    assert a.progress.step == b.progress.step == 8
    for (name, x), (_, y) in zip(
        eager.model.state_dict().items(), graphed.model.state_dict().items()
    ):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5, msg=name)


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
def test_on_a_gpu_a_graphed_run_trains_as_the_eager_run(tmp_path):
    profile = tiny_profile(length_buckets=True, max_steps=10, dropout=0.0)
    runs = {}
    for name, p in (("eager", profile), ("graphed", profile.replace(cuda_graphs=True))):
        torch.manual_seed(0)
        model = Transformer(p.model_config(), VOCAB, VOCAB).cuda()
        settings, train = p.train_settings(), copy_pairs(120, 0)
        context = DistributedContext(device=torch.device("cuda"))
        trainer = Trainer(
            model,
            FakeTokenizer(),
            train,
            copy_pairs(20, 1),
            settings,
            tmp_path / name,
            execution=choose_execution(model, settings, train, context),
            context=context,
            show_progress=False,
        )
        trainer.train()
        runs[name] = trainer
    assert runs["graphed"].graphed.shapes  # it captured
    for (name, x), (_, y) in zip(
        runs["eager"].model.state_dict().items(),
        runs["graphed"].model.state_dict().items(),
    ):
        torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-4, msg=name)
