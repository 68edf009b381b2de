"""Model structure: the prunable weights of an encoder by role, and its head/neuron groups.

The prunable weights of an encoder are its per-layer attention query/key/value/output and
feed-forward in/out projections, the classification head and (optionally) the word
embeddings.  They are located by module-name patterns per architecture family (the tables
below), so masks attach to unmodified ``transformers`` models.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile

import torch
from torch import nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError

ENCODER_ROLES = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")
"""The roles every transformer block has (a fused role stands for some of them)."""
FUSED_ROLES = {"qkv": ("query", "key", "value")}
"""The encoder roles a fused matrix holds: ModernBERT's ``Wqkv`` (one mask over the whole fused
matrix, so its sparsity is local to the fused matrix, not to each of Q, K and V)."""
FAMILY_ROLES = {**FUSED_ROLES, "pos_key": ("key",), "pos_query": ("query",)}
"""Roles of some families only, each masked wherever all the encoder roles it stands for are asked
for (so recipes name the six encoder roles): the fused ``qkv`` and DeBERTa-v2/v3's relative-position
key/query projections (``pos_key_proj``/``pos_query_proj``, ``share_att_key: false``)."""
BLOCK_ROLES = (*ENCODER_ROLES, *FAMILY_ROLES)
ALL_ROLES = (*BLOCK_ROLES, "classifier", "embeddings")
DEFAULT_ROLES = (*ENCODER_ROLES, "classifier")

_LAYER = r"\.layer\.(?P<layer>\d+)\."
_ALBERT = r"\.albert_layer_groups\.(?P<layer>\d+)\.albert_layers\.0\."  # a group's one shared layer
_MODERN = r"\.layers\.(?P<layer>\d+)\."
# (role -> regexes on the module's qualified name); BERT, RoBERTa, XLM-R, CamemBERT and ELECTRA share
# names; DistilBERT (q_lin...), DeBERTa-v2/v3 (query_proj...), MPNet (attn.q...), ALBERT (one layer
# per group, shared across depth) and ModernBERT (Wqkv...) have their own.
_ROLE_PATTERNS: dict[str, tuple[str, ...]] = {
    "query": (_LAYER + r"attention\.self\.query(_proj)?$", _LAYER + r"attention\.q_lin$",
              _LAYER + r"attention\.attn\.q$", _ALBERT + r"attention\.query$"),
    "key": (_LAYER + r"attention\.self\.key(_proj)?$", _LAYER + r"attention\.k_lin$",
            _LAYER + r"attention\.attn\.k$", _ALBERT + r"attention\.key$"),
    "value": (_LAYER + r"attention\.self\.value(_proj)?$", _LAYER + r"attention\.v_lin$",
              _LAYER + r"attention\.attn\.v$", _ALBERT + r"attention\.value$"),
    "qkv": (_MODERN + r"attn\.Wqkv$",),
    "pos_key": (_LAYER + r"attention\.self\.pos_key_proj$",),
    "pos_query": (_LAYER + r"attention\.self\.pos_query_proj$",),
    "attn_out": (_LAYER + r"attention\.output\.dense$", _LAYER + r"attention\.out_lin$",
                 _LAYER + r"attention\.attn\.o$", _ALBERT + r"attention\.dense$", _MODERN + r"attn\.Wo$"),
    "ffn_in": (_LAYER + r"intermediate\.dense$", _LAYER + r"ffn\.lin1$", _ALBERT + r"ffn$",
               _MODERN + r"mlp\.Wi$"),
    "ffn_out": (_LAYER + r"output\.dense$", _LAYER + r"ffn\.lin2$", _ALBERT + r"ffn_output$",
                _MODERN + r"mlp\.Wo$"),
    "classifier": (r"^classifier$", r"^classifier\.(dense|out_proj)$", r"^pre_classifier$"),
    "embeddings": (r"(^|\.)embeddings\.word_embeddings$",),
}
SUPPORTED_FAMILIES = ("bert", "roberta", "distilbert", "electra")
"""Families whose head/neuron masks also shrink (:mod:`srnet.models.shrunk` has their classes).
Masks, unstructured or head/neuron, cover any family whose every encoder-layer matrix takes a role
(:func:`check_encoder_coverage`) and whose config names its head count."""
GRANULARITIES = ("unstructured", "head", "neuron", "head+neuron")
"""Mask structure: single weights, or whole attention heads and/or FFN neurons."""
HEAD_COUNT_KEYS = ("num_attention_heads", "n_heads")
"""Config attributes that hold the number of attention heads (DistilBERT: ``n_heads``)."""


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

    @property
    def shape(self) -> torch.Size:
        """The weight's shape (without running a mask parametrization)."""
        return _unmasked(self.module).shape


