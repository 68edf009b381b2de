"""Run directories: where a run writes, and the environment it records."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torch

from srnet.errors import SrnetError

PACKAGES = ("srnet", "torch", "transformers", "accelerate", "datasets", "tokenizers",
            "safetensors", "scikit-learn", "numpy", "pydantic")

@dataclass(frozen=True)
class RunDir:
    """The files of one run. ``metrics.json`` is written last: its presence means 'complete'."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def environment(self) -> Path:
        return self.root / "environment.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def predictions(self) -> Path:
        return self.root / "predictions"

    @property
    def model(self) -> Path:
        return self.root / "model"

    @property
    def masks(self) -> Path:
        return self.root / "masks.safetensors"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def prepare(self, *, resume: bool, overwrite: bool) -> None:
        """Create the folder; refuse to clobber an earlier run unless asked."""
        started = self.checkpoints.exists() or self.metrics.exists()  # a run that trained or finished
        if started and not (resume or overwrite):
            raise SrnetError(
                f"run directory {self.root} already holds a run; pass --resume to continue it "
                "or --overwrite to start again"
            )
        if overwrite and self.root.exists():

            shutil.rmtree(self.root)
        self.root.mkdir(parents=True, exist_ok=True)

def environment() -> dict:
    """Versions, platform, device and git revision, for reproducibility."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    cuda = torch.cuda.is_available()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch_threads": torch.get_num_threads(),
        "git_commit": _git_commit(),
        "argv": sys.argv,
    }

def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
