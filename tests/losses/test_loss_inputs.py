"""Loss inputs behind one registry (:mod:`srnet.loss_inputs`): a new input is one module.

``tests/toy_input.py`` adds the input ``example_weight`` and the loss ``weighted_ce`` and nothing
else; named in ``plugins:``, it runs through ``srnet run`` in a fresh process and through the
``SrnetTrainer``, and its weights reach the loss (all ones: the ``ce`` losses; all zeros: a loss
of 0).  The built-in inputs keep their checks; bad sources and files are one line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import torch
import yaml

from conftest import srnet
from conftest import synthetic_split as synthetic
from srnet import api
from srnet.config import recipe_from_dict
from srnet.errors import SrnetError
from srnet.loss_inputs import BUILT_IN_SOURCES, LOSS_INPUTS, ReadContext, check_batch, read_inputs
from srnet.losses import LOSSES
from srnet.tasks import generate_synthetic

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "toy_input.py"
N_TRAIN = 24


@pytest.fixture
def toy_input():
    """The toy module imported in this process, its registrations undone afterwards."""
    with LOSS_INPUTS.scoped(), LOSSES.scoped():
        sys.modules.pop("toy_input", None)
        sys.path.insert(0, str(TOY.parent))
        try:
            import toy_input

            yield toy_input
        finally:
            sys.path.remove(str(TOY.parent))
            sys.modules.pop("toy_input", None)


def weights_file(folder: Path, weight: float, n: int = N_TRAIN, name: str = "weights.jsonl") -> Path:
    path = folder / name
    ids = [ex.id for ex in generate_synthetic("train", n, seed=0)]
    path.write_text("".join(json.dumps({"id": i, "weight": weight}) + "\n" for i in ids))
    return path


def recipe(model, loss: dict, **extra) -> dict:
    return {"task": "synthetic_nli", "seed": 1, "model": {"name": str(model), "max_length": 48},
            "data": {"train": synthetic("train", N_TRAIN), "dev": synthetic("dev", 16)},
            "training": {"max_steps": 3, "batch_size": 8, "log_every": 1, "mixed_precision": "no"},
            "loss": loss, **extra}


def train_losses(folder: Path) -> list[float]:
    rows = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
    return [row["loss"] for row in rows if row.get("event") == "train"]


def test_the_built_in_inputs_are_registered_with_their_sources():
    assert {name: LOSS_INPUTS[name].source for name in LOSS_INPUTS} == {
        "bias_log_probs": "bias_predictions", "teacher_probs": "teacher", "difficulty": "difficulty"}
    assert set(BUILT_IN_SOURCES) == {"bias_predictions", "teacher", "difficulty"}
    every_need = {key for name in LOSSES for key in LOSSES[name].requires}
    assert every_need <= set(LOSS_INPUTS)  # every input a loss needs has a reader and a check


@pytest.mark.parametrize(("key", "value", "message"), [
    ("bias_log_probs", torch.zeros(2, 3), "bias_log_probs row 0 has logsumexp 1.099"),
    ("teacher_probs", torch.full((2, 3), 0.5), "teacher_probs row 0 sums to 1.5"),
    ("difficulty", torch.tensor([0.5, 1.5]), "difficulty 1.5 at row 1"),
    ("difficulty", torch.zeros(2, 3), "extra 'difficulty' has shape [2, 3]; expected [2]"),
])
def test_each_built_in_check_rejects_what_it_should(key, value, message):
    with pytest.raises(SrnetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_batch("loss 'x'", {key}, (2, 3), {key: value})


def test_a_missing_file_names_how_to_give_it():
    context = ReadContext(["a"], None, 3)
    with pytest.raises(SrnetError, match=r"^loss 'rmc' needs loss.difficulty \(a difficulty file\)$"):
        read_inputs({"difficulty": "loss 'rmc'"}, {"difficulty": None}, context,
                    lambda s: f"loss.{s}")


def test_a_plugin_input_runs_through_srnet_run_and_reaches_the_loss(tmp_path, tiny_model_dir):
    """One module adds the input and its loss; weights of 1 give ce's losses, weights of 0 give 0."""
    def weighted(weight: float) -> dict:
        path = weights_file(tmp_path, weight, name=f"{weight}.jsonl")
        return {"name": "weighted_ce", "inputs": {"example_weights": str(path)}}

    # the ce reference needs no plug-in: run here (one interpreter fewer), the plug-in's runs in srnet run
    api.run({**recipe(tiny_model_dir, {"name": "ce"}), "name": "ce", "output_dir": str(tmp_path / "runs")})
    runs = {"ce": train_losses(tmp_path / "runs" / "ce")}
    for name, loss in [("ones", weighted(1.0)), ("zeros", weighted(0.0))]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**recipe(tiny_model_dir, loss, plugins=[str(TOY)]), "name": name,
                                        "output_dir": str(tmp_path / "runs")}))
        done = srnet("run", str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-1500:]
        runs[name] = train_losses(tmp_path / "runs" / name)
    assert len(runs["ce"]) == 3 and min(runs["ce"]) > 0
    assert runs["ones"] == pytest.approx(runs["ce"], rel=1e-5)
    assert runs["zeros"] == [0.0, 0.0, 0.0]


def test_a_plugin_input_reaches_the_trainer(toy_input, tmp_path, tiny_model_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments

    from conftest import encoded
    from srnet.integrations.transformers import SrnetTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    train = encoded(tokenizer, generate_synthetic("train", N_TRAIN, seed=0))
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=8,
                             use_cpu=True, report_to=[], save_strategy="no", disable_tqdm=True,
                             logging_steps=1)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    trainer = SrnetTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                           loss={"name": "weighted_ce",
                                 "inputs": {"example_weights": str(weights_file(tmp_path, 0.0))}})
    trainer.train()
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert losses == [0.0, 0.0]


