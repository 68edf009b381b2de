"""Fingerprints that tell models apart: :func:`model_fingerprint` the backbone a mask was made
for (its architecture and the masked weights' shapes), :func:`weights_digest` the exact weights
it belongs to."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from srnet.sparsity.shapes import mask_shapes

# Config keys that describe how a model is loaded or run, not which model it is.
_RUNTIME_CONFIG_KEYS = frozenset({
    "architectures", "dtype", "torch_dtype", "transformers_version", "id2label", "label2id",
    "num_labels", "problem_type", "finetuning_task", "output_attentions", "output_hidden_states",
    "return_dict", "use_cache", "chunk_size_feed_forward",
})


def model_fingerprint(model: nn.Module, names: Iterable[str]) -> str:
    """A short hash of the model's config and the shapes of the named weights.

    Load-time settings (paths, versions, dtype, label names, dropout) are left out, so the same
    backbone loaded from another path, with another head size or another dtype, has the same
    fingerprint; another architecture or size does not.
    """
    config = getattr(model, "config", None)
    if config is None:
        described: dict[str, Any] = {"class": type(model).__name__}
    else:
        described = {
            key: value
            for key, value in config.to_dict().items()
            if not key.startswith("_") and key not in _RUNTIME_CONFIG_KEYS and "dropout" not in key
        }
    shapes = {name: list(shape) for name, shape in sorted(mask_shapes(model, names).items())}
    blob = json.dumps({"config": described, "weights": shapes}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def weights_digest(model: nn.Module) -> str:
    """A short hash of every parameter's name and fp32 values: equal only for the same weights
    (a classifier head, fine-tuned or fresh, included)."""
    digest = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        digest.update(name.encode())
        digest.update(param.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]
