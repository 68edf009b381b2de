"""The figures beside the model: the sizing curve (the measured speed-up of each timed level, the
target and the chosen level) and the speed-robustness frontier (every trained model at its
measured speed-up)."""

from __future__ import annotations

from pathlib import Path

from srnet.experiments.compress.record import CompressRecord
from srnet.experiments.compress.sizing import Sizing


def speed_figure(sizing: Sizing, record: CompressRecord, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runtime, target = record.config["runtime"], record.config.get("speedup")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(
        [p.level for p in sizing.curve], [p.speedup for p in sizing.curve], "o-", label=f"timed ({runtime})"
    )
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", label=f"target {target:g}x")
    ax.axvline(sizing.level, color="tab:red", linestyle=":", label=f"chosen {sizing.level:.0%}")
    ax.set_xlabel("heads and FFN neurons removed (0: no cut)")
    ax.set_ylabel("speed-up vs dense PyTorch FP32")
    ax.set_title(f"{record.speed.shape()}, {record.speed.threads} thread(s)", fontsize=7)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)


def frontier_figure(record: CompressRecord, path: Path) -> None:
    """Hard accuracy (ID where there is no hard split) against the measured speed-up of each
    trained model on the record's frontier; an untrained level is never drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hard = all(p.hard is not None for p in record.frontier)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for point in record.frontier:
        y = point.hard if hard else point.id
        ax.plot(point.speedup, 100 * (y or 0), "o")
        ax.annotate(
            point.label,
            (point.speedup, 100 * (y or 0)),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set_xlabel(f"speed-up vs dense PyTorch FP32 ({record.speed.shape()})", fontsize=7)
    ax.set_ylabel(f"{record.figures['shipped'].id_split} {'hard ' if hard else ''}accuracy (%)")
    ax.set_title("speed and robustness of every trained model", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
