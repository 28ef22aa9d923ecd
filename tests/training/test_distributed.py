"""Two processes with DDP (gloo, CPU) take the same steps as one process with gradient accumulation."""

import json
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from annotated_transformer import Transformer
from annotated_transformer.runtime.distributed import (
    DistributedContext,
    init_distributed,
    shutdown_distributed,
)
from annotated_transformer.training.execution import choose_execution
from annotated_transformer.training.trainer import Trainer
from tests.support.training import VOCAB, FakeTokenizer, copy_pairs, tiny_profile

STEPS = 6


def profile_for_world(world_size: int):
    # The same global batch either way: 2 micro-batches per step, split over ranks or accumulated.
    # Dropout is off, because two processes draw different dropout masks than one process does.
    return tiny_profile(
        accumulation=2 // world_size,
        max_steps=STEPS,
        dropout=0.0,
        log_every=1,
        eval_every=3,
        save_every_steps=None,
    )


def train_one(out_dir, context=None):
    profile = profile_for_world(context.world_size if context else 1)
    torch.manual_seed(0)
    model = Transformer(profile.model_config(), VOCAB, VOCAB)
    train, settings = copy_pairs(120, 0), profile.train_settings()
    context = context or DistributedContext()
    trainer = Trainer(
        model,
        FakeTokenizer(),
        train,
        copy_pairs(20, 1),
        settings,
        out_dir,
        context,
        execution=choose_execution(model, settings, train, context),
        show_progress=False,
    )
    result = trainer.train()
    return trainer, result


def _rank_main(rank: int, world_size: int, port: int, out_dir: str):
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    context = init_distributed("cpu")
    try:
        assert context.world_size == world_size and context.rank == rank
        trainer, result = train_one(out_dir, context)
        torch.save(
            {"params": trainer.model.state_dict(), "valid": result.valid},
            os.path.join(out_dir, f"rank{rank}.pt"),
        )
    finally:
        shutdown_distributed()


def without_key_bias(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """The tensor minus its key-projection bias, if it has one.

    A key bias adds the same number to every score of a query, which softmax ignores: its gradient is zero
    up to rounding, and Adam (eps 1e-9) turns rounding noise of either summation order into full-size
    steps. Those entries are pure noise in both runs, so they are left out of the comparison.
    """
    d = tensor.numel() // 3 if name.endswith("qkv_proj.bias") else tensor.numel() // 2
    if name.endswith("qkv_proj.bias"):  # [q | k | v]
        return torch.cat([tensor[:d], tensor[2 * d :]])
    if name.endswith("kv_proj.bias"):  # [k | v]
        return tensor[d:]
    return tensor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_losses(out_dir):
    records = [json.loads(line) for line in open(os.path.join(out_dir, "metrics.jsonl"))]
    return [r["loss"] for r in records if r["kind"] == "train"]


@pytest.mark.slow  # three training processes
def test_two_gloo_ranks_match_one_process_with_accumulation(tmp_path):
    if not torch.distributed.is_available():
        pytest.skip("this torch build has no torch.distributed")
    single_dir, ddp_dir = tmp_path / "single", tmp_path / "ddp"
    trainer, single = train_one(single_dir)
    ddp_dir.mkdir()
    mp.spawn(_rank_main, args=(2, free_port(), str(ddp_dir)), nprocs=2, join=True)

    rank0 = torch.load(ddp_dir / "rank0.pt", weights_only=True)
    rank1 = torch.load(ddp_dir / "rank1.pt", weights_only=True)
    # float32 sums in a different order: equal to ~1e-6, far below what one step of lr 1e-3 moves.
    for name, expected in trainer.model.state_dict().items():
        got, want = (
            without_key_bias(name, rank0["params"][name]),
            without_key_bias(name, expected),
        )
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=f"{name}")
        assert torch.equal(rank0["params"][name], rank1["params"][name]), (
            "DDP ranks must hold identical weights"
        )
    assert train_losses(ddp_dir) == pytest.approx(train_losses(single_dir), rel=1e-5)
    assert len(train_losses(ddp_dir)) == STEPS
    assert rank0["valid"]["loss"] == pytest.approx(single.valid["loss"], rel=1e-5)
    assert (
        rank0["valid"]["tokens"] == single.valid["tokens"]
    )  # the ranks shared the validation set
