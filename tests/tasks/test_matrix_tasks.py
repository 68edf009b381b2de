"""The matrix's other axes, built from the registries: every attack x every labelled task (its
own split and each challenge set), and every run kind x each task of that kind.

The data are tiny JSON Lines files fabricated from each task's declared columns and label
schemes (:func:`write_split`), so a new task joins both axes by registering; a new attack joins
with its default params (or with offline ones in :data:`ATTACK_PARAMS`); a new run kind fails
:func:`test_every_run_kind_has_a_task_and_a_tiny_recipe` until it has a tiny recipe in
:data:`KINDS`.

Attack cells attack a tiny random classifier (its head sharpened so that small edits can flip it)
on a split whose gold labels are, by construction, its clean prediction on the even rows and
another label on the odd ones: the odd rows must be skipped, the even ones attacked, and the
written rows and summary must say so.  Run-kind cells run
a whole recipe (``srnet.api.run``, ``mask_train``) and make the checks of tests/project/test_matrix.py
where they apply: a complete run folder, exact sparsity, masks that round-trip, and an export
that reloads with plain ``transformers`` (an MLM for the ``text`` kind) and gives the masked
model's outputs; for a task, predictions that the exported model reproduces.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification, AutoTokenizer

import srnet.experiments.run.finish as finish_module
from srnet import api
from srnet.config import load_recipe
from srnet.evaluation.attacks import AttackOutcome, available_attacks
from srnet.evaluation.metrics import predict
from srnet.evaluation.predict import predict_logits, softmax
from srnet.experiments.run.driver import RUN_KINDS  # importing run registers the built-in kinds
from srnet.models import ENCODER_ROLES, load_classifier, load_tokenizer
from srnet.pruning import LearnedMaskMethod, get_method
from srnet.sparsity.mask_io import load_masks, save_masks
from srnet.sparsity.shapes import expand_masks
from srnet.tasks import TASKS, DataSpec, Task, label_space, load_examples

WORDS = ["the", "a", "cat", "dog", "man", "woman", "child", "teacher", "sat", "ran", "read", "walked", "saw",
         "heard", "found", "big", "small", "red", "old", "young", "happy", "park", "house", "book", "river",
         "garden", "car", "quickly", "slowly", "today"]
LABELLED = [name for name in TASKS.names() if TASKS[name].labels]
"""The tasks with gold labels (attacks need them): every registered task but raw text."""
SPARSITY = 0.5
MAX_LENGTH = 32


# --- tiny data from a task's declaration -----------------------------------------------------------


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(WORDS, k=words))


def write_split(path: Path, task: Task, challenge: str | None, n: int,
                labels: list[str] | None = None) -> dict:
    """Write ``n`` rows of ``task`` in its default columns to ``path`` (JSON Lines); labels cycle
    through the split's label names unless given; a challenge set's meta columns are filled (its
    shortcut's key cycles through the shortcut's heuristics).  Returns the split's DataSpec dict."""
    scheme = task.scheme(challenge)
    names = scheme.space.names
    rng = random.Random(f"{task.name}/{path.name}")
    rows = []
    for i in range(n):
        row = {task.columns["id"][0]: f"{path.stem}-{i}"} if "id" in task.columns else {}
        row[task.columns["text_a"][0]] = sentence(rng, 7)
        if task.pair:
            row[task.columns["text_b"][0]] = sentence(rng, 5)
        row[task.columns["label"][0]] = names[i % len(names)] if labels is None else labels[i]
        for meta, columns in scheme.columns.items():
            shortcut = scheme.shortcut
            if shortcut is not None and meta == shortcut.key:
                row[columns[0]] = shortcut.heuristics[i % len(shortcut.heuristics)]
            else:
                row[columns[0]] = f"{meta}_{i % 2}"
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"path": str(path)} | ({"challenge": challenge} if challenge else {})


def split_id(challenge: str | None) -> str:
    return challenge or "dev"


def task_splits(name: str) -> list[str | None]:
    """The task's own labels (None) and each of its challenge sets."""
    return [None, *TASKS[name].challenge_sets]


# --- attacks x tasks --------------------------------------------------------------------------------

