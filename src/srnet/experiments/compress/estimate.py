"""The plan's time on this machine (``--dry-run``): a short timed probe of the user's model on real
batches (:func:`probe`), then the plan's steps and forward passes counted as the training loop
counts them (:func:`plan_seconds`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.source import Source

ATTACK_FORWARDS = 50
"""Model inputs ``charswap`` scores per attacked example (measured: 600 attacked synthetic pairs in
97 s, about 50 inputs each at the probe's per-input cost)."""


@dataclass(frozen=True)
class Probe:
    """Measured costs on this machine and the sizes of the data they scale with."""

    step_s: float
    forward_s: float
    timing_s: float
    n_train: int
    n_dev: int
    n_eval: int
    eval_batch: int
    training: Any
    """The recipe's ``training`` section."""
    layers: int = 0
    """The model's transformer layers (a stage that drops some steps at the rest's share)."""


def probe(source: Source, config: CompressConfig) -> Probe:
    """Training steps and forward passes of the user's model on four real training batches each,
    formed as training and evaluation form them (length-grouped training batches in the recipe's
    precision, length-sorted FP32 evaluation batches) at the quartile midpoints of their padded
    length, and one forward pass at the timing's batch x length; the probe's optimizer has lr 0,
    so nothing is trained.  The splits are read by the run's own loader."""
    from srnet.config import recipe_from_dict
    from srnet.experiments.run.data import load_run_data
    from srnet.models.layers import layer_count
    from srnet.models.loading import load_classifier, load_tokenizer
    from srnet.tasks import get_task

    recipe = recipe_from_dict({**source.recipe, "name": "probe"})
    task = get_task(recipe.task)
    data = load_run_data(recipe, task)
    assert data.train is not None  # resolve_source refuses a recipe without data.train
    model = load_classifier(str(source.weights), task.labels)
    tokenizer = load_tokenizer(str(source.weights), recipe.model.max_length)
    step_s, forward_s = _probe_costs(model, tokenizer, data.train, recipe)
    n_dev = len(data.dev[1]) if data.dev else 0
    n_eval = n_dev + sum(len(examples) for _, examples in [*data.evals, *data.challenges])
    return Probe(
        step_s,
        forward_s,
        _timing_forward(model, config, forward_s * config.batch / recipe.training.eval_batch_size),
        len(data.train),
        n_dev,
        n_eval,
        recipe.training.eval_batch_size,
        recipe.training,
        layer_count(model),
    )


def _probe_costs(model: Any, tokenizer: Any, train: list, recipe: Any) -> tuple[float, float]:
    """Mean seconds of one training step and of one evaluation forward pass."""
    import numpy as np
    import torch

    from srnet.training.data import Collator, EncodedDataset, LengthGroupedBatchSampler, model_inputs
    from srnet.training.precision import resolve_mixed_precision

    dataset = EncodedDataset(train, tokenizer, recipe.model.max_length)
    collate = Collator(tokenizer)
    training = recipe.training
    grouped = LengthGroupedBatchSampler(
        dataset.lengths, training.batch_size, recipe.seed, training.group_by_length
    )
    by_length = np.argsort(-np.asarray(dataset.lengths), kind="stable").tolist()
    size = training.eval_batch_size
    sorted_batches = [by_length[i : i + size] for i in range(0, len(by_length), size)]
    train_batches, forward_batches = (
        [collate([dataset[i] for i in b]) for b in probe_batches(batches, dataset.lengths)]
        for batches in (list(grouped), sorted_batches)
    )
    bf16 = resolve_mixed_precision(training.mixed_precision) == "bf16"
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the probe changes no weight

    def step(inputs: dict) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(**model_inputs(model, inputs), labels=inputs["labels"]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    def forward(inputs: dict) -> None:  # in FP32, as evaluation and predictions run
        with torch.inference_mode():
            model(**model_inputs(model, inputs))

    return _timed(step, train_batches), _timed(forward, forward_batches)


def _timing_forward(model: Any, config: CompressConfig, at_data_lengths: float) -> float:
    """Seconds of one forward pass at the timing's batch x length (``--length auto``: the probe's
    evaluation pass at the data's lengths, scaled to ``--batch``)."""
    import torch

    if config.length == "auto":
        return at_data_lengths

    vocab = int(model.config.vocab_size)
    inputs = {
        "input_ids": torch.randint(min(1000, vocab - 1), vocab, (config.batch, config.length)),
        "attention_mask": torch.ones(config.batch, config.length, dtype=torch.long),
    }
    with torch.inference_mode():
        started = time.perf_counter()
        model(**inputs)
        return time.perf_counter() - started


def plan_seconds(measured: Probe, sweep: dict[str, Any], config: CompressConfig) -> dict[str, float]:
    """Each part of the plan's time: its steps and forward passes, counted as the training loop
    counts them (``total_steps``, ``eval_interval``), times the probe's costs."""
    from srnet.training.loop import total_steps

    stages = list(sweep["stages"].values())
    trains = [s["set"] for s in stages if s["kind"] == "train"]
    trained = [_stage_training(measured.training, keys) for keys in trains]
    steps = [total_steps(cfg, measured.n_train) * cfg.grad_accum for cfg in trained]
    train_steps = sum(steps)
    full_steps = [n * _depth_share(keys, measured.layers) for n, keys in zip(steps, trains, strict=True)]
    teacher_steps = sum(n for n, keys in zip(full_steps, trains, strict=True) if _distils_layers(keys))
    teacher_step_s = measured.forward_s * measured.training.batch_size / measured.eval_batch
    dev_evaluations = sum(_dev_evaluations(cfg, measured.n_train) for cfg in trained) if measured.n_dev else 0
    evaluations = sum(1 for s in stages if s["kind"] in ("train", "evaluate"))

    def batches_of(n: int) -> int:
        return math.ceil(n / measured.eval_batch)

    predictions = sum(1 for s in stages if s["kind"] == "predict")
    attack = sweep["stages"].get("attack")
    per_input_s = measured.forward_s / measured.eval_batch
    parts = {
        "train_s": sum(full_steps) * measured.step_s,
        "teacher_s": teacher_steps * teacher_step_s,
        "predict_s": batches_of(measured.n_train) * measured.forward_s * predictions,
        "eval_s": (evaluations * batches_of(measured.n_eval) + dev_evaluations * batches_of(measured.n_dev))
        * measured.forward_s,
        "attack_s": len(attack["with"]["runs"]) * attack["with"]["n"] * ATTACK_FORWARDS * per_input_s
        if attack
        else 0,
        "bench_s": 2 * (config.rounds + 1) * measured.timing_s,
    }
    return {
        **parts,
        "total_s": sum(parts.values()),
        "step_s": measured.step_s,
        "forward_s": measured.forward_s,
        "train_steps": train_steps,
        "dev_evaluations": dev_evaluations,
    }


def estimate_seconds(source: Source, sweep: dict[str, Any], config: CompressConfig) -> dict[str, float]:
    """The plan's time on this machine: :func:`probe`, then :func:`plan_seconds`."""
    return plan_seconds(probe(source, config), sweep, config)


def _stage_training(training: Any, overrides: dict[str, Any]) -> Any:
    """The recipe's training section with a train stage's ``training.*`` keys applied
    (``--recovery-epochs`` on the student)."""
    keys = {k.removeprefix("training."): v for k, v in overrides.items() if k.startswith("training.")}
    return training.model_copy(update=keys)


def _depth_share(keys: dict[str, Any], layers: int) -> float:
    """The share of the model's layers a train stage keeps (``model.drop_layers``): its step costs
    about that share of a whole model's."""
    dropped = len(keys.get("model.drop_layers") or [])
    return (layers - dropped) / layers if layers and dropped else 1.0


def _distils_layers(keys: dict[str, Any]) -> bool:
    """Whether a train stage distils hidden states or attention maps (``--recovery-distill layers``,
    ``attention``): one forward pass of a frozen dense teacher per step."""
    params = (keys.get("objective") or {}).get("params") or {}
    return bool(params.get("hidden_weight") or params.get("attention_weight"))


def _dev_evaluations(training: Any, n_train: int) -> int:
    """Dev-split evaluations during a train stage: every ``eval_every`` optimizer steps (default:
    once per epoch) and at the last step, as the training loop does them."""
    from srnet.training.loop import eval_interval, total_steps

    every = eval_interval(training, math.ceil(n_train / training.batch_size))
    return math.ceil(total_steps(training, n_train) / every)


def probe_batches(batches: list[list[int]], lengths: list[int]) -> list[list[int]]:
    """Four of ``batches`` (lists of example indices), at the midpoints of the quartiles of their
    padded length (the longest example in each): their mean cost stands for the mean batch's."""
    ordered = sorted(batches, key=lambda b: max(lengths[i] for i in b))
    return [ordered[min(int(q * len(ordered)), len(ordered) - 1)] for q in (0.125, 0.375, 0.625, 0.875)]


def _timed(call: Callable[[dict], None], batches: list[dict]) -> float:
    """Mean seconds of ``call`` over ``batches``, timed on a second pass after a first that warms
    each batch's shape up (a shape's first call allocates and builds its kernels)."""
    for inputs in batches:
        call(inputs)
    started = time.perf_counter()
    for inputs in batches:
        call(inputs)
    return (time.perf_counter() - started) / len(batches)
