"""TAMT end to end on a tiny random BERT: mask search on raw text (mlm+distill, embeddings
masked), a one-shot mask scored on dev blocks, transfer of one mask to two tasks, bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification

from conftest import save_tiny_model
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.models import load_classifier
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import load_masks

ENCODER = ["query", "key", "value", "attn_out", "ffn_in", "ffn_out"]
WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "tree", "big", "small", "red", "blue",
         "quickly", "slowly", "saw", "heard"]


def write_corpus(path: Path, lines: int = 120) -> Path:
    rng = random.Random(0)
    path.write_text("\n".join(" ".join(rng.choices(WORDS, k=rng.randint(5, 15))) for _ in range(lines)))
    return path


def write_task(folder: Path, task: str, model: Path) -> Path:
    """A tiny task recipe (12 train / 6 dev examples) as a YAML file."""
    rng = random.Random(task)
    if task == "nli":
        labels = ["entailment", "neutral", "contradiction"]
        rows = [{"premise": " ".join(rng.choices(WORDS, k=6)),
                 "hypothesis": " ".join(rng.choices(WORDS, k=4)), "label": labels[i % 3]} for i in range(18)]
    else:
        rows = [{"sentence": " ".join(rng.choices(WORDS, k=6)), "label": i % 2} for i in range(18)]
    for split, part in (("train", rows[:12]), ("dev", rows[12:])):
        (folder / f"{task}_{split}.jsonl").write_text("\n".join(json.dumps(r) for r in part))
    recipe = {
        "name": task, "task": "nli" if task == "nli" else "sentiment",
        "model": {"name": str(model), "max_length": 32},
        "data": {"train": {"path": str(folder / f"{task}_train.jsonl")},
                 "dev": {"path": str(folder / f"{task}_dev.jsonl")}},
        "training": {"max_steps": 2, "batch_size": 4, "lr": 1e-3},
    }
    path = folder / f"{task}.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def text_recipe(model: Path, corpus: Path, out: Path, **changes) -> dict:
    recipe = {
        "name": "tamt", "task": "text", "output_dir": str(out),
        "model": {"name": str(model), "max_length": 32},
        "data": {"train": {"path": str(corpus)}, "dev_fraction": 0.1},
        "training": {"max_steps": 4, "batch_size": 4, "eval_every": 2, "eval_batch_size": 8},
        "objective": {"name": "mlm+distill"},
        "pruning": {"method": "mask_train", "sparsity": 0.5, "roles": [*ENCODER, "embeddings"],
                    "params": {"mask_lr": 0.01}},
    }
    return {**recipe, **changes}


@pytest.fixture(scope="module")
def tamt_run(tiny_model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tamt")
    corpus = write_corpus(folder / "corpus.txt")
    return api.run(text_recipe(tiny_model_dir, corpus, folder / "runs")), folder


def test_tamt_mask_search_writes_a_task_free_mask_and_dev_losses(tamt_run, tiny_model_dir):
    result, _ = tamt_run
    metrics = result.metrics
    assert metrics.task == "text" and metrics.objective == "mlm+distill"
    assert metrics.mlm_head == "new, trained with the mask"
    assert set(metrics.pretraining) == {"mlm_dev_loss", "kd_dev_loss"}
    assert metrics.pretraining["kd_dev_loss"] > 0 and metrics.pretraining["mlm_dev_loss"] > 0
    assert metrics.blocks["size"] == 32 and metrics.blocks["dev"] >= 1
    assert metrics.sparsity.overall == pytest.approx(0.5, abs=1e-3)
    masks, meta = load_masks(result.run_dir / "masks.safetensors")
    assert "bert.embeddings.word_embeddings" in masks and not any("classifier" in k for k in masks)
    classifier = load_classifier(str(tiny_model_dir), ["a", "b"])  # any head: the mask has no task
    assert meta.base_model_fingerprint == model_fingerprint(classifier, masks)
    log = [json.loads(line) for line in (result.run_dir / "log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in log if e["event"] == "eval"] == [2, 4]


def test_one_shot_mask_on_dev_blocks_only(tiny_model_dir, tmp_path, capsys):
    corpus = write_corpus(tmp_path / "dev.txt", 40)
    recipe = text_recipe(tiny_model_dir, corpus, tmp_path / "runs", name="omp",
                         data={"dev": {"path": str(corpus)}}, objective={"name": "distill"},
                         pruning={"method": "omp", "sparsity": 0.3})
    path = tmp_path / "omp.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert main(["run", str(path)]) == 0
    assert "omp + distill: mlm_dev_loss " in capsys.readouterr().out
    metrics = json.loads((tmp_path / "runs" / "omp" / "metrics.json").read_text())
    assert metrics["best_step"] is None and metrics["blocks"]["train"] == 0
    assert metrics["mlm_head"] == "new, untrained" and metrics["pretraining"]["kd_dev_loss"] > 0


def test_imp_on_mlm(tiny_model_dir, tmp_path):
    """Chen et al.'s baseline: the IMP method with the mlm objective (weights train and rewind)."""
    corpus = write_corpus(tmp_path / "c.txt", 60)
    recipe = text_recipe(tiny_model_dir, corpus, tmp_path / "runs", name="imp", objective={"name": "mlm"},
                         pruning={"method": "imp", "sparsity": 0.5,
                                  "params": {"prune_fraction": 0.25, "every": 0.25, "rewind": True}})
    metrics = api.run(recipe).metrics
    assert metrics.method == "imp" and metrics.sparsity.overall == pytest.approx(0.5, abs=1e-3)
    assert metrics.mlm_head == "new, trained with the mask"


