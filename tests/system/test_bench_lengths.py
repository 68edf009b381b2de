"""``srnet bench --data-split``: timing on batches of the user's own texts (real lengths, padded to
the longest in each batch) instead of random tokens at a fixed length, and the record of the inputs."""

from __future__ import annotations

import json
import statistics
from importlib.util import find_spec

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from srnet import api
from srnet.cli import main
from srnet.evaluation.timing_inputs import recipe_inputs, sample_inputs
from srnet.experiments import timing as bench_timing
from srnet.experiments.verbs.bench import BenchConfig
from srnet.tasks import get_task
from srnet.tasks.loading import load_examples
from srnet.tasks.spec import DataSpec

WORDS = ["the", "film", "was", "good", "bad", "long", "dull", "fine", "and", "very"]
TEXTS = [" ".join(WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 6)) for i in range(24)]


@pytest.fixture
def short_data(tmp_path) -> dict:
    """24 sentences of 1 to 6 words in ``dev.jsonl`` and a sentiment recipe naming them."""
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps({"sentence": s, "label": i % 2}) + "\n" for i, s in enumerate(TEXTS)))
    recipe = {"task": "sentiment", "seed": 0, "model": {"max_length": 128},
              "data": {"dev": {"path": str(data)}}}
    path = tmp_path / "recipe.yaml"
    path.write_text(json.dumps(recipe))
    return {"recipe": recipe, "path": path}


@pytest.fixture
def model(tiny_model_dirs):
    return tiny_model_dirs("bert", num_labels=2)


def token_counts(model) -> list[int]:
    return [len(ids) for ids in AutoTokenizer.from_pretrained(model)(TEXTS)["input_ids"]]


def test_data_batches_keep_the_texts_short_lengths(short_data, model):
    (cell,) = recipe_inputs(short_data["recipe"], model, [4], n_batches=6)  # every example once
    counts = token_counts(model)
    assert cell.kind == "data" and cell.batch == 4 and len(cell.batches) == 6
    assert cell.lengths["median"] == statistics.median(counts) and cell.lengths["max"] == max(counts)
    assert cell.lengths["mean"] == pytest.approx(statistics.mean(counts))
    for batch in cell.batches:  # padded to the longest of its own examples
        real = batch["attention_mask"].sum(1)
        assert batch["input_ids"].shape == (4, int(real.max())) and set(batch) <= {
            "input_ids", "attention_mask", "token_type_ids"}
    assert sorted(int(n) for b in cell.batches for n in b["attention_mask"].sum(1)) == sorted(counts)
    assert cell.lengths["padded_mean"] == pytest.approx(statistics.mean(b["input_ids"].shape[1]
                                                                       for b in cell.batches))
    assert cell.longest <= max(counts) < 16 < 128


def test_data_batches_truncate_at_max_length(short_data, model):
    spec = DataSpec(path=str(short_data["path"].parent / "dev.jsonl"))
    examples = load_examples(get_task("sentiment"), spec)
    cell = sample_inputs(examples, AutoTokenizer.from_pretrained(model), 4, batch=3, n_batches=5, seed=1)
    assert cell.longest == 4 and cell.lengths["max"] == 4 and len(cell.batches) == 5


def run_folder(tmp_path, model, recipe: dict):
    """A finished run's folder: its model exported to ``model/``, its recipe in ``config.yaml``."""
    from srnet.export import export_model

    run = tmp_path / "run"
    export_model(AutoModelForSequenceClassification.from_pretrained(model), {},
                 AutoTokenizer.from_pretrained(model), run / "model", metadata=None)
    (run / "config.yaml").write_text(json.dumps(recipe))
    return run


