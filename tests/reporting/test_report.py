"""Report: exact plain-text tables and plots written atomically as real PNG/PDF files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import sparsity_table
from srnet.reporting.render import (
    Curve,
    Panel,
    format_table,
    plot_group_bars,
    plot_similarity,
    plot_sparsity_curves,
    plot_sparsity_heatmap,
    sparsity_curves_figure,
    summary_table,
)
from srnet.rundir.record import RunMetrics

ROLE_NAMES = {
    "query": "attention.self.query", "key": "attention.self.key",
    "value": "attention.self.value", "attn_out": "attention.output.dense",
    "ffn_in": "intermediate.dense", "ffn_out": "output.dense",
}


def _masks(layers: int = 3) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    masks = {}
    for layer in range(layers):
        for i, suffix in enumerate(ROLE_NAMES.values()):
            keep = 1.0 - (layer * 6 + i) / (layers * 6)  # sparsity grows along the grid
            masks[f"bert.encoder.layer.{layer}.{suffix}"] = torch.rand(8, 8, generator=gen) < keep
    masks["classifier"] = torch.ones(3, 8, dtype=torch.bool)
    return masks


def test_format_table_exact():
    rows = [
        {"method": "omp", "sparsity": 0.5, "id": 0.81234, "n": 12},
        {"method": "mask_train", "sparsity": 0.7, "id": None, "n": 3},
    ]
    text = format_table(rows, ["method", "sparsity", "id", "n"], floatfmt={"sparsity": ".0%"})
    assert text == (
        "method      sparsity      id   n\n"
        "----------  --------  ------  --\n"
        "omp              50%  0.8123  12\n"
        "mask_train       70%       -   3\n"
    )
    assert format_table([{"a": 1.0}], ["a", "b"], floatfmt=".1f") == "  a  b\n---  -\n1.0  -\n"


def test_summary_table_of_run_metrics():
    metrics = {
        "run": "demo", "task": "nli", "model": "default", "seed": 1,
        "id": {"mnli_dev": {"n": 10, "primary": 0.8, "accuracy": 0.8,
                            "easy_hard": {"easy": 0.9, "hard": 0.7, "gap": 0.2}}},
        "ood": {"hans": {"n": 6, "primary": 0.5, "accuracy": 0.5, "shortcut_gap": 0.9,
                         "by_heuristic": {"lexical_overlap": {"entailment": 1.0, "non-entailment": 0.1}}}},
        "sparsity": {"overall": 0.5, "target": 0.5},
        "f_bias": {"reference": "runs/dense", "id_split": "mnli_dev", "hans": 0.75},
    }
    assert summary_table(RunMetrics.model_validate(metrics)) == (
        "run demo  task nli  model default  sparsity 50.0%\n"
        "split     kind   n  accuracy  primary  easy-hard  shortcut_gap  f_bias\n"
        "--------  ----  --  --------  -------  ---------  ------------  ------\n"
        "mnli_dev  ID    10    0.8000   0.8000     0.2000             -       -\n"
        "hans      OOD    6    0.5000   0.5000          -        0.9000  0.7500\n"
        "\n"
        "hans: accuracy by heuristic x label\n"
        "heuristic        entailment  non-entailment\n"
        "---------------  ----------  --------------\n"
        "lexical_overlap      1.0000          0.1000\n"
    )
    hans = metrics["ood"]["hans"]
    hans |= {"collapse": "sum", "rule_disagreement": 4,
             "by_rule": {"sum": {}, "argmax": {"accuracy": 0.25, "shortcut_gap": -0.5}}}
    assert "hans: collapse rule sum; under argmax: accuracy 0.2500, shortcut gap -0.5000; 4 of 6 " \
        "predictions differ\n" in summary_table(RunMetrics.model_validate(metrics))
    dense = {"run": "dense", "id": {"sst2_dev": {"n": 3, "primary": 0.9, "accuracy": 0.9}}, "ood": {}}
    assert summary_table(RunMetrics.model_validate(dense)) == (
        "run dense\nsplit     kind  n  accuracy  primary\n--------  ----  -  --------  -------\n"
        "sst2_dev  ID    3    0.9000   0.9000\n"
    )


def test_heatmap_from_masks_and_from_table(tmp_path):
    masks = _masks()
    png = plot_sparsity_heatmap(masks, tmp_path / "heat.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = plot_sparsity_heatmap(sparsity_table(masks), tmp_path / "heat.pdf", title="t")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heat.pdf", "heat.png"]


def test_heatmap_errors(tmp_path):
    with pytest.raises(SrnetError, match="no per-layer masked weights"):
        plot_sparsity_heatmap({"classifier": torch.ones(2, 2)}, tmp_path / "x.png")
    with pytest.raises(SrnetError, match=r"plot file .*x\.jpg must end in one of"):
        plot_sparsity_heatmap(_masks(1), tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []


def test_sparsity_curves_and_bars(tmp_path):
    panels = [
        Panel("ID", "accuracy", [Curve("omp/ce", [(0.7, 0.78, 0.01), (0.3, 0.83, None), (0.5, 0.81, 0.02)])],
              dense=[("ce", 0.84, 0.01)]),
        Panel("gap", "E - N accuracy", [Curve("omp/ce", [(0.3, 0.9, None)])]),
    ]
    path = plot_sparsity_curves(panels, tmp_path / "curves.png", title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bars = {"dense/ce": {"lexical_overlap": {"entailment": (0.9, 0.01), "non-entailment": (0.1, None)}}}
    assert plot_group_bars(bars, tmp_path / "bars.pdf", title="t").read_bytes()[:5] == b"%PDF-"


def test_sparsity_curves_fill_a_grid_with_separate_titles_and_no_empty_panel(tmp_path):
    """The demo's six metrics were once six panels in a row (4200 x 600 px) with overlapping
    titles, and a gap panel with nothing drawn (its collapsed points left out) on a 0-100% axis."""
    curves = [Curve("mask_train/ce (a)", [(0.5, 0.64, 0.01)]),
              Curve("mask_train/poe (a)", [(0.5, 0.77, None)])]
    titles = ["ID synthetic_dev", "ID synthetic_dev: easy examples", "ID synthetic_dev: hard examples",
              "ID synthetic_dev: easy − hard gap", "OOD synthetic_challenge"]
    panels = [Panel(title, "accuracy", curves, dense=[("ce", 0.63, None)]) for title in titles]
    gap = Panel("synthetic_challenge: shortcut gap (sum rule; collapses with gap <= 0 not drawn)",
                "entailment − non-entailment accuracy",
                [Curve("omp/poe", [(0.5, -0.2, None), (0.7, -1.0, None)])])
    figure = sparsity_curves_figure([*panels, gap], title="synthetic_nli: synthetic_dev (n=500)")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    assert len(figure.axes) == 6 and len({round(ax.get_position().y0, 3) for ax in figure.axes}) == 2
    boxes = [ax.title.get_window_extent(renderer) for ax in figure.axes]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    low, high = figure.axes[-1].get_ylim()
    assert low <= -1.0 and high < 0.0  # the gap's own range
    empty = Panel("synthetic_challenge: shortcut gap", "gap", [])
    png = plot_sparsity_curves([*panels, empty, gap], tmp_path / "curves.png").read_bytes()
    size = (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big"))
    assert size == tuple(round(v * 150) for v in figure.get_size_inches())  # the empty panel left out


def test_plots_reject_empty_input(tmp_path):
    with pytest.raises(SrnetError, match="no points to plot"):
        plot_sparsity_curves([Panel("ID", "accuracy", [])], tmp_path / "p.png")
    with pytest.raises(SrnetError, match="no group accuracies"):
        plot_group_bars({}, tmp_path / "b.png", title="t")
    with pytest.raises(SrnetError, match="need at least two masks"):
        plot_similarity(["a"], np.ones((1, 1)), tmp_path / "s.png", title="t")
    assert list(tmp_path.iterdir()) == []


def test_eight_long_labels_keep_the_legend_to_a_third_of_the_figure():
    """Eight configurations whose labels run to 60 characters (a recipe label naming
    its differing keys) took 69% of the figure's width; wrapped at 30 characters, under 40%."""
    from srnet.reporting.render import LEGEND_WIDTH, Curve, Panel, sparsity_curves_figure

    names = [f"mask_train / poe / training.warmup_ratio=0.{i} model.name=runs/bb_{i}".ljust(60, "x")
             for i in range(8)]
    curves = [Curve(name, [(0.3, 0.6 + i / 100, 0.01), (0.5, 0.58, 0.01)]) for i, name in enumerate(names)]
    fig = sparsity_curves_figure([Panel("MNLI dev-matched", "accuracy", curves)])
    fig.canvas.draw()
    legend = fig.legends[0]
    assert legend.get_window_extent().width / fig.bbox.width < 0.4
    shown = [text.get_text() for text in legend.get_texts()]
    assert len(shown) == 8 and all(len(line) <= LEGEND_WIDTH for text in shown for line in text.split("\n"))
    assert ["".join(text.split()) for text in shown] == ["".join(name.split()) for name in names]
