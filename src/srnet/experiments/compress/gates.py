"""The gates a compressed model must pass against its reference (the dense PoE teacher with a
bias, else the user's model): speed, ID accuracy, hard accuracy, each challenge set, the INT8
file against its FP32 student, and no new collapse.

Under ``--gate-rule interval`` (the default) an accuracy gate compares the two models on the same
examples: it passes when the 95% interval of the paired difference (Newcombe's square-and-add,
:mod:`srnet.evaluation.paired`) lies above minus the margin (non-inferiority), so a gate neither
fails a level model nor passes a worse one by chance.  A split too small to show that fails, and
its line gives the interval.  ``points`` compares the accuracies alone (the rule of older studies)."""

from __future__ import annotations

from typing import Literal

from srnet.evaluation.metrics import COLLAPSE_FRACTION
from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.record import Gate, ModelFigures, Speed
from srnet.export.runtimes import get_runtime


def gates(
    config: CompressConfig,
    reference: ModelFigures,
    student: ModelFigures,
    shipped: ModelFigures,
    speed: Speed,
) -> list[Gate]:
    """Each gate: its name, whether it passed, its figures (and interval), and one line."""
    out: list[Gate] = []
    if config.speedup is not None:
        out.append(_speed_gate(speed, config))
    split = shipped.id_split
    compare = _paired_gate if config.gate_rule == "interval" else _points_gate
    out.append(compare("id", reference, shipped, split, None, config.max_id_drop))
    if reference.hard is not None:
        out.append(compare("hard", reference, shipped, split, "hard", config.max_robust_drop))
    for name in reference.challenge:
        out.append(compare(f"challenge {name}", reference, shipped, name, None, config.max_robust_drop))
    if get_runtime(config.runtime).int8:
        out.append(compare("int8", student, shipped, split, None, config.max_id_drop))
    out.append(_collapse_gate(reference, shipped))
    return out


def _speed_gate(speed: Speed, config: CompressConfig) -> Gate:
    """The measured speed-up over the target; a miss on a bench with timing warnings says how to
    time it again (the bench's rounds are not an interval: it cannot tell noise from a real miss)."""
    gate = _threshold_gate("speed", speed.speedup, config.speedup, f"measured speed-up ({config.runtime})")
    if not gate.passed and speed.warnings:
        gate.line += ("; the bench was disturbed (its timing warnings): on idle cores, --resume with "
                      "another --rounds times it again")
    return gate


def _paired_gate(
    name: str,
    reference: ModelFigures,
    shipped: ModelFigures,
    split: str,
    subset: Literal["hard"] | None,
    margin: float,
) -> Gate:
    """Non-inferiority of ``shipped`` against ``reference`` on their per-example predictions."""
    from dataclasses import asdict

    from srnet.evaluation.paired import compare_runs, gate_text, non_inferior

    diff = compare_runs(reference.run, shipped.run, split, subset=subset)
    passed = non_inferior(diff, margin)
    undecided = not passed and diff.difference > -margin / 100  # the estimate is inside the margin
    note = f"; the estimate is inside the margin, but {diff.n} examples cannot show it" if undecided else ""
    return Gate(
        gate=name,
        passed=passed,
        value=diff.difference,
        threshold=-margin / 100,
        line=gate_text(name, diff, margin) + note,
        interval=asdict(diff),
    )


def _points_gate(
    name: str,
    reference: ModelFigures,
    shipped: ModelFigures,
    split: str,
    subset: Literal["hard"] | None,
    margin: float,
) -> Gate:
    """The accuracy at most ``margin`` points below the reference's."""
    ours, theirs = (_accuracy(f, split, subset) for f in (shipped, reference))
    threshold = None if theirs is None else theirs - margin / 100
    what = f"{split} {'hard ' if subset else ''}accuracy"
    return _threshold_gate(name, ours, threshold, what)


def _accuracy(f: ModelFigures, split: str, subset: str | None) -> float | None:
    if split == f.id_split:
        return f.hard if subset else f.id
    return f.challenge[split].accuracy if split in f.challenge else None


def _threshold_gate(name: str, value: float | None, threshold: float | None, text: str) -> Gate:
    passed = value is not None and threshold is not None and value >= threshold - 1e-12
    shown = "n/a" if value is None else f"{value:.4g}"
    limit = "n/a" if threshold is None else f"{threshold:.4g}"
    return Gate(
        gate=name,
        passed=passed,
        value=value,
        threshold=threshold,
        line=f"{'PASS' if passed else 'FAIL'} {name}: {text} {shown} vs required {limit}",
    )


def _collapse_gate(reference: ModelFigures, shipped: ModelFigures) -> Gate:
    new = [name for name in shipped.collapsed if name not in reference.collapsed]
    shared = [name for name in shipped.collapsed if name in reference.collapsed]
    line = (
        f"{'PASS' if not new else 'FAIL'} collapse (one class >= {COLLAPSE_FRACTION:.0%} of the "
        f"predictions, or ID at chance, where the reference does not): {', '.join(new) or 'no split'}"
        + (f" ({', '.join(shared)}: the reference too)" if shared else "")
    )
    return Gate(gate="collapse", passed=not new, value=new, threshold=[], line=line)
