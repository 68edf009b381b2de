"""The end of ``srnet compress``: the figures of every model from its stages' records, the gates,
``<out>/compress.json``, the speed curve, and ``<out>/model`` with its card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from srnet.evaluation.metrics import COLLAPSE_FRACTION
from srnet.experiments.verbs.compress_config import (
    GATE_FAILED_EXIT,
    RECIPE_NAME,
    RESULT_FILE,
    CompressConfig,
    Source,
    copy_model,
)
from srnet.export.runtimes import bench_runtime, runtime_quantize


def model_figures(run: str | Path) -> dict[str, Any]:
    """ID accuracy, easy/hard, every challenge split (accuracy, gap, collapse) and the charswap
    accuracy under attack of one finished run, from its own records."""
    from srnet.rundir.record import read_metrics

    metrics = read_metrics(run)
    split, scores = next(iter(metrics.id.items()))
    easy_hard = scores.get("easy_hard") or {}
    figures: dict[str, Any] = {
        "run": str(run),
        "id_split": split,
        "id": scores.get("accuracy"),
        "hard": easy_hard.get("hard"),
        "easy": easy_hard.get("easy"),
        "runtime": metrics.evaluated_by,
        "collapsed": sorted(name for name, s in {**metrics.id, **metrics.ood}.items() if s.get("collapsed")),
        "challenge": {
            name: {"accuracy": s.get("primary", s.get("accuracy")), "gap": s.get("shortcut_gap")}
            for name, s in metrics.ood.items()
        },
        "sparsity": metrics.sparsity.overall if metrics.sparsity else None,
    }
    attack = Path(run) / "attack" / "charswap.json"
    if attack.is_file():
        figures["charswap_aua"] = json.loads(attack.read_text(encoding="utf-8")).get("aua")
    return figures


def bench_figures(bench_file: str | Path, runtime: str) -> dict[str, Any]:
    """Dense PyTorch FP32 latency and the export's under ``runtime``, and their ratio."""
    bench = json.loads(Path(bench_file).read_text(encoding="utf-8"))
    wanted = bench_runtime(runtime)
    rows = bench["rows"]
    dense = next(r for r in rows if r["runtime"] == "torch")
    export = next(r for r in rows[1:] if r["model"] != dense["model"] and r["runtime"] == wanted)
    int8_dense = next(
        (r for r in rows if r["model"] == dense["model"] and r["runtime"] == wanted), None
    ) if runtime_quantize(runtime) is not None else None
    env = bench["environment"]
    return {
        "dense_ms": dense["latency_ms"],
        "compressed_ms": export["latency_ms"],
        "speedup": export["speedup"],
        "dense_int8_speedup": int8_dense["speedup"] if int8_dense else None,
        "batch": dense["batch"],
        "length": dense["length"],
        "threads": bench["threads"],
        "rounds": bench["rounds"],
        "cpu": env.get("cpu"),
        "cpu_int8": env.get("cpu_int8"),
        "warnings": bench.get("warnings", []),
    }


