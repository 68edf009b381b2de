"""Resumable training checkpoints, written atomically as whole folders: the model's tensors
(``model.safetensors``), the optimizer, scheduler, method and RNG states (``trainer.pt``) and where
training stands, as JSON (``trainer_state.json``, as transformers' ``Trainer`` writes it)."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_model, save_model

from srnet.io import atomic_folder

TRAINER_STATE = "trainer_state.json"
"""Where training stands, beside a resumable checkpoint's tensors (a ``trainer.pt`` written before
it holds the same fields under ``state``)."""


@dataclass
class TrainState:
    """Where training stands; saved with every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_metric: float | None = None
    best_step: int | None = None

    @classmethod
    def restored(cls, saved: object) -> TrainState:
        """The state a checkpoint recorded; TypeError when ``saved`` is not one."""
        if not isinstance(saved, dict):
            raise TypeError(f"state is a {type(saved).__name__}")
        state = cls(**saved)  # TypeError on a key TrainState does not have
        counts = (state.step, state.epoch, state.batch_in_epoch, state.best_step or 0)
        if not all(isinstance(n, int) and n >= 0 for n in counts) or not isinstance(
                state.best_metric, int | float | None):
            raise TypeError(f"state {saved}")
        return state


def write_train_state(state: TrainState, path: Path) -> None:
    """``state`` as a JSON object of its fields."""
    path.write_text(json.dumps(asdict(state), indent=2) + "\n", encoding="utf-8")


def read_train_state(path: Path) -> TrainState:
    """What :func:`write_train_state` wrote; ValueError or TypeError when it is not that."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable: {exc}") from None
    return TrainState.restored(saved)


@dataclass(frozen=True)
class TrainerFiles:
    """Where a trainer writes: plain paths (the caller decides the layout, e.g. a run folder)."""

    last: Path
    """Resumable last checkpoint folder (model, optimizer, scheduler, RNG)."""
    best: Path
    """Selected checkpoint folder (model state and exact masks)."""
    log: Path
    """JSON Lines log, appended to."""
    intermediate: Path
    """Folder of the ``step_<N>`` exports of ``training.save_at_steps``."""
    tensorboard: Path
    """TensorBoard folder (``training.tensorboard``)."""


def save_folder_atomically(target: Path, write) -> None:
    """Call ``write(tmp_dir)`` and swap the finished folder into place of ``target``.

    A failed write (e.g. a full disk) leaves no half-written folder behind, nor an empty
    ``checkpoints/`` folder that would make a plain rerun look like a started run.
    """
    parent_existed = target.parent.exists()
    try:
        atomic_folder(target, write)
    except BaseException:
        if not parent_existed and target.parent.is_dir() and not any(target.parent.iterdir()):
            target.parent.rmdir()
        raise


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch (CPU and CUDA) random states."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    # no ndarray, so torch.load(weights_only=True) reads it back
    numpy_state = [name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached]
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.int64).astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_model_state(model: torch.nn.Module, path: Path) -> None:
    """Full state dict (parametrization originals and mask scores included) as safetensors."""
    save_model(model, str(path))


def load_model_state(model: torch.nn.Module, path: Path) -> None:
    """Strictly load what :func:`save_model_state` wrote."""
    load_model(model, str(path), strict=True)