def test_mlm_head_probe_then_one_shot_mask_scored_with_that_head(tiny_model_dir, tmp_path):
    """A backbone without an MLM head: fit one on the frozen dense model (dense + freeze_weights),
    then a one-shot mask starting from that run loads the fitted head, not a fresh one."""
    corpus, dev = write_corpus(tmp_path / "c.txt", 80), write_corpus(tmp_path / "dev.txt", 20)
    data = {"train": {"path": str(corpus)}, "dev": {"path": str(dev)}}
    probe = text_recipe(tiny_model_dir, corpus, tmp_path / "runs", name="head", objective={"name": "mlm"},
                        data=data, pruning={"method": "dense", "params": {"freeze_weights": True}},
                        training={"max_steps": 16, "batch_size": 4, "eval_every": 16, "lr": 5e-2})
    fitted = api.run(probe)
    untrained = api.run({**probe, "name": "untrained", "data": {"dev": data["dev"]}})
    assert fitted.metrics.mlm_head == "new, trained with the mask"
    assert untrained.metrics.mlm_head == "new, untrained"
    losses = [run.metrics.pretraining["mlm_dev_loss"] for run in (fitted, untrained)]
    assert losses[0] < losses[1] - 0.5
    before = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir).bert.state_dict()
    after = AutoModelForMaskedLM.from_pretrained(fitted.run_dir / "model").bert.state_dict()
    assert all(torch.equal(w, after[k]) for k, w in before.items() if k in after), "the encoder trained"
    model = {"name": str(tiny_model_dir), "init_from": str(fitted.run_dir), "max_length": 32}
    omp = api.run({**probe, "name": "omp", "model": model, "data": {"dev": data["dev"]},
                   "pruning": {"method": "omp", "sparsity": 0.5}})
    assert omp.metrics.mlm_head == "loaded"


def test_freeze_weights_applies_to_one_shot_methods_only():
    from srnet.pruning import OneShotMethod, available_methods, get_method
    from srnet.pruning.config import PruningConfig

    frozen = {"freeze_weights": True}
    one_shot = [m for m in available_methods() if issubclass(get_method(m), OneShotMethod)]
    assert {"dense", "omp", "random"} <= set(one_shot)
    for method in available_methods():
        if method in one_shot:
            assert PruningConfig(method=method, params=frozen).params.freeze_weights
        else:  # imp trains what it prunes; mask_train and l0 always freeze the weights
            with pytest.raises(ValueError, match=f"not a parameter of method '{method}'"):
                PruningConfig(method=method, params=frozen)
    with pytest.raises(ValueError, match="not a parameter of method 'l0'"):  # always frozen, or trained
        PruningConfig(method="l0", params={**frozen, "train_weights": True})


