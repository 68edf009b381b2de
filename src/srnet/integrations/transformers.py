"""srnet inside a Hugging Face ``transformers.Trainer`` script: any registered pruning method and
debiasing loss, without a srnet recipe.

>>> from srnet.integrations.transformers import SrnetTrainer
>>> trainer = SrnetTrainer(model=model, args=args, train_dataset=train, eval_dataset=dev,
...                        processing_class=tokenizer, pruning={"method": "mask_train", "sparsity": 0.5},
...                        loss={"name": "poe", "bias_predictions": "bias/train.jsonl"})
>>> trainer.train()
>>> trainer.export("subnetwork")            # srnet's export: plain HF checkpoint + model card

What the subclass adds to ``Trainer`` (every ``TrainingArguments`` setting keeps its meaning):

* **the pruning method**, attached when the optimizer is built (the number of optimizer steps is
  known then): masks as parametrizations, mask parameters in their own group at the method's
  ``mask_lr`` (same warm-up/decay), the method's ``on_step`` after each optimizer step (its
  schedule; IMP's rewinds clear the optimizer state), its penalty added to the loss, and
  ``freeze`` (the exact mask at the current target) before every evaluation, save and at the end;
* **the loss** (``loss=``: a loss name, or the recipe's ``loss`` section as a dict or
  :class:`srnet.config.LossConfig`; the older ``loss_params=``, ``bias_predictions=``,
  ``teacher=``, ``difficulty=`` and ``inputs=`` keywords still work for one release, each warning
  once): the registered srnet loss on the model's logits, a per-batch mean (the Trainer
  divides it for gradient accumulation); evaluation reports cross-entropy as ``eval_loss``.  Its
  extras (bias log-probs, teacher probs, difficulty) are read once and joined to each training
  batch by the train dataset's example-id column, which the Trainer would otherwise drop;
* **checkpoints** that are plain Hugging Face models (masks baked in) and also carry srnet's state
  (``srnet_state.safetensors``: the parametrized weights and mask parameters; ``srnet_method.pt``;
  ``masks.safetensors``), so ``load_best_model_at_end`` and ``resume_from_checkpoint`` restore the
  masks exactly; a checkpoint without that state (interrupted, or a plain one) or trained to
  another target sparsity is refused in one line (the former unless training is dense), and so is
  masking anew a model loaded with ``from_pretrained`` from a checkpoint (its masks are baked into
  its weights);
* :meth:`SrnetTrainer.export`: ``srnet export``'s writer (plain or ``shrink``, ONNX, INT8) with
  its checks and model card.

Not covered: FSDP and DeepSpeed (they shard the weights the masks parametrize) and optimizers
passed in through ``optimizers=`` (the mask parameters need their own group): both are refused.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import Trainer, TrainerCallback

from srnet.config import LossConfig
from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import mask_movement, unmoved_warning
from srnet.export import bake_masks, export_model
from srnet.export.config import ExportConfig
from srnet.io import atomic_write, first_line
from srnet.loss_inputs import (
    BUILT_IN_SOURCES,
    ReadContext,
    batch_inputs,
    note_unread,
    read_inputs,
)
from srnet.losses import build_loss
from srnet.models.loading import generic_label_names
from srnet.plugins import load_entry_points
from srnet.pruning import build_method
from srnet.pruning.base import Calibration, PruningMethod
from srnet.pruning.config import PruningConfig
from srnet.pruning.lifecycle import attach
from srnet.sparsity.fingerprint import model_fingerprint, weights_digest
from srnet.sparsity.mask_io import MaskMetadata, load_masks, save_masks
from srnet.training.data import model_inputs
from srnet.training.objectives import Standard, loss_backward
from srnet.training.objectives.base import with_penalty

STATE_FILE = "srnet_state.safetensors"
METHOD_FILE = "srnet_method.pt"
MASKS_FILE = "masks.safetensors"


class SrnetTrainer(Trainer):
    """A ``transformers.Trainer`` that prunes with a registered srnet method and trains with a
    registered srnet loss.

    ``pruning``: a method name (its defaults), a ``pruning`` section as in a recipe (dict or
    :class:`PruningConfig`) or None (dense).
    ``loss`` / ``loss_params``: a registered loss and its params.  ``bias_predictions``,
    ``teacher``, ``difficulty`` (and ``inputs``, a plug-in input's ``{source: file}``): the files
    of the inputs the loss needs, by example id (the ``id_column`` of ``train_dataset``).
    ``seed``: the method's seed (default ``args.seed``).
    Everything else is ``Trainer``'s.
    """

    def __init__(self, model=None, args=None, *,
                 pruning: str | Mapping[str, Any] | PruningConfig | None = None,
                 loss: str | Mapping[str, Any] | LossConfig = "ce",
                 id_column: str = "id", seed: int | None = None, **kwargs: Any) -> None:
        if model is None:
            raise SrnetError("SrnetTrainer needs a model (model_init is not supported: the masks "
                             "belong to one model)")
        if kwargs.get("optimizers", (None, None)) != (None, None):
            raise SrnetError("SrnetTrainer builds its own optimizer (mask parameters train in their own "
                             "group): drop optimizers=")
        if kwargs.get("compute_loss_func") is not None or getattr(args, "label_smoothing_factor", 0):
            raise SrnetError("SrnetTrainer computes the srnet loss named by loss=: drop compute_loss_func= "
                             "and label_smoothing_factor (they would be ignored)")
        # every check that needs no Trainer runs first: a refusal leaves no output folder behind
        load_entry_points()  # installed plug-ins (a method, a loss) are known here as in `srnet run`
        self.pruning_config = _pruning_config(pruning)
        old = {k: kwargs.pop(k) for k in DEPRECATED_LOSS_KEYWORDS if k in kwargs}
        self.loss_config = _loss_config(loss, old)
        self.srnet_loss = build_loss(self.loss_config.name, self.loss_config.params)
        method_seed = seed if seed is not None else getattr(args, "seed", 42)  # TrainingArguments' default
        self.method: PruningMethod = build_method(self.pruning_config, method_seed)
        self.method.check(model)  # a model the method cannot mask fails here, before training
        self.id_column = id_column
        files = self.loss_config.input_files()
        self._extras = _read_extras(self.srnet_loss, model, kwargs.get("train_dataset"), id_column, files)
        super().__init__(model=model, args=args, **kwargs)
        if self.is_fsdp_enabled or self.is_deepspeed_enabled:
            raise SrnetError("SrnetTrainer does not support FSDP or DeepSpeed (they shard the weights "
                             "the masks parametrize); use DDP")
        # srnet losses are per-batch means, which the Trainer must divide by the accumulation steps:
        # transformers 5.24 reads loss_is_scaled_for_ga; 5.17 does not, and skips the division for a
        # model that accepts loss kwargs (BERT's forward does), doubling the step at
        # gradient_accumulation_steps=2. Saying both keeps the meaning on the 5.x releases we admit.
        self.loss_is_scaled_for_ga = False
        self.model_accepts_loss_kwargs = False
        self.data_collator = ExtrasCollator(self.data_collator, id_column, self._extras)
        self._pending_state: Path | None = None
        self._mask_ids: set[int] = set()  # the mask group's parameters, by id
        self.add_callback(_MethodSteps(self))

    # ------------------------------------------------------------------ setup
    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self.id_column not in self._signature_columns:  # kept for the collator, which drops it
            self._signature_columns.append(self.id_column)

    def create_optimizer(self, model=None) -> torch.optim.Optimizer:
        """Attach the masks (now that the number of optimizer steps is known), then build the
        optimizer: the Trainer's groups for the weights, one group for the mask parameters."""
        if self.optimizer is None:
            self._attach(self.state.max_steps)
            super().create_optimizer(model)
            self._regroup_masks()
        return self.optimizer

    def _attach(self, steps: int) -> None:
        if self.method.targets:  # a second train() on the same trainer
            return
        if self._pending_state is None:  # resume_from_checkpoint= restores the masks exactly
            self._refuse_baked_checkpoint()

        def calibration() -> Calibration:  # e.g. omp with gradient importance: the first batches
            self.model.to(self.args.device)
            batches = (self._prepare_inputs(batch) for batch in self.get_train_dataloader())
            return Calibration(batches, loss_backward(Standard(), self.srnet_loss))

        attach(self.method, self.model, steps, calibration=calibration)
        if self._pending_state is not None:
            self._load_state(self._pending_state)
            self._pending_state = None

    def _refuse_baked_checkpoint(self) -> None:
        """One line when the model was loaded (``from_pretrained``) from an SrnetTrainer checkpoint
        and is to be masked anew: its weights hold that run's masks baked in, not the masks."""
        source = str(getattr(self.model.config, "_name_or_path", "") or "")
        if source and self.method.masks_weights and (Path(source) / STATE_FILE).is_file():
            raise SrnetError(f"{source}: an SrnetTrainer checkpoint, its masks baked into the weights; "
                             f"train(resume_from_checkpoint='{source}') restores them exactly (or prune "
                             "its export, or the base model)")

    def _regroup_masks(self) -> None:
        """Move the mask parameters out of the Trainer's weight groups into one group at the
        method's ``mask_lr`` (no weight decay)."""
        mask_group = self.method.mask_group()
        if mask_group is None:
            return
        self._mask_ids = masks = {id(p) for p in mask_group["params"]}
        optimizer = getattr(self.optimizer, "optimizer", self.optimizer)
        for group in optimizer.param_groups:
            group["params"] = [p for p in group["params"] if id(p) not in masks]
        optimizer.param_groups[:] = [g for g in optimizer.param_groups if g["params"]]
        optimizer.add_param_group(mask_group)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """The Trainer's log, with the learning rates by group: the Trainer logs its first
        group's as ``learning_rate``, which is the mask's when no weight trains."""
        if "learning_rate" in logs and self._mask_ids:
            logs = {k: v for k, v in logs.items() if k != "learning_rate"} | self._learning_rates()
        super().log(logs, start_time)

    def _learning_rates(self) -> dict[str, float]:
        """The current lr of the weights (``learning_rate``, when any train) and of the mask
        parameters (``mask_lr``)."""
        optimizer = getattr(self.optimizer, "optimizer", self.optimizer)
        rates: dict[str, float] = {}
        for group in optimizer.param_groups:
            key = "mask_lr" if id(group["params"][0]) in self._mask_ids else "learning_rate"
            rates.setdefault(key, group["lr"])
        return rates

    # ------------------------------------------------------------------ the step
    def compute_loss(self, model, inputs, return_outputs: bool = False, num_items_in_batch=None):
        """The srnet loss (+ the method's penalty) in training; cross-entropy in evaluation."""
        labels = inputs.get("labels")
        if labels is None:
            raise SrnetError("SrnetTrainer: a batch without labels (the dataset needs a 'label' column)")
        outputs = model(**model_inputs(self.accelerator.unwrap_model(model), inputs))
        logits = outputs.logits.float()
        if model.training:
            progress = min(1.0, self.state.global_step / max(1, self.state.max_steps))
            loss = with_penalty(self.srnet_loss(logits, labels, batch_inputs(inputs), progress),
                                self.method.penalty)
        else:
            loss = F.cross_entropy(logits, labels)
        return (loss, outputs) if return_outputs else loss

    # ------------------------------------------------------------------ freeze points
    def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        self._freeze()
        metrics = super().evaluate(*args, **kwargs)
        if self.method.targets:
            metrics["eval_sparsity"] = self.method.sparsity_report()["overall"]
        return metrics

    def predict(self, *args: Any, **kwargs: Any):
        self._freeze()
        return super().predict(*args, **kwargs)

    def evaluation_loop(self, *args: Any, **kwargs: Any):
        """The Trainer's loop; then one ``COLLAPSED:`` warning when one class takes at least
        :data:`~srnet.evaluation.metrics.COLLAPSE_FRACTION` of the split's predictions (the logits
        are gathered for it even without ``compute_metrics``)."""
        if len(args) < 3:
            kwargs["prediction_loss_only"] = False
        output = super().evaluation_loop(*args, **kwargs)
        split = kwargs.get("metric_key_prefix", args[4] if len(args) > 4 else "eval")
        line = collapse_line(output.predictions, split, self.model.config.id2label)
        if line is not None:
            logging.getLogger("srnet.trainer").warning(line)
        return output

    def train(self, *args: Any, **kwargs: Any):
        """The Trainer's ``train``; then the exact masks, and for a learned mask how far it moved
        from its start (``mask_flipped``, ``mask_jaccard`` in the returned metrics; one warning
        line when it did not move)."""
        output = super().train(*args, **kwargs)
        self._freeze()
        movement = self.mask_movement()
        if movement is not None:
            output.metrics.update(mask_flipped=movement["flipped"], mask_jaccard=movement["jaccard"])
            warning = unmoved_warning("SrnetTrainer", self.method.start_name, movement, "mask_lr in pruning=")
            if warning is not None:
                logging.getLogger("srnet.trainer").warning(warning)
        return output

    def mask_movement(self) -> dict[str, Any] | None:
        """How far a learned mask moved from its start (flipped entries, Jaccard, per matrix);
        None for methods that do not learn their mask."""
        start = self.method.start_masks() if self.method.targets else None
        return None if start is None else mask_movement(start, self.masks())

    def _freeze(self) -> None:
        if self.method.targets:
            self.method.freeze()

    # ------------------------------------------------------------------ checkpoints
    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        """A plain Hugging Face checkpoint (masks baked in) and srnet's state beside it (its
        files written atomically, ``STATE_FILE`` last, so only a whole checkpoint has it)."""
        if not self.method.targets:  # before training (or dense without masks): the Trainer's own
            super()._save(output_dir, state_dict)
            return
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        if not self.args.should_save:
            return
        masks = self.masks()
        baked = bake_masks(self.model, masks)
        folder = Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        baked.save_pretrained(folder)
        if self.processing_class is not None:
            self.processing_class.save_pretrained(folder)
        torch.save(self.args, folder / "training_args.bin")
        # srnet's files are written atomically, the state last: a folder with STATE_FILE is whole
        atomic_write(folder / METHOD_FILE, lambda tmp: torch.save(self.method.state_dict(), tmp))
        save_masks(folder / MASKS_FILE, masks, self.mask_metadata(masks, baked))
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        atomic_write(folder / STATE_FILE, lambda tmp: save_file(state, str(tmp)))

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model=None) -> None:
        folder = Path(resume_from_checkpoint)
        if not self._has_state(folder):
            return super()._load_from_checkpoint(resume_from_checkpoint, model)
        self._refuse_other_sparsity(folder)
        if self.method.targets:
            self._load_state(folder)
        else:  # the masks are attached when the optimizer is built: load then
            self._pending_state = folder

    def _refuse_other_sparsity(self, folder: Path) -> None:
        """One line when the checkpoint's masks were trained to another target sparsity than this
        trainer's ``pruning`` (its recorded state would carry that target on silently)."""
        recorded = load_masks(folder / MASKS_FILE)[1].target_sparsity
        wanted = self.pruning_config.sparsity
        if recorded is not None and recorded != wanted:
            raise SrnetError(f"{folder}: checkpoint trained at sparsity {recorded}, this trainer's pruning "
                             f"has sparsity {wanted}; resume with the same sparsity (or start over)")

    def _load_best_model(self) -> None:
        folder = Path(self.state.best_model_checkpoint)
        if not self._has_state(folder):
            return super()._load_best_model()
        self._load_state(folder)

    def _has_state(self, folder: Path) -> bool:
        """Whether ``folder`` holds srnet's state; False for a plain checkpoint of dense training
        (the Trainer's own loading); one line for any other checkpoint, whose masks cannot be
        restored exactly (its weights have them baked in)."""
        if (folder / STATE_FILE).is_file():
            return True
        if (folder / METHOD_FILE).is_file() or (folder / MASKS_FILE).is_file():
            raise SrnetError(f"{folder}: an interrupted SrnetTrainer checkpoint (no {STATE_FILE}), its masks "
                             "cannot be restored; use an earlier checkpoint")
        if not self.method.masks_weights:
            return False
        raise SrnetError(f"{folder}: no {STATE_FILE}, so the masks of pruning '{self.method.name}' cannot be "
                         "restored from it (not a whole SrnetTrainer checkpoint)")

    def _load_state(self, folder: Path) -> None:
        """The parametrized weights, mask parameters and method state of an srnet checkpoint."""
        try:
            state = load_file(str(folder / STATE_FILE))
            self.model.load_state_dict(state, strict=True)
            self.method.load_state_dict(torch.load(folder / METHOD_FILE, weights_only=True))
        except SrnetError:
            raise
        except Exception as exc:  # safetensors' own errors, missing or foreign keys, bad pickles
            raise SrnetError(f"{folder}: unreadable or foreign SrnetTrainer checkpoint "
                             f"({first_line(exc, 160)})") from None
        self._freeze()

    # ------------------------------------------------------------------ results
    def masks(self) -> dict[str, torch.Tensor]:
        """The exact binary masks at the current target (empty for dense training)."""
        if not self.method.targets:
            return {}
        self._freeze()
        return self.method.masks()

    def mask_metadata(self, masks: Mapping[str, torch.Tensor], baked: torch.nn.Module) -> MaskMetadata:
        """What a mask file of this trainer records (method, base model and its fingerprint,
        granularity, target sparsity, the digest of ``baked``: the model with the masks baked in)."""
        return MaskMetadata(
            method=self.pruning_config.method,
            base_model=str(getattr(self.model.config, "_name_or_path", "") or type(self.model).__name__),
            base_model_fingerprint=model_fingerprint(self.model, list(masks)),
            granularity=self.method.granularity,
            target_sparsity=self.pruning_config.sparsity,
            trained_digest=weights_digest(baked),
        )

    def export(self, out: str | Path, config: ExportConfig | None = None, *, overwrite: bool = False,
               **settings: Any) -> Path:
        """``srnet export``'s writer on the trained model: a plain Hugging Face checkpoint with the
        masks baked in, ``srnet_export.json`` and a model card naming this trainer's settings.  How
        it is written is ``srnet export``'s :class:`ExportConfig` (or its fields as keywords:
        ``shrink``: pruned heads/neurons removed; ``onnx``/``quantize``: the ONNX graphs)."""
        export = ExportConfig.resolve(config, settings)
        if self.processing_class is None:
            raise SrnetError("export needs the tokenizer: pass processing_class= to SrnetTrainer")
        masks = self.masks()
        self.model.eval()
        recorded = {"pruning": self.pruning_config.model_dump(mode="json"),
                    "loss": {"name": self.srnet_loss.name, "params": self.srnet_loss.params.model_dump()},
                    "trainer": {"learning_rate": self.args.learning_rate, "max_steps": self.state.max_steps,
                                "seed": self.args.seed}}
        baked = bake_masks(self.model, masks)  # once: the export saves it and the metadata digests it
        return export_model(self.model, masks, self.processing_class, out,
                            metadata=self.mask_metadata(masks, baked) if masks else None, overwrite=overwrite,
                            config=export, baked=baked,
                            recipe=recorded)


