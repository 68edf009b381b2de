"""Legacy in one place: earlier recipe spellings, upgraded once at load, and the keys added
after studies were recorded, left out of fingerprints.

* **Spellings.** A ``pruning`` section of before per-method params held its method's settings as
  flat keys (:data:`LEGACY_LAYOUT`), and ``granularity: local|global`` before ``scope`` existed;
  :func:`upgrade_pruning` rewrites both (one deprecation note per process), and
  :func:`recorded_param` reads a setting of a recorded run in either spelling.
* **Fingerprints.** A fingerprint (a recipe's, a pruning section's, a sweep stage's key) must not
  change when srnet gains a setting: a key added later is left out of the fingerprinted dict
  while it holds its default, so finished runs and sweep stages keep their keys and resume across
  the upgrade.  Each ``*_ADDED_LATER`` table lists such keys with that default;
  :func:`drop_defaults` applies one.  (A stage kind's own later parameters are its params
  model's ``added_later``, read the same way.)  A pruning section is fingerprinted in the flat
  layout (:func:`pruning_fingerprint_layout`).  ``tests/experiments/test_recorded_keys.py`` plans every
  recorded study with today's code and fails, pointing here, when a recorded stage folder would
  get another key.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

log = logging.getLogger("srnet.pruning")

RECIPE_KEYS_ADDED_LATER: dict[str, Any] = {"evaluation.runtime": "torch", "loss.inputs": {},
                                            "model.drop_layers": []}
"""Recipe keys (dotted: ``section.key``)."""

SPLIT_KEYS_ADDED_LATER: dict[str, Any] = {"ids_file": None}
"""DataSpec keys (every split of a recipe)."""

PARAMS_ADDED_LATER: dict[str, Any] = {"mask_reach": None, "importance_batches": 32, "gradual": 0.0,
                                       "gradual_steps": 4}
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


LEGACY_LAYOUT: dict[str, Any] = {
    "importance": "magnitude",
    "importance_batches": 32,
    "importance_normalize": True,
    "init": "hard",
    "phi": 0.01,
    "alpha": 2.0,
    "rerank_every": 10,
    "train_classifier": False,
    "freeze_weights": False,
    "mask_lr": 5e-5,
    "imp": {"prune_fraction": 0.1, "every": 0.1, "rewind": False},
    "l0": {"lambda_": 1.0, "lambda_start": 0.0, "lambda_warmup": 0.0, "temperature": 2 / 3,
           "gamma": -0.1, "zeta": 1.1, "init_keep": 0.9, "train_weights": False},
    "mask_file": None,
}
"""The method settings a ``pruning`` section held as flat keys next to ``method`` before each
method owned its ``params``, with their defaults then.  ``imp`` and ``l0`` were
sub-sections holding their method's settings; every other key was one setting.  The old
spelling is read through this table, and fingerprints are taken in this layout (see
:meth:`PruningConfig.semantic_dict`), so recorded runs and sweep stages keep their keys."""

LEGACY_REJECTED: dict[str, Any] = {"freeze_weights": True, "importance": "gradient"}
"""Old flat settings that the flat config refused for a method without them (``freeze_weights``
for imp and l0 training weights; gradient importance but for omp): in the old spelling they
reach the method's params, which refuse them, instead of being dropped."""

_NOTES: set[str] = set()
_UNSET = object()


def _note_once(message: str) -> None:
    """Log a deprecation note once per process (reports read many recorded configs)."""
    if message not in _NOTES:
        _NOTES.add(message)
        log.warning(message)


def upgrade_pruning(data: dict[str, Any], method: str, own: set[str] | None) -> dict[str, Any]:
    """A ``pruning`` section in today's spelling: ``granularity: local|global`` read as the scope,
    and each flat setting (:data:`LEGACY_LAYOUT`) moved under ``params`` (``imp:`` and ``l0:``
    sub-sections: their keys).  A setting that ``method`` (its parameters ``own``; None: unknown
    method) does not have is dropped, as the flat config ignored it (unless it refused it:
    :data:`LEGACY_REJECTED`).  ValueError (one line) for contradicting spellings."""
    return _old_granularity(_old_flat_params(data, method, own))