def test_gradient_head_importance_on_mlm(tiny_model_dir, tmp_path):
    """OMP of heads and neurons by Michel et al.'s gradient importance of the MLM loss."""
    corpus = write_corpus(tmp_path / "c.txt", 60)
    pruning = {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5, "importance": "gradient",
               "importance_batches": 2}
    recipe = text_recipe(tiny_model_dir, corpus, tmp_path / "runs", name="grad", objective={"name": "mlm"},
                         pruning=pruning)
    metrics = api.run(recipe).metrics
    assert metrics.sparsity.overall == pytest.approx(0.5, abs=0.02)
    masks, _ = load_masks(tmp_path / "runs" / "grad" / "masks.safetensors")
    assert {k: int((~m.bool()).sum()) for k, m in masks.items() if k.endswith("heads")} == {
        "bert.encoder.layer.0.heads": 1, "bert.encoder.layer.1.heads": 1}
    with pytest.raises(SrnetError, match=r"objective .distill. \(distillation from it\) is at its minimum"):
        api.run({**recipe, "name": "kd", "objective": {"name": "distill"}})


def test_transfer_one_mask_to_two_tasks(tamt_run, tiny_model_dir, capsys):
    result, folder = tamt_run
    tasks = [write_task(folder, "nli", tiny_model_dir), write_task(folder, "sst2", tiny_model_dir)]
    out = folder / "transfer"
    assert main(["transfer", str(result.run_dir), "--tasks", *map(str, tasks), "--output-dir", str(out)]) == 0
    assert "nli: nli_dev 0." in capsys.readouterr().out
    summary = json.loads((out / "transfer.json").read_text())
    assert summary["pretraining"] == result.metrics.pretraining
    assert set(summary["tasks"]) == {"nli", "sst2"}
    assert 0 <= summary["tasks"]["nli"]["nli_dev"] <= 1 and 0 <= summary["tasks"]["sst2"]["sst2_dev"] <= 1
    tamt_masks, _ = load_masks(result.run_dir / "masks.safetensors")
    for task in ("nli", "sst2"):
        masks, meta = load_masks(out / task / "masks.safetensors")
        assert meta.method == "fixed" and masks.keys() == tamt_masks.keys()
        assert all(torch.equal(masks[k], tamt_masks[k]) for k in masks)  # the mask stayed fixed
        model = AutoModelForSequenceClassification.from_pretrained(out / task / "model")
        embedding = model.bert.embeddings.word_embeddings.weight
        assert bool((embedding[~tamt_masks["bert.embeddings.word_embeddings"]] == 0).all())


def test_transfer_rejects_a_mask_from_another_backbone(tamt_run, tmp_path):
    result, _ = tamt_run
    other = save_tiny_model(tmp_path / "wider", num_labels=2, hidden_size=48)
    task = write_task(tmp_path, "sst2", other)
    with pytest.raises(SrnetError, match=r"masks were made for '.*tiny_bert.*' \(fingerprint \w+\) but this "
                       r"is a bert model '.*wider' \(fingerprint \w+\)"):
        api.transfer(result.run_dir, [task], out_dir=tmp_path / "out")


def test_text_task_bad_input(tiny_model_dir, tmp_path, capsys):
    short = text_recipe(tiny_model_dir, write_corpus(tmp_path / "c.txt", 2), tmp_path / "runs")
    with pytest.raises(SrnetError, match=r"c.txt: the corpus has \d+ tokens, shorter than one block of 32"):
        api.run(short)
    recipe = text_recipe(tiny_model_dir, write_corpus(tmp_path / "long.txt", 40), tmp_path / "runs")
    wrong = r"the text task trains with objective distill or mlm or mlm\+distill"
    with pytest.raises(SrnetError, match=wrong):
        api.run({**recipe, "objective": {"name": "standard"}})
    with pytest.raises(SrnetError, match=r"objective .mlm. trains on raw text \(task: text\), not on task"):
        api.run({**recipe, "task": "nli", "objective": {"name": "mlm"}})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**recipe, "objective": {"name": "distill", "params": {"layers": [3]}}}))
    assert main(["run", str(path)]) == 2
    assert "layers [3] out of range; the model has layers 1..2" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "tamt").exists()
