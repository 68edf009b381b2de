"""Mask files: ``masks.safetensors`` with self-describing metadata, checked against a model on load.

Masks are plain ``dict[str, torch.Tensor]`` of 0/1 entries keyed by the qualified module name of
the masked weight (``PrunableWeight.name``), each with that weight's shape; structured masks are
keyed by group name (``MaskGroup.name``, e.g. ``bert.encoder.layer.0.heads``) with one gate per
head or neuron.  On disk they are stored as uint8; they load back as bool, bit for bit.  Beside
this file format: :mod:`.shapes` (what each key names in a model), :mod:`.fingerprint` (which
backbone and weights a mask belongs to) and :mod:`.counting` (zeros per mask, pooled).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from safetensors import SafetensorError, safe_open
from safetensors.torch import save
from torch import nn

from srnet.errors import SrnetError
from srnet.io import atomic_write
from srnet.models.structure import GRANULARITIES
from srnet.sparsity.counting import as_bool, pooled_sparsity, zero_counts
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.shapes import describe_model, mask_shapes

FORMAT_VERSION = "1"
MASKS_FILENAME = "masks.safetensors"


class MaskMetadata(BaseModel):
    """What the producer of a mask knows about it."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(description="Pruning method that decided the mask, e.g. 'mask_train'.")
    base_model: str = Field(description="Name or path of the model the mask was found on.")
    base_model_fingerprint: str = Field(
        description="model_fingerprint() of that model over the masked weights."
    )
    recipe_hash: str = Field(default="", description="Hash of the resolved recipe, if any.")
    granularity: str = Field(
        default="unstructured", description=f"Mask structure, one of {list(GRANULARITIES)}."
    )
    target_sparsity: float | None = Field(
        default=None, description="Sparsity the method aimed for (None when it has no target)."
    )
    trained_digest: str | None = Field(
        default=None,
        description="weights_digest() of the run's trained model with these masks baked in: the "
        "model they belong to (srnet export refuses another); None when not recorded.",
    )


class MaskFileMetadata(MaskMetadata):
    """Metadata of a saved mask file: the producer's fields plus sparsity measured at save time."""

    format_version: str = Field(description="Version of the srnet mask file format.")
    sparsity: float = Field(description="Fraction of zeros over all masked entries.")
    per_matrix: dict[str, float] = Field(description="Fraction of zeros of each masked matrix.")








def save_masks(
    path: str | Path, masks: Mapping[str, torch.Tensor], metadata: MaskMetadata
) -> MaskFileMetadata:
    """Write ``masks`` with ``metadata`` and the measured sparsity to ``path`` atomically.

    ``path`` is the file, or an existing folder to write ``masks.safetensors`` into.  Returns the
    metadata as written.
    """
    path = _mask_file(path)
    if not masks:
        raise SrnetError(f"{path}: no masks to save")
    tensors = {
        name: as_bool(name, m).to(torch.uint8).cpu().contiguous() for name, m in masks.items()
    }
    counts = zero_counts(tensors)
    written = MaskFileMetadata(
        **metadata.model_dump(include=set(MaskMetadata.model_fields)),
        format_version=FORMAT_VERSION,
        sparsity=pooled_sparsity(counts.values()),
        per_matrix={name: z / n for name, (z, n) in counts.items()},
    )
    data = canonical_safetensors(save(tensors, metadata=_to_header(written)))
    atomic_write(path, lambda tmp: tmp.write_bytes(data))
    return written


def canonical_safetensors(data: bytes) -> bytes:
    """The same safetensors file with its JSON header's keys sorted.

    safetensors writes metadata in hash-map order, which changes from run to run; sorting makes
    identical masks and metadata give byte-identical files.  Tensor offsets are unchanged.
    """
    size = int.from_bytes(data[:8], "little")
    header = json.dumps(json.loads(data[8 : 8 + size]), sort_keys=True, separators=(",", ":"))
    encoded = header.encode()
    encoded += b" " * (-len(encoded) % 8)
    return len(encoded).to_bytes(8, "little") + encoded + data[8 + size :]


