"""Several processes (GPUs or machines) through torchrun + DistributedDataParallel.

`torchrun --nproc_per_node=8 -m annotated_transformer train --profile paper` starts 8 processes; each reads
RANK, WORLD_SIZE and LOCAL_RANK from its environment, and `init_distributed` joins them into one group
(nccl between GPUs, gloo on CPUs). Every rank computes the gradient of its share of each global batch and
DDP averages them, which the trainer compensates for so that N ranks take exactly the step one process
would take with N times the gradient accumulation.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .devices import resolve_device


@dataclass(frozen=True)
class DistributedContext:
    """Who this process is in the job (rank 0 of 1 when not distributed) and its device."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0 alone prints, logs and writes files."""
        return self.rank == 0


def init_distributed(device: str = "auto") -> DistributedContext:
    """Join the process group torchrun describes (or return a single-process context when not
    launched by it): nccl between GPUs, gloo on CPUs, each rank on `device` (`resolve_device`)."""
    # not launched by torchrun (which sets RANK and WORLD_SIZE), or alone
    if "RANK" not in os.environ or int(os.environ.get("WORLD_SIZE", "1")) == 1:
        return DistributedContext(device=resolve_device(device))
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    chosen = resolve_device(device, local_rank)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)
    backend = "nccl" if chosen.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(minutes=30))
    return DistributedContext(
        rank=rank, world_size=world_size, local_rank=local_rank, device=chosen
    )


def shutdown_distributed() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier(context: DistributedContext) -> None:
    if context.is_distributed:
        dist.barrier()


def all_reduce_sum(tensor: torch.Tensor, context: DistributedContext) -> torch.Tensor:
    """Sum over ranks, in place (a no-op in a single process)."""
    if context.is_distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def max_over_ranks(value: int, context: DistributedContext) -> int:
    """The largest of the ranks' values: one rank's Ctrl-C or time limit then stops every rank at the same step."""
    if not context.is_distributed:
        return value
    tensor = torch.tensor([float(value)], device=context.device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())