ATTACK_PARAMS: dict[str, Callable[[Path], dict]] = {
    "wordswap": lambda model: {"neighbours": "embedding", "similarity_model": str(model),
                               "min_similarity": 0.5},
    "textfooler": lambda model: {"counterfit_vocab": 3000, "similarity_model": str(model),
                                 "min_similarity": 0.5},
    "strict_synonym": lambda model: {"counterfit_vocab": 3000, "similarity_model": str(model),
                                     "min_similarity": 0.5, "min_word_similarity": None, "judge": None,
                                     "polarity_data": str(_polarity_file(model.parent / "polarity.jsonl"))},
}


def _polarity_file(path: Path) -> Path:
    """A tiny {sentence, label} file for strict_synonym's log-odds (no judge on these tasks)."""
    rows = [("a good and funny film", 1), ("a bad and boring film", 0)] * 5
    path.write_text("".join(json.dumps({"sentence": s, "label": y}) + "\n" for s, y in rows))
    return path
"""Offline params of an attack on a tiny model (embedding neighbours from the bundled backbone, a
3,000-word counter-fitted space, the sentence encoder the tiny model itself); an attack not named
here runs on its defaults."""
def sensitive_classifier(folder: Path, model_dir: Path, task: Task, examples) -> tuple[Path, object, object]:
    """The tiny classifier with its head scaled by 50 and each class's mean logit over ``examples``
    moved to zero, so that its predictions differ between them and small edits can flip them
    (saved to ``folder``; returns the folder, the model and its tokenizer)."""
    net = load_classifier(str(model_dir), task.labels).eval()
    tokenizer = load_tokenizer(str(model_dir))
    with torch.no_grad():
        net.classifier.weight.mul_(50)
        logits = predict_logits(net, tokenizer, examples, max_length=MAX_LENGTH)
        net.classifier.bias.sub_(torch.from_numpy(logits.mean(axis=0)).float())
    net.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, net, tokenizer


ATTACK_CELLS = [(attack, task, challenge) for attack in available_attacks() for task in LABELLED
                for challenge in task_splits(task)]
ROWS = 8


@pytest.mark.parametrize(("attack", "task_name", "challenge"), ATTACK_CELLS,
                         ids=[f"{a}-{t}-{split_id(c)}" for a, t, c in ATTACK_CELLS])
