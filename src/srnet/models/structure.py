"""Model structure: the prunable weights of an encoder by role, and its head/neuron groups.

The prunable weights of an encoder are its per-layer attention query/key/value/output and
feed-forward in/out projections, the classification head and (optionally) the word
embeddings.  They are located by the module paths of each family's entry
(:mod:`srnet.models.families`), so masks attach to unmodified ``transformers`` models.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import takewhile

import torch
from torch import nn
from torch.nn.utils import parametrize

from srnet.errors import SrnetError
from srnet.models.families import (
    BLOCK_ROLES,
    EMBEDDINGS_PATH,
    ENCODER_ROLES,
    FAMILIES,
    FAMILY_ROLES,
    FUSED_ROLES,
    OPTIONAL_ROLES,
    Family,
    family_of,
)

ALL_ROLES = (*BLOCK_ROLES, "classifier", "embeddings")
DEFAULT_ROLES = (*ENCODER_ROLES, "classifier")
GRANULARITIES = ("unstructured", "head", "neuron", "head+neuron")
"""Mask structure: single weights, or whole attention heads and/or FFN neurons."""


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
    per unit, in each of its ``parts`` stacked parts (a fused Q/K/V matrix holds 3: every head's
    query rows, then every head's key rows, then the values; a GLU FFN-in holds 2)."""

    name: str
    axis: int
    width: int
    module: nn.Module
    parts: int = 1

    def spread(self, gates: torch.Tensor) -> torch.Tensor:
        """One value per unit -> one per row (axis 0) or column (axis 1) of the matrix."""
        return gates.repeat_interleave(self.width).repeat(self.parts)

    def indices(self, units: torch.Tensor, count: int) -> torch.Tensor:
        """The rows (or columns) of ``units`` (of the group's ``count``), in the matrix's order."""
        one = (units[:, None] * self.width + torch.arange(self.width, device=units.device)).reshape(-1)
        return torch.cat([one + part * count * self.width for part in range(self.parts)])


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

    A head is its rows of Q, K and V (and of DeBERTa's position projections; in a fused Q/K/V
    matrix its rows in each part) plus its columns of the attention output; a neuron is its row of
    FFN-in (both halves of a GLU's) plus its column of FFN-out.  Raises ``SrnetError`` for a model
    without a head count or a layer without the encoder roles.
    """
    name = model_family(model)
    family = family_of_model(model)
    config = getattr(model, "config", None)
    keys = [family.heads_key] if family else sorted({f.heads_key for f in FAMILIES.values()})
    heads = next((getattr(config, key) for key in keys if getattr(config, key, None)), None)
    if heads is None:
        raise SrnetError(f"structured masks (heads, neurons) are not supported for '{name}' models: "
                         f"no head count in its config ({' / '.join(keys)})")
    heads = int(heads)
    layers: dict[int, dict[str, PrunableWeight]] = defaultdict(dict)
    for w in find_prunable(model, BLOCK_ROLES):
        layers[int(w.layer)][w.role] = w  # type: ignore[arg-type]
    for layer, roles in sorted(layers.items()):
        held = set(roles).union(*(FUSED_ROLES[r] for r in roles if r in FUSED_ROLES))
        missing = [r for r in ENCODER_ROLES if r not in held]
        if missing:
            raise SrnetError(f"structured masks (heads, neurons) are not supported for '{name}' models: "
                             f"layer {layer} has no {', '.join(missing)} matrices")
    compiled = re.compile(pattern) if pattern else None
    groups = []
    for layer, roles in sorted(layers.items()):
        prefix = block_prefix([w.name for w in roles.values()])
        members = {"head": (heads, _head_members(roles, heads, family, name)),
                   "neuron": _neuron_members(roles, family)}
        for kind in kinds:
            count, parts = members[kind]
            group = MaskGroup(f"{prefix}.{kind}s", kind, layer, count, tuple(
                GroupMember(roles[r].name, axis, w, roles[r].module, n) for r, axis, w, n in parts))
            if compiled is None or compiled.search(group.name):
                groups.append(group)
    if not groups:
        raise SrnetError(f"{'+'.join(kinds)} groups with pattern '{pattern}' select nothing in this model")
    return groups


def _parts(family: Family | None, role: str) -> int:
    return family.parts(role) if family else 1


def _head_members(roles: dict[str, PrunableWeight], heads: int, family: Family | None,
                  name: str) -> list[tuple[str, int, int, int]]:
    """(role, axis, width, parts) of a head's slices in one layer."""
    rows = [r for r in ("qkv", "query", "key", "value", "pos_key", "pos_query") if r in roles]
    parts = _parts(family, rows[0])
    size = roles[rows[0]].shape[0]
    if size % (heads * parts):
        raise SrnetError(f"structured masks (heads, neurons) are not supported for this {name} model: "
                         f"its {roles[rows[0]].name.rsplit('.', 1)[-1]} has {size} rows, not {parts} "
                         f"part(s) of {heads} heads")
    width = size // (heads * parts)
    return [*((r, 0, width, _parts(family, r)) for r in rows), ("attn_out", 1, width, 1)]


def _neuron_members(roles: dict[str, PrunableWeight], family: Family | None) -> tuple[int, list]:
    """The neuron count of one layer and (role, axis, width, parts) of a neuron's slices."""
    parts = _parts(family, "ffn_in")
    return roles["ffn_in"].shape[0] // parts, [("ffn_in", 0, 1, parts), ("ffn_out", 1, 1, 1)]


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


def family_of_model(model: nn.Module) -> Family | None:
    """The family entry of the model's ``model_type``; for a type without one, the entry whose
    block matrices its module names match (a fork of BERT under its own name); else None."""
    family = family_of(model_family(model))
    if family is not None:
        return family
    for qualified, _ in model.named_modules():
        for entry in FAMILIES.values():
            if any(role != "classifier" and pat.search(qualified) for role, pat in entry.patterns()):
                return entry
    return None


def find_prunable(
    model: nn.Module,
    roles: tuple[str, ...] | list[str] = DEFAULT_ROLES,
    pattern: str | None = None,
) -> list[PrunableWeight]:
    """Return the model's prunable weights with the given roles, optionally filtered by a regex.

    Raises ``SrnetError`` when the selection is empty or names an unknown role.
    """
    unknown = [r for r in roles if r not in ALL_ROLES]
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
    check_family_entry(model)
    for prefix, block in blocks:
        linear = [f"{prefix}.{n}" for n, m in block.named_modules() if isinstance(m, nn.Linear)]
        unknown = [n for n in linear if classify_weight(n)[0] not in BLOCK_ROLES]
        found = {classify_weight(n)[0] for n in linear}
        held = found.union(*(FUSED_ROLES[r] for r in found & set(wanted) if r in FUSED_ROLES))
        missing = [r for r in wanted if r in ENCODER_ROLES and r not in held]
        if unknown or missing:
            what = (f"its matrices {', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''} take no "
                    "role" if unknown else f"roles {missing} are missing in {prefix}")
            known = ", ".join(FAMILIES[name].label for name in FAMILIES.names())
            raise SrnetError(f"this {family} model cannot be masked in full: {what}; srnet masks the "
                             f"encoders of {known} (refused before training, not masked in part)")


def check_family_entry(model: nn.Module) -> None:
    """The entry of the model's ``model_type`` must fit it: each of its roles (but those only some
    configurations have) names a module of the model."""
    family = family_of(model_family(model))
    if family is None:
        return
    names = [qualified for qualified, _ in model.named_modules()]
    for role, pat in family.patterns():
        if role in (*OPTIONAL_ROLES, "classifier") or any(pat.search(n) for n in names):
            continue
        raise SrnetError(f"model family '{family.model_type}': role '{role}' (module path "
                         f"'{family.roles[role]}') matches no module of this model; fix the entry")


def classify_weight(qualified: str) -> tuple[str | None, int | None]:
    """The (role, layer) of a module name, or (None, None) when it is not a prunable weight (the
    first family entry whose paths match it decides)."""
    for role, pat in _patterns():
        m = pat.search(qualified)
        if m:
            layer = m.groupdict().get("layer")
            return role, int(layer) if layer is not None else None
    return None, None


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """(role, regex) of every family entry, then the word embeddings'."""
    return _compiled(tuple(FAMILIES[name] for name in FAMILIES.names()))


@lru_cache(maxsize=8)
def _compiled(families: tuple[Family, ...]) -> list[tuple[str, re.Pattern[str]]]:
    embeddings = ("embeddings", re.compile(EMBEDDINGS_PATH))
    return [*(p for family in families for p in family.patterns()), embeddings]
