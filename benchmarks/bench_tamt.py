"""TAMT step cost on the default backbone: seconds per step and peak memory per objective.

Configurations (each in its own process, so each peak is its own):

- ``dense-mlm``: every weight trains with the ``mlm`` objective (the reference step);
- ``tamt-mlm``, ``tamt-kd``, ``tamt-mlm+kd``: ``mask_train`` scores on the encoder matrices and
  the word embeddings (50%), weights frozen, the fresh MLM head trained with ``mlm``.

Peak memory is the process's peak resident set on CPU (``ru_maxrss``) or the peak CUDA
allocation on a GPU.  The distillation teacher shares the frozen weights, so ``tamt-kd`` needs
no second copy of the model (the size of one copy is printed for comparison).

    python benchmarks/bench_tamt.py --steps 10 --batch 8 --block 128
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from srnet.console import quiet_libraries
from srnet.models import default_device, load_masked_lm, load_tokenizer
from srnet.pruning import PruningConfig, build_method
from srnet.training.objectives import build_objective, train_step

MODES = {
    "dense-mlm": ("dense", "mlm"),
    "tamt-mlm": ("mask_train", "mlm"),
    "tamt-kd": ("mask_train", "distill"),
    "tamt-mlm+kd": ("mask_train", "mlm+distill"),
}
ROLES = ["query", "key", "value", "attn_out", "ffn_in", "ffn_out", "embeddings"]


def measure(mode: str, steps: int, batch: int, block: int) -> dict:
    """Seconds per training step (after two warm-up steps) and peak memory of one configuration."""
    method_name, objective_name = MODES[mode]
    device = default_device()
    tokenizer = load_tokenizer("default")
    model, fresh = load_masked_lm("default")
    model.to(device).train()
    cfg = PruningConfig(method=method_name, sparsity=0.0 if method_name == "dense" else 0.5, roles=ROLES)
    method = build_method(cfg, seed=0)
    method.prepare(model, 10_000)
    objective = build_objective(objective_name)
    objective.trains_head(fresh)
    objective.setup(model, tokenizer)
    optimizer = torch.optim.AdamW(method.param_groups(model, 2e-5), lr=2e-5)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30000, (batch, block), generator=generator)
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    data = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device)}
    torch.manual_seed(0)
    for step in range(1, steps + 3):
        if step == 3:
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
        train_step(model, data, objective, None, optimizer)
        method.on_step(step)
    if device.type == "cuda":
        torch.cuda.synchronize()
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    weights_mb = sum(p.numel() * p.element_size() for p in model.base_model.parameters()) / 2**20
    return {"mode": mode, "s_per_step": (time.perf_counter() - started) / steps, "peak_mb": peak_mb,
            "one_weight_copy_mb": weights_mb, "device": device.type}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--block", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--one", choices=list(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    quiet_libraries()
    if args.one:
        print(json.dumps(measure(args.one, args.steps, args.batch, args.block)))
        return
    rows = []
    for mode in MODES:
        command = [sys.executable, __file__, "--one", mode, "--steps", str(args.steps), "--batch",
                   str(args.batch), "--block", str(args.block), "--threads", str(args.threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    dense = rows[0]["s_per_step"]
    print(f"default backbone, batch {args.batch} x {args.block} tokens, {args.steps} steps, "
          f"{rows[0]['device']}; one copy of the encoder weights: {rows[0]['one_weight_copy_mb']:.0f} MB")
    print(f"{'configuration':<14}{'s/step':>9}{'x dense MLM':>13}{'peak MB':>10}")
    for row in rows:
        print(f"{row['mode']:<14}{row['s_per_step']:>9.3f}{row['s_per_step'] / dense:>13.2f}"
              f"{row['peak_mb']:>10.0f}")


if __name__ == "__main__":
    main()
