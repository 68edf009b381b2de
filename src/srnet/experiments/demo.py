"""The built-in demo recipe: the default backbone on the synthetic controlled-bias task, or on
the real MNLI sample + HANS when a data folder is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from srnet.errors import SrnetError


def demo_recipe(data_dir: str | Path | None = None, output_dir: str = "runs") -> dict[str, Any]:
    """A recipe dict that fine-tunes the default backbone and evaluates ID vs OOD."""
    training = {"epochs": 3, "batch_size": 32, "lr": 5e-5, "eval_every": 50, "log_every": 10}
    if data_dir is None:
        def synthetic(split: str, n: int) -> dict[str, Any]:
            return {"format": "synthetic", "name": f"synthetic_{split}",
                    "synthetic": {"split": split, "n": n, "bias_strength": 0.9, "seed": 0},
                    **({"challenge": "hans"} if split == "challenge" else {})}

        return {
            "name": "demo", "task": "synthetic_nli", "output_dir": output_dir,
            "model": {"name": "default", "max_length": 64},
            "data": {"train": synthetic("train", 2000), "dev": synthetic("dev", 500),
                     "challenge": [synthetic("challenge", 1000)]},
            "training": training,
        }
    root = Path(data_dir)
    needed = [root / "mnli/train.jsonl", root / "mnli/dev_matched.jsonl", root / "hans/train.jsonl"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise SrnetError(f"demo --data-dir {root}: missing {missing[0]}")
    return {
        "name": "demo_mnli", "task": "nli", "output_dir": output_dir,
        "model": {"name": "default", "max_length": 128},
        "data": {
            "train": {"path": str(needed[0]), "n": 8000, "seed": 0},
            "dev": {"path": str(needed[1]), "n": 2000, "seed": 0, "name": "mnli_dev_matched"},
            "challenge": [{"path": str(needed[2]), "n": 3000, "seed": 0, "challenge": "hans",
                           "name": "hans"}],
        },
        "training": {**training, "epochs": 1, "eval_every": 100},
    }