@pytest.mark.parametrize(("inputs", "message"), [
    ({"example_weightz": "w.jsonl"}, "no registered loss input reads 'example_weightz' (known: "),
    ({"teacher": "t.jsonl"}, "'teacher' is a built-in input's file: give it as loss.teacher"),
])
def test_a_bad_inputs_key_fails_when_the_recipe_loads(toy_input, tiny_model_dir, inputs, message):
    with pytest.raises(SrnetError) as caught:
        recipe_from_dict(recipe(tiny_model_dir, {"name": "weighted_ce", "inputs": inputs}))
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("weights", "message"), [
    (None, "loss 'weighted_ce' needs loss.inputs.example_weights (a JSON Lines file of {id, weight} rows)"),
    ("short", "no weight for example id"),
])
def test_a_missing_file_or_row_fails_before_training(toy_input, tmp_path, tiny_model_dir, weights, message):
    from srnet import api

    loss = {"name": "weighted_ce"}
    if weights:
        loss["inputs"] = {"example_weights": str(weights_file(tmp_path, 1.0, n=N_TRAIN - 4))}
    with pytest.raises(SrnetError) as caught:
        api.run(recipe(tiny_model_dir, loss, output_dir=str(tmp_path / "runs"), name="bad"))
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "runs" / "bad" / "metrics.json").exists()


def weights_with(folder: Path, row: int, value: object) -> Path:
    """A weights file of ones whose ``row``-th training example has the raw JSON ``value``."""
    path = weights_file(folder, 1.0)
    lines = path.read_text().splitlines()
    lines[row] = lines[row].replace('"weight": 1.0', f'"weight": {value}')
    path.write_text("\n".join(lines) + "\n")
    return path


BAD_WEIGHTS = [("NaN", r"\(row 5\) is nan; expected finite numbers"),
               ("Infinity", r"\(row 5\) is inf; expected finite numbers"),
               ('"abc"', r"\(row 5\) is 'abc'; expected finite numbers"),
               ("null", r"\(row 5\) is None; expected finite numbers"),
               ("[1, 2]", r"\(row 5\) is \[1, 2\]; expected finite numbers"),
               ("-1", r"example_weight -1 at row 5 is negative")]


@pytest.mark.parametrize(("value", "message"), BAD_WEIGHTS)
def test_a_bad_value_fails_in_one_line_before_the_run_folder_exists(toy_input, tmp_path, tiny_model_dir,
                                                                     value, message):
    """NaN and inf once ran to a NaN loss, text was a traceback, a negative weight failed only
    once training had started in the run folder."""
    from srnet import api

    path = weights_with(tmp_path, 5, value)
    loss = {"name": "weighted_ce", "inputs": {"example_weights": str(path)}}
    with pytest.raises(SrnetError) as caught:
        api.run(recipe(tiny_model_dir, loss, output_dir=str(tmp_path / "runs"), name="bad"))
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
    assert re.search(message, str(caught.value)), str(caught.value)
    assert not (tmp_path / "runs").exists()


def test_a_plugin_readers_own_error_is_one_line_naming_the_file(toy_input, tmp_path, monkeypatch):
    def broken(self, path, context):
        return float("abc")

    monkeypatch.setattr(toy_input.ExampleWeight, "read", broken)
    with pytest.raises(SrnetError, match=r"^w.jsonl: unreadable example_weight file \(ValueError: could "
                                         r"not convert string to float: 'abc'\)$"):
        read_inputs({"example_weight": "loss 'weighted_ce'"}, {"example_weights": "w.jsonl"},
                    ReadContext(["a"], None, 3), str)


def test_a_nan_weight_fails_the_trainer_before_it_trains(toy_input, tmp_path, tiny_model_dir):
    """SrnetTrainer(inputs=) with a NaN weight reported a loss of 0.0."""
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, TrainingArguments

    from srnet.integrations.transformers import SrnetTrainer

    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, use_cpu=True, report_to=[])
    train = Dataset.from_dict({"id": [ex.id for ex in generate_synthetic("train", N_TRAIN, seed=0)]})
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    with pytest.raises(SrnetError, match=r"weights.jsonl: example_weight of example id '.*' \(row 2\) is na"):
        SrnetTrainer(model=model, args=args, train_dataset=train, loss="weighted_ce",
                     inputs={"example_weights": weights_with(tmp_path, 2, "NaN")})
    assert not (tmp_path / "out").exists()


def test_a_file_the_loss_does_not_read_is_one_warning_line(tmp_path, tiny_model_dir, caplog):
    """A teacher file given to a loss that reads none (even a missing one) was ignored
    without a word; a sweep may give it to grid points that do not distil, so it is a note."""
    from srnet import api

    loss = {"name": "ce", "teacher": str(tmp_path / "missing.jsonl")}
    with caplog.at_level("WARNING", logger="srnet"):
        api.run(recipe(tiny_model_dir, loss, output_dir=str(tmp_path / "runs"), name="ce"))
    notes = [r.getMessage() for r in caplog.records if "is given as" in r.getMessage()]
    assert notes == [f"{tmp_path / 'missing.jsonl'} is given as loss.teacher, but loss 'ce' with objective "
                     "'standard' reads no teacher file: ignored (and it does not exist)"]


def test_plugin_inputs_do_not_change_a_fingerprint_at_their_default(tiny_model_dir):
    base = recipe(tiny_model_dir, {"name": "ce"})
    with_key = recipe(tiny_model_dir, {"name": "ce", "inputs": {}})
    assert recipe_from_dict(base).fingerprint() == recipe_from_dict(with_key).fingerprint()
