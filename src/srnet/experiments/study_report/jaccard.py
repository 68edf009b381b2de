"""Section ``jaccard``: how alike the masks of different configurations are.

At the sparsity where most configurations kept their ``masks.safetensors`` (one run each: the
lowest seed), the Jaccard similarity of the kept weights of every pair, as a table and a
heatmap.  Masks of different models are not comparable (empty cells).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import compare_masks
from srnet.experiments.aggregate import DENSE
from srnet.experiments.study_report.base import Part, RunSet, SetSection, Study, display, register_section
from srnet.report import format_table, plot_similarity


def mask_files(runs: RunSet) -> tuple[float, dict[str, Path]] | None:
    """(sparsity, configuration -> mask file) at the sparsity with the most masked configurations."""
    by_sparsity: dict[float, dict[str, Path]] = {}
    for group in runs.groups:
        files = sorted((run.seed is None, str(run.seed), run.path / "masks.safetensors")
                       for run in group.runs if (run.path / "masks.safetensors").is_file())
        if group.labels["method"] != DENSE and files:
            by_sparsity.setdefault(group.labels["sparsity"], {})[display(group)] = files[0][2]
    if not by_sparsity:
        return None
    return max(by_sparsity.items(), key=lambda kv: (len(kv[1]), kv[0]))


def jaccard_matrix(names: Sequence[str], masks: Sequence[Mapping[str, torch.Tensor]]) -> np.ndarray:
    """Jaccard similarity of the kept weights of every pair of mask sets (NaN: not comparable)."""
    matrix = np.full((len(masks), len(masks)), np.nan)
    for i, a in enumerate(masks):
        for j, b in enumerate(masks):
            with contextlib.suppress(SrnetError):  # masks of different models: not comparable
                matrix[i, j] = compare_masks(a, b, labels=(names[i], names[j])).overall.jaccard
    return matrix


def jaccard_table(names: list[str], matrix: np.ndarray) -> str:
    """The matrix as a Markdown table, three decimals."""
    rows = [{"": name, **{n: None if np.isnan(v) else float(v) for n, v in zip(names, line, strict=True)}}
            for name, line in zip(names, matrix, strict=True)]
    return format_table(rows, ["", *names], dict.fromkeys(names, ".3f"), markdown=True)


@register_section("jaccard")
class MaskJaccard(SetSection):
    """Jaccard similarity of the kept weights between configurations at one sparsity."""

    order = 40

    def applies(self, study: Study, runs: RunSet) -> bool:
        found = mask_files(runs)
        return found is not None and len(found[1]) >= 2

    def render(self, study: Study, runs: RunSet) -> Part:
        from srnet.sparsity.mask_io import load_masks

        found = mask_files(runs)
        assert found is not None
        sparsity, files = found
        names = list(files)
        matrix = jaccard_matrix(names, [load_masks(files[name])[0] for name in names])
        title = f"Mask similarity at {sparsity:.0%} sparsity (Jaccard of kept weights)"
        table = jaccard_table(names, matrix)
        part = Part(lines=["### Mask similarity", "",
                           f"{title}; one run per configuration (the lowest seed):", "", table],
                    tables=[table])
        if study.figures:
            path = study.out / f"{runs.prefix}_mask_jaccard.png"
            plot_similarity(names, matrix, path, title=title)
            part.figures.append((title, path))
        return part
