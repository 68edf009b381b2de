"""The training loop on Hugging Face Accelerate, shared by fine-tuning and every pruning method.

The loop owns optimisation (AdamW, linear warm-up/decay, clipping, accumulation), the
evaluation cadence, best-checkpoint choice on the ID dev metric only, resumable
checkpoints and logging.  The step itself is :func:`srnet.training.objectives.train_step` with a
registered objective (``standard``, ``freelb``) and a registered loss.  A pruning method plugs in
through its small interface (``mask_group``, ``penalty``, ``on_step``, ``freeze``, ``masks``;
``calibrate`` on the first training batches for one that ``calibrates``); dense training is the
``dense`` method, whose mask set is empty.

In a multi-process run (``accelerate launch``) every rank trains and evaluates; only the main
process writes checkpoints, exports and logs, and the others wait for it after each write.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import pickle
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from accelerate.utils import send_to_device
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from srnet.errors import NeedsOption, SrnetError
from srnet.export import export_model
from srnet.io import first_line
from srnet.losses import Loss
from srnet.pruning.base import Calibration, PruningMethod
from srnet.pruning.lifecycle import attach
from srnet.sparsity.mask_io import MaskMetadata, load_masks, save_masks
from srnet.training.checkpoint import (
    TRAINER_STATE,
    TrainerFiles,
    TrainState,
    load_model_state,
    read_train_state,
    rng_state,
    save_folder_atomically,
    save_model_state,
    set_rng_state,
    write_train_state,
)
from srnet.training.config import TrainingConfig
from srnet.training.data import Collator, EncodedDataset, LengthGroupedBatchSampler
from srnet.training.objectives import Objective, Standard, loss_backward, train_step
from srnet.training.precision import make_accelerator, resolve_mixed_precision

log = logging.getLogger("srnet.training")

DevMetric = Callable[[torch.nn.Module], float]
"""Evaluates the model (already frozen and in eval mode) on the ID dev split; higher is better."""


CHECKPOINT_KEYS = ("optimizer", "scheduler", "method", "rng")
"""What ``trainer.pt`` holds beside the model's ``model.safetensors`` and ``trainer_state.json``."""


def is_main_process() -> bool:
    """True in a single-process run and on rank 0 of an ``accelerate launch`` (read from the
    launcher's ``RANK``, so it can be asked before any Accelerator exists)."""
    return int(os.environ.get("RANK", "0")) == 0


def total_steps(cfg: TrainingConfig, num_examples: int, num_processes: int = 1) -> int:
    """Optimizer steps implied by ``max_steps`` or ``epochs`` (each process takes ``batch_size``
    examples per micro-batch, so ``num_processes`` share an epoch's batches)."""
    if cfg.max_steps is not None:
        return cfg.max_steps
    batches = math.ceil(math.ceil(num_examples / cfg.batch_size) / num_processes)
    per_epoch = math.ceil(batches / cfg.grad_accum)
    return max(1, math.ceil(per_epoch * cfg.epochs))


def eval_interval(cfg: TrainingConfig, batches_per_epoch: int) -> int:
    """Optimizer steps between dev evaluations: ``eval_every``, else once per epoch (the loop also
    evaluates at its last step)."""
    return cfg.eval_every or max(1, math.ceil(batches_per_epoch / cfg.grad_accum))


def mask_digest(masks: dict[str, torch.Tensor]) -> int:
    """A 63-bit digest of a mask set (names, shapes and bits), to compare masks across processes."""
    h = hashlib.sha256()
    for name in sorted(masks):
        h.update(name.encode())
        h.update(str(tuple(masks[name].shape)).encode())
        h.update(masks[name].detach().to("cpu", torch.uint8).contiguous().numpy().tobytes())
    return int.from_bytes(h.digest()[:8], "big") >> 1


