"""``srnet attack``: attack a run's (or a plain model's) predictions on one split and write the results.

Writes ``<out>/<attack>.json`` (TextAttack's summary: counts, Clean%, Aua%, Suc%, #Query) and
``<out>/<attack>.jsonl`` (one row per example: original, perturbed text, queries, result) and, with
``examples``, ``<out>/<attack>_examples.md`` (the first successes, changed words highlighted).  The
default ``<out>`` of a run is ``RUN/attack``.  Every "successful" perturbation is re-scored in a
fresh batch with the ordinary prediction path; one that does not flip the prediction is counted
as failed (``rescore_rejected``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from srnet.config import Recipe, load_run_recipe
from srnet.errors import SrnetError
from srnet.evaluation.attacks import AttackOutcome, Victim, attack_metrics, build_attack
from srnet.evaluation.metrics import predict
from srnet.evaluation.predict import predict_logits
from srnet.experiments.run.data import data_base_dir
from srnet.experiments.verbs.attack import AttackConfig
from srnet.experiments.verbs.attack_examples import write_examples
from srnet.experiments.verbs.split_predictions import find_split
from srnet.export.onnx import require_onnx, runtime_graphs, runtime_model, verify_export
from srnet.export.runtimes import get_runtime
from srnet.io import atomic_write_json, atomic_write_jsonl, refuse_existing
from srnet.models.loading import default_device, load_classifier, load_tokenizer
from srnet.rundir import locks
from srnet.rundir.layout import ATTACKS_DIR, RunDir
from srnet.tasks import get_task, label_space, load_examples, split_name
from srnet.tasks.base import Example


@dataclass
class AttackReport:
    """Where an attack run wrote, and its summary."""

    summary_path: Path
    examples_path: Path
    summary: dict
    review_path: Path | None = None
    """``<attack>_examples.md`` (the first successes, for review); None without ``examples``."""
    shared: dict[str, Any] = field(default_factory=dict)
    """The attack's victim-independent state (``Attack.shared``), for ``resources`` of a later run."""


def attack_run(
    model: str,
    recipe: Recipe | None,
    config: AttackConfig,
    *,
    out: str | Path | None = None,
    resources: dict[str, Any] | None = None,
    overwrite: bool,
) -> AttackReport:
    """Attack ``config.n`` examples (all when None) of ``config.split`` of ``model`` (a run directory
    or a model) with ``config.attack``.

    ``recipe`` defaults to a run's own ``config.yaml``; ``resources`` are passed to the attack
    (e.g. ``neighbours=SynonymTable(...)``); ``config.examples`` > 0 writes the first that many
    successes to ``<attack>_examples.md``.  Earlier results of the same attack in ``out`` are
    replaced only with ``overwrite`` (checked before the model loads).
    """
    attack, n, seed, split = config.attack, config.n, config.seed, config.split
    recipe, out, source = _resolve(model, recipe, out)
    attacker = build_attack(attack, config.params, **(resources or {}))
    if get_runtime(recipe.evaluation.runtime).needs_onnx:
        require_onnx()  # before any data or model loads
    task = get_task(recipe.task)
    attacker.ready(task, data_base_dir(recipe))  # lexicons and judge checked before the victim loads
    spec = find_split(recipe, split)
    chosen, attacked = _examples_to_attack(recipe, task, spec, n, seed)
    verify_export(source)  # an export's files, before any loads (one that lost its record: refused)
    graphs = runtime_graphs(source, recipe.evaluation.runtime)  # their SHA-256 checked before loading
    busy = f"{out}: another srnet attack '{attack}' is writing there; wait for it or give another --out"
    with locks.holding(Path(out), f".{attack}.lock", busy):  # two attacks never write one result set
        for suffix in (".json", ".jsonl"):  # checked under the lock, before the model loads
            refuse_existing(Path(out) / f"{attack}{suffix}", overwrite)
        tokenizer = load_tokenizer(source)
        net = load_classifier(source, task.labels).to(default_device()).eval()
        attacker.prepare(net, tokenizer)
        victim_model, runtime = runtime_model(net, recipe.evaluation.runtime, graphs)  # e.g. an INT8 graph
        space = label_space(task, spec)
        victim = Victim(victim_model, tokenizer, recipe.model.max_length,
                        collapse=lambda p: space.collapse(p, task.labels))

        started = time.perf_counter()
        outcomes = [
            attacker.attack(victim, (ex.text_a, ex.text_b), ex.label, np.random.default_rng([seed, i]))
            for i, ex in tqdm(list(zip(chosen, attacked, strict=True)), desc=f"attack {attack}", leave=False)
        ]
        elapsed = time.perf_counter() - started
        rejected = _rescore(victim_model, tokenizer, attacked, outcomes, recipe, task.labels, space)
        summary = {
            "attack": attack, "params": attacker.params.model_dump(),
            **({"resources": built} if (built := attacker.resources()) else {}),
            "model": source, **({"runtime": runtime} if runtime is not None else {}),
            "task": task.name, "split": split_name(spec), "seed": seed, **attack_metrics(outcomes),
            "survivors": [ex.id for ex, o in zip(attacked, outcomes, strict=True) if o.result == "failed"],
            "rescore_rejected": rejected, **attacker.report(), "model_evaluations": victim.evaluated,
            "time_s": round(elapsed, 1),
            "queries_per_s": round(victim.queries / elapsed, 1) if elapsed > 0 else None,
        }
        report = _write_results(Path(out), summary, attacked, outcomes, space.names, config.examples)
        report.shared = attacker.shared()
        return report