def _unmasked(module: nn.Module) -> torch.Tensor:
    if parametrize.is_parametrized(module, "weight"):
        return module.parametrizations.weight.original
    return module.weight


@dataclass(frozen=True)
class GroupMember:
    """One weight matrix of a mask group: ``width`` consecutive rows (axis 0) or columns (axis 1)
    per group."""

    name: str
    axis: int
    width: int
    module: nn.Module


@dataclass(frozen=True)
class MaskGroup:
    """The ``count`` heads (or FFN neurons) of one layer, each gated by one entry of a gate vector.

    A head is its rows of Q, K and V plus its columns of the attention output; a neuron is its row
    of FFN-in plus its column of FFN-out.
    """

    name: str
    """``<layer module>.heads`` or ``<layer module>.neurons``, e.g. ``bert.encoder.layer.0.heads``."""
    kind: str
    layer: int
    count: int
    members: tuple[GroupMember, ...]

    @property
    def module(self) -> nn.Module:
        """A member module (its weight gives the device and dtype of the gates)."""
        return self.members[0].module

    @property
    def shape(self) -> torch.Size:
        return torch.Size([self.count])


def group_kinds(granularity: str) -> tuple[str, ...]:
    """The group kinds of a structured granularity (``head+neuron`` -> both)."""
    if granularity not in GRANULARITIES[1:]:
        raise SrnetError(f"granularity must be one of {list(GRANULARITIES[1:])}, got '{granularity}'")
    return tuple(granularity.split("+"))


def find_groups(model: nn.Module, kinds: Sequence[str], pattern: str | None = None) -> list[MaskGroup]:
    """The head and/or neuron groups of every encoder layer (filtered by a regex on their names).

    Raises ``SrnetError`` for an architecture without group knowledge, naming the supported ones.
    """
    family = model_family(model)
    config = getattr(model, "config", None)
    heads = next((getattr(config, key) for key in HEAD_COUNT_KEYS if getattr(config, key, None)), None)
    if heads is None:
        raise SrnetError(f"structured masks (heads, neurons) are not supported for '{family}' models: "
                         f"no head count in its config ({' / '.join(HEAD_COUNT_KEYS)})")
    layers: dict[int, dict[str, PrunableWeight]] = defaultdict(dict)
    for w in find_prunable(model, BLOCK_ROLES):
        layers[int(w.layer)][w.role] = w  # type: ignore[arg-type]
    for layer, roles in sorted(layers.items()):
        fused = [roles[r].name for r in FUSED_ROLES if r in roles]
        if fused:
            raise SrnetError(f"structured masks (heads, neurons) are not supported for '{family}' models: "
                             f"its fused {fused[0].rsplit('.', 1)[-1]} matrix does not hold a head's rows "
                             "together; use granularity 'unstructured'")
        missing = [r for r in ENCODER_ROLES if r not in roles]
        if missing:
            raise SrnetError(f"structured masks (heads, neurons) are not supported for '{family}' models: "
                             f"layer {layer} has no {', '.join(missing)} matrices")
    heads = int(heads)
    compiled = re.compile(pattern) if pattern else None
    groups = []
    for layer, roles in sorted(layers.items()):
        prefix = block_prefix([w.name for w in roles.values()])
        width = roles["query"].shape[0] // heads
        rows = [r for r in ("query", "key", "value", "pos_key", "pos_query") if r in roles]
        members = {
            "head": (heads, [*((r, 0, width) for r in rows), ("attn_out", 1, width)]),
            "neuron": (roles["ffn_in"].shape[0], [("ffn_in", 0, 1), ("ffn_out", 1, 1)]),
        }
        for kind in kinds:
            count, parts = members[kind]
            group = MaskGroup(f"{prefix}.{kind}s", kind, layer, count, tuple(
                GroupMember(roles[r].name, axis, w, roles[r].module) for r, axis, w in parts))
            if compiled is None or compiled.search(group.name):
                groups.append(group)
    if not groups:
        raise SrnetError(f"{'+'.join(kinds)} groups with pattern '{pattern}' select nothing in this model")
    return groups


