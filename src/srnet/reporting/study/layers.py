"""Section ``layers``: per-layer sparsity heatmaps (layer x role) of each pruned configuration,
the mean over its runs of ``metrics.json``'s ``sparsity.by_layer_role``."""

from __future__ import annotations

import numpy as np

from srnet.evaluation.mask_analysis import SparsityTable
from srnet.reporting.render import plot_sparsity_heatmap
from srnet.reporting.runs import DENSE
from srnet.reporting.stats import Group
from srnet.reporting.study.base import (
    Part,
    RunSet,
    SetSection,
    Study,
    display,
    register_section,
    slug,
)
from srnet.rundir.record import SparsityRecord


def layer_table(group: Group) -> SparsityTable | None:
    """The configuration's sparsity by (layer, role), mean over its runs (None when not recorded)."""
    cells: dict[tuple[int, str], list[float]] = {}
    overall = []
    for run in group.runs:
        block = run.metrics.sparsity or SparsityRecord()
        if block.overall is not None:
            overall.append(block.overall)
        for key, value in (block.by_layer_role or {}).items():
            layer, _, role = key.partition(".")
            if layer.isdigit():
                cells.setdefault((int(layer), role), []).append(value)
    if not cells:
        return None
    return SparsityTable([], {k: float(np.mean(v)) for k, v in sorted(cells.items())},
                         float(np.mean(overall)) if overall else float("nan"))


@register_section("layers")
class LayerSparsity(SetSection):
    """Sparsity by layer and role of every pruned configuration (heatmaps)."""

    order = 50

    def applies(self, study: Study, runs: RunSet) -> bool:
        return study.figures and any(
            g.labels["method"] != DENSE and layer_table(g) is not None for g in runs.groups)

    def render(self, study: Study, runs: RunSet) -> Part:
        part = Part()
        for group in runs.groups:
            table = layer_table(group) if group.labels["method"] != DENSE else None
            if table is None:
                continue
            name = display(group, sparsity=True)
            path = study.out / f"{runs.prefix}_sparsity_{slug(name)}.png"
            caption = f"{name}: sparsity by layer and role (overall {table.overall:.1%}, mean over runs)"
            plot_sparsity_heatmap(table, path, title=caption)
            part.figures.append((caption, path))
        return part