def weight_param_groups(
    model: torch.nn.Module, lr: float, weight_decay: float, only: set[int] | None = None
) -> list[dict]:
    """AdamW groups for trainable weights (or those whose ``id`` is in ``only``): no decay on
    biases and LayerNorm."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad or (only is not None and id(param) not in only):
            continue
        (no_decay if param.ndim < 2 or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "lr": lr, "weight_decay": weight_decay, "name": "weights"}]
    if no_decay:
        groups.append({"params": no_decay, "lr": lr, "weight_decay": 0.0, "name": "weights"})
    return [g for g in groups if g["params"]]


def optimizer_groups(method: PruningMethod, model: torch.nn.Module, lr: float,
                     weight_decay: float = 0.0) -> list[dict]:
    """A run's AdamW groups: the method's mask group as it gives it (its own lr, no decay), then
    every other trainable parameter at ``lr`` (:func:`weight_param_groups`)."""
    mask_group = method.mask_group()
    groups = [mask_group] if mask_group else []
    masks = {id(p) for g in groups for p in g["params"]}
    trained = {id(p) for p in model.parameters() if p.requires_grad}
    return groups + weight_param_groups(model, lr, weight_decay, trained - masks)


def _tensorboard(files: TrainerFiles) -> object:
    """A TensorBoard writer into the run's folder (``training.tensorboard``)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise SrnetError(
            "training.tensorboard needs the tensorboard package: pip install 'srnet[tensorboard]'"
        ) from None
    return SummaryWriter(str(files.tensorboard))


