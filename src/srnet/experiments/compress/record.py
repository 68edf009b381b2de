"""``compress.json`` as one typed record (:class:`CompressRecord`: saved and loaded by one class,
read through attributes), and the figures it holds, read from the stages' own records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from srnet.errors import SrnetError
from srnet.experiments.compress.config import RESULT_FILE
from srnet.export.runtimes import TORCH, get_runtime


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SplitScore(_Record):
    accuracy: float | None = None
    gap: float | None = None


class ModelFigures(_Record):
    """One model's figures: ID accuracy, easy/hard, every other evaluated split, charswap."""

    run: str
    id_split: str
    id: float | None = None
    hard: float | None = None
    easy: float | None = None
    runtime: str | None = None
    collapsed: list[str] = []
    challenge: dict[str, SplitScore] = {}
    """Challenge sets (the robustness gates read them)."""
    evaluated: dict[str, SplitScore] = {}
    """Every other evaluated split (e.g. a test split): on the record and the card, not gated."""
    sparsity: float | None = None
    """The run's measured sparsity of the model it trained (with ``--drop-layers``: of the layers
    left; ``dropped_layers`` names the ones removed)."""
    charswap_aua: float | None = None
    charswap_file: str | None = None
    """The file the attack ran on (the shipped graph, or the model folder)."""


class Speed(_Record):
    dense_ms: float
    compressed_ms: float
    speedup: float
    dense_int8_speedup: float | None = None
    batch: int
    length: int
    threads: int
    rounds: int
    cpu: str | None = None
    cpu_int8: dict[str, Any] | None = None
    warnings: list[str] = []
    speedup_batch1: float | None = None
    """The same two models at batch 1 (timed with ``--length auto``)."""
    inputs: dict[str, Any] | None = None
    """What the speed-up holds for: the batch and, from the dev split, its token lengths."""

    def shape(self) -> str:
        """What was timed, in words: ``batch 32 x 128 tokens`` or the data split's lengths."""
        lengths = (self.inputs or {}).get("lengths")
        if not lengths:
            return f"batch {self.batch} x {self.length} tokens"
        return (
            f"batch {self.batch} drawn from {self.inputs['split']} (median {lengths['median']:g} tokens, "
            f"95th percentile {lengths['p95']:g}; padded per batch to {lengths['padded_mean']:.0f} on "
            "average)"
        )


class Gate(_Record):
    gate: str
    passed: bool
    value: Any = None
    threshold: Any = None
    line: str
    interval: dict[str, Any] | None = None
    """The paired difference from the reference with its 95% interval, where the gate has one."""


class FrontierPoint(_Record):
    """One model on the speed-robustness frontier: its measured speed-up and its accuracies."""

    label: str
    speedup: float
    id: float | None = None
    hard: float | None = None


class Recovery(_Record):
    epochs: float | None = None
    max_steps: int | None = None
    lr: float
    distill: str = "plain"
    """Records older than --recovery-distill ran the plain KL."""
    gradual: float = 0.0
    """The fraction of the recovery over which the cut deepened (0: cut before it)."""


def cut_words(level: float, dropped: list[int]) -> str:
    """The cut in a few words: the layers removed whole and the level of heads and neurons."""
    layers = f"layers {', '.join(map(str, dropped))} removed" if dropped else ""
    heads = f"{level:.0%} of the heads and FFN neurons of every {'remaining ' if dropped else ''}layer"
    if not level:
        return f"{layers}, no head or neuron cut" if dropped else "no cut (the dense model in the runtime)"
    return f"{layers} and {heads}" if dropped else heads


class CompressRecord(_Record):
    """``compress.json``."""

    passed: bool
    exit_code: int
    model: str
    recipe: str
    recovery: Recovery | None = None
    config: dict[str, Any]
    level: float
    sizing: dict[str, Any]
    reference: str
    figures: dict[str, ModelFigures]
    speed: Speed
    gates: list[Gate]
    elapsed_s: float
    peak_rss_mb: float
    stages: dict[str, str]
    dropped_layers: list[int] = []
    """The original layers (0-based) the shipped model lacks (``--drop-layers``), as its config
    records them."""
    reused: dict[str, str] = {}
    """Stage -> the earlier compression's folder ``--reuse`` copied it from (``elapsed_s`` leaves
    their time out)."""
    bias: str | None = None
    base_model: str | None = None
    labels: list[str] = []
    datasets: list[str] = []
    frontier: list[FrontierPoint] = []
    """Every trained model at its measured speed-up (no untimed or untrained point)."""
    hashed: dict[str, str] = {}
    """File -> SHA-256 of what the model folder ships (from its srnet_export.json)."""

    def save(self, folder: Path) -> None:
        from srnet.io import atomic_write_json

        atomic_write_json(folder / RESULT_FILE, self.model_dump(mode="json"))

    @classmethod
    def load(cls, folder: Path) -> CompressRecord:
        """The record in ``folder``; one line naming the file when it is not one."""
        path = Path(folder) / RESULT_FILE
        try:
            return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, ValueError, RecursionError, ValidationError) as exc:
            why = _why(exc)
            raise SrnetError(
                f"{path}: not a compression record ({why}); delete it and resume to rescore the kept stages"
            ) from None


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'file'}: {first['msg']}"
    return type(exc).__name__


