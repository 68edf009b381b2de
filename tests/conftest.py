"""Shared fixtures: tiny random models that load like real checkpoints, and the real-data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SRNET_DATA_DIR", REPO.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

torch.set_num_threads(1)  # tiny models: one thread is fastest and keeps parallel CI quiet


def synthetic_split(split: str, n: int) -> dict:
    """A DataSpec dict of the synthetic NLI task (seed 0); the ``challenge`` split is scored as HANS."""
    spec = {"format": "synthetic", "synthetic": {"split": split, "n": n, "seed": 0}}
    return spec | ({"challenge": "hans"} if split == "challenge" else {})


def merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` merged in, section by section (nested dicts merged, not replaced)."""
    out = dict(base)
    for key, value in extra.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merge(out[key], value) if nested else value
    return out


def tiny_recipe(root, model, name: str, **extra) -> dict:
    """A 6-step synthetic-NLI recipe on ``model`` into ``root/name`` (dev and challenge splits,
    evaluation every 3 steps); ``extra`` sections are merged in."""
    base = {
        "name": name, "task": "synthetic_nli", "seed": 0, "output_dir": str(root),
        "model": {"name": str(model), "max_length": 48},
        "data": {"train": synthetic_split("train", 48), "dev": synthetic_split("dev", 30),
                 "challenge": [synthetic_split("challenge", 24)]},
        "training": {"max_steps": 6, "batch_size": 8, "eval_every": 3, "lr": 1e-3},
    }
    return merge(base, extra)


def save_tiny_model(path: Path, model_type: str = "bert", num_labels: int = 3, **config) -> Path:
    """Save a tiny random ``model_type`` classifier with the bundled tokenizer to ``path``
    (``config``: further config fields)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    from srnet.models import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    sizes = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    if model_type == "distilbert":
        sizes = dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64)
    if model_type == "electra":
        sizes["embedding_size"] = 16
    config = AutoConfig.for_model(
        model_type, vocab_size=tokenizer.vocab_size, num_labels=num_labels,
        max_position_embeddings=128, **sizes, **config,
    )
    import torch

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random 3-way BERT classifier on disk (loads with ``from_pretrained``)."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; tests that use it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA
