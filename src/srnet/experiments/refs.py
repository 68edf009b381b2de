"""Stage references in sweep files: '@name' or '@name/sub/path' stands for a stage's output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

STAGE_REF = re.compile(r"^@([A-Za-z_][A-Za-z0-9_]*)(/.*)?$")


def stage_refs(value: Any) -> set[str]:
    """Stage names referenced as '@name' (or '@name/sub/path') anywhere in ``value``."""
    if isinstance(value, dict):
        return set().union(*map(stage_refs, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(stage_refs, value)) if value else set()
    match = STAGE_REF.match(value) if isinstance(value, str) else None
    return {match.group(1)} if match else set()


def resolve_refs(value: Any, outputs: dict[str, Path]) -> Any:
    """``value`` with every '@name[/sub]' replaced by that stage's output path."""
    if isinstance(value, dict):
        return {k: resolve_refs(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, outputs) for v in value]
    match = STAGE_REF.match(value) if isinstance(value, str) else None
    if not match:
        return value
    return str(outputs[match.group(1)]) + (match.group(2) or "")


def resolve_gathered_refs(value: Any, outputs: dict[str, list[Path]]) -> Any:
    """``value`` with every '@name[/sub]' replaced by all of that stage's outputs (one per grid
    point, for a stage that runs once per sweep): a list item expands into one item per output;
    anywhere else a reference must stand for exactly one output (ValueError otherwise)."""
    if isinstance(value, dict):
        return {k: resolve_gathered_refs(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            match = STAGE_REF.match(item) if isinstance(item, str) else None
            if match:
                out += [str(path) + (match.group(2) or "") for path in outputs[match.group(1)]]
            else:
                out.append(resolve_gathered_refs(item, outputs))
        return out
    match = STAGE_REF.match(value) if isinstance(value, str) else None
    if not match:
        return value
    paths = outputs[match.group(1)]
    if len(paths) != 1:
        raise ValueError(f"'{value}' stands for {len(paths)} outputs (one per grid point): use it as "
                         "an item of a list")
    return str(paths[0]) + (match.group(2) or "")


INTERMEDIATE_REF = re.compile(r"^@([A-Za-z_][A-Za-z0-9_]*)/intermediate/step_(\d+)/?$")
"""'@stage/intermediate/step_N': the model a train stage exported at step N (training.save_at_steps)."""


def intermediate_refs(value: Any) -> list[tuple[str, int]]:
    """(stage, step) of every '@stage/intermediate/step_N' anywhere in ``value``."""
    if isinstance(value, dict):
        return [ref for v in value.values() for ref in intermediate_refs(v)]
    if isinstance(value, list):
        return [ref for v in value for ref in intermediate_refs(v)]
    match = INTERMEDIATE_REF.match(value) if isinstance(value, str) else None
    return [(match.group(1), int(match.group(2)))] if match else []