def _old_granularity(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("granularity") not in ("local", "global"):
        return data
    data = dict(data)
    old = data.pop("granularity")
    if data.setdefault("scope", old) != old:
        raise ValueError(f"granularity '{old}' (the old name of scope) contradicts scope '{data['scope']}'")
    return data


def _old_flat_params(data: dict[str, Any], method: str, own: set[str] | None) -> dict[str, Any]:
    if not any(key in data for key in LEGACY_LAYOUT):
        return data
    data = dict(data)
    given = data.get("params")
    given = given.model_dump() if hasattr(given, "model_dump") else given
    if given is not None and not isinstance(given, dict):
        return data  # the params error is the one to report
    params = dict(given or {})
    moved, ignored = [], []
    for key in [k for k in LEGACY_LAYOUT if k in data]:
        value, default = data.pop(key), LEGACY_LAYOUT[key]
        nested = isinstance(default, dict)
        if nested and not isinstance(value, dict):
            raise ValueError(f"{key} must be a mapping of {key} settings, got {value!r}")
        for name, item in value.items() if nested else [(key, value)]:
            spelled = f"{key}.{name}" if nested else key
            old_setting = not nested or name in default  # else an unknown key: refused by params
            foreign = own is not None and name not in own
            if foreign and old_setting and LEGACY_REJECTED.get(name, _UNSET) != item:
                if item != (default[name] if nested else default):
                    ignored.append(f"{spelled}={item!r}")
                continue
            if name in params and params[name] != item:
                raise ValueError(f"{spelled} (the old spelling of params.{name}) = {item!r} "
                                 f"contradicts params.{name} = {params[name]!r}")
            params[name] = item
            moved.append(spelled)
    data["params"] = params
    old_keys = ", ".join(moved) or "flat method settings"
    note = f"pruning: {old_keys}: the old spelling, now under pruning.params"
    if ignored:
        note += f"; method '{method}' has no {', '.join(ignored)} (ignored)"
    _note_once(note)
    return data


def legacy_pruning_key(parts: list[str]) -> bool:
    """Whether dotted ``parts`` (below ``pruning``) name an old flat key or its sub-key."""
    head, rest = parts[0], parts[1:]
    nested = LEGACY_LAYOUT.get(head, _UNSET)
    if nested is _UNSET:
        return False
    return not rest or (isinstance(nested, dict) and len(rest) == 1 and rest[0] in nested)


def pruning_fingerprint_layout(data: dict[str, Any]) -> dict[str, Any]:
    """A dumped pruning section (``params`` a dict) in :data:`LEGACY_LAYOUT`'s flat layout: each
    old key holding the method's value or, for a setting the method does not have, its old
    default; parameters with no old key stay under ``params`` (those added later dropped at their
    default)."""
    data = dict(data)
    params = dict(data.pop("params"))
    for key, default in LEGACY_LAYOUT.items():
        if isinstance(default, dict):
            data[key] = {name: params.pop(name, value) for name, value in default.items()}
        else:
            data[key] = params.pop(key, default)
    drop_defaults(params, PARAMS_ADDED_LATER)  # a recipe that does not use it keeps its key
    if params:
        data["params"] = params
    return data


def recorded_param(pruning: Mapping[str, Any] | None, key: str, default: Any = None) -> Any:
    """Setting ``key`` of a *recorded* pruning section (a run's config.yaml as a dict), in either
    spelling: ``params.<key>``, or the flat key (or its ``imp``/``l0`` sub-key) of older runs."""
    pruning = pruning or {}
    params = pruning.get("params") or {}
    if key in params:
        return params[key]
    if key in pruning:
        return pruning[key]
    for section, defaults in LEGACY_LAYOUT.items():
        if isinstance(defaults, dict) and key in defaults and key in (pruning.get(section) or {}):
            return pruning[section][key]
    return default
