"""bf16 vs fp32: step time of dense fine-tuning, mask training and IMP, and demo accuracy.

Times, in interleaved rounds after a warm-up, the optimizer steps of ``bench_mask_step``'s
variants (dense, mask_train, imp at 50%; default backbone, batch 32 x 64, random token ids) in
fp32 and under Accelerate's bf16 mixed precision (``Accelerator(mixed_precision="bf16")``
wraps the model's forward in autocast, as ``training.mixed_precision: bf16`` does), and prints
ms/step and the fp32 / bf16 ratio.  With ``--demo`` it then runs (or reuses) the synthetic demo
with 3 seeds in fp32 (``--set training.mixed_precision=no``) and with its default (``auto``: bf16
where native) and
prints each configuration's mean ± std ID and challenge accuracy side by side.

Run: ``python benchmarks/bench_precision.py [--steps N --rounds R] [--demo --output-dir DIR]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from bench_mask_step import Variant
from srnet.console import quiet_libraries
from srnet.training.precision import make_accelerator, native_bf16

KINDS = ("dense", "mask_train", "imp")
PRECISIONS = {"fp32": "no", "bf16": "bf16"}
DEMO_OVERRIDES = {"fp32": ["training.mixed_precision=no"], "bf16": []}
"""The demo in fp32, and with its default (auto: bf16 where native, which the timing line reports)."""


def time_steps(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    batch = {
        "input_ids": torch.randint(1000, 20000, (32, 64)),
        "attention_mask": torch.ones(32, 64, dtype=torch.long),
        "labels": torch.randint(0, 3, (32,)),
    }
    total = args.warmup + args.steps * args.rounds
    accelerator = make_accelerator("bf16", 1)
    variants = {}
    for kind in KINDS:
        for name in PRECISIONS:
            variant = Variant(kind, batch, total, 10, torch.device("cpu"))
            if name == "bf16":
                variant.model = accelerator.prepare_model(variant.model)
            variants[kind, name] = variant
    for variant in variants.values():
        for _ in range(args.warmup):
            variant.step()
    keys = list(variants)
    times: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    for r in range(args.rounds):
        for key in keys[r % len(keys):] + keys[: r % len(keys)]:
            start = time.perf_counter()
            for _ in range(args.steps):
                variants[key].step()
            times[key].append((time.perf_counter() - start) / args.steps * 1000)
    print(f"batch 32 x 64, {args.threads} threads, {args.rounds} interleaved rounds x {args.steps} steps"
          f" (native bf16: {native_bf16()})")
    print(f"{'variant':<12}{'fp32 ms':>10}{'bf16 ms':>10}{'fp32/bf16':>11}")
    for kind in KINDS:
        fp32, bf16 = (statistics.median(times[kind, name]) for name in PRECISIONS)
        print(f"{kind:<12}{fp32:>10.1f}{bf16:>10.1f}{fp32 / bf16:>11.2f}")


def compare_demos(output_dir: Path) -> None:
    from srnet import api
    from srnet.reporting.runs import find_runs, load_run
    from srnet.reporting.stats import cohorts, group_runs

    rows: dict[str, dict[str, str]] = {}
    for name, overrides in DEMO_OVERRIDES.items():
        folder = output_dir / name / "demo_seeds3"
        if not (folder / "summary.txt").is_file():  # a finished demo is read as it is
            api.demo(None, output_dir / name, overrides, seeds=3, resume=(folder / "sweep.yaml").is_file(),
                     progress=lambda line: None)
        runs = [load_run(p) for p in find_runs([folder]) if folder / "report" not in p.parents]
        for group in group_runs(cohorts(runs)[0]):
            for column, stat in group.stats.items():
                if column.startswith(("ID ", "synthetic_challenge", "gap ")):
                    rows.setdefault(f"{group.name} {column}", {})[name] = f"{stat.mean:.4f} ± {stat.std:.4f}"
    print("\nsynthetic demo, 3 seeds (mean ± std)")
    print(f"{'configuration / column':<58}{'fp32':>18}{'bf16':>18}")
    for key, cells in rows.items():
        print(f"{key:<58}{cells.get('fp32', '-'):>18}{cells.get('bf16', '-'):>18}")


def main() -> None:
    quiet_libraries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per variant")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--demo", action="store_true", help="also compare the 3-seed demo in both precisions")
    parser.add_argument("--output-dir", type=Path, default=Path("runs/bench_precision"))
    args = parser.parse_args()
    time_steps(args)
    if args.demo:
        compare_demos(args.output_dir)


if __name__ == "__main__":
    main()