def gates(
    config: CompressConfig,
    reference: dict[str, Any],
    student: dict[str, Any],
    shipped: dict[str, Any],
    speed: dict[str, Any],
) -> list[dict[str, Any]]:
    """Each gate: its name, whether it passed, and one line with the two figures."""
    out: list[dict[str, Any]] = []

    def gate(name: str, value: float | None, threshold: float | None, text: str) -> None:
        passed = value is not None and threshold is not None and value >= threshold - 1e-12
        shown = "n/a" if value is None else f"{value:.4g}"
        limit = "n/a" if threshold is None else f"{threshold:.4g}"
        out.append(
            {
                "gate": name,
                "passed": passed,
                "value": value,
                "threshold": threshold,
                "line": f"{'PASS' if passed else 'FAIL'} {name}: {text} {shown} vs required {limit}",
            }
        )

    if config.speedup is not None:
        gate("speed", speed["speedup"], config.speedup, f"measured speed-up ({config.runtime})")
    id_drop, robust_drop = config.max_id_drop / 100, config.max_robust_drop / 100
    gate("id", shipped["id"], _minus(reference["id"], id_drop), f"{shipped['id_split']} accuracy")
    if reference.get("hard") is not None:
        gate(
            "hard",
            shipped.get("hard"),
            _minus(reference["hard"], robust_drop),
            f"{shipped['id_split']} hard accuracy",
        )
    for name, scores in reference["challenge"].items():
        ours = shipped["challenge"].get(name, {}).get("accuracy")
        gate(f"challenge {name}", ours, _minus(scores["accuracy"], robust_drop), f"{name} accuracy")
    if runtime_quantize(config.runtime) is not None:
        gate(
            "int8",
            shipped["id"],
            _minus(student["id"], id_drop),
            f"{shipped['id_split']} accuracy of the INT8 file as shipped (FP32 student {student['id']:.4f})",
        )
    new = [name for name in shipped["collapsed"] if name not in reference["collapsed"]]
    shared = [name for name in shipped["collapsed"] if name in reference["collapsed"]]
    out.append(
        {
            "gate": "collapse",
            "passed": not new,
            "value": new,
            "threshold": [],
            "line": f"{'PASS' if not new else 'FAIL'} collapse (one class >= {COLLAPSE_FRACTION:.0%} "
            f"of the predictions, or ID at chance, where the reference does not): "
            f"{', '.join(new) if new else 'no split'}"
            + (f" ({', '.join(shared)}: the reference too)" if shared else ""),
        }
    )
    return out


def _recovery(record: dict[str, Any]) -> str:
    """The recovery's length, lr and distillation, as the student ran it."""
    recovery = record["recovery"]
    length = (f"{recovery['max_steps']} steps" if recovery["max_steps"] is not None
              else f"{recovery['epochs']:g} epoch(s)")
    how = {"plain": "distilled recovery", "through-bias": "recovery distilled through the bias",
           "none": "recovery without distillation"}[recovery["distill"]]
    return f"{how}: {length} at lr {recovery['lr']:g}"


def distillation(objective: Any) -> str:
    """The ``--recovery-distill`` setting a student's recorded objective ran with."""
    params = objective.params.model_dump()
    if params.get("pred_weight", 0) == 0:
        return "none"
    return "through-bias" if params.get("through_bias") else "plain"


def _minus(value: float | None, drop: float) -> float | None:
    return None if value is None else value - drop


def finish(
    source: Source,
    config: CompressConfig,
    sizing: dict[str, Any],
    outputs: dict[str, str],
    sweep: dict[str, Any],
    out: Path,
    *,
    elapsed_s: float,
    peak_rss_mb: float,
) -> dict[str, Any]:
    """Score, gate, write ``compress.json``, the figure and ``<out>/model`` with its card; returns
    the record (``passed`` false when any gate failed: everything is still written)."""
    from srnet.config import load_run_recipe
    from srnet.io import atomic_write_json, atomic_write_text

    figures = {
        "dense": model_figures(outputs["dense"]),
        "student": model_figures(outputs["student"]),
        "shipped": model_figures(outputs["shipped"]),
    }
    if "teacher" in outputs:
        figures["teacher"] = model_figures(outputs["teacher"])
    for name in ("student", "shipped"):  # the attack ran on the student's masked model
        figures[name]["charswap_aua"] = figures["student"].get("charswap_aua")
    reference_name = "teacher" if "teacher" in figures else "dense"
    speed = bench_figures(outputs["bench"], config.runtime)
    checked = gates(config, figures[reference_name], figures["student"], figures["shipped"], speed)
    passed = all(g["passed"] for g in checked)
    student = load_run_recipe(Path(outputs["student"]) / "config.yaml")
    recovery = student.training
    record = {
        "passed": passed,
        "exit_code": 0 if passed else GATE_FAILED_EXIT,
        "model": source.model,
        "recipe": RECIPE_NAME,
        "recovery": {"epochs": recovery.epochs, "max_steps": recovery.max_steps, "lr": recovery.lr,
                     "distill": distillation(student.objective)},
        "config": config.model_dump(mode="json"),
        "level": sizing["level"],
        "sizing": sizing,
        "reference": reference_name,
        "figures": figures,
        "speed": speed,
        "gates": checked,
        "elapsed_s": round(elapsed_s, 1),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "stages": outputs,
        "bias": config.bias,
    }
    copy_model(Path(outputs["export"]), out / "model")
    if sizing["curve"]:
        speed_figure(sizing, config, out / "model" / SPEED_FIGURE)
    atomic_write_text(out / "model" / "README.md", compress_card(record))
    atomic_write_json(out / RESULT_FILE, record)
    return record


