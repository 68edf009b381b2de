"""The gates a compressed model must pass against its reference (the dense PoE teacher with a
bias, else the user's model): speed, ID accuracy, hard accuracy, each challenge set, the INT8
file against its FP32 student, and no new collapse."""

from __future__ import annotations

from srnet.evaluation.metrics import COLLAPSE_FRACTION
from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.record import Gate, ModelFigures, Speed
from srnet.export.runtimes import get_runtime


def _gate(name: str, value: float | None, threshold: float | None, text: str) -> Gate:
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


def gates(
    config: CompressConfig,
    reference: ModelFigures,
    student: ModelFigures,
    shipped: ModelFigures,
    speed: Speed,
) -> list[Gate]:
    """Each gate: its name, whether it passed, and one line with the two figures."""
    out: list[Gate] = []
    if config.speedup is not None:
        out.append(_gate("speed", speed.speedup, config.speedup, f"measured speed-up ({config.runtime})"))
    id_drop, robust_drop = config.max_id_drop / 100, config.max_robust_drop / 100
    split = shipped.id_split
    out.append(_gate("id", shipped.id, _minus(reference.id, id_drop), f"{split} accuracy"))
    if reference.hard is not None:
        out.append(_gate("hard", shipped.hard, _minus(reference.hard, robust_drop), f"{split} hard accuracy"))
    for name, scores in reference.challenge.items():
        ours = shipped.challenge[name].accuracy if name in shipped.challenge else None
        out.append(_gate(f"challenge {name}", ours, _minus(scores.accuracy, robust_drop), f"{name} accuracy"))
    if get_runtime(config.runtime).int8:
        out.append(
            _gate(
                "int8",
                shipped.id,
                _minus(student.id, id_drop),
                f"{split} accuracy of the INT8 file as shipped (FP32 student {student.id or 0:.4f})",
            )
        )
    out.append(_collapse_gate(reference, shipped))
    return out


def _collapse_gate(reference: ModelFigures, shipped: ModelFigures) -> Gate:
    new = [name for name in shipped.collapsed if name not in reference.collapsed]
    shared = [name for name in shipped.collapsed if name in reference.collapsed]
    line = (
        f"{'PASS' if not new else 'FAIL'} collapse (one class >= {COLLAPSE_FRACTION:.0%} of the "
        f"predictions, or ID at chance, where the reference does not): {', '.join(new) or 'no split'}"
        + (f" ({', '.join(shared)}: the reference too)" if shared else "")
    )
    return Gate(gate="collapse", passed=not new, value=new, threshold=[], line=line)


def _minus(value: float | None, drop: float) -> float | None:
    return None if value is None else value - drop
