"""The sizing curve as a figure beside the model: the measured speed-up of each timed level, the
target and the chosen level."""

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