def test_attack_on_task(attack, task_name, challenge, tmp_path, tiny_model_dirs):
    task = TASKS[task_name]
    model_dir = tiny_model_dirs(num_labels=len(task.labels))
    path = tmp_path / f"{split_id(challenge)}.jsonl"
    entry = write_split(path, task, challenge, ROWS)
    spec = DataSpec.model_validate(entry)
    space = label_space(task, spec)
    names = space.names
    examples = load_examples(task, spec)
    model_dir, net, tokenizer = sensitive_classifier(tmp_path / "model", model_dir, task, examples)
    clean = predict(predict_logits(net, tokenizer, examples, max_length=MAX_LENGTH), task.labels, space)
    # gold = the clean prediction on even rows (attacked), another label on odd rows (skipped)
    gold = [names[(int(p) + i % 2) % len(names)] for i, p in enumerate(clean)]
    write_split(path, task, challenge, ROWS, labels=gold)
    data = {"dev": entry} if challenge is None else {"challenge": [entry]}
    recipe = {"task": task.name, "model": {"name": str(model_dir), "max_length": MAX_LENGTH}, "data": data}
    params = ATTACK_PARAMS[attack](model_dir) if attack in ATTACK_PARAMS else {}
    try:
        split = "dev" if challenge is None else spec.display_name
        report = api.attack(str(model_dir), recipe=recipe, attack=attack, split=split,
                            out=tmp_path / "attack", params=params, seed=1)
    except Exception as exc:
        exc.add_note(f"attack '{attack}' with params {params} on task '{task.name}' (tiny random model, "
                     f"offline): an attack that needs more gets offline params in ATTACK_PARAMS ({__file__})")
        raise

    summary = json.loads((tmp_path / "attack" / f"{attack}.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "attack" / f"{attack}.jsonl").read_text().splitlines()]
    assert report.summary == summary and report.summary_path == tmp_path / "attack" / f"{attack}.json"
    assert (summary["attack"], summary["task"], summary["split"], summary["seed"]) == (
        attack, task.name, spec.display_name, 1)
    assert summary["params"] == {**summary["params"], **params}
    assert [r["id"] for r in rows] == [ex.id for ex in examples]  # every row (n = all), in file order
    assert all(set(r) == {"id", *(f.name for f in fields(AttackOutcome))} for r in rows)
    field = [ex.text_b if task.pair else ex.text_a for ex in examples]  # the edited field
    assert [r["original"] for r in rows] == field
    assert [r["gold"] for r in rows] == gold
    assert [r["pred_before"] for r in rows] == [names[int(p)] for p in clean]
    assert all({r["gold"], r["pred_before"], r["pred_after"]} <= set(names) for r in rows)
    assert [r["result"] == "skipped" for r in rows] == [i % 2 == 1 for i in range(ROWS)]
    for r in rows:
        if r["result"] == "skipped":
            assert r["perturbed"] is None and r["pred_after"] == r["pred_before"]
        elif r["result"] == "successful":
            assert r["perturbed"] != r["original"] and r["pred_after"] != r["gold"] and r["changed_words"]
        else:
            assert r["result"] == "failed" and r["pred_after"] == r["gold"]
    wins = [(ex, r) for ex, r in zip(examples, rows, strict=True) if r["result"] == "successful"]
    if wins:  # a successful perturbation flips the ordinary prediction path too
        edited = [replace(ex, text_b=r["perturbed"]) if task.pair else replace(ex, text_a=r["perturbed"])
                  for ex, r in wins]
        again = predict(predict_logits(net, tokenizer, edited, max_length=MAX_LENGTH), task.labels, space)
        assert [names[int(p)] for p in again] == [r["pred_after"] for _, r in wins]
    counts = {key: sum(r["result"] == key for r in rows) for key in ("successful", "failed", "skipped")}
    attacked = [r for r in rows if r["result"] != "skipped"]
    assert {key: summary[key] for key in counts} == counts
    assert (summary["total"], summary["attacked"]) == (ROWS, len(attacked)) == (ROWS, ROWS // 2)
    assert summary["avg_queries"] == pytest.approx(sum(r["queries"] for r in attacked) / len(attacked))
    assert summary["clean"] == pytest.approx(len(attacked) / ROWS)
    assert summary["aua"] == pytest.approx(counts["failed"] / ROWS)
    assert summary["model_evaluations"] >= 1 and summary["rescore_rejected"] >= 0


# --- run kinds x tasks ------------------------------------------------------------------------------


def task_recipe(folder: Path, task: Task, model: Path) -> dict:
    """``mask_train`` for 4 steps on 16 fabricated training rows; dev and every challenge set."""
    data = {"train": write_split(folder / "train.jsonl", task, None, 16),
            "dev": write_split(folder / "dev.jsonl", task, None, ROWS),
            "challenge": [write_split(folder / f"{c}.jsonl", task, c, ROWS) for c in task.challenge_sets]}
    return {"model": {"name": str(model), "max_length": MAX_LENGTH}, "data": data,
            "training": {"max_steps": 4, "batch_size": 4, "eval_every": 2, "lr": 1e-3, "warmup_ratio": 0.0},
            "pruning": {"method": "mask_train", "sparsity": SPARSITY, "params": {"rerank_every": 2}}}


def text_recipe(folder: Path, task: Task, model: Path) -> dict:
    """TAMT (``mask_train`` with ``mlm+distill``, embeddings masked too) for 4 steps on a tiny corpus."""
    rng = random.Random(0)
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(sentence(rng, rng.randint(5, 15)) for _ in range(80)), encoding="utf-8")
    return {"model": {"name": str(model), "max_length": MAX_LENGTH},
            "data": {"train": {"path": str(corpus)}, "dev_fraction": 0.1},
            "training": {"max_steps": 4, "batch_size": 4, "eval_every": 2, "eval_batch_size": 8},
            "objective": {"name": "mlm+distill"},
            "pruning": {"method": "mask_train", "sparsity": SPARSITY, "roles": [*ENCODER_ROLES, "embeddings"],
                        "params": {"mask_lr": 0.01}}}


def check_task_run(run: Path, metrics: dict, task: Task, exported: torch.nn.Module) -> None:
    """ID and challenge blocks for every split; predictions the exported model reproduces."""
    recipe = load_recipe(run / "config.yaml")
    assert set(metrics["id"]) == {recipe.data.dev.display_name}
    challenges = {spec.display_name for spec in recipe.data.challenge}
    assert set(metrics["ood"]) == challenges == set(task.challenge_sets)
    tokenizer = AutoTokenizer.from_pretrained(run / "model")
    for spec in [recipe.data.dev, *recipe.data.challenge]:
        examples = load_examples(task, spec)
        rows = [json.loads(line) for line in (run / "predictions" / f"{spec.display_name}.jsonl").open()]
        assert [r["id"] for r in rows] == [ex.id for ex in examples]
        logits = predict_logits(exported, tokenizer, examples, max_length=MAX_LENGTH)
        np.testing.assert_allclose(softmax(logits), np.array([r["probs"] for r in rows]), atol=2e-6)
        block = metrics["id" if spec.challenge is None else "ood"][spec.display_name]
        assert 0.0 <= block["primary"] <= 1.0


def check_text_run(run: Path, metrics: dict, task: Task, exported: torch.nn.Module) -> None:
    """The subnetwork's MLM and KD dev losses; a mask over the embeddings and no task head."""
    assert metrics["task"] == task.name and metrics["mlm_head"] == "new, trained with the mask"
    assert set(metrics["pretraining"]) == {"mlm_dev_loss", "kd_dev_loss"}
    assert all(v > 0 for v in metrics["pretraining"].values())
    masks, _ = load_masks(run / "masks.safetensors")
    assert "bert.embeddings.word_embeddings" in masks and not any("classifier" in k for k in masks)


@dataclass(frozen=True)
class KindFixture:
    """What a run kind's cell needs: a tiny recipe, the class its export reloads with, its checks."""

    recipe: Callable[[Path, Task, Path], dict]
    model_class: type
    check: Callable[[Path, dict, Task, torch.nn.Module], None]


KINDS = {
    "task": KindFixture(task_recipe, AutoModelForSequenceClassification, check_task_run),
    "text": KindFixture(text_recipe, AutoModelForMaskedLM, check_text_run),
}
"""A tiny recipe per registered run kind (a new kind adds its own here)."""
KIND_CELLS = [(kind, task) for kind in RUN_KINDS.names() for task in TASKS.names()
              if TASKS[task].run_kind == kind]
RUN_FILES = ("config.yaml", "environment.json", "log.jsonl", "metrics.json", "masks.safetensors",
             "model/config.json", "model/model.safetensors", "model/srnet_export.json")
"""What every finished run holds, whatever its kind."""


def test_every_run_kind_has_a_task_and_a_tiny_recipe():
    assert {TASKS[t].run_kind for t in TASKS} <= set(RUN_KINDS), "a task names an unregistered run kind"
    for kind in RUN_KINDS:
        assert any(TASKS[t].run_kind == kind for t in TASKS), f"run kind '{kind}' is no task's run_kind"
        assert kind in KINDS, f"run kind '{kind}' needs a tiny recipe in KINDS ({__file__})"


@dataclass
class KindRun:
    """One finished run-kind cell, and what its masked model computed on :data:`PROBE` just before
    the shared end of a run exported it."""

    result: api.RunResult
    model_dir: Path
    folder: Path
    probe: dict[str, torch.Tensor]
    logits: torch.Tensor
    hidden: torch.Tensor


PROBE = ["the old man read a book in the park", "a small dog ran"]


@pytest.fixture(scope="module")
def kind_runs(tmp_path_factory, tiny_model_dirs) -> Callable[[str, str], KindRun]:
    """Each run-kind cell, run once for this module's tests."""
    done: dict[tuple[str, str], KindRun] = {}

    def get(kind: str, task_name: str) -> KindRun:
        if kind not in KINDS:
            pytest.fail(f"run kind '{kind}' needs a tiny recipe in KINDS ({__file__})")
        if (kind, task_name) in done:
            return done[kind, task_name]
        task, folder = TASKS[task_name], tmp_path_factory.mktemp(f"{kind}_{task_name}")
        model_dir = tiny_model_dirs(num_labels=len(task.labels) or 3)  # text: any classifier backbone
        probe = AutoTokenizer.from_pretrained(model_dir)(PROBE, padding=True, return_tensors="pt")
        seen = {}
        export = finish_module.export_model

        def capture_masked_model(masked, masks, tokenizer, out, **kwargs):
            """The run's masked model (masks attached), seen as the shared end of a run exports it."""
            with torch.no_grad():
                outputs = masked.eval()(**probe, output_hidden_states=True)
            seen.update(logits=outputs.logits, hidden=outputs.hidden_states[-1])
            return export(masked, masks, tokenizer, out, **kwargs)

        recipe = {"name": f"{kind}_{task_name}", "task": task_name, "seed": 0,
                  "output_dir": str(folder / "runs"), **KINDS[kind].recipe(folder, task, model_dir)}
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(finish_module, "export_model", capture_masked_model)
            result = api.run(recipe)
        done[kind, task_name] = KindRun(result, model_dir, folder, probe, seen["logits"], seen["hidden"])
        return done[kind, task_name]

    return get


def reload(kind: str, cell: KindRun) -> torch.nn.Module:
    """The run's export, reloaded with plain ``transformers`` (the kind's model class): every
    weight loaded."""
    exported, info = KINDS[kind].model_class.from_pretrained(cell.result.run_dir / "model",
                                                             output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    return exported.eval()


@pytest.mark.parametrize(("kind", "task_name"), KIND_CELLS, ids=[f"{k}-{t}" for k, t in KIND_CELLS])
def test_run_kind_on_task(kind, task_name, kind_runs, tmp_path):
    cell, task = kind_runs(kind, task_name), TASKS[task_name]
    result = cell.result
    run = result.run_dir

    # 1. a complete run folder: every file, metrics.json as returned, no checkpoints left
    assert run == cell.folder / "runs" / f"{kind}_{task_name}"
    missing = [name for name in RUN_FILES if not (run / name).is_file()]
    assert not missing, missing
    assert not (run / "checkpoints").exists()
    assert json.loads((run / "metrics.json").read_text()) == result.metrics.as_json()

    # 2. exact sparsity in every masked matrix; masks round-trip bit for bit
    masks, meta = load_masks(run / "masks.safetensors")
    assert (meta.method, meta.granularity, meta.target_sparsity) == ("mask_train", "unstructured", SPARSITY)
    for name, mask in masks.items():
        assert mask.numel() - int(mask.sum()) == round(SPARSITY * mask.numel()), name
    assert result.metrics.sparsity.overall == pytest.approx(SPARSITY, abs=1e-3)
    save_masks(tmp_path / "again.safetensors", masks, meta)
    again, _ = load_masks(tmp_path / "again.safetensors")
    assert list(again) == list(masks) and all(torch.equal(again[k], masks[k]) for k in masks)

    # 3. plain transformers reload: masked entries zero; the encoder gives the masked model's states
    exported = reload(kind, cell)
    weight_masks = expand_masks(exported, masks)
    for name, mask in weight_masks.items():
        assert torch.all(exported.get_submodule(name).weight[~mask] == 0), name
    with torch.no_grad():
        hidden = exported(**cell.probe, output_hidden_states=True).hidden_states[-1]
    np.testing.assert_allclose(hidden.numpy(), cell.hidden.numpy(), atol=1e-5)

    # 4. a learned mask trains no weight: export == frozen base weights x mask
    if issubclass(get_method(meta.method), LearnedMaskMethod):
        base = AutoModelForSequenceClassification.from_pretrained(cell.model_dir)
        for name, mask in weight_masks.items():
            expected = base.get_submodule(name).weight * mask
            assert torch.equal(exported.get_submodule(name).weight, expected), name

    # 5. the kind's own blocks
    KINDS[kind].check(run, result.metrics.as_json(), task, exported)


EXPORT_CELLS = [pytest.param(k, t, id=f"{k}-{t}") for k, t in KIND_CELLS]


@pytest.mark.parametrize(("kind", "task_name"), EXPORT_CELLS)
def test_run_kind_export_gives_the_masked_models_outputs(kind, task_name, kind_runs):
    """The exported model, reloaded from disk, computes what the run's masked model computed."""
    cell = kind_runs(kind, task_name)
    with torch.no_grad():
        logits = reload(kind, cell)(**cell.probe).logits
    np.testing.assert_allclose(logits.numpy(), cell.logits.numpy(), atol=1e-5)