def _resolve(model: str, recipe: Recipe | None, out: str | Path | None) -> tuple[Recipe, Path, str]:
    """(the recipe, the results folder, the model to load): a run folder supplies its own recipe
    and ``RUN/attack``; a run that evaluated an srnet export's shipped graph is attacked on that
    export (its graphs, as shipped); any other run on its ``model/``."""
    run = RunDir(Path(model))
    is_run = run.model.is_dir()
    if out is not None and not str(out).strip():  # checked first: not the working directory
        raise SrnetError("--out '': give a folder for the results")
    if recipe is None:
        if not is_run:
            raise SrnetError(f"'{model}' is not an srnet run directory; pass --recipe naming the task")
        recipe = load_run_recipe(run.config)
    if out is None:
        if not is_run:
            raise SrnetError(f"'{model}' is not an srnet run directory; pass --out for the results folder")
        out = run.root / ATTACKS_DIR
    source = (_scored_export(run) or str(run.model)) if is_run else model
    return recipe, Path(out), source


def _scored_export(run: RunDir) -> str | None:
    """The srnet export whose shipped graph scored ``run`` (its metrics.json says, read as a run
    record: a damaged one is a one-line error), if any."""
    from srnet.rundir.record import read_metrics

    if not (run.root / "metrics.json").is_file():
        return None
    graph = (read_metrics(run.root).runtime or {}).get("graph") or {}
    return str(Path(graph["file"]).parent) if graph.get("source") == "shipped" and graph.get("file") else None


def _examples_to_attack(recipe: Recipe, task, spec, n: int | None, seed: int) -> tuple[list[int], list]:
    """The indices and examples of the split ``spec`` to attack: ``n`` drawn with ``seed``, or all."""
    dataset = load_examples(task, spec, base_dir=data_base_dir(recipe))
    if n is not None and not 1 <= n <= len(dataset):
        raise SrnetError(f"--n {n}: split '{split_name(spec)}' has {len(dataset)} examples")
    if not any((ex.text_b if ex.text_b is not None else ex.text_a).strip() for ex in dataset):
        raise SrnetError(f"task '{task.name}' split '{split_name(spec)}' has no text field to attack")
    chosen = _choose(len(dataset), n, seed)
    return chosen, [dataset[i] for i in chosen]


def _write_results(out: Path, summary: dict[str, Any], attacked: list, outcomes: list, names: list[str],
                   examples: int) -> AttackReport:
    """``<attack>.jsonl`` (one row per example), ``<attack>.json`` (the summary) and, with
    ``examples`` > 0, the review of the first successes (an older review is removed)."""
    attack = summary["attack"]
    rows = [{"id": ex.id, **asdict(o), "gold": names[o.gold], "pred_before": names[o.pred_before],
             "pred_after": names[o.pred_after]} for ex, o in zip(attacked, outcomes, strict=True)]
    examples_path = atomic_write_jsonl(out / f"{attack}.jsonl", rows)
    summary_path = atomic_write_json(out / f"{attack}.json", summary)
    review = out / f"{attack}_examples.md"
    review.unlink(missing_ok=True)  # a review of an earlier run would contradict the files above
    review_path = write_examples(review, summary, attacked, outcomes, names, examples) if examples else None
    return AttackReport(summary_path, examples_path, summary, review_path)


def _choose(size: int, n: int | None, seed: int) -> list[int]:
    """``n`` indices drawn with ``seed`` (all when ``n`` is None or the size), in file order."""
    if n is None or n == size:
        return list(range(size))
    return sorted(int(i) for i in np.random.default_rng(seed).choice(size, n, replace=False))


def _rescore(net, tokenizer, examples: list[Example], outcomes: list[AttackOutcome], recipe: Recipe,
             labels: tuple[str, ...], space) -> int:
    """Re-predict every successful perturbation in a fresh batch; demote those that do not flip."""
    hits = [(ex, o) for ex, o in zip(examples, outcomes, strict=True) if o.result == "successful"]
    if not hits:
        return 0
    perturbed = [
        Example(ex.id, ex.text_a, o.perturbed, ex.label) if ex.text_b is not None
        else Example(ex.id, o.perturbed, None, ex.label)
        for ex, o in hits
    ]
    logits = predict_logits(net, tokenizer, perturbed, max_length=recipe.model.max_length)
    preds = predict(logits, labels, space)
    rejected = 0
    for (ex, outcome), pred in zip(hits, preds, strict=True):
        outcome.pred_after = int(pred)
        if pred == ex.label:
            outcome.result = "failed"
            rejected += 1
    return rejected