def load_masks(
    path: str | Path, model: nn.Module | None = None
) -> tuple[dict[str, torch.Tensor], MaskFileMetadata]:
    """Read a mask file as bool tensors and its metadata.

    With ``model``, check that every key names a weight of the model with the mask's shape and
    that the model's fingerprint is the one the mask was made for.
    """
    path = _mask_file(path)
    if not path.is_file():
        raise SrnetError(f"mask file not found: {path}")
    try:
        with safe_open(str(path), framework="pt") as handle:
            header = handle.metadata() or {}
            names = handle.keys()
            raw = {name: handle.get_tensor(name) for name in names}
    except SafetensorError as exc:
        raise SrnetError(f"{path}: not a readable safetensors file ({exc})") from exc
    metadata = _from_header(header, path)
    if set(metadata.per_matrix) != set(raw):
        raise SrnetError(f"{path}: the tensors and the 'per_matrix' metadata name different masks")
    masks: dict[str, torch.Tensor] = {}
    for name in metadata.per_matrix:  # the order the masks were saved in
        tensor = raw[name]
        if tensor.dtype != torch.uint8 or bool((tensor > 1).any()):
            raise SrnetError(f"{path}: mask '{name}' is not a 0/1 uint8 tensor ({tensor.dtype})")
        masks[name] = tensor.to(torch.bool)
    if model is not None:
        check_fit(model, masks, metadata, path)
    return masks, metadata


def check_fit(
    model: nn.Module, masks: Mapping[str, torch.Tensor], metadata: MaskFileMetadata, path: str | Path
) -> None:
    """Every mask names a weight (or group) of ``model`` with its shape, and the model is the
    backbone the file was made for; else one line naming the file."""
    try:
        shapes = mask_shapes(model, masks)
    except SrnetError as exc:
        raise SrnetError(f"{path}: {exc}") from exc
    found = model_fingerprint(model, masks)  # another backbone: name both before any shape
    if found != metadata.base_model_fingerprint:
        raise SrnetError(
            f"{path}: masks were made for '{metadata.base_model}' (fingerprint "
            f"{metadata.base_model_fingerprint}) but this is a {describe_model(model)} "
            f"(fingerprint {found})"
        )
    for name, mask in masks.items():
        if shapes[name] != tuple(mask.shape):
            what = "group" if len(shapes[name]) == 1 else "weight"
            raise SrnetError(
                f"{path}: mask '{name}' has shape {tuple(mask.shape)} but the model's {what} has "
                f"shape {shapes[name]}"
            )




def _mask_file(path: str | Path) -> Path:
    path = Path(path)
    return path / MASKS_FILENAME if path.is_dir() else path


def _to_header(metadata: MaskFileMetadata) -> dict[str, str]:
    """All-string safetensors metadata: fields typed ``str`` as they are, everything else
    (optional strings included) as JSON."""
    fields = MaskFileMetadata.model_fields
    return {
        "srnet_masks": metadata.format_version,
        **{
            key: value if fields[key].annotation is str else json.dumps(value)
            for key, value in metadata.model_dump(exclude={"format_version"}).items()
        },
    }


def _from_header(header: Mapping[str, str], path: Path) -> MaskFileMetadata:
    version = header.get("srnet_masks")
    if version is None:
        raise SrnetError(f"{path}: not an srnet mask file (no 'srnet_masks' metadata)")
    if version != FORMAT_VERSION:
        raise SrnetError(
            f"{path}: mask file format version {version!r} is not supported "
            f"(this srnet reads {FORMAT_VERSION!r})"
        )
    fields: dict[str, Any] = {"format_version": version}
    for key, field in MaskFileMetadata.model_fields.items():
        if key == "format_version" or key not in header:
            continue
        text = header[key]
        try:
            fields[key] = text if field.annotation is str else json.loads(text)
        except json.JSONDecodeError as exc:
            raise SrnetError(f"{path}: metadata field '{key}' is not valid JSON: {text!r}") from exc
    try:
        return MaskFileMetadata(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SrnetError(f"{path}: bad metadata field '{where}': {first['msg']}") from exc
