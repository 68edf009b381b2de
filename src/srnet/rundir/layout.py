"""Run directories: where a run writes, and the environment it records."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from srnet.errors import NeedsOption, SrnetError
from srnet.machine import cpu_model
from srnet.training.checkpoint import TrainerFiles

PACKAGES = ("srnet", "torch", "transformers", "accelerate", "datasets", "tokenizers",
            "safetensors", "scikit-learn", "numpy", "pydantic")

COMPLETE = "stage.json"
"""A sweep stage's record in its folder, written last: its presence means the stage is complete."""

ATTACK_COLUMNS = {"Clean%": "clean", "Aua%": "aua", "Suc%": "success_rate", "#Query": "avg_queries"}
"""Attack table column -> the ``attack/<name>.json`` key (rates as percentages, #Query as is)."""


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

    @property
    def last_checkpoint(self) -> Path:
        """The trainer's resumable state (model, optimizer, scheduler, RNG)."""
        return self.checkpoints / "last"

    @property
    def best_checkpoint(self) -> Path:
        """The trainer's best model state and its exact masks."""
        return self.checkpoints / "best"

    @property
    def log(self) -> Path:
        return self.root / "log.jsonl"

    @property
    def intermediate(self) -> Path:
        """Models exported at ``training.save_at_steps`` (``step_<N>`` folders)."""
        return self.root / "intermediate"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tensorboard"

    def trainer_files(self) -> TrainerFiles:
        """Where this run's trainer writes its checkpoints, log and intermediate exports."""
        return TrainerFiles(last=self.last_checkpoint, best=self.best_checkpoint, log=self.log,
                            intermediate=self.intermediate, tensorboard=self.tensorboard)

    @property
    def lock(self) -> Path:
        """Held while a process runs into this folder (:mod:`srnet.rundir.locks`); beside the folder,
        which ``--overwrite`` and the recovery of a killed one rename."""
        return self.root.with_name(f".{self.root.name}.lock")

    @property
    def complete(self) -> bool:
        return self.metrics.is_file()

    def staging(self) -> RunDir:
        """The hidden sibling an ``--overwrite`` run is written into before it replaces this one."""
        return RunDir(self.root.with_name(f".{self.root.name}.overwrite"))

    def check_free(self, *, resume: bool, overwrite: bool) -> None:
        """Refuse to clobber an earlier run unless asked (nothing is touched here)."""
        started = self.checkpoints.exists() or self.metrics.exists()  # a run that trained or finished
        if started and not (resume or overwrite):
            raise NeedsOption(f"run directory {self.root} already holds a run; pass resume=True to "
                              "continue it or overwrite=True to start again", "resume", "overwrite")

    def recover(self) -> str | None:
        """Finish what a killed ``--overwrite`` left half done, and clear a killed finish's debris;
        returns a note of what was done (None when nothing was).

        A kill between ``replace``'s two renames leaves no run at ``root``: the old one is in
        ``.<name>.replaced`` and the new one in ``.<name>.overwrite``.  The new run wins when it is
        complete; otherwise the old one is put back.  A kill after both renames leaves a stale
        ``.replaced``; a kill while files were written leaves hidden ``.*.tmp`` files or folders.
        """
        notes = []
        old = self.root.with_name(f".{self.root.name}.replaced")
        new = self.staging()
        if old.exists() and not self.root.exists():
            if new.complete:
                new.root.rename(self.root)
                notes.append(f"finished the interrupted --overwrite of {self.root} (the new run)")
            else:
                old.rename(self.root)
                notes.append(f"restored {self.root} (its interrupted --overwrite had not finished)")
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        debris = sorted(self.root.rglob(".*.tmp")) if self.root.is_dir() else []
        for path in debris:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if debris:
            notes.append(f"removed {len(debris)} unfinished temporary file(s) from {self.root}")
        return "; ".join(notes) or None

    def replace(self, target: RunDir) -> None:
        """Swap this (finished) run into ``target``'s place; the old run is removed only then."""
        old = target.root.with_name(f".{target.root.name}.replaced")
        shutil.rmtree(old, ignore_errors=True)
        if target.root.exists():
            target.root.rename(old)
        self.root.rename(target.root)
        shutil.rmtree(old, ignore_errors=True)


