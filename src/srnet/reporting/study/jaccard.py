"""Section ``jaccard``: how alike the masks of different configurations are.

At the sparsity where most configurations kept their ``masks.safetensors``, the Jaccard
similarity of the kept weights of every pair, as a table and a heatmap: the mean over the seeds
both configurations ran (their lowest seeds where they share none).  Masks of different models are
not comparable (empty cells).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import compare_masks
from srnet.reporting.render import format_table, plot_similarity
from srnet.reporting.runs import DENSE
from srnet.reporting.study.base import Part, RunSet, SetSection, Study, display, register_section


def mask_files(runs: RunSet) -> tuple[float, dict[str, dict[str, Path]]] | None:
    """(sparsity, configuration -> seed -> mask file) at the sparsity with the most masked
    configurations (seeds in order; a seed's first run by path)."""
    by_sparsity: dict[float, dict[str, dict[str, Path]]] = {}
    for group in runs.groups:
        files: dict[str, Path] = {}
        for run in sorted(group.runs, key=lambda r: (r.seed is None, str(r.seed), str(r.path))):
            if (run.path / "masks.safetensors").is_file():
                files.setdefault(str(run.seed), run.path / "masks.safetensors")
        if group.labels["method"] != DENSE and files:
            by_sparsity.setdefault(group.labels["sparsity"], {})[display(group)] = files
    if not by_sparsity:
        return None
    return max(by_sparsity.items(), key=lambda kv: (len(kv[1]), kv[0]))


Masks = Mapping[str, torch.Tensor]
"""One run's masks: parameter name -> boolean keep-mask."""


def pair_jaccard(a: Masks, b: Masks, labels: tuple[str, str]) -> float:
    """Jaccard similarity of two mask sets' kept weights; NaN for masks of different models."""
    try:
        return compare_masks(a, b, labels=labels).overall.jaccard
    except SrnetError:
        return float("nan")


def jaccard_matrix(names: Sequence[str], masks: Sequence[Masks]) -> np.ndarray:
    """Jaccard similarity of the kept weights of every pair of mask sets (NaN: not comparable)."""
    return np.array([[pair_jaccard(a, b, (names[i], names[j])) for j, b in enumerate(masks)]
                     for i, a in enumerate(masks)], dtype=float).reshape(len(masks), len(masks))


def seed_mean_jaccard(files: Mapping[str, Mapping[str, Path]]) -> np.ndarray:
    """Per pair of configurations, the mean Jaccard over the seeds both ran (else their lowest
    seeds'), each mask file read once."""
    from srnet.sparsity.mask_io import load_masks

    names = list(files)
    loaded: dict[Path, Masks] = {}

    def masks(path: Path) -> Masks:
        if path not in loaded:
            loaded[path] = load_masks(path)[0]
        return loaded[path]

    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if j < i:
                matrix[i, j] = matrix[j, i]
                continue
            pairs = [(files[a][s], files[b][s]) for s in files[a] if s in files[b]]
            pairs = pairs or [(next(iter(files[a].values())), next(iter(files[b].values())))]
            matrix[i, j] = float(np.mean([pair_jaccard(masks(x), masks(y), (a, b)) for x, y in pairs]))
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
        found = mask_files(runs)
        assert found is not None
        sparsity, files = found
        names = list(files)
        matrix = seed_mean_jaccard(files)
        title = f"Mask similarity at {sparsity:.0%} sparsity (Jaccard of kept weights)"
        table = jaccard_table(names, matrix)
        part = Part(lines=["### Mask similarity", "",
                           f"{title}; the mean over the seeds both configurations ran (their lowest "
                           "seeds where they share none):", "", table],
                    tables=[table])
        if study.figures:
            path = study.out / f"{runs.prefix}_mask_jaccard.png"
            plot_similarity(names, matrix, path, title=title)
            part.figures.append((title, path))
        return part