SPEED_FIGURE = "speed_curve.png"
"""The sizing curve, beside the model its card describes."""


def speed_figure(sizing: dict[str, Any], config: CompressConfig, path: Path) -> None:
    """The measured speed-up of each timed level, the target and the chosen level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from srnet.io import atomic_write

    curve = sizing["curve"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(
        [p["level"] for p in curve], [p["speedup"] for p in curve], "o-", label=f"shrunk ({config.runtime})"
    )
    if config.speedup is not None:
        ax.axhline(config.speedup, color="grey", linestyle="--", label=f"target {config.speedup:g}x")
    ax.axvline(sizing["level"], color="tab:red", linestyle=":", label=f"chosen {sizing['level']:.0%}")
    ax.set_xlabel("heads and FFN neurons removed")
    ax.set_ylabel("speed-up vs dense PyTorch FP32")
    ax.set_title(f"batch {config.batch} x {config.length}, {config.threads} thread(s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def compress_card(record: dict[str, Any]) -> str:
    """The artifact's ``README.md``: ``model-index`` front matter (dense, reference, compressed and
    INT8 figures) that the Hub displays, a table of the same figures, the gates, and how to load it."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    from srnet.training.precision import cpu_has_native_bf16

    figures, speed, config = record["figures"], record["speed"], record["config"]
    int8 = runtime_quantize(config["runtime"]) is not None
    rows = [("original (dense)", figures["dense"], speed["dense_ms"])]
    if "teacher" in figures:
        rows.append(("dense PoE (reference)", figures["teacher"], None))
    rows.append(
        (
            f"compressed ({figures['student']['runtime']})",
            figures["student"],
            None if int8 else speed["compressed_ms"],
        )
    )
    if int8:
        rows.append(("compressed INT8 (as shipped)", figures["shipped"], speed["compressed_ms"]))
    results = []

    def metric(dataset: str, kind: str, name: str, value: float, digits: int = 4) -> None:
        results.append(EvalResult(task_type="text-classification", dataset_type=dataset, dataset_name=dataset,
                                  metric_type=kind, metric_name=name, metric_value=round(value, digits)))

    for label, f, latency in rows:
        split = f["id_split"]
        metric(split, "accuracy", f"{label}: accuracy", f["id"])
        if f.get("hard") is not None:
            metric(split, "accuracy", f"{label}: hard accuracy", f["hard"])
        for name, scores in f["challenge"].items():
            metric(name, "accuracy", f"{label}: accuracy", scores["accuracy"])
            if scores.get("gap") is not None:
                metric(name, "shortcut_gap", f"{label}: shortcut gap", scores["gap"])
        if f.get("charswap_aua") is not None:
            aua = f["charswap_aua"]
            metric(split, "accuracy_under_attack", f"{label}: charswap accuracy under attack", aua)
        if latency is not None:
            metric(split, "latency_ms", f"{label}: latency (ms, batch {speed['batch']} x {speed['length']}, "
                   f"{speed['threads']} thread(s), {speed['cpu']})", latency, digits=2)
    data = ModelCardData(
        library_name="transformers",
        pipeline_tag="text-classification",
        tags=["srnet", "pruning", "structured-pruning", "srnet-compress"],
        model_name=f"srnet compress of {record['model']}",
        eval_results=results,
    )
    status = (
        "PASSED every gate" if record["passed"] else "FAILED a gate (see below); do not ship it as passed"
    )
    cpu_int8 = (speed.get("cpu_int8") or {}).get("best", "unknown")
    bf16 = "yes" if cpu_has_native_bf16() else "no"
    lines = [
        f"# srnet compress of `{record['model']}`",
        "",
        f"**{status}.** {record['level']:.0%} of the attention heads and FFN neurons of every layer "
        f"removed and physically shrunk; recipe: {record['recipe']}; {_recovery(record)}.",
        "",
        _steering(record),
        "",
        f"Timed on {speed['cpu']} (int8: {cpu_int8}; native bf16: {bf16}), "
        f"batch {speed['batch']} x {speed['length']}, {speed['threads']} thread(s), median of "
        f"{speed['rounds']} interleaved rounds: **{speed['speedup']:.2f}x** dense PyTorch FP32 "
        f"({speed['dense_ms']:.1f} -> {speed['compressed_ms']:.1f} ms, runtime {config['runtime']}).",
        "",
        "| model | " + " | ".join(_columns(figures["dense"])) + " | latency (ms) |",
        "|---" * (len(_columns(figures["dense"])) + 2) + "|",
    ]
    for label, f, latency in rows:
        cells = [_pct(v) for v in _values(f)]
        lines.append(
            f"| {label} | " + " | ".join(cells) + f" | {'' if latency is None else f'{latency:.1f}'} |"
        )
    if record["sizing"]["curve"]:
        lines += ["", f"![measured speed-up of each timed level on this machine]({SPEED_FIGURE})"]
    lines += [
        "",
        "## Gates",
        "",
        *[f"- {g['line']}" for g in record["gates"]],
        "",
        "## How to load it",
        "",
        "```python",
        "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
        "model = AutoModelForSequenceClassification.from_pretrained(PATH, trust_remote_code=True)",
        "tokenizer = AutoTokenizer.from_pretrained(PATH)",
        "```",
        "",
        "`trust_remote_code=True` is needed because the shrunk layers keep different numbers of "
        "heads and FFN neurons per layer, which a stock BERT config cannot express; the modeling "
        "code ships in this folder (`srnet.load_model(PATH)` loads it too)."
        + (
            " The ONNX graphs (`model.onnx`, `model.int8.onnx`) run under ONNX Runtime "
            "(`onnxruntime.InferenceSession(PATH + '/model.int8.onnx')`)."
            if config["runtime"] != "torch"
            else ""
        ),
        "",
    ]
    return str(ModelCard.from_template(data, template_str="---\n{{ card_data }}\n---\n\n" + "\n".join(lines)))


def _steering(record: dict[str, Any]) -> str:
    if record["bias"] is None:
        return (
            "No bias was given: this is plain distilled compression. Robustness is measured below "
            "but was not steered."
        )
    return (
        f"Guarded against the shortcut `{record['bias']}`: the teacher is the dense model trained "
        "with product-of-experts (PoE) against that bias model, and the compressed model was "
        "recovered with PoE plus distillation from it; the gates compare with that reference."
    )


def _columns(f: dict[str, Any]) -> list[str]:
    cols = [f"{f['id_split']} (ID)", "hard"]
    for name in f["challenge"]:
        cols += [name, f"{name} gap"]
    return [*cols, "charswap Aua"]


def _values(f: dict[str, Any]) -> list[float | None]:
    values: list[float | None] = [f["id"], f.get("hard")]
    for scores in f["challenge"].values():
        values += [scores["accuracy"], scores.get("gap")]
    return [*values, f.get("charswap_aua")]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"
