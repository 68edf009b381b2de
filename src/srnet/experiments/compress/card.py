"""The compressed model's card, written from :class:`~srnet.experiments.compress.record.CompressRecord`
alone with the export's card builders (:func:`srnet.export.card.card_data`,
:func:`~srnet.export.card.render_card`): nothing on it is re-derived from the machine or the
settings."""

from __future__ import annotations

from typing import Any

from srnet.experiments.compress.record import CompressRecord, ModelFigures, cut_words
from srnet.export.card import card_data, render_card
from srnet.export.runtimes import get_runtime

SPEED_FIGURE = "speed_curve.png"
"""The sizing curve, beside the model its card describes."""
FRONTIER_FIGURE = "frontier.png"
"""Every trained model's robustness at its measured speed-up."""
DEFINITIONS = (
    "**hard**: the ID examples a bias-only model gets wrong (the shortcut does not give them away). "
    "**Aua**: accuracy under attack, the fraction of attacked examples still right after `charswap` "
    "(character swaps)."
)


def compress_card(record: CompressRecord) -> str:
    """The artifact's ``README.md``: front matter (``model-index`` figures, FAILED when a gate
    failed), what was cut and how it recovered, the speed, a table of every evaluated split, the
    gates, the timing warnings, the hashed files and how to load it."""
    rows = _rows(record)
    data = card_data(
        base_model=record.base_model,
        tags=["srnet", "pruning", "structured-pruning", "srnet-compress"],
        labels=record.labels,
        datasets=record.datasets,
        failed=not record.passed,
        model_name=f"srnet compress of {record.model}",
        eval_results=_results(record, rows),
    )
    status = "PASSED every gate" if record.passed else "FAILED a gate (see below); do not ship it as passed"
    lines = [
        f"# srnet compress of `{record.model}`",
        "",
        f"**{status}.** {_what(record)}",
        "",
        _steering(record),
        "",
        _speed(record),
        "",
        *_table(rows),
        "",
        DEFINITIONS,
    ]
    if record.frontier:
        lines += ["", *_frontier(record)]
    if record.sizing.get("curve"):
        lines += ["", f"![measured speed-up of each timed level on this machine]({SPEED_FIGURE})"]
    lines += ["", "## Gates", "", *[f"- {g.line}" for g in record.gates]]
    if record.speed.warnings:
        lines += ["", "## Timing warnings", "", *[f"- {w}" for w in record.speed.warnings]]
    lines += ["", *_hashed(record), "", *_loading(record)]
    return render_card(data, lines)


def _what(record: CompressRecord) -> str:
    if record.level == 0 and not record.dropped_layers:
        cut = (
            "No cut was needed: the dense model in this runtime reached the target."
            if record.config.get("speedup") is not None
            else "No cut (`--sparsity 0`): the dense model in this runtime, as a control."
        )
    else:
        notes = [*(["layers 0-based"] if record.dropped_layers else []),
                 *(["heads and neurons chosen by OMP-gradient, physically shrunk"] if record.level else [])]
        cut = f"The cut: {cut_words(record.level, record.dropped_layers)} ({'; '.join(notes)})."
    return f"{cut} {recovery_sentence(record)}"


def recovery_sentence(record: CompressRecord) -> str:
    """The recovery as recorded: its length, lr, loss and distillation."""
    recovery = record.recovery
    if recovery is None:
        return "The recovery was not recorded."
    length = (
        f"{recovery.max_steps} steps" if recovery.max_steps is not None else f"{recovery.epochs:g} epoch(s)"
    )
    loss = "PoE against the bias model" if record.bias is not None else "cross-entropy"
    distill = {
        "plain": "plus distillation from the teacher (KL at T 2)",
        "through-bias": "plus distillation from the teacher, both combined with the bias model",
        "none": "without distillation",
        "layers": "plus distillation from the teacher (KL at T 2 and every layer's hidden states)",
        "attention": "plus distillation from the teacher (KL at T 2 and every layer's attention maps)",
    }[recovery.distill]
    cut = f" The cut deepened in 4 steps over its first {recovery.gradual:.0%}." if recovery.gradual else ""
    return f"Recovery: {length} at lr {recovery.lr:g}, {loss}, {distill}.{cut}"


def _steering(record: CompressRecord) -> str:
    if record.bias is None:
        return (
            "No bias was given: robustness is measured below but was not steered; the gates compare "
            "with the original model."
        )
    return (
        f"Guarded against the shortcut `{record.bias}`: the reference is the dense model trained with "
        "product-of-experts (PoE) against that bias model; the gates compare with it."
    )


