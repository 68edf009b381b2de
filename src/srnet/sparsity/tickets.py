"""Tickets from learned mask scores (Robust Tickets), random tickets, and the score files they read.

A learned-mask run (``l0``, ``mask_train``) writes ``mask_scores.safetensors``: one float32 tensor
per masked weight, or per layer's heads/neurons for a structured run (hard-concrete keep
probabilities, or mask-training scores), with the mask metadata.  :func:`draw_ticket` ranks all
of them *globally* and keeps the top ``1 - s``, so the total number of zeros (weights, or
heads/neurons) is exactly ``round(s * numel)``; a structured ticket keeps its granularity.
:func:`random_like` draws a random mask with the same number of zeros in every matrix as a given
mask.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save
from torch import Tensor

from srnet.errors import SrnetError
from srnet.io import atomic_write, refuse_existing
from srnet.models.structure import GRANULARITIES
from srnet.sparsity.mask_io import (
    MaskFileMetadata,
    MaskMetadata,
    canonical_safetensors,
    load_masks,
    save_masks,
)
from srnet.sparsity.threshold import rank

SCORES_FILENAME = "mask_scores.safetensors"
SCORES_FORMAT = "1"


def save_scores(path: str | Path, scores: Mapping[str, Tensor], metadata: MaskMetadata) -> Path:
    """Write float32 ``scores`` keyed by module (or group) name, with ``metadata``, atomically."""
    tensors = {name: s.detach().float().cpu().contiguous() for name, s in scores.items()}
    header = {"srnet_scores": SCORES_FORMAT, "metadata": metadata.model_dump_json(),
              "order": json.dumps(list(tensors))}
    data = canonical_safetensors(save(tensors, metadata=header))  # same scores, same bytes
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def load_scores(path: str | Path) -> tuple[dict[str, Tensor], MaskMetadata]:
    """Read a score file (or ``RUN/mask_scores.safetensors``) and its metadata."""
    path = Path(path)
    if path.is_dir():
        path = path / SCORES_FILENAME
    if not path.is_file():
        raise SrnetError(f"mask score file not found: {path} (learned-mask runs, l0 or mask_train, write it)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            header = handle.metadata() or {}
            if header.get("srnet_scores") != SCORES_FORMAT:
                raise SrnetError(f"{path}: not an srnet mask score file (format {SCORES_FORMAT})")
            scores = {name: handle.get_tensor(name) for name in json.loads(header["order"])}
    except SafetensorError as exc:
        raise SrnetError(f"{path}: not a readable safetensors file ({exc})") from exc
    return scores, MaskMetadata.model_validate_json(header["metadata"])


def draw_ticket(scores: Mapping[str, Tensor], sparsity: float) -> dict[str, Tensor]:
    """Boolean masks keeping the globally highest ``1 - sparsity`` of all scores (exact count)."""
    names = list(scores)
    kept = rank([scores[n] for n in names], sparsity, "global")
    return {name: keep for name, (keep, _) in zip(names, kept, strict=True)}


def random_like(masks: Mapping[str, Tensor], seed: int = 0) -> dict[str, Tensor]:
    """Random boolean masks with, in each matrix, as many zeros as the mask of the same name."""
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, Tensor] = {}
    for name, mask in masks.items():
        zeros = int((mask == 0).sum())
        keep = torch.ones(mask.numel(), dtype=torch.bool)
        keep[torch.randperm(mask.numel(), generator=generator)[:zeros]] = False
        out[name] = keep.view(mask.shape)
    return out


def write_ticket(source: str | Path, sparsity: float, out: str | Path, *,
                 overwrite: bool = False) -> MaskFileMetadata:
    """Draw the global ticket at ``sparsity`` from a score file (or run directory); save it to ``out``."""
    refuse_existing(out, overwrite)
    scores, meta = load_scores(source)
    ticket = draw_ticket(scores, sparsity)
    granularity = meta.granularity if meta.granularity in GRANULARITIES else "unstructured"  # old: scope
    drawn = meta.model_copy(update={"method": f"ticket:{meta.method}", "target_sparsity": sparsity,
                                    "granularity": granularity})
    return save_masks(out, ticket, drawn)


def write_random_like(masks: str | Path, out: str | Path, seed: int = 0, *,
                      overwrite: bool = False) -> MaskFileMetadata:
    """Save a random mask with the per-matrix sparsity of the mask file (or run directory) ``masks``."""
    refuse_existing(out, overwrite)
    given, meta = load_masks(masks)
    base = MaskMetadata(**meta.model_dump(include=set(MaskMetadata.model_fields)))
    drawn = base.model_copy(update={"method": f"random_like:{meta.method}"})
    return save_masks(out, random_like(given, seed), drawn)
