"""Seconds to compile the `gpu` profile's training step (model and loss compiled, as `train --compile`
runs it) over batches whose rows and length change, with the batch-shape marks of
`teacher_forcing.batch_loss` and without them (Dynamo then compiles a static graph first and a
dynamic one at the second shape). One variant per process, compile caches off:

    TORCH_LOGS=recompiles python scripts/gpu/compile_shapes.py OUT marked|unmarked [cuda|cpu] [STEPS]

Prints the graphs compiled and the cumulative seconds after chosen steps, and writes that line to
OUT/compile_shapes_<variant>.txt (the recompiles, in the log, say which shape caused each graph).
"""

import sys
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

from annotated_transformer.model.config import preset
from annotated_transformer.model.transformer import Transformer
from annotated_transformer.profiles import get_profile
from annotated_transformer.training import teacher_forcing
from annotated_transformer.training.compile_probe import compiled_step_parts

if not 3 <= len(sys.argv) <= 5:
    raise SystemExit("usage: compile_shapes.py OUT marked|unmarked [cuda|cpu] [STEPS]")
out, variant = Path(sys.argv[1]), sys.argv[2]
device = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 6
if variant == "unmarked":
    teacher_forcing._batch_shape_varies = lambda *tensors, **kw: None
elif variant != "marked":
    raise SystemExit("compile_shapes.py: the variant is 'marked' or 'unmarked'")
torch.manual_seed(0)
config = preset("base", **get_profile("gpu").model_overrides)
model = Transformer(config, 8000, 8000).to(device)
forward, loss_fn = compiled_step_parts(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
rng = torch.Generator().manual_seed(1)
precision = "bf16" if device.type == "cuda" else "fp32"
seconds = []
for step in range(steps):
    rows = int(torch.randint(100, 300, (1,), generator=rng))
    length = int(torch.randint(8, 40, (1,), generator=rng))
    src = torch.randint(4, 8000, (rows, length), generator=rng).to(device)
    tgt = torch.randint(4, 8000, (rows, length + 2), generator=rng).to(device)
    started = time.perf_counter()
    parts = teacher_forcing.batch_loss(
        forward,
        src,
        tgt,
        smoothing=0.1,
        pad_id=0,
        precision=precision,
        real_rows_only=False,
        loss_fn=loss_fn,
    )
    parts.loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds.append(time.perf_counter() - started)
cumulative = [round(sum(seconds[: i + 1]), 1) for i in range(len(seconds))]
marks = [i for i in (1, 2, 3, 5, 10, 20, 50, 100, 200, 400) if i <= steps]
line = (
    f"{variant} on {device.type}: graphs {counters['stats']['unique_graphs']}; seconds after step "
    + ", ".join(f"{i}: {cumulative[i - 1]}" for i in marks)
    + f"; last 10 steps {1000 * sum(seconds[-10:]) / 10:.1f} ms each"
)
print(line, flush=True)
out.mkdir(parents=True, exist_ok=True)
(out / f"compile_shapes_{variant}.txt").write_text(line + "\n", encoding="utf-8")