def test_bench_on_a_runs_data_records_the_inputs_and_times_batch_one(short_data, model, tmp_path, capsys):
    run, out = run_folder(tmp_path, model, short_data["recipe"]), tmp_path / "bench.json"
    args = ["bench", str(run), "--data-split", "dev", "--batch-sizes", "1", "4", "--n-batches", "3",
            "--rounds", "2", "--warmup", "0", "--out", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert [(i["kind"], i["split"], i["batch"], i["n_batches"]) for i in result["inputs"]] == [
        ("data", "dev", 1, 3), ("data", "dev", 4, 3)]
    assert all(set(i["lengths"]) == {"median", "p95", "mean", "max", "padded_mean"} for i in result["inputs"])
    assert [(r["model"], r["batch"], r["length"]) for r in result["rows"]] == [
        (str(run), i["batch"], i["lengths"]["padded_mean"]) for i in result["inputs"]]
    assert all(r["length"] < 16 and r["speedup"] == 1.0 for r in result["rows"])
    assert "dev: 3 batches of 4, median" in capsys.readouterr().out


def test_fixed_lengths_record_their_inputs(model):
    result = api.bench([str(model)], batch_sizes=[1, 2], lengths=[8], rounds=1, warmup=0)
    assert result["inputs"] == [{"kind": "fixed", "batch": b, "length": 8} for b in (1, 2)]
    assert [(r["batch"], r["length"]) for r in result["rows"]] == [(1, 8), (2, 8)]


@pytest.mark.skipif(find_spec("onnxruntime") is None or find_spec("onnx") is None,
                    reason="the srnet[onnx] extra (onnx, onnxruntime) is not installed")
def test_onnx_sessions_run_the_same_data_batches(short_data, model, monkeypatch):
    seen: dict[str, list] = {"torch": [], "onnx": []}

    class Recording:
        def __init__(self, session) -> None:
            self.session = session

        def get_inputs(self):
            return self.session.get_inputs()

        def run(self, names, feeds):
            seen["onnx"].append(torch.from_numpy(feeds["input_ids"]))
            return self.session.run(names, feeds)

    def recording_sessions(candidates, quantize=None):
        built = sessions(candidates, quantize)
        seen["torch"].clear()  # the ONNX export's trace and check ran the model
        return [[(runtime, Recording(s), record) for runtime, s, record in triples] for triples in built]

    sessions = bench_timing.onnx_sessions
    monkeypatch.setattr(bench_timing, "onnx_sessions", recording_sessions)
    candidate = bench_timing.load_candidate(str(model))
    candidate.model.register_forward_pre_hook(
        lambda module, args, kwargs: seen["torch"].append(kwargs["input_ids"]), with_kwargs=True)
    cells = recipe_inputs(short_data["path"], model, [1, 4], n_batches=3)
    result = bench_timing.run_bench([candidate], BenchConfig(onnx=True, rounds=1, warmup=0), cells)
    sent = [b["input_ids"] for cell in cells for b in cell.batches]
    assert len(seen["torch"]) == len(seen["onnx"]) == len(sent) == 6
    triples = zip(seen["torch"], seen["onnx"], sent, strict=True)
    assert all(torch.equal(a, b) and torch.equal(a, c) for a, b, c in triples)
    assert [(r["runtime"], r["batch"]) for r in result["rows"]] == [
        ("torch", 1), ("onnxruntime", 1), ("torch", 4), ("onnxruntime", 4)]


@pytest.mark.parametrize(("flags", "message"), [
    (["--lengths", "1"], "--lengths 1: Input should be greater than or equal to 2"),
    (["--lengths", "200"], "--lengths 200: longer than the 128 positions of "),
    (["--lengths", "32", "--data-split", "dev"], "--lengths 32: --data-split dev times the data's own"),
    (["--n-batches", "2"], "--n-batches 2 needs --data-split"),
    (["--data-split", "test"], "data split 'test': not in the recipe's data (it has: dev)"),
])
def test_a_bad_length_or_split_is_refused_in_one_line_before_timing(flags, message, short_data, model,
                                                                    monkeypatch, capsys):
    monkeypatch.setattr(bench_timing, "time_calls", lambda *a: pytest.fail("timed"))
    recipe = ["--recipe", str(short_data["path"])] if "--data-split" in flags else []
    assert main(["bench", str(model), "--batch-sizes", "1", *recipe, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


def test_data_split_without_a_recipe_needs_a_run_folder(model, capsys):
    assert main(["bench", str(model), "--data-split", "dev"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --data-split dev: {model} is no run folder with a recipe; give --recipe\n"
