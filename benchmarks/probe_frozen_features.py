"""Linear probes on a frozen backbone's MNLI features: how much NLI a mask-only run starts with.

Paradigm (c) trains only a mask and the new head on the pre-trained weights, so it starts from
what a linear head can read off the frozen features. This script encodes MNLI pairs with the
frozen, unpruned backbone and trains a linear head (Adam, lr 1e-3, batch 32) on the pooler
output, the [CLS] state and the mean-pooled states, printing held-out accuracy (chance: 0.33).

    SRNET_DATA_DIR=../shared/data python benchmarks/probe_frozen_features.py [--model default]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from transformers import AutoModel

from srnet.models import load_tokenizer, resolve_model_name

LABELS = ("entailment", "neutral", "contradiction")


def encode(model_path: str, rows: list[dict], max_length: int) -> dict[str, torch.Tensor]:
    tokenizer = load_tokenizer(model_path)
    encoder = AutoModel.from_pretrained(model_path).eval()
    feats: dict[str, list[torch.Tensor]] = {"pooler": [], "cls": [], "mean": []}
    with torch.no_grad():
        for start in range(0, len(rows), 64):
            chunk = rows[start:start + 64]
            batch = tokenizer([r["premise"] for r in chunk], [r["hypothesis"] for r in chunk],
                              padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            out = encoder(**batch)
            mask = batch["attention_mask"].unsqueeze(-1).float()
            feats["pooler"].append(out.pooler_output)
            feats["cls"].append(out.last_hidden_state[:, 0])
            feats["mean"].append((out.last_hidden_state * mask).sum(1) / mask.sum(1))
    return {name: torch.cat(parts) for name, parts in feats.items()}


def probe(x: torch.Tensor, y: torch.Tensor, n_train: int, steps: int, seed: int) -> tuple[float, float]:
    """(training loss, held-out accuracy) of a linear head trained on the first ``n_train`` rows."""
    generator = torch.Generator().manual_seed(seed)
    head = torch.nn.Linear(x.shape[1], len(LABELS))
    torch.nn.init.normal_(head.weight, std=0.02, generator=generator)
    torch.nn.init.zeros_(head.bias)
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-3)
    for _ in range(steps):
        idx = torch.randint(0, n_train, (32,), generator=generator)
        loss = torch.nn.functional.cross_entropy(head(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        train_loss = torch.nn.functional.cross_entropy(head(x[:n_train]), y[:n_train]).item()
        accuracy = (head(x[n_train:]).argmax(1) == y[n_train:]).float().mean().item()
    return train_loss, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--n", type=int, default=1200, help="MNLI pairs read (3/4 train, 1/4 held out)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = Path(os.environ.get("SRNET_DATA_DIR", "../shared/data")) / "mnli" / "train.jsonl"
    with data.open(encoding="utf-8") as handle:
        rows = [row for row in map(json.loads, handle) if row["label"] in LABELS][: args.n]
    y = torch.tensor([LABELS.index(r["label"]) for r in rows])
    n_train = len(rows) * 3 // 4
    for name, x in encode(resolve_model_name(args.model), rows, args.max_length).items():
        loss, accuracy = probe(x, y, n_train, args.steps, args.seed)
        print(f"{name:7s} training loss {loss:.4f}  held-out accuracy {accuracy:.3f}  "
              f"({len(rows) - n_train} pairs, chance 0.33)")


if __name__ == "__main__":
    main()