def with_family_roles(roles: Sequence[str]) -> tuple[str, ...]:
    """``roles`` and the family roles whose encoder roles they all name (:data:`FAMILY_ROLES`)."""
    return (*roles, *(r for r, parts in FAMILY_ROLES.items() if r not in roles and set(parts) <= set(roles)))


def block_prefix(names: Sequence[str]) -> str:
    """The module name of the block that holds the given matrices (their common dotted prefix)."""
    levels = zip(*(name.split(".") for name in names), strict=False)
    return ".".join(level[0] for level in takewhile(lambda level: len(set(level)) == 1, levels))


def model_family(model: nn.Module) -> str:
    """The model's ``model_type`` (its class name without a config)."""
    return getattr(getattr(model, "config", None), "model_type", type(model).__name__)


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
    selected = with_family_roles(roles)
    found: list[PrunableWeight] = []
    for qualified, module in model.named_modules():
        if not isinstance(module, nn.Linear | nn.Embedding):
            continue
        role, layer = classify_weight(qualified)
        if role is None or role not in selected:
            continue
        if compiled is not None and not compiled.search(qualified):
            continue
        found.append(PrunableWeight(qualified, role, layer, module))
    if not found:
        what = f"roles {list(roles)}" + (f" and pattern '{pattern}'" if pattern else "")
        raise SrnetError(f"{what} select no weight in this {model_family(model)} model")
    return found


def encoder_blocks(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The transformer blocks: the children of the longest ``nn.ModuleList`` whose children are all
    of one class and hold linear layers (BERT's ``encoder.layer``, ModernBERT's ``layers``...)."""
    best: list[tuple[str, nn.Module]] = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.ModuleList) or len(module) <= len(best):
            continue
        children = list(module)
        if len({type(c) for c in children}) == 1 and any(
                isinstance(m, nn.Linear) for m in children[0].modules()):
            best = [(f"{name}.{i}", c) for i, c in enumerate(children)]
    return best


def check_encoder_coverage(model: nn.Module, roles: Sequence[str]) -> None:
    """Refuse, before any training, a model whose encoder srnet would mask only in part: every
    linear layer inside its transformer blocks must take an encoder role, and every encoder role
    asked for must be found in every block (a fused matrix masked holds the roles it fuses; the
    other family roles are masked where found).  (A masked run of an uncovered family would
    report its target sparsity while masking only what its names match, e.g. its classifier.)"""
    wanted = [r for r in with_family_roles(roles) if r in BLOCK_ROLES]
    blocks = encoder_blocks(model)
    if not wanted:
        return
    family = model_family(model)
    if not blocks:
        raise SrnetError(f"this {family} model has no transformer blocks srnet can find (a ModuleList "
                         "of layers); its encoder cannot be masked")
    for prefix, block in blocks:
        linear = [f"{prefix}.{n}" for n, m in block.named_modules() if isinstance(m, nn.Linear)]
        unknown = [n for n in linear if classify_weight(n)[0] not in BLOCK_ROLES]
        found = {classify_weight(n)[0] for n in linear}
        held = found.union(*(FUSED_ROLES[r] for r in found & set(wanted) if r in FUSED_ROLES))
        missing = [r for r in wanted if r in ENCODER_ROLES and r not in held]
        if unknown or missing:
            what = (f"its matrices {', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''} take no "
                    "role" if unknown else f"roles {missing} are missing in {prefix}")
            raise SrnetError(f"this {family} model cannot be masked in full: {what}; srnet masks the "
                             "encoders of BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, DistilBERT, "
                             "DeBERTa-v2/v3, MPNet, ALBERT and ModernBERT (refused before training, not "
                             "masked in part)")


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