class _MethodSteps(TrainerCallback):
    """The pruning method's ``on_step`` after every optimizer step."""

    def __init__(self, trainer: SrnetTrainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args, state, control, **kwargs):
        trainer = self.trainer
        if trainer.method.targets and trainer.method.on_step(state.global_step):
            getattr(trainer.optimizer, "optimizer", trainer.optimizer).state.clear()  # IMP rewound
        return control


class ExtrasCollator:
    """The user's collator on the features without the id column, plus the loss extras of the
    batch's examples (when every one of them has a row: training batches; evaluation batches of
    other splits get none, and evaluation does not use them)."""

    def __init__(self, collate: Callable[[list[dict]], dict], id_column: str,
                 extras: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        self.collate, self.id_column, self.extras = collate, id_column, extras

    def __call__(self, features: list[dict]) -> dict:
        ids = [str(f.get(self.id_column)) for f in features]
        batch = self.collate([{k: v for k, v in f.items() if k != self.id_column} for f in features])
        for key, rows in self.extras.items():
            if all(i in rows for i in ids):
                batch[key] = torch.as_tensor(np.stack([rows[i] for i in ids]), dtype=torch.float32)
        return batch


def _pruning_config(pruning: str | Mapping[str, Any] | PruningConfig | None) -> PruningConfig:
    """The validated pruning section, from a method name, a section or a config (one line naming
    the bad field or value)."""
    from pydantic import ValidationError

    from srnet.config import validation_line

    if isinstance(pruning, PruningConfig):
        return pruning
    if isinstance(pruning, str):
        pruning = {"method": pruning}
    if pruning is not None and not isinstance(pruning, Mapping):
        raise SrnetError(f"pruning={pruning!r:.60}: expected a method name, a pruning section (dict) "
                         "or a PruningConfig")
    try:
        return PruningConfig.model_validate(dict(pruning or {"method": "dense"}))
    except ValidationError as exc:
        raise SrnetError(validation_line("pruning", exc)) from None


DEPRECATED_LOSS_KEYWORDS = {"loss_params": "params", "bias_predictions": "bias_predictions",
                            "teacher": "teacher", "difficulty": "difficulty", "inputs": "inputs"}
"""SrnetTrainer's loss keywords before ``loss=`` took the recipe's section -> that section's key."""
_WARNED: set[str] = set()


def _loss_config(loss: str | Mapping[str, Any] | LossConfig, old: Mapping[str, Any]) -> LossConfig:
    """The validated loss section from ``loss=`` (a name, a section or a LossConfig) and the
    deprecated keywords ``old`` (each warns once per process; with a section or LossConfig they
    are refused in one line: two places would set one loss)."""
    from pydantic import ValidationError

    from srnet.config import validation_line

    if old and not isinstance(loss, str):
        first = next(iter(old))
        raise SrnetError(f"SrnetTrainer: {first}= and loss={type(loss).__name__} both set the loss; give "
                         f"{DEPRECATED_LOSS_KEYWORDS[first]} inside loss= only")
    for name in old:
        if name not in _WARNED:
            _WARNED.add(name)
            warnings.warn(f"SrnetTrainer({name}=...) is deprecated and will be removed in the next "
                          f"release: pass loss={{'name': ..., '{DEPRECATED_LOSS_KEYWORDS[name]}': ...}} "
                          "(the recipe's loss section)", FutureWarning, stacklevel=3)
    if isinstance(loss, LossConfig):
        return loss
    if isinstance(loss, str):
        section = {"name": loss, **{DEPRECATED_LOSS_KEYWORDS[k]: _as_text(v) for k, v in old.items()
                                    if v is not None}}
    elif isinstance(loss, Mapping):
        section = dict(loss)
    else:
        raise SrnetError(f"loss={loss!r:.60}: expected a loss name, a loss section (dict) or a LossConfig")
    try:
        return LossConfig.model_validate(section)
    except ValidationError as exc:
        raise SrnetError(validation_line("loss", exc)) from None


def _as_text(value: Any) -> Any:
    """Paths as the strings a loss section holds (a mapping of them too)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _as_text(v) for k, v in value.items()}
    return value


def _read_extras(loss, model, train, id_column: str,
                 files: Mapping[str, str | Path | None]) -> dict[str, dict[str, np.ndarray]]:
    """The loss's extras by example id, read once; every training example must have a row."""
    needs = loss.requires
    note_unread(needs, files, f"loss '{loss.name}'", _spell_kwarg)
    if not needs:
        return {}
    if train is None or id_column not in getattr(train, "column_names", ()):
        raise SrnetError(f"loss '{loss.name}' joins {sorted(needs)} to the batch by example id: "
                         f"train_dataset needs a '{id_column}' column (id_column=)")
    ids = [str(i) for i in train[id_column]]
    context = ReadContext(ids, _label_names(model), model.config.num_labels)
    arrays = read_inputs(dict.fromkeys(needs, f"loss '{loss.name}'"), files, context, _spell_kwarg)
    return {key: dict(zip(ids, values, strict=True)) for key, values in arrays.items()}


def _spell_kwarg(source: str) -> str:
    """How ``SrnetTrainer`` is given the file of the input read from ``source``."""
    return (f"loss={{'{source}': ...}}" if source in BUILT_IN_SOURCES
            else f"loss={{'inputs': {{'{source}': ...}}}}")


def _label_names(model) -> list[str] | None:
    """The model's label names in class order, unless they are transformers' placeholders."""
    id2label = getattr(model.config, "id2label", None) or {}
    names = [id2label[i] for i in sorted(id2label)]
    return None if generic_label_names(names) else names


def collapse_line(predictions: Any, split: str, id2label: dict[int, str]) -> str | None:
    """``COLLAPSED: ...`` when one class takes at least ``COLLAPSE_FRACTION`` of the argmax
    predictions (logits, or a tuple whose first item is the logits); else None."""
    import numpy as np

    from srnet.evaluation.metrics import COLLAPSE_FRACTION

    logits = predictions[0] if isinstance(predictions, tuple) else predictions
    if logits is None or np.ndim(logits) != 2 or len(logits) == 0:
        return None
    counts = np.bincount(np.asarray(logits).argmax(-1), minlength=np.shape(logits)[1])
    top = int(counts.argmax())
    share = counts[top] / counts.sum()
    if share < COLLAPSE_FRACTION:
        return None
    return (f"COLLAPSED: SrnetTrainer puts {share:.0%} of its {split} predictions in one class "
            f"({id2label.get(top, top)}): its accuracy there is no robustness")