def environment() -> dict:
    """Versions, platform, CPU, device and git revision, for reproducibility."""
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
        "cpu": cpu_model(),
        "packages": versions,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch_threads": torch.get_num_threads(),
        "git_commit": LOADED_COMMIT,
        "argv": sys.argv,
    }

def _git_commit() -> str | None:
    """The checkout's HEAD; where the code runs from a copy without ``.git`` (a remote machine),
    the commit its launcher names in ``SRNET_GIT_COMMIT``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).parent,
        )
        head = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        head = ""
    return head or os.environ.get("SRNET_GIT_COMMIT") or None


LOADED_COMMIT = _git_commit()
"""The checkout's commit when this process imported srnet: a long-lived sweep worker keeps the
code it imported, so a run records the commit it runs, not the one checked out when it starts."""


ATTACKS_DIR = "attack"
"""A run's attack results: ``attack/<name>.json`` from ``srnet attack``, ``attack/<stage key>/<name>.json``
from a sweep's attack stage (each stage writes only in its own sub-folder, so no stage replaces
results it did not write)."""


def stage_attack_dir(run: str | Path, stage_folder: str | Path) -> Path:
    """Where the sweep attack stage in ``stage_folder`` writes its results for ``run``."""
    return Path(run) / ATTACKS_DIR / Path(stage_folder).name


def attack_files(root: Path) -> list[Path]:
    """Every attack summary of a run directory: ``attack/<name>.json`` and ``attack/<key>/<name>.json``."""
    folder = root / ATTACKS_DIR
    return sorted([*folder.glob("*.json"), *folder.glob("*/*.json")])


def load_attacks(root: Path) -> dict[str, dict[str, Any]]:
    """Attack name -> summary, for every attack summary of a run directory (:func:`attack_files`);
    two results of one attack (two stages, or a stage and ``srnet attack``) are refused in one line
    rather than one chosen silently."""
    out: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    for path in attack_files(root):
        if path.stem in where:
            raise SrnetError(f"{path}: a second '{path.stem}' result for this run (the first: "
                             f"{where[path.stem]}); move one out of the run's attack folder")
        where[path.stem] = path
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SrnetError(f"{path}: unreadable attack summary ({type(exc).__name__})") from None
        if not isinstance(summary, dict) or not all(k in summary for k in ATTACK_COLUMNS.values()):
            raise SrnetError(f"{path}: not an attack summary (needs {sorted(ATTACK_COLUMNS.values())})")
        out[path.stem] = summary
    union = union_summary(out)
    return out | ({UNION + "+".join(union["attacks"]): union} if union else {})


UNION = "union:"
"""Name prefix of the pseudo-attack a run gets when it was attacked by several attacks on the same
examples (``union:charswap+textfooler``): a sentence survives only if it survives every one (the
Robust Tickets paper reads its table so). The members are in the name, so runs attacked by other
sets of attacks are never averaged together."""


def union_summary(summaries: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Aua over the sentences that survive every attack in ``summaries`` (each with its
    ``survivors``, on the same split, seed and examples); None for fewer than two such attacks."""
    kept = {name: s for name, s in summaries.items() if isinstance(s.get("survivors"), list)}
    same = {(s.get("split"), s.get("seed"), s.get("total"), s.get("attacked")) for s in kept.values()}
    if len(kept) < 2 or len(same) != 1:
        return None
    first = next(iter(kept.values()))
    survivors = set.intersection(*(set(s["survivors"]) for s in kept.values()))
    total, attacked = first["total"], first["attacked"]
    return {"attacks": sorted(kept), "split": first.get("split"), "total": total, "attacked": attacked,
            "clean": first["clean"], "aua": len(survivors) / total if total else 0.0,
            "success_rate": 1 - len(survivors) / attacked if attacked else 0.0,
            "avg_queries": sum(s["avg_queries"] for s in kept.values())}
