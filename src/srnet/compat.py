"""Keys added after studies were recorded, in one place.

A fingerprint (a recipe's, a pruning section's, a sweep stage's key) must not change when srnet
gains a setting: a key added later is left out of the fingerprinted dict while it holds its
default, so finished runs and sweep stages keep their keys and resume across the upgrade.  Each
table below lists such keys with that default; :func:`drop_defaults` applies one.  (A stage
kind's own later parameters are its params model's ``added_later``, read the same way.)
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

RECIPE_KEYS_ADDED_LATER: dict[str, Any] = {"evaluation.runtime": "torch"}
"""Recipe keys (dotted: ``section.key``)."""

SPLIT_KEYS_ADDED_LATER: dict[str, Any] = {"ids_file": None}
"""DataSpec keys (every split of a recipe)."""

PARAMS_ADDED_LATER: dict[str, Any] = {"mask_reach": None}
"""Pruning-method parameters (a ``pruning.params`` section)."""


def drop_defaults(data: MutableMapping[str, Any] | None, added_later: Mapping[str, Any]) -> None:
    """Remove from ``data`` (in place) each key of ``added_later`` (dotted for nested sections)
    that holds its listed default."""
    if not data:
        return
    for dotted, default in added_later.items():
        *parents, leaf = dotted.split(".")
        node: Any = data
        for part in parents:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, MutableMapping) and leaf in node and node[leaf] == default:
            del node[leaf]


def without_defaults(data: Mapping[str, Any], added_later: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of flat ``data`` without the keys of ``added_later`` that hold their default."""
    return {k: v for k, v in data.items() if not (k in added_later and v == added_later[k])}