def model_figures(run: str | Path, attack_stage: str | Path | None = None) -> ModelFigures:
    """ID accuracy, easy/hard, every other split (accuracy, gap, collapse) of one finished run, from
    its own records, and the charswap accuracy under attack that the compression's own attack stage
    (``attack_stage``, its folder) wrote for it: never another attack's result in the same run."""
    from srnet.rundir.record import read_metrics

    metrics = read_metrics(run)
    (split, scores), *others = metrics.id.items()
    easy_hard = scores.get("easy_hard") or {}
    figures = ModelFigures(
        run=str(run),
        id_split=split,
        id=scores.get("accuracy"),
        hard=easy_hard.get("hard"),
        easy=easy_hard.get("easy"),
        runtime=metrics.evaluated_by,
        collapsed=sorted(name for name, s in {**metrics.id, **metrics.ood}.items() if s.get("collapsed")),
        challenge={name: _score(s) for name, s in metrics.ood.items()},
        evaluated={name: _score(s) for name, s in others},
        sparsity=metrics.sparsity.overall if metrics.sparsity else None,
    )
    attack = stage_attack_file(run, attack_stage) if attack_stage is not None else None
    if attack is not None:
        summary = json.loads(attack.read_text(encoding="utf-8"))
        figures.charswap_aua = summary.get("aua")
        figures.charswap_file = attacked_file(summary)
    return figures


def stage_attack_file(run: str | Path, attack_stage: str | Path, attack: str = "charswap") -> Path | None:
    """The ``attack`` summary the attack stage in ``attack_stage`` wrote for ``run``: in the stage's
    own sub-folder of the run, or, for a stage of an older srnet, the run's ``attack/<attack>.json``
    that one of the stage's ``.done`` markers names (None when the stage attacked nothing there)."""
    from srnet.rundir.layout import ATTACKS_DIR, stage_attack_dir

    own = stage_attack_dir(run, attack_stage) / f"{attack}.json"
    if own.is_file():
        return own
    legacy = Path(run) / ATTACKS_DIR / f"{attack}.json"
    tail = (Path(run).name, ATTACKS_DIR, legacy.name)
    named = (Path(m.read_text(encoding="utf-8").strip()).parts[-3:]
             for m in Path(attack_stage).glob(f"*_{attack}.done"))
    return legacy if legacy.is_file() and tail in named else None


def _score(scores: dict[str, Any]) -> SplitScore:
    return SplitScore(accuracy=scores.get("primary", scores.get("accuracy")), gap=scores.get("shortcut_gap"))


def attacked_file(summary: dict[str, Any]) -> str:
    """The file an attack ran on, from its own summary: the shipped graph, or the PyTorch weights."""
    graph = (summary.get("runtime") or {}).get("graph") or {}
    if graph.get("source") == "shipped" and graph.get("file"):
        return Path(graph["file"]).name
    if graph:
        return "a graph built in memory from model.safetensors"
    return "model.safetensors (PyTorch)"


def bench_figures(bench_file: str | Path, runtime: str, batch: int | None = None) -> Speed:
    """Dense PyTorch FP32 latency and the export's under ``runtime`` at ``batch`` (default: the
    first timed), their ratio, and the ratio at batch 1 where that was timed."""
    bench = json.loads(Path(bench_file).read_text(encoding="utf-8"))
    label = get_runtime(runtime).bench_label
    rows = bench["rows"]
    batch = rows[0]["batch"] if batch is None else batch
    dense, export, int8_dense = _cell(rows, batch, label, get_runtime(runtime).int8)
    single = _cell(rows, 1, label, False)[1] if batch != 1 and any(r["batch"] == 1 for r in rows) else None
    cells = [c for c in bench.get("inputs", []) if c.get("batch") == batch]
    env = bench["environment"]
    return Speed(
        dense_ms=dense["latency_ms"],
        compressed_ms=export["latency_ms"],
        speedup=export["speedup"],
        dense_int8_speedup=int8_dense["speedup"] if int8_dense else None,
        batch=dense["batch"],
        length=round(dense["length"]),
        threads=bench["threads"],
        rounds=bench["rounds"],
        cpu=env.get("cpu"),
        cpu_int8=env.get("cpu_int8"),
        warnings=bench.get("warnings", []),
        speedup_batch1=single["speedup"] if single else None,
        inputs=cells[0] if cells else None,
    )


def _cell(rows: list[dict[str, Any]], batch: int, label: str, int8: bool) -> tuple[Any, Any, Any]:
    """(dense PyTorch row, the export's row under ``label``, the dense model's row under it) at ``batch``."""
    cell = [r for r in rows if r["batch"] == batch]
    dense = next(r for r in cell if r["runtime"] == TORCH.bench_label)
    export = next(r for r in cell if r["model"] != dense["model"] and r["runtime"] == label)
    int8_dense = next((r for r in cell if r["model"] == dense["model"] and r["runtime"] == label), None)
    return dense, export, int8_dense if int8 else None