class Trainer:
    """Trains ``model`` on ``train_set``; every file goes where ``files`` says: its resumable last
    checkpoint, selected checkpoint (model state + exact masks), log, intermediate exports and
    TensorBoard folder.  ``mask_metadata`` describes the masks it saves.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer,
        train_set: EncodedDataset,
        cfg: TrainingConfig,
        loss_fn: Loss,
        files: TrainerFiles,
        *,
        seed: int,
        method: PruningMethod,
        objective: Objective | None = None,
        dev_metric: DevMetric | None = None,
        mask_metadata: Callable[[dict[str, torch.Tensor]], MaskMetadata] | None = None,
    ) -> None:
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.model = model
        self.loss_fn = loss_fn
        self.method = method
        self.objective = objective if objective is not None else Standard()
        self.dev_metric = dev_metric
        self.mask_metadata = mask_metadata
        self.files = files
        self.seed = seed
        self.precision = resolve_mixed_precision(cfg.mixed_precision)
        self.accelerator = make_accelerator(self.precision, cfg.grad_accum)
        self.steps = total_steps(cfg, len(train_set), self.accelerator.num_processes)
        self.sampler = LengthGroupedBatchSampler(
            train_set.lengths, cfg.batch_size, seed, cfg.group_by_length
        )
        # the loader's own generator: creating an iterator must not draw from the global RNG,
        # or a resumed run's dropout would be one draw off the uninterrupted run's
        self.loader = DataLoader(
            train_set, batch_sampler=self.sampler, collate_fn=Collator(tokenizer, train_set.extras),
            generator=torch.Generator().manual_seed(seed),
        )
        def calibration() -> Calibration:  # e.g. omp with gradient importance: the first batches
            model.to(self.accelerator.device)
            return Calibration(self._first_batches(), loss_backward(self.objective, loss_fn))

        attach(method, model, self.steps, calibration=calibration,
               setup=lambda: self.objective.setup(model, tokenizer))
        groups = optimizer_groups(method, model, cfg.lr, cfg.weight_decay)
        if not groups:
            raise SrnetError("nothing to train: every parameter is frozen")
        self.optimizer = torch.optim.AdamW(groups, lr=cfg.lr)
        self.scheduler = get_linear_schedule_with_warmup(
            self.optimizer, int(cfg.warmup_ratio * self.steps), self.steps
        )
        # the loader goes through Accelerate too, so accumulation windows end with each epoch; the
        # scheduler does not (Accelerate would step it once per process): it steps once per
        # optimizer step, so N processes x batch B follow the schedule of 1 process x batch N*B
        self.model, self.optimizer, self.loader = self.accelerator.prepare(
            self.model, self.optimizer, self.loader
        )
        self.state = TrainState()
        self.last_dir, self.best_dir, self.log_path = files.last, files.best, files.log
        self._tb = _tensorboard(files) if cfg.tensorboard and self.accelerator.is_main_process else None

    # ----------------------------------------------------------------- public API
    @property
    def unwrapped(self) -> torch.nn.Module:
        """The model without its distributed wrapper (its forward still autocasts under mixed
        precision: dev evaluations during training run in the training precision)."""
        return self.accelerator.unwrap_model(self.model)

    def trained_model(self) -> torch.nn.Module:
        """The model after training, in fp32: Accelerate's autocast wrapper is removed for good,
        so final evaluations and exports describe the fp32 model a user loads."""
        return self.accelerator.unwrap_model(self.model, keep_fp32_wrapper=False)

    def train(self, resume: bool = False) -> TrainState:
        """Run (or continue) training to ``self.steps`` optimizer steps."""
        if resume:
            self._resume()
        cfg = self.cfg
        eval_every = eval_interval(cfg, len(self.loader))
        save_every = cfg.checkpoint_every or eval_every
        bar = tqdm(total=self.steps, initial=self.state.step, desc="train", dynamic_ncols=True,
                   disable=not self.accelerator.is_main_process)
        self.model.train()
        running, started = [], time.perf_counter()
        while self.state.step < self.steps:
            self.sampler.set_epoch(self.state.epoch)
            loader = self.accelerator.skip_first_batches(self.loader, self.state.batch_in_epoch)
            for batch in loader:
                self.state.batch_in_epoch += 1
                with self.accelerator.accumulate(self.model):
                    logs = train_step(
                        self.model, batch, self.objective, self.loss_fn, self.optimizer,
                        progress=self.state.step / self.steps,
                        penalty=self.method.penalty, backward=self.accelerator.backward, clip=self._clip,
                    )
                running.append({k: self._mean_over_processes(v) for k, v in logs.items()})
                if not self.accelerator.sync_gradients:
                    continue
                if not self.optimizer.step_was_skipped:  # fp16: an inf/nan step is skipped
                    self.scheduler.step()
                self.state.step += 1
                bar.update(1)
                if self.method.on_step(self.state.step):
                    self.optimizer.state.clear()
                step = self.state.step
                if step % cfg.log_every == 0 or step == self.steps:
                    self._log_train(running, started, bar)
                    running, started = [], time.perf_counter()
                if step % eval_every == 0 or step == self.steps:
                    self._evaluate()
                if step in cfg.save_at_steps:
                    self._export_intermediate()
                if step % save_every == 0 or step == self.steps:
                    self._save_last()
                if step >= self.steps:
                    break
            else:
                self.state.epoch += 1
                self.state.batch_in_epoch = 0
        bar.close()
        if self.cfg.select == "last" or self.state.best_step is None:
            # select: last, no dev split, or never eligible: the last state is the result
            self.state.best_step = self.state.step
            self._save_best()
        if self._tb is not None:
            self._tb.close()
        return self.state

    def load_best(self) -> dict[str, torch.Tensor] | None:
        """Load the best model state; return its exact masks (None when the method masks nothing)."""
        load_model_state(self.unwrapped, self.best_dir / "model.safetensors")
        masks_path = self.best_dir / "masks.safetensors"
        return load_masks(masks_path)[0] if masks_path.exists() else None

    # ----------------------------------------------------------------- internals
    def _first_batches(self) -> Iterator[dict[str, torch.Tensor]]:
        """The batches of the first epoch in training order, on the device; the loader before
        Accelerate shards it, so every process sees the same batches (and decides the same mask)."""
        loader, device = self.loader, self.accelerator.device
        return (send_to_device(batch, device) for batch in loader)

    def _trained_params(self) -> list[torch.nn.Parameter]:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def _clip(self) -> None:
        if self.accelerator.sync_gradients and self.cfg.max_grad_norm:
            self.accelerator.clip_grad_norm_(self._trained_params(), self.cfg.max_grad_norm)

    def _eligible(self) -> bool:
        """A checkpoint may be 'best' after ``select_after`` and once the final sparsity is reached."""
        if self.state.step < self.cfg.select_after * self.steps:
            return False
        final = self.method.current_sparsity(self.steps)
        return abs(self.method.current_sparsity(self.state.step) - final) < 1e-9

    def _evaluate(self) -> None:
        if self.dev_metric is None:
            return
        model = self.unwrapped
        self.method.freeze()
        model.eval()
        metric = float(self.dev_metric(model))
        model.train()
        entry: dict = {"step": self.state.step, "event": "eval", "dev": metric,
                       "sparsity": self.method.sparsity_report()["overall"]}
        if self.accelerator.num_processes > 1:
            entry["mask_digest_per_rank"] = self._check_ranks_agree()
        eligible = self.cfg.select == "best" and self._eligible()
        if eligible and (self.state.best_metric is None or metric > self.state.best_metric):
            self.state.best_metric, self.state.best_step = metric, self.state.step
            self._save_best()
            entry["best"] = True
        entry["eligible"] = eligible
        self._log(entry)

    def _save_best(self) -> None:
        model = self.unwrapped
        self.method.freeze()
        masks = self.method.masks()

        def write(folder: Path) -> None:
            save_model_state(model, folder / "model.safetensors")
            if masks:
                save_masks(folder / "masks.safetensors", masks, self.mask_metadata(masks))

        self._write(self.best_dir, write)

    def _mean_over_processes(self, value: float) -> float:
        """The mean of ``value`` over processes (a rank's loss covers only its share of the batch)."""
        if self.accelerator.num_processes == 1:
            return value
        return self.accelerator.reduce(torch.tensor(value, device=self.accelerator.device), "mean").item()

    def _check_ranks_agree(self) -> list[int]:
        """Every process must hold the same masks; returns the per-rank digests (all equal)."""
        mine = torch.tensor([mask_digest(self.method.masks())], device=self.accelerator.device)
        digests = [int(d) for d in self.accelerator.gather(mine).tolist()]
        if len(set(digests)) != 1:
            raise RuntimeError(f"internal error: processes hold different masks (digests {digests})")
        return digests

    def _write(self, folder: Path, write: Callable[[Path], None]) -> None:
        """Write a checkpoint folder atomically on the main process; every rank waits for it."""
        if self.accelerator.is_main_process:
            save_folder_atomically(folder, write)
        self.accelerator.wait_for_everyone()

    def _export_intermediate(self) -> None:
        """A plain Hugging Face checkpoint of the model at this step (masks baked in)."""
        self.method.freeze()
        masks = self.method.masks()
        out = self.files.intermediate / f"step_{self.state.step}"
        if self.accelerator.is_main_process:
            export_model(self.unwrapped, masks, self.tokenizer, out, metadata=None, overwrite=True)
        self.accelerator.wait_for_everyone()
        self._log({"event": "export", "step": self.state.step, "path": str(out)})

    def _save_last(self) -> None:
        model = self.unwrapped

        def write(folder: Path) -> None:
            save_model_state(model, folder / "model.safetensors")
            write_train_state(self.state, folder / TRAINER_STATE)
            torch.save(
                {
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "method": self.method.state_dict(),
                    "rng": rng_state(),
                },
                folder / "trainer.pt",
            )

        self._write(self.last_dir, write)
        self._log({"event": "checkpoint", "step": self.state.step})

    def _resume(self) -> None:
        """Continue from the last checkpoint.  Without one, start at step 0 only when the run
        stopped before saving any (and say so); a checkpoint it saved and lost is refused."""
        path = self.last_dir / "trainer.pt"
        if path.exists():
            self._load_last()
            return
        step = _checkpoint_step(self.log_path)
        if step is not None or self.last_dir.exists():
            saved = f"the run saved one at step {step}" if step is not None else f"{self.last_dir} is partial"
            raise NeedsOption(f"{path}: resume checkpoint missing ({saved}); rerun with overwrite=True to "
                              "start the run over", "overwrite")
        log.warning("resume: the run stopped before its first checkpoint; training starts at step 0")
        self._log({"event": "resume", "note": "no checkpoint found; starting from scratch"})

    def _load_last(self) -> None:
        path = self.last_dir / "trainer.pt"
        try:  # weights_only: a crafted file in a run folder cannot run code
            saved = torch.load(path, weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
            raise _unresumable(path, "unreadable", exc) from None
        weights = self.last_dir / "model.safetensors"
        try:
            load_model_state(self.unwrapped, weights)
        except Exception as exc:  # safetensors' own error types, size mismatches of another model
            raise _unresumable(weights, "unreadable or foreign", exc) from None
        state = self._saved_state()
        try:
            self._restore(saved, state)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:
            raise _unresumable(path, "foreign or partial", exc) from None
        self._check_resumed_step(self.last_dir / TRAINER_STATE if state is not None else path)
        self._log({"event": "resume", "step": self.state.step})

    def _saved_state(self) -> TrainState | None:
        """The last checkpoint's ``trainer_state.json`` (None without one: a ``trainer.pt`` written
        before it holds its own ``state``)."""
        path = self.last_dir / TRAINER_STATE
        if not path.is_file():
            return None
        try:
            return read_train_state(path)
        except (TypeError, ValueError) as exc:
            raise _unresumable(path, "foreign or partial", exc) from None

    def _restore(self, saved: object, state: TrainState | None) -> None:
        """Optimizer, scheduler, method and RNG from a loaded ``trainer.pt``, and the train state
        (``state``, or the one an older ``trainer.pt`` holds)."""
        keys = CHECKPOINT_KEYS if state is not None else ("state", *CHECKPOINT_KEYS)
        missing = [key for key in keys if not isinstance(saved, dict) or key not in saved]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        state = state if state is not None else TrainState.restored(saved["state"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        if saved["method"] is not None:  # None: a dense run saved before the dense method existed
            self.method.load_state_dict(saved["method"])
        set_rng_state(saved["rng"])
        self.state = state

    def _check_resumed_step(self, path: Path) -> None:
        """The restored step within this schedule and not behind the restored scheduler's count."""
        step = self.state.step
        scheduled = getattr(getattr(self.scheduler, "scheduler", self.scheduler), "last_epoch", None)
        if step > self.steps:
            raise _unresumable(path, "foreign or partial", ValueError(
                f"step {step} is beyond this schedule's {self.steps} steps"))
        if isinstance(scheduled, int) and scheduled > step:  # fp16 skips make it lag, never lead
            raise _unresumable(path, "foreign or partial", ValueError(
                f"step {step} is behind its own scheduler's {scheduled} steps"))

    def _learning_rates(self) -> dict[str, float]:
        """The scheduled lr of the weights (``lr``, when any train) and of the mask parameters
        (``mask_lr``), by optimizer group name."""
        keys = {"mask": "mask_lr", "weights": "lr"}
        rates: dict[str, float] = {}
        for group, rate in zip(self.optimizer.param_groups, self.scheduler.get_last_lr(), strict=True):
            rates.setdefault(keys.get(group.get("name", "weights"), "lr"), rate)
        return rates

    def _log_train(self, logged: list[dict[str, float]], started: float, bar) -> None:
        """One log line: the mean of each value the objective logged (``loss``, and e.g. its
        distillation terms) since the last line."""
        count = max(1, len(logged))
        means = {key: sum(entry[key] for entry in logged) / count for key in (logged[0] if logged else {})}
        entry = {
            "step": self.state.step,
            "event": "train",
            "epoch": self.state.epoch,
            "loss": means.pop("loss", 0.0),
            **self._learning_rates(),
            "s_per_step": (time.perf_counter() - started) / count,
            "target_sparsity": self.method.current_sparsity(self.state.step),
            **means,
        }
        bar.set_postfix(loss=f"{entry['loss']:.4f}")
        self._log(entry)

    def _log(self, entry: dict) -> None:
        if not self.accelerator.is_main_process:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        if self._tb is not None and "step" in entry:
            self._tensorboard(entry)

    def _tensorboard(self, entry: dict) -> None:
        for key, value in entry.items():
            if isinstance(value, int | float) and key != "step":
                self._tb.add_scalar(f"{entry['event']}/{key}", value, entry["step"])


def _checkpoint_step(log_path: Path) -> int | None:
    """The step of the last checkpoint ``log.jsonl`` records (None: none; a cut-off line skipped)."""
    step = None
    if log_path.is_file():
        for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and entry.get("event") == "checkpoint":
                step = entry.get("step")
    return step


def _unresumable(path: Path, what: str, exc: BaseException) -> SrnetError:
    """One line for a resume checkpoint file that cannot be used (``--overwrite`` on the CLI)."""
    return NeedsOption(f"{path}: {what} resume checkpoint ({first_line(exc, 160)}); rerun with "
                       "overwrite=True to start the run over", "overwrite")
