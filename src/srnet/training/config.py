"""The ``training`` section of a recipe: the trainer's own settings (it knows no run folders)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class TrainingConfig(BaseModel):
    """How a run trains: schedule, batches, checkpoint selection and precision."""

    model_config = ConfigDict(extra="forbid")

    epochs: float = Field(3.0, gt=0, description="passes over the training data (unless max_steps is set)")
    max_steps: int | None = Field(None, gt=0, description="optimizer steps; overrides epochs")
    batch_size: int = Field(32, gt=0, description="examples per optimizer micro-batch")
    eval_batch_size: int = Field(128, gt=0, description="examples per evaluation batch")
    grad_accum: int = Field(1, gt=0, description="micro-batches per optimizer step")
    lr: float = Field(2e-5, gt=0, description="peak learning rate of the weights")
    weight_decay: float = Field(0.01, ge=0, description="AdamW weight decay (not on biases/LayerNorm)")
    warmup_ratio: float = Field(0.1, ge=0, lt=1, description="fraction of steps of linear warm-up")
    max_grad_norm: float | None = Field(1.0, description="gradient clipping norm (null = off)")
    eval_every: int | None = Field(
        None, gt=0, description="evaluate on the dev split every N steps (null = once per epoch)"
    )
    select: Literal["best", "last"] = Field(
        "best",
        description="which checkpoint is the run's result: 'best' on the split select_on names "
        "(default data.dev), or 'last'. Selecting on a biased ID dev split keeps the early, "
        "shortcut-following checkpoint of a debiasing run: debiasing recipes use 'last'",
    )
    select_on: str | None = Field(
        None,
        description="select: best: the split whose primary metric picks the checkpoint (data.dev's "
        "name, or an eval/challenge split's, e.g. an OOD dev split); null = data.dev",
    )
    select_after: float = Field(
        0.0, ge=0, le=1, description="only checkpoints after this fraction of training can be 'best'"
    )
    group_by_length: bool = Field(True, description="length-grouped batches (less padding)")
    mixed_precision: Literal["auto", "no", "fp16", "bf16"] = Field(
        "auto",
        description="Accelerate mixed precision: 'auto' = bf16 where the hardware has native bf16 "
        "(a CUDA GPU that supports it, or a CPU with AVX512-BF16/AMX), else fp32; 'bf16' and "
        "'fp16' fail where the hardware lacks them; 'no' = fp32. Mask scores, thresholds and "
        "optimizer state stay fp32",
    )
    log_every: int = Field(20, gt=0, description="steps between log lines")

    tensorboard: bool = Field(False, description="also log to TensorBoard (needs the tensorboard extra)")
    save_at_steps: list[int] = Field(
        default_factory=list,
        description="also export the model at these steps to <run>/intermediate/step_<N> (a mask "
        "search can start from one via model.name: Win-win section 5.1)",
    )
    checkpoint_every: int | None = Field(
        None, gt=0, description="save a resumable checkpoint every N steps (null = at every evaluation)"
    )

    @field_validator("mixed_precision", mode="before")
    @classmethod
    def _yaml_no(cls, value: Any) -> Any:
        """YAML reads a bare ``no`` as false: it means 'no' here."""
        return "no" if value is False else value