def _speed(record: CompressRecord) -> str:
    speed = record.speed
    cpu_int8 = (speed.cpu_int8 or {}).get("best", "unknown")
    single = "" if speed.speedup_batch1 is None else f" At batch 1: {speed.speedup_batch1:.2f}x."
    return (
        f"Timed on {speed.cpu} (int8: {cpu_int8}), {speed.shape()}, {speed.threads} thread(s), median of "
        f"{speed.rounds} interleaved rounds: **{speed.speedup:.2f}x** dense PyTorch FP32 "
        f"({speed.dense_ms:.1f} -> {speed.compressed_ms:.1f} ms, runtime {record.config['runtime']}); the "
        f"speed-up holds for that batch and those lengths.{single}"
    )


def _rows(record: CompressRecord) -> list[tuple[str, ModelFigures, float | None]]:
    """(label, figures, latency) of each model on the card; a label names the file measured."""
    figures, speed = record.figures, record.speed
    int8 = get_runtime(record.config["runtime"]).int8
    rows = [("original (dense, PyTorch)", figures["dense"], speed.dense_ms)]
    if "teacher" in figures:
        rows.append(("dense PoE reference (PyTorch)", figures["teacher"], None))
    rows.append(("compressed, FP32 (PyTorch)", figures["student"], None if int8 else speed.compressed_ms))
    if int8:
        rows.append(
            (f"compressed as shipped ({figures['shipped'].runtime})", figures["shipped"], speed.compressed_ms)
        )
    return rows


def _results(record: CompressRecord, rows: list[tuple[str, ModelFigures, float | None]]) -> list[Any]:
    from huggingface_hub import EvalResult

    results = []
    for label, f, _ in rows:
        for dataset, kind, name, value in _metrics(f):
            results.append(
                EvalResult(
                    task_type="text-classification",
                    dataset_type=dataset,
                    dataset_name=dataset,
                    metric_type=kind,
                    metric_name=f"{label}: {name}",
                    metric_value=round(value, 4),
                )
            )
    return results


def _metrics(f: ModelFigures) -> list[tuple[str, str, str, float]]:
    out = [(f.id_split, "accuracy", "accuracy", f.id), (f.id_split, "accuracy", "hard accuracy", f.hard)]
    for name, s in {**f.evaluated, **f.challenge}.items():
        out += [(name, "accuracy", "accuracy", s.accuracy), (name, "shortcut_gap", "shortcut gap", s.gap)]
    if f.charswap_aua is not None:
        out.append((f.id_split, "accuracy_under_attack", f"charswap Aua ({f.charswap_file})", f.charswap_aua))
    return [(d, k, n, v) for d, k, n, v in out if v is not None]


def _table(rows: list[tuple[str, ModelFigures, float | None]]) -> list[str]:
    first = rows[0][1]
    splits = [*first.evaluated, *first.challenge]
    header = [
        f"{first.id_split} (ID)",
        "hard",
        *splits,
        *[f"{s} gap" for s in first.challenge],
        "charswap Aua",
        "latency (ms)",
    ]
    lines = ["| model | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for label, f, latency in rows:
        scores = {**f.evaluated, **f.challenge}
        cells = [
            f.id,
            f.hard,
            *[scores[s].accuracy if s in scores else None for s in splits],
            *[f.challenge[s].gap if s in f.challenge else None for s in first.challenge],
            f.charswap_aua,
        ]
        shown = [_pct(v) for v in cells] + ["" if latency is None else f"{latency:.1f}"]
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    return lines


def _frontier(record: CompressRecord) -> list[str]:
    """The speed-robustness frontier: a table and its figure."""
    lines = ["## Speed and robustness", "", "| model | speed-up | ID | hard |", "|---|---|---|---|"]
    lines += [f"| {p.label} | {p.speedup:.2f}x | {_pct(p.id)} | {_pct(p.hard)} |" for p in record.frontier]
    return [*lines, "", f"![hard accuracy against measured speed-up]({FRONTIER_FIGURE})"]


def _hashed(record: CompressRecord) -> list[str]:
    if not record.hashed:
        return []
    return [
        "## Checked files",
        "",
        "srnet checks these SHA-256 digests (recorded in `srnet_export.json`) "
        "before it loads, scores or times this folder:",
        "",
        *[f"- `{name}`: `{digest}`" for name, digest in sorted(record.hashed.items())],
    ]


def _loading(record: CompressRecord) -> list[str]:
    code = "trust_remote_code=True" if record.level else ""
    lines = [
        "## How to load it",
        "",
        "```python",
        "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
        f"model = AutoModelForSequenceClassification.from_pretrained(PATH{', ' + code if code else ''})",
        "tokenizer = AutoTokenizer.from_pretrained(PATH)",
        "```",
        "",
    ]
    if record.level:
        lines.append(
            "`trust_remote_code=True`: the shrunk layers keep different numbers of heads and FFN neurons "
            "per layer, which a stock config cannot express; the modeling code ships in this folder "
            "(`srnet.load_model(PATH)` loads it too)."
        )
    if get_runtime(record.config["runtime"]).needs_onnx:
        lines.append(
            "The ONNX graphs run under ONNX Runtime "
            "(`onnxruntime.InferenceSession(PATH + '/model.int8.onnx')`)."
        )
    return lines


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"
