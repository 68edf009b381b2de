"""Section ``learning_curves``: the dev metric against the training step, one line per run.

From each run's ``log.jsonl`` eval events (runs that trained and evaluated during training);
lines are named by configuration (with the seed, or the run folder, when a configuration has
several runs); a dotted line marks the dev split's majority-class share when the runs agree on it.
"""

from __future__ import annotations

import json
from pathlib import Path

from srnet.reporting.render import new_figure, save_figure
from srnet.reporting.runs import Run
from srnet.reporting.study.base import Part, RunSet, SetSection, Study, display, register_section
from srnet.rundir.layout import RunDir


def eval_curve(folder: Path) -> tuple[list[int], list[float]]:
    """(steps, dev metric) of every eval event in a run's ``log.jsonl`` (empty lists without one)."""
    log = RunDir(folder).log
    if not log.is_file():
        return [], []
    events = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a run killed mid-line leaves a cut last line
    evals = [e for e in events
             if isinstance(e, dict) and e.get("event") == "eval" and e.get("dev") is not None]
    return [e["step"] for e in evals], [e["dev"] for e in evals]


@register_section("learning_curves")
class LearningCurves(SetSection):
    """The dev metric during training of every run of the set."""

    order = 60

    def applies(self, study: Study, runs: RunSet) -> bool:
        return study.figures and any(eval_curve(run.path)[0] for run in runs.cohort.runs)

    def render(self, study: Study, runs: RunSet) -> Part:
        cohort = runs.cohort
        split = cohort.id_splits[0] if cohort.id_splits else None
        scheme = cohort.scheme(split) if split else None
        metric = scheme.metric.replace("_", " ") if scheme else "metric"
        curves = []
        for group in runs.groups:
            for run in group.runs:
                steps, values = eval_curve(run.path)
                if steps:
                    name = display(group, sparsity=True)
                    several = len(group.runs) > 1 and run.seed is not None
                    curves.append((f"{name} seed {run.seed}" if several else name, run, steps, values))
        names = [name for name, *_ in curves]
        lines = [(f"{name} ({run.path.name})" if names.count(name) > 1 else name, steps, values)
                 for name, run, steps, values in curves]
        fig = new_figure((7.5, 4.5))
        ax = fig.add_subplot()
        for i, (name, steps, values) in enumerate(lines):  # past 10 lines the colours repeat: dashed
            ax.plot(steps, values, marker="o", ls=("-", "--", ":")[i // 10 % 3], color=f"C{i % 10}",
                    label=name, markersize=4)
        chance = _majority(cohort.runs, split)
        if chance is not None:
            ax.axhline(chance, color="grey", ls=":", lw=1, label=f"majority class ({chance:.3g})")
        ax.set_xlabel("training step")
        ax.set_ylabel(f"dev {metric}" + (f" ({split})" if split else ""))
        title = f"{cohort.title}: dev {metric} during training"
        fig.suptitle(title, fontsize=9)
        ax.grid(alpha=0.3)
        if len(lines) > 6:
            fig.legend(fontsize=7, loc="outside right center")
        else:
            ax.legend(fontsize=7, loc="best")
        path = save_figure(fig, study.out / f"{runs.prefix}_learning_curves.png")
        return Part(figures=[(title, path)])


def _majority(runs: list[Run], split: str | None) -> float | None:
    """The dev split's majority-class share when every run that recorded it agrees."""
    if split is None:
        return None
    blocks = [(run.metrics.id.get(split) or {}).get("majority") for run in runs]
    shares = {round(float(m["fraction"]), 6) for m in blocks if isinstance(m, dict) and "fraction" in m}
    return shares.pop() if len(shares) == 1 else None
