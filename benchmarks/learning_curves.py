"""Dev metric against training step for several runs, from their ``log.jsonl`` eval events.

    python benchmarks/learning_curves.py RUN_DIR[=LABEL] ... --out curves.png [--title T]

Each run's line is labelled LABEL, or its ``name`` from config.yaml; ``--chance`` draws a dotted
line at a chance level (e.g. the majority class's share of the dev set).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from srnet.experiments.rundir import RunDir
from srnet.report import new_figure, save_figure


def curve(folder: Path) -> tuple[list[int], list[float]]:
    """(steps, dev metric) of every eval event in the run's log."""
    run = RunDir(folder)
    events = [json.loads(line) for line in run.log.read_text(encoding="utf-8").splitlines() if line.strip()]
    evals = [e for e in events if e.get("event") == "eval" and e.get("dev") is not None]
    return [e["step"] for e in evals], [e["dev"] for e in evals]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders, each optionally followed by =LABEL")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--title", default="Dev accuracy during training")
    parser.add_argument("--ylabel", default="dev accuracy")
    parser.add_argument("--chance", type=float)
    args = parser.parse_args()
    fig = new_figure((7.5, 4.5))
    ax = fig.add_subplot()
    for spec in args.runs:
        folder, _, label = spec.partition("=")
        if not label:
            config = RunDir(Path(folder)).config.read_text(encoding="utf-8")
            label = yaml.safe_load(config).get("name", folder)
        steps, values = curve(Path(folder))
        ax.plot(steps, values, "o-", label=label, markersize=4)
    if args.chance is not None:
        ax.axhline(args.chance, color="grey", ls=":", lw=1, label=f"majority class ({args.chance:g})")
    ax.set_xlabel("training step (batch 32)")
    ax.set_ylabel(args.ylabel)
    ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="outside right upper" if len(args.runs) > 6 else "best")
    print(f"figure: {save_figure(fig, args.out)}")


if __name__ == "__main__":
    main()
