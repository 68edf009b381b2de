"""The settings of ``srnet compress`` (:class:`CompressConfig`), the recorded file names and the exit
code of a failed gate. It imports no torch and nothing of the sweep machinery, so the CLI's parser
can read it."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from srnet.export.runtimes import RUNTIMES, auto_runtime, known_runtime
from srnet.settings import VerbConfig

GATE_FAILED_EXIT = 3
"""Exit status of ``srnet compress`` when the artifact misses a gate (bad input: 2)."""
RECIPE_NAME = "OMP-gradient cut of heads and FFN neurons, then a recovery (recipes/studies/sparse_fast.yaml)"
"""The committed recipe the pipeline follows."""
KD = {"name": "kd", "params": {"pred_weight": 1.0, "temperature": 2.0}}
DISTILLATION = {
    "plain": KD,
    "through-bias": {"name": "kd", "params": {**KD["params"], "through_bias": True}},
    "none": {"name": "kd", "params": {"pred_weight": 0.0}},
    "layers": {"name": "kd", "params": {**KD["params"], "hidden_weight": 1.0, "distance": "cosine"}},
    "attention": {"name": "kd", "params": {**KD["params"], "attention_weight": 1.0}},
}
"""``--recovery-distill``: the student's objective during the recovery (the task loss is PoE with a
bias, CE without): KL to the teacher's training-split predictions at T 2, the same KL with both
sides combined with the bias model's (``kd`` ``through_bias``), no distillation, or the KL plus
every layer's hidden states matched to the teacher's (cosine distance, weight 1; the teacher is a
frozen copy of the student's starting weights, one dense forward pass per step), or the KL plus
every layer's attention maps (KL per live head, weight 1; the same teacher, eager attention)."""
RECOVERY_FACTOR = 2.0
DEEP_CUT = 0.65
DEEP_RECOVERY_FACTOR = 4.0
"""Without ``--recovery-factor`` or ``--recovery-epochs`` the recovery is RECOVERY_FACTOR times the
recipe's training, and DEEP_RECOVERY_FACTOR times from a DEEP_CUT cut on (docs/studies/
compress_mnli_deep.md: factor 4 led factor 2 at 70-75% on every MNLI seed;
compress_synthetic_recovery.md: at 65% on every synthetic seed)."""
ATTACK_DEFAULT = 500
"""``--attack-n`` by default (or the whole split when smaller): enough for an interval of about
+-3 points on the accuracy under attack."""
GATE_RULES = ("interval", "points")
ARTIFACT_STAGES = ("export", "shipped", "attack", "bench")
"""Stages that train nothing: a resume may change their settings (they run again, in new folders),
and ``--reuse`` never copies them (the attack writes into other stages' folders)."""
RESULT_FILE = "compress.json"
SIZING_FILE = "sizing.json"
LOCK = ".compress.lock"


class CompressConfig(VerbConfig):
    """``srnet compress``: the target, the machine it is measured on, and the gates."""

    added_later: ClassVar[dict[str, Any]] = {
        "recovery_epochs": None,
        "recovery_distill": "plain",
        "recovery_factor": 1.0,
        "gate_rule": "points",
        "refine": False,
        "gradual_cut": 0.0,
        "drop_layers": 0,
    }

    speedup: float | None = Field(
        None,
        gt=1,
        le=100,
        description="target speed-up over the dense model, "
        "measured on this machine (exclusive with --sparsity)",
    )
    sparsity: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="fraction of heads and FFN neurons to remove in every layer (exclusive with --speedup); "
        "0: no cut, the reference after the same recovery in the runtime (the compute-matched control)",
    )
    runtime: str = Field(
        "auto",
        validate_default=True,
        description="runtime of the shipped model, timed against dense PyTorch FP32: "
        f"auto, {', '.join(RUNTIMES)}; auto is onnx-int8-per-channel where ONNX Runtime is installed "
        "and the CPU has int8 dot products (VNNI, AMX), else torch (the record names the one used)",
    )
    batch: int = Field(32, ge=1, le=4096, description="batch size of the timing")
    length: int | Literal["auto"] = Field(
        "auto",
        json_schema_extra={"metavar": "N|auto"},
        description="tokens per example of the timing: auto times batches drawn from the dev split at "
        "their real lengths (padded per batch), as the model will see them; N: every example N tokens",
    )
    threads: int = Field(1, ge=1, le=1024, description="threads of the timing")
    rounds: int = Field(7, ge=1, le=1000, description="interleaved timing rounds (median)")
    margin: float = Field(
        0.05,
        ge=0,
        lt=1,
        description="the chosen level's timed speed-up must exceed the target by this fraction",
    )
    levels: list[float] = Field(
        [0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        min_length=1,
        json_schema_extra={"metavar": "LEVEL"},
        description="candidate head+neuron levels timed for --speedup (0: no cut, the dense model in "
        "the runtime)",
    )
    drop_layers: int = Field(
        0,
        ge=0,
        le=1000,
        description="whole layers removed before the cut: the N nearest the output, from the student "
        "(the levels then cut the heads and FFN neurons of the layers left, and are timed so)",
    )
    refine: bool = Field(
        True,
        description="after --levels, time the 5-point steps between the deepest level below the target and "
        "the first above it, so the cut is no deeper than the target needs",
    )
    bias: str | None = Field(
        None,
        description="the shortcut to guard against: a bias feature "
        "({features}), a bias folder (srnet bias fit) or a training-split bias "
        "predictions file; none: plain distilled compression",
    )
    recovery_epochs: float | None = Field(
        None,
        gt=0,
        le=100,
        description="epochs of the distilled recovery after the cut (default: --recovery-factor times "
        "the recipe's training)",
    )
    recovery_factor: float | None = Field(
        None,
        gt=0,
        le=20,
        description="without --recovery-epochs: the recovery's length as a multiple of the recipe's "
        f"training (its epochs, or max_steps where set); default {RECOVERY_FACTOR:g}, or "
        f"{DEEP_RECOVERY_FACTOR:g} when the cut removes {DEEP_CUT:.0%} or more",
    )
    gradual_cut: float = Field(
        0.0,
        ge=0,
        le=0.9,
        description="the fraction of the recovery over which the cut deepens, in 4 equal cuts, each "
        "re-scoring the heads and neurons left on the model being trained; 0: one cut before it",
    )
    recovery_distill: str = Field(
        "plain",
        description="the recovery's distillation from the teacher: plain (KL at T 2), through-bias "
        "(the KL with teacher and student combined with the bias model's, as PoE; needs --bias), none, or "
        "layers (the KL plus every layer's hidden states, cosine, from a frozen copy of the teacher) or "
        "attention (the KL plus every layer's attention maps, per live head, from the same copy)",
    )
    gate_rule: str = Field(
        "interval",
        description="interval: a gate passes when the 95% interval of the paired difference from the "
        "reference (same examples) lies above -margin (non-inferiority); points: when the accuracy "
        "itself is at most the margin below the reference's",
    )
    max_id_drop: float = Field(1.0, ge=0, le=10, description="ID and INT8 gates: the margin, points")
    max_robust_drop: float = Field(2.0, ge=0, le=10, description="hard, challenge gates: the margin, points")
    attack_n: int | None = Field(
        None,
        ge=0,
        le=100_000,
        description=f"examples of the dev split attacked with charswap, as shipped (default: "
        f"{ATTACK_DEFAULT} or the whole split when smaller; at most the split; 0: no attack)",
    )

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str) -> str:
        """A runtime; ``auto`` resolved here, so a record and a stage's key name the one used."""
        return auto_runtime()[0] if value == "auto" else known_runtime(value, "--runtime", also=("auto",))

    @field_validator("length")
    @classmethod
    def _timed_length(cls, value: int | str) -> int | str:
        if value != "auto" and not 2 <= int(value) <= 8192:
            raise ValueError(f"--length {value}: give auto or a number of tokens from 2 to 8192")
        return value

    @field_validator("bias")
    @classmethod
    def _no_bias(cls, value: str | None) -> str | None:
        """``--bias none``: plain distilled compression, as no ``--bias`` at all."""
        return None if value is None or value.strip().lower() == "none" else value

    @field_validator("gate_rule", "recovery_distill")
    @classmethod
    def _one_of(cls, value: str, info: ValidationInfo) -> str:
        """A named choice (the gate rule, the recovery's distillation); else one line naming the flag."""
        choices = {"gate_rule": GATE_RULES, "recovery_distill": tuple(DISTILLATION)}[info.field_name]
        if value not in choices:
            flag = f"--{info.field_name.replace('_', '-')}"
            raise ValueError(f"{flag} {value}: not one of {', '.join(choices)}")
        return value

    @field_validator("levels")
    @classmethod
    def _levels(cls, value: list[float]) -> list[float]:
        bad = [v for v in value if not 0 <= v < 1]
        if bad:
            raise ValueError(f"--levels {bad[0]}: a level is a fraction from 0 (no cut) to below 1")
        return sorted(set(value))

    @model_validator(mode="after")
    def _one_target(self) -> CompressConfig:
        if (self.speedup is None) == (self.sparsity is None):
            raise ValueError("give exactly one target: --speedup X or --sparsity S")
        if self.recovery_epochs is not None:
            if self.recovery_factor not in (None, 1):
                raise ValueError("give --recovery-epochs or --recovery-factor, not both")
            self.recovery_factor = 1.0  # unused: --recovery-epochs sets the length alone
        if self.recovery_distill == "through-bias" and self.bias is None:
            raise ValueError(
                "--recovery-distill through-bias combines the KL with the bias model: give --bias"
            )
        return self

    def recovery_factor_at(self, level: float) -> float:
        """The recovery's multiple of the recipe's training for a cut of ``level``: the one given,
        else the default (longer from a :data:`DEEP_CUT` cut on)."""
        if self.recovery_factor is not None:
            return self.recovery_factor
        return DEEP_RECOVERY_FACTOR if level >= DEEP_CUT - 1e-9 else RECOVERY_FACTOR
