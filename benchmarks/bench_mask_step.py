"""Cost of a mask-training / IMP step relative to a dense fine-tuning step.

On the default backbone (batch 32, length 64, random token ids, 2 threads) this times, in
interleaved rounds after a warm-up, the optimizer steps of:

- dense: AdamW on all weights;
- mask_train: the ``mask_train`` method at 50% (scores + STE, weights frozen);
- imp: the ``imp`` method at 50% (weights trained under a fixed mask parametrization);
- mask_train_plain / imp_plain (``--plain``): the same without the fused mask step, through
  ``parametrize``'s per-matrix path (the step before issue 11);

and prints ms/step (median over rounds) and the ratio to dense, plus the cost of one exact
re-rank of all masks.  Run: ``python benchmarks/bench_mask_step.py [--steps N --rounds R]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from srnet.console import quiet_libraries
from srnet.losses import build_loss
from srnet.models import load_classifier
from srnet.pruning import PruningConfig, build_method
from srnet.training.objectives import build_objective, train_step

LR = 2e-5


class Variant:
    """One model + optimizer running the steps of ``kind`` (dense, mask_train, imp; ``_plain``:
    without the fused mask step)."""

    def __init__(
        self, kind: str, batch: dict, total_steps: int, rerank_every: int, device: torch.device,
        model: str = "default",
    ) -> None:
        self.model = load_classifier(model, ("entailment", "neutral", "contradiction")).to(device)
        self.model.train()
        self.batch = batch
        method = kind.removesuffix("_plain")
        params = {"mask_train": {"rerank_every": rerank_every},
                  "imp": {"prune_fraction": 0.5, "every": 1 / total_steps}}  # imp: 50% at step 1
        cfg = PruningConfig(method=method, sparsity=0.0 if kind == "dense" else 0.5,
                            params=params.get(method, {}))
        self.method = build_method(cfg, seed=0)
        self.method.prepare(self.model, total_steps)
        if kind.endswith("_plain") and self.method.fused is not None:
            self.method.fused.remove()
        self.optimizer = torch.optim.AdamW(self.method.param_groups(self.model, LR), lr=LR)
        self.objective, self.loss = build_objective("standard"), build_loss("ce")
        self.steps_done = 0

    def step(self) -> None:
        """The trainer's step (srnet.training.objectives.train_step), then the method's on_step."""
        train_step(
            self.model, self.batch, self.objective, self.loss, self.optimizer, penalty=self.method.penalty
        )
        self.steps_done += 1
        self.method.on_step(self.steps_done)


def main() -> None:
    quiet_libraries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per variant")
    parser.add_argument("--rerank-every", type=int, default=10, help="mask_train re-rank cadence")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="e.g. cuda (default: cpu)")
    parser.add_argument("--plain", action="store_true", help="also time the unfused (parametrize) step")
    parser.add_argument("--model", default="default", help="backbone: 'default', a hub id or a path")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    batch = {
        "input_ids": torch.randint(1000, 20000, (32, 64), device=device),
        "attention_mask": torch.ones(32, 64, dtype=torch.long, device=device),
        "labels": torch.randint(0, 3, (32,), device=device),
    }
    total = args.warmup + args.steps * args.rounds
    kinds = ["dense", "mask_train", "imp"] + (["mask_train_plain", "imp_plain"] if args.plain else [])
    variants = {k: Variant(k, batch, total, args.rerank_every, device, args.model) for k in kinds}
    for k in kinds:
        for _ in range(args.warmup):
            variants[k].step()
    sync()

    times: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(args.rounds):
        for k in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
            start = time.perf_counter()
            for _ in range(args.steps):
                variants[k].step()
            sync()
            times[k].append((time.perf_counter() - start) / args.steps * 1000)

    method = variants["mask_train"].method
    start = time.perf_counter()
    method.freeze()
    sync()
    rerank_ms = (time.perf_counter() - start) * 1000

    dense = statistics.median(times["dense"])
    where = f"{args.threads} threads" if device.type == "cpu" else str(device)
    print(f"batch 32 x 64, {where}, {args.rounds} rounds x {args.steps} steps")
    print(f"{'variant':<18}{'ms/step':>10}{'x dense':>10}   per-round ms")
    for k in kinds:
        ms = statistics.median(times[k])
        rounds = " ".join(f"{t:.0f}" for t in times[k])
        print(f"{k:<18}{ms:>10.1f}{ms / dense:>10.3f}   {rounds}")
    report = method.sparsity_report()
    print(
        f"mask_train re-rank every {args.rerank_every} steps; one exact re-rank of "
        f"{len(method.targets)} matrices: {rerank_ms:.0f} ms; sparsity {report['overall']:.4f}"
    )


if __name__ == "__main__":
    main()
