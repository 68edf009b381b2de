"""Whole runs on a tiny model: F_bias, OOD-informed search, intermediate checkpoints, easy/hard,
measured sparsity of exported subnetworks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from transformers import AutoTokenizer

from conftest import merge, tiny_recipe
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.bias import write_bias_predictions
from srnet.errors import SrnetError
from srnet.tasks import generate_synthetic


def recipe(root, model, name, **extra) -> dict:
    return tiny_recipe(root, model, name, **extra)


def test_f_bias_against_dense_reference(tmp_path, tiny_model_dir):
    dense = api.run(recipe(tmp_path, tiny_model_dir, "dense")).metrics
    pruned = api.run(recipe(tmp_path, tiny_model_dir, "omp", dense_reference=str(tmp_path / "dense"),
                            pruning={"method": "omp", "sparsity": 0.4})).metrics
    d, o = pruned.id["synthetic_dev"]["primary"], pruned.ood["synthetic_challenge"]["primary"]
    dd, do = dense.id["synthetic_dev"]["primary"], dense.ood["synthetic_challenge"]["primary"]
    if dd == do:
        pytest.skip("dense model has no ID-OOD gap to compare against")
    assert pruned.f_bias["synthetic_challenge"] == pytest.approx(((d - o) / d) / ((dd - do) / dd))


def test_ood_informed_training_mixes_relabelled_challenge_examples(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "ood", data={"ood_train": synthetic("challenge", 20)},
                            pruning={"method": "mask_train", "sparsity": 0.3}))
    log = [json.loads(line) for line in (result.run_dir / "log.jsonl").open()]
    assert any(e["event"] == "eval" for e in log)
    from srnet.experiments.run.data import load_run_data
    from srnet.tasks import get_task

    data = load_run_data(api.as_recipe(recipe(tmp_path, tiny_model_dir, "x",
                                              data={"ood_train": synthetic("challenge", 20)})),
                         get_task("synthetic_nli"))
    ood = [ex for ex in data.train if ex.id.startswith("ood-")]
    assert len(ood) == 20 and len(data.train) == 68
    assert {ex.label for ex in ood} <= {0, 2}  # entailment, non-entailment -> contradiction


def test_ood_label_without_a_class_is_an_error(tmp_path, tiny_model_dir):
    bad = recipe(tmp_path, tiny_model_dir, "bad", data={"ood_train": synthetic("challenge", 10),
                                                        "ood_label_map": {}})
    with pytest.raises(SrnetError, match="label 'non-entailment' has no class"):
        api.run(bad)


def test_mask_search_from_an_intermediate_checkpoint(tmp_path, tiny_model_dir):
    ft = api.run(recipe(tmp_path, tiny_model_dir, "ft", training={"save_at_steps": [2, 4]}))
    step2 = ft.run_dir / "intermediate" / "step_2"
    assert (step2 / "model.safetensors").exists() and (ft.run_dir / "intermediate" / "step_4").exists()
    masked = api.run(recipe(tmp_path, step2, "from_step2", pruning={"method": "mask_train", "sparsity": 0.5}))
    assert masked.metrics.model == str(step2)
    assert (masked.run_dir / "sparsity_heatmap.png").exists()


def test_evaluating_an_exported_subnetwork_measures_its_sparsity(tmp_path, tiny_model_dir, capsys):
    """``srnet evaluate`` says which runtime scored the model; the report labels the evaluated export
    by its measured sparsity, never dense (its config.yaml holds ``pruning: {method: dense}``)."""
    from srnet.cli import main
    from srnet.reporting.runs import load_run

    api.run(recipe(tmp_path, tiny_model_dir, "imp", pruning={
        "method": "imp", "sparsity": 0.5, "params": {"prune_fraction": 0.25, "every": 0.25}}))
    (tmp_path / "eval.yaml").write_text(yaml.safe_dump(recipe(tmp_path, tiny_model_dir, "eval_imp")))
    assert main(["evaluate", str(tmp_path / "imp"), "--recipe", str(tmp_path / "eval.yaml")]) == 0
    assert "scored by: torch" in capsys.readouterr().out
    evaluated = load_run(tmp_path / "eval_imp")
    sparsity = evaluated.metrics.sparsity
    assert sparsity.measured_from == "export"  # the export's own record, which its zeros agree with
    assert sparsity.overall == pytest.approx(0.5, abs=0.01)
    assert sparsity.export == {"method": "imp", "loss": "ce", "granularity": "unstructured", "shrunk": False}
    assert evaluated.recipe["pruning"]["method"] == "dense"
    assert evaluated.labels["method"] == "subnetwork" and evaluated.labels["sparsity"] == pytest.approx(0.5)


def test_exported_tokenizer_keeps_the_training_length(tmp_path, tiny_model_dir):
    """The saved tokenizer truncates at the run's model.max_length (48 here), not the backbone's 512."""
    run = api.run(recipe(tmp_path, tiny_model_dir, "omp", pruning={"method": "omp", "sparsity": 0.3})).run_dir
    saved = json.loads((run / "model" / "tokenizer_config.json").read_text())
    assert saved["model_max_length"] == 48
    tokenizer = AutoTokenizer.from_pretrained(run / "model")
    assert len(tokenizer("word " * 200, truncation=True)["input_ids"]) == 48


def test_easy_hard_split_from_bias_dir(tmp_path, tiny_model_dir):
    dev = generate_synthetic("dev", 30, seed=0)
    gold = np.array([ex.label for ex in dev])
    confidence = np.linspace(0.9, 0.1, len(dev))  # easy while the gold class is the bias argmax
    probs = np.full((len(dev), 3), 0.0)
    probs[np.arange(len(dev)), gold] = confidence
    for i, g in enumerate(gold):
        probs[i, [c for c in range(3) if c != g]] = (1 - confidence[i]) / 2
    write_bias_predictions(tmp_path / "bias" / "synthetic_dev.jsonl", [ex.id for ex in dev], np.log(probs),
                           labels=["entailment", "neutral", "contradiction"], feature="t", split="dev")
    metrics = api.run(recipe(tmp_path, tiny_model_dir, "eh", bias_dir=str(tmp_path / "bias"))).metrics
    block = metrics.id["synthetic_dev"]
    rows = (tmp_path / "eh" / "predictions" / "synthetic_dev.jsonl").open()
    preds = [json.loads(line)["pred"] for line in rows]
    names = ["entailment", "neutral", "contradiction"]
    correct = np.array([names.index(p) == g for p, g in zip(preds, gold, strict=True)])
    easy = confidence > (1 - confidence) / 2
    assert easy.sum() == 21 and block["easy_hard"]["n_easy"] == 21 and block["easy_hard"]["n_hard"] == 9
    assert block["easy_hard"]["easy"] == pytest.approx(correct[easy].mean())
    assert block["easy_hard"]["hard"] == pytest.approx(correct[~easy].mean())
    assert block["easy_hard"]["gap"] == pytest.approx(correct[easy].mean() - correct[~easy].mean())


def write_probs(path, ids, rows):
    path.write_text("".join(json.dumps({"id": i, "probs": p}) + "\n" for i, p in zip(ids, rows, strict=True)))


@pytest.mark.parametrize(("probs", "share"), [
    ([[0.1, 0.8, 0.1]] * 3, "100%"),                                    # one class
    ([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]], "33%"),      # 1 of 3 right: chance, spread
])
def test_a_collapsed_member_file_is_refused_in_one_line(tmp_path, probs, share):
    """A member is judged on the predictions the variance reads, so a sweep's ``predict`` stage file
    (the RMC study's members, with no metrics.json beside it) is checked as a run folder is."""
    from srnet.by_id import read_prediction_probs
    from srnet.experiments.verbs.bias_fit import refuse_collapsed_member

    ids, gold = ["a", "b", "c"], np.array([0, 2, 1])
    path = tmp_path / "pred85" / "k" / "train.jsonl"
    path.parent.mkdir(parents=True)
    write_probs(path, ids, probs)
    with pytest.raises(SrnetError, match=rf"^srnet bias difficulty: member {path} collapsed \(accuracy "
                       rf"0\.3333 against chance 0\.3333, {share} of its predictions in one class\)"):
        refuse_collapsed_member(path, read_prediction_probs(path, ids), gold)
    fitted = [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8], [0.1, 0.8, 0.1]]
    write_probs(path, ids, fitted)
    refuse_collapsed_member(path, read_prediction_probs(path, ids), gold)  # a working member passes


