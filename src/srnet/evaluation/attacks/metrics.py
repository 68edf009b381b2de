"""TextAttack's summary of an attack run: counts, Clean%, Aua%, Suc% and #Query."""

from __future__ import annotations

from collections.abc import Sequence

from srnet.evaluation.attacks.base import AttackOutcome


def attack_metrics(outcomes: Sequence[AttackOutcome]) -> dict:
    """Counts and rates (fractions in [0, 1]) over ``outcomes``.

    ``clean`` = (successful + failed) / total, ``aua`` (accuracy under attack) = failed / total,
    ``success_rate`` = successful / (successful + failed); ``avg_queries`` = mean queries over the
    attacked examples (skipped ones excluded).
    """
    total = len(outcomes)
    counts = {r: sum(o.result == r for o in outcomes) for r in ("successful", "failed", "skipped")}
    attacked = [o for o in outcomes if o.result != "skipped"]
    done = counts["successful"] + counts["failed"]
    return {
        "total": total,
        "attacked": len(attacked),
        **counts,
        "clean": done / total if total else 0.0,
        "aua": counts["failed"] / total if total else 0.0,
        "success_rate": counts["successful"] / done if done else 0.0,
        "avg_queries": sum(o.queries for o in attacked) / len(attacked) if attacked else 0.0,
    }