def test_rmc_pipeline_difficulty_from_runs_at_two_sparsities(tmp_path, tiny_model_dir, capsys):
    from srnet.cli import main

    paths = []
    for name, pruning in (("dense", None), ("omp", {"method": "omp", "sparsity": 0.5})):
        spec = recipe(tmp_path, tiny_model_dir, name, pruning=pruning)
        api.run(spec)
        assert main(["predict", str(tmp_path / name), "--split", "train"]) == 0
        paths.append(str(tmp_path / name))
    (tmp_path / "r.yaml").write_text(json.dumps(recipe(tmp_path, tiny_model_dir, "rmc")))
    out = tmp_path / "difficulty.jsonl"
    # the tiny random members are at chance: refused in one line unless allowed
    capsys.readouterr()
    assert main(["bias", "difficulty", str(tmp_path / "r.yaml"), "--predictions", *paths,
                 "--alpha", "0.3", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    member = Path(paths[0]) / "predictions" / "train.jsonl"
    assert len(err.splitlines()) == 1 and f"member {member} collapsed (accuracy" in err
    assert not out.exists()
    assert main(["bias", "difficulty", str(tmp_path / "r.yaml"), "--predictions", *paths,
                 "--alpha", "0.3", "--out", str(out), "--allow-collapsed"]) == 0
    rows = [json.loads(line) for line in out.open()]
    values = [r["difficulty"] for r in rows]
    assert len(rows) == 48 and min(values) == pytest.approx(0.3) and max(values) == pytest.approx(1.0)
    metrics = api.run(recipe(tmp_path, tiny_model_dir, "rmc_run", loss={
        "name": "rmc", "teacher": str(tmp_path / "dense"), "difficulty": str(out)})).metrics
    assert metrics.id["synthetic_dev"]["n"] == 30
    capsys.readouterr()


def test_tensorboard_without_the_package_is_a_clear_error(tmp_path, tiny_model_dir):
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        with pytest.raises(SrnetError, match="tensorboard package"):
            api.run(recipe(tmp_path, tiny_model_dir, "tb", training={"tensorboard": True}))
        api.run(recipe(tmp_path, tiny_model_dir, "tb"))  # the failed start does not block a rerun
    else:
        result = api.run(recipe(tmp_path, tiny_model_dir, "tb", training={"tensorboard": True}))
        assert any((result.run_dir / "tensorboard").iterdir())


def test_guards_before_any_work(tmp_path, tiny_model_dir):
    with pytest.raises(SrnetError, match="dense_reference"):
        api.run(recipe(tmp_path, tiny_model_dir, "x", dense_reference=str(tmp_path / "missing")))
    assert not (tmp_path / "x").exists()
    with pytest.raises(SrnetError, match="nothing to do"):
        api.run({"name": "empty", "output_dir": str(tmp_path), "model": {"name": str(tiny_model_dir)}})
    done = api.run(recipe(tmp_path, tiny_model_dir, "done"))
    with pytest.raises(SrnetError, match="already complete"):
        api.run(recipe(tmp_path, tiny_model_dir, "done"), resume=True)
    with pytest.raises(SrnetError, match="the run it starts from"):
        again = merge(recipe(tmp_path, tiny_model_dir, "done"), {"model": {"init_from": str(done.run_dir)}})
        api.run(again, overwrite=True)
    assert (done.run_dir / "metrics.json").exists()


def test_classifier_only_mask_runs_without_a_heatmap(tmp_path, tiny_model_dir):
    result = api.run(recipe(tmp_path, tiny_model_dir, "head", pruning={
        "method": "omp", "sparsity": 0.5, "roles": ["classifier"]}))
    assert result.metrics.sparsity.overall == pytest.approx(0.5, abs=0.02)
    assert not (result.run_dir / "sparsity_heatmap.png").exists()


def test_cli_evaluate_with_a_recipe_never_targets_the_evaluated_run(tmp_path, tiny_model_dir, capsys):
    from srnet.cli import main

    api.run(recipe(tmp_path, tiny_model_dir, "ft"))
    (tmp_path / "r.yaml").write_text(json.dumps(recipe(tmp_path, tiny_model_dir, "ft")))
    assert main(["evaluate", str(tmp_path / "ft"), "--recipe", str(tmp_path / "r.yaml")]) == 0
    assert (tmp_path / "eval_ft" / "metrics.json").exists()
    assert (tmp_path / "ft" / "model" / "model.safetensors").exists()
    capsys.readouterr()


def test_dev_flag_replaces_the_recipe_split(tmp_path):
    from srnet.api import with_flags

    base = {"task": "paraphrase", "data": {"dev": {"path": "a.jsonl", "n": 10, "name": "old"}}}
    out = with_flags(base, dev="b.tsv", challenge=["paws.tsv"])
    assert out["data"]["dev"] == {"path": "b.tsv"}
    assert out["data"]["challenge"] == [{"path": "paws.tsv", "challenge": "paws"}]


def test_rows_without_gold_label_are_counted_in_metrics(tmp_path, tiny_model_dir):
    rows = [("a cat sat", "a cat", "entailment"), ("a dog ran", "no dog ran", "contradiction"),
            ("a man read", "a man read a novel", "neutral"), ("x", "y", "-")] * 3
    dev = tmp_path / "dev.jsonl"
    lines = (json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in rows)
    dev.write_text("".join(lines))
    spec = {"name": "gold", "task": "nli", "output_dir": str(tmp_path),
            "model": {"name": str(tiny_model_dir)}, "data": {"dev": {"path": str(dev)}}}
    block = next(iter(api.run(spec).metrics.id.values()))
    assert block["n"] == 9 and block["skipped_no_gold_label"] == 3


def test_git_commit_falls_back_to_the_launchers_name(monkeypatch):
    """A copy of the code without ``.git`` (a remote machine) records the commit its launcher names."""
    from srnet.rundir import layout as rundir

    def no_git(*args, **kwargs):
        raise OSError("git: not found")

    monkeypatch.setattr(rundir.subprocess, "run", no_git)
    monkeypatch.delenv("SRNET_GIT_COMMIT", raising=False)
    assert rundir._git_commit() is None
    monkeypatch.setenv("SRNET_GIT_COMMIT", "abc123")
    assert rundir._git_commit() == "abc123"
