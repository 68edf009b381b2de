"""``srnet compress`` on a tiny random BERT: the whole pipeline once (card, reload, gates), resume
after a lost stage gives the same artifact, ``--dry-run`` trains nothing, the gates fail when they
should, and every bad input is one line (exit 2) before any training."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from conftest import save_tiny_model, tiny_recipe
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.experiments.compress.config import GATE_FAILED_EXIT, CompressConfig
from srnet.experiments.compress.gates import gates
from srnet.experiments.compress.record import CompressRecord, stage_attack_file
from srnet.experiments.compress.run import CompressResult
from srnet.io import file_sha256
from srnet.rundir import locks

QUIET = {"progress": lambda _: None}
BIAS = "hypothesis_bow"
FAST = dict(attack_n=4, rounds=1, batch=2, length=16, runtime="torch")  # --runtime auto depends on the CPU


@pytest.fixture(autouse=True)
def one_thread_workers(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory) -> Path:
    """A tiny BERT fine-tuned for 12 steps on the synthetic NLI task (a run folder)."""
    root = tmp_path_factory.mktemp("compress")
    model = save_tiny_model(root / "tiny")
    recipe = tiny_recipe(root, model, "ft", training={"max_steps": 12, "eval_every": None})
    recipe["data"]["train"]["synthetic"]["n"] = 32
    return api.run(recipe).run_dir


def data_recipe() -> dict:
    """The data the compression trains and scores on (32 training pairs, 4 steps per stage)."""
    base = tiny_recipe("unused", "unused", "x", training={"max_steps": 4, "eval_every": None})
    del base["name"], base["output_dir"], base["model"]
    base["data"]["train"]["synthetic"]["n"] = 32
    return base


@pytest.fixture(scope="module")
def compressed(finetuned, tmp_path_factory) -> CompressResult:
    """The fine-tuned model compressed by the sweep's ``compress`` stage (the verb the CLI and the
    API run), with the stage's recipe as its data: 4 training steps per trained stage."""
    root = tmp_path_factory.mktemp("out")
    base = data_recipe()
    sweep = {"name": "s", "output_dir": str(root / "sweep"), "base": base, "stages": {
        "small": {"kind": "compress", "with": {"model": str(finetuned), "sparsity": 0.5, "bias": BIAS,
                                               **FAST}}}}
    (root / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    (job,) = api.sweep(root / "sweep.yaml", **QUIET).jobs
    return CompressResult(job.folder, 0.5, record=CompressRecord.load(job.folder))


def test_compress_writes_a_shrunk_model_its_card_and_its_gates(compressed, finetuned):
    from transformers import AutoModelForSequenceClassification

    out, record = compressed.out, compressed.record.model_dump(mode="json")
    assert record["level"] == 0.5 and record["reference"] == "teacher"
    assert {"dense", "teacher", "student", "shipped"} <= set(record["figures"])
    # the student really is at its level: half of every layer's heads and neurons, shrunk
    assert record["figures"]["student"]["sparsity"] == pytest.approx(0.5, abs=0.02)
    dense = AutoModelForSequenceClassification.from_pretrained(finetuned / "model")
    small = AutoModelForSequenceClassification.from_pretrained(out / "model", trust_remote_code=True)
    n_small, n_dense = (sum(p.numel() for p in m.encoder.parameters()) for m in (small.bert, dense.bert))
    assert n_small < 0.6 * n_dense
    card = ModelCard.load(out / "model" / "README.md")
    names = [r.metric_name for r in card.data.eval_results]
    assert any(n.startswith("compressed, FP32 (PyTorch): accuracy") for n in names)
    assert "| original (dense, PyTorch) |" in card.text and "latency (ms)" in card.text
    assert any("charswap" in n for n in names)
    assert "trust_remote_code=True" in card.text
    # the recovery as the student ran it (twice the data recipe's max_steps 4), on the card too
    assert (record["recovery"]["max_steps"], record["recovery"]["lr"]) == (8, 5e-5)
    assert record["recovery"]["distill"] == "plain"
    assert ("Recovery: 8 steps at lr 5e-05, PoE against the bias model, plus distillation from the teacher "
            "(KL at T 2).") in card.text
    # each gate is computed from the figures recorded beside it
    shipped, ref = record["figures"]["shipped"], record["figures"]["teacher"]
    by_name = {g["gate"]: g for g in record["gates"]}
    assert by_name["id"]["passed"] == (by_name["id"]["interval"]["low"] > -0.01)
    interval = by_name["id"]["interval"]
    assert (interval["candidate"], interval["reference"]) == (shipped["id"], ref["id"])
    assert record["passed"] == all(g["passed"] for g in record["gates"])
    assert record["exit_code"] == (0 if record["passed"] else GATE_FAILED_EXIT)
    assert record["peak_rss_mb"] > 0


@pytest.mark.skipif(find_spec("onnxruntime") is None, reason="the srnet[onnx] extra is not installed")
def test_a_per_channel_int8_compression_ships_scores_times_and_gates_that_graph(finetuned, tmp_path):
    """``--runtime onnx-int8-per-channel`` end to end: the export ships a per-channel
    ``model.int8.onnx`` (recorded), the shipped stage scores that file (SHA-256 checked), the speed
    comes from its bench rows, the INT8 gate and the card's INT8 row are there. (Recovered with
    ``--recovery-distill through-bias``: the record and the card say what the student ran.)"""
    settings = {**FAST, "runtime": "onnx-int8-per-channel"}
    result = api.compress(str(finetuned), out=tmp_path / "c", sparsity=0.5, bias=BIAS,
                          recovery_distill="through-bias", **settings, recipe=data_recipe(), **QUIET)
    model = tmp_path / "c" / "model"
    exported = json.loads((model / "srnet_export.json").read_text())["onnx"]["int8"]
    assert exported["quantize"] == "int8-per-channel"
    (shipped,) = (tmp_path / "c" / "stages" / "shipped").glob("*/metrics.json")
    graph = json.loads(shipped.read_text())["runtime"]["graph"]
    assert graph["source"] == "shipped" and graph["sha256_checked"]
    assert graph["sha256"] == file_sha256(model / "model.int8.onnx")
    (bench,) = (tmp_path / "c" / "stages" / "bench").glob("*/bench.json")
    rows = json.loads(bench.read_text())["rows"]
    timed = [r for r in rows if r["runtime"] == "onnxruntime-int8-per-channel"]
    assert len(timed) == 2 and result.record.speed.speedup == timed[1]["speedup"]
    assert result.record.model_dump(mode="json")["speed"]["dense_int8_speedup"] == timed[0]["speedup"]
    assert "int8" in {g["gate"] for g in result.record.model_dump(mode="json")["gates"]}
    assert "compressed as shipped (onnx-int8-per-channel)" in (model / "README.md").read_text()
    (student,) = (tmp_path / "c" / "stages" / "student").glob("*/config.yaml")
    assert yaml.safe_load(student.read_text())["objective"]["params"]["through_bias"] is True
    assert result.record.model_dump(mode="json")["recovery"]["distill"] == "through-bias"
    card = (model / "README.md").read_text()
    assert "8 steps at lr 5e-05, PoE against the bias model, plus distillation from the teacher, both" in card


def test_resume_after_a_lost_stage_gives_the_same_artifact(compressed, tmp_path):
    import shutil

    out = tmp_path / "c"
    shutil.copytree(compressed.out, out)
    before = file_sha256(out / "model" / "model.safetensors")
    stages = out / "stages"
    for name in ("student", "export", "shipped", "bench"):  # as if killed during the student stage
        shutil.rmtree(stages / name)
    (out / "compress.json").unlink()
    shutil.rmtree(out / "model")
    # the recorded sweep names the original folder: move it as a user would not, so rewrite it
    sweep = (stages / "sweep.yaml").read_text().replace(str(compressed.out), str(out))
    (stages / "sweep.yaml").write_text(sweep)
    with pytest.raises(SrnetError, match="holds an unfinished compression"):
        api.compress(compressed.record.model, out=out, sparsity=0.5, bias=BIAS, **FAST,
                     recipe=data_recipe(), **QUIET)
    again = api.compress(compressed.record.model, out=out, sparsity=0.5, bias=BIAS, **FAST,
                         recipe=data_recipe(), resume=True, **QUIET)
    assert file_sha256(out / "model" / "model.safetensors") == before
    assert again.record.figures["student"].id == compressed.record.figures["student"].id
    import json

    recorded = [json.loads(p.read_text())["peak_rss_mb"] for p in stages.glob("*/*/stage.json")]
    assert len(recorded) == 9 and min(recorded) > 0  # the stages kept from the first call count too
    assert again.record.model_dump(mode="json")["peak_rss_mb"] >= max(recorded)


def test_a_finished_compression_is_not_replaced_without_overwrite(compressed):
    with pytest.raises(SrnetError, match=r"a finished compression.*resume=True.*overwrite=True"):
        api.compress(compressed.record.model, out=compressed.out, sparsity=0.5, **FAST, **QUIET)


def test_a_finished_compression_resumes_with_new_attack_and_gate_settings_only(compressed, tmp_path):
    """--resume of a finished compression re-attacks and re-gates with a changed --attack-n or
    margin, retraining nothing; a setting that would change what trained is refused in one line."""
    import shutil

    out = tmp_path / "c"
    shutil.copytree(compressed.out, out)
    sweep = (out / "stages" / "sweep.yaml").read_text().replace(str(compressed.out), str(out))
    (out / "stages" / "sweep.yaml").write_text(sweep)
    trained = sorted(p.name for p in (out / "stages" / "student").iterdir())
    common = dict(sparsity=0.5, bias=BIAS, recipe=data_recipe(), resume=True, **QUIET)
    with pytest.raises(SrnetError, match="differs from what this compression trained") as err:
        api.compress(compressed.record.model, out=out, **{**FAST, "recovery_factor": 3.0}, **common)
    assert "\n" not in str(err.value)
    again = api.compress(compressed.record.model, out=out, **{**FAST, "attack_n": 6, "max_robust_drop": 5.0},
                         **common)
    assert sorted(p.name for p in (out / "stages" / "student").iterdir()) == trained
    assert again.record.config["attack_n"] == 6 and again.record.config["max_robust_drop"] == 5.0
    assert len([p for p in (out / "stages" / "attack").iterdir() if p.is_dir()]) == 2
    for model in ("dense", "teacher", "shipped"):  # each attack stage kept its results
        results = Path(again.record.stages[model]).glob("attack/*/*.json")
        assert sorted(json.loads(p.read_text())["total"] for p in results) == [4, 6]
        assert stage_attack_file(again.record.stages[model], again.record.stages["attack"]).parent.name == (
            Path(again.record.stages["attack"]).name)
    # a disturbed bench is timed again with another --rounds (what a failed speed gate's line says)
    benched = api.compress(compressed.record.model, out=out, **{**FAST, "attack_n": 6, "rounds": 2}, **common)
    assert sorted(p.name for p in (out / "stages" / "student").iterdir()) == trained
    assert benched.record.speed.rounds == 2
    assert len([p for p in (out / "stages" / "bench").iterdir() if p.is_dir()]) == 2


def test_dry_run_sizes_plans_and_trains_nothing(finetuned, tmp_path, monkeypatch):
    """The sizing's timings are fixed here (a tiny model at batch 2 x 16 is not reliably faster
    shrunk: overhead dominates); the real timing is the sizing test's below."""
    from srnet.experiments import timing as bench_timing

    def timed(candidates, config, inputs=None):
        batch = inputs[0].batch if inputs else config.batch_sizes[0]
        rows = [{"model": c.label, "runtime": "torch", "speedup": 1 + i / 2, "latency_ms": 10 / (1 + i / 2),
                 "batch": batch} for i, c in enumerate(candidates)]
        return {"rows": rows, "environment": {}, "warnings": []}

    monkeypatch.setattr(bench_timing, "run_bench", timed)
    lines = []
    result = api.compress(str(finetuned), out=tmp_path / "c", speedup=1.2, levels=[0.5, 0.75], margin=0.0,
                          **FAST, dry_run=True, progress=lines.append)
    assert not (tmp_path / "c").exists()
    assert result.level == 0.5 and result.estimate_s > 0  # 1.5x at 50%, 2x at 75%
    assert any("to run student" in line for line in lines) and "estimate on this machine" in lines[-1]
    assert "(sizing " in lines[-1]  # the real run sizes again, so the estimate counts it


def test_the_probe_times_batches_at_the_quartile_midpoints_of_their_padded_length():
    """The dry run's probe stands for the mean batch: one batch from each quartile of padded length
    (the longest example in the batch), whatever order the batches come in."""
    from srnet.experiments.compress.estimate import probe_batches

    lengths = list(range(1, 81))  # example i has i + 1 tokens
    batches = [[i] for i in range(80)][::-1]  # 80 one-example batches, longest first
    picked = probe_batches(batches, lengths)
    assert [max(lengths[i] for i in b) for b in picked] == [11, 31, 51, 71]
    assert probe_batches([[0, 5]], lengths) == [[0, 5]] * 4


def test_sizing_picks_the_smallest_level_over_the_target(finetuned, tmp_path):
    from srnet.experiments.compress.sizing import size_to_machine
    from srnet.experiments.compress.source import resolve_source

    config = CompressConfig(speedup=1.01, levels=[0.25, 0.5, 0.75], rounds=3, batch=4, length=32, margin=0.0,
                            runtime="torch", refine=False)
    sizing = size_to_machine(resolve_source(str(finetuned), None, None), config, progress=lambda _: None)
    assert [p.level for p in sizing.curve] == [0.25, 0.5, 0.75]
    first = next(p.level for p in sizing.curve if p.speedup >= sizing.needed)
    assert sizing.level == first


def test_the_sizing_times_the_levels_under_the_runtime_and_the_dense_model_under_pytorch_only(
        finetuned, monkeypatch):
    """The sizing compares each level's graph with dense PyTorch FP32: the dense model's own graphs
    would be exported, quantized and timed for nothing."""
    from srnet.experiments import timing as bench_timing
    from srnet.experiments.compress.sizing import size_to_machine
    from srnet.experiments.compress.source import resolve_source

    rows = []

    def recording(candidates, config, inputs=None):
        result = real(candidates, config, inputs)
        rows.extend((row["model"], row["runtime"]) for row in result["rows"])
        return result

    real = bench_timing.run_bench
    monkeypatch.setattr(bench_timing, "run_bench", recording)
    config = CompressConfig(sparsity=0.5, levels=[0.25, 0.5], rounds=1, batch=2, length=16,
                            runtime="onnx-int8-per-channel")
    sizing = size_to_machine(resolve_source(str(finetuned), None, None), config, progress=lambda _: None)
    assert [runtime for _, runtime in rows] == ["torch", "onnxruntime-int8-per-channel",
                                                "onnxruntime-int8-per-channel"]
    assert rows[0][0] == str(finetuned / "model") and [p.level for p in sizing.curve] == [0.25, 0.5]


@pytest.mark.parametrize("runtime", ["torch", "onnx", "onnx-int8", "onnx-int8-per-channel"])
def test_the_runtime_reaches_the_export_the_shipped_scoring_and_the_bench(finetuned, tmp_path, runtime):
    """``--runtime`` sets the graphs the export writes, the runtime its file is scored under and the
    graphs the bench times: the INT8 mode (per tensor or per channel) is the same in all three."""
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source
    from srnet.export.runtimes import RUNTIMES

    assert runtime in RUNTIMES
    quantize = {"onnx-int8": "int8", "onnx-int8-per-channel": "int8-per-channel"}.get(runtime)
    stages = compress_sweep(resolve_source(str(finetuned), data_recipe(), None), 0.5,
                            CompressConfig(sparsity=0.5, runtime=runtime), tmp_path)["stages"]
    assert stages["export"]["with"]["quantize"] == stages["bench"]["with"]["quantize"] == quantize
    assert stages["export"]["with"]["onnx"] == stages["bench"]["with"]["onnx"] == (runtime != "torch")
    assert stages["shipped"]["set"]["evaluation.runtime"] == runtime


def test_the_speed_gate_reads_the_rows_of_its_own_int8_mode(tmp_path):
    """A bench that timed both INT8 modes: the per-channel compression's speed-up (and the dense
    INT8 figure beside it) come from the per-channel rows, never the per-tensor ones."""
    from srnet.experiments.compress.record import bench_figures

    def row(model, runtime, ms):
        return {"model": model, "runtime": runtime, "latency_ms": ms, "speedup": 100 / ms, "batch": 1,
                "length": 8}

    rows = [row("dense", "torch", 100), row("dense", "onnxruntime-int8", 50),
            row("dense", "onnxruntime-int8-per-channel", 40), row("small", "torch", 60),
            row("small", "onnxruntime-int8", 30), row("small", "onnxruntime-int8-per-channel", 25)]
    (tmp_path / "bench.json").write_text(json.dumps({"rows": rows, "threads": 1, "rounds": 1,
                                                     "environment": {"cpu": "x"}}))
    for runtime, speedup, dense in (("onnx-int8", 100 / 30, 2.0), ("onnx-int8-per-channel", 4.0, 2.5)):
        figures = bench_figures(tmp_path / "bench.json", runtime)
        assert (figures.speedup, figures.dense_int8_speedup) == (speedup, dense)
    assert bench_figures(tmp_path / "bench.json", "torch").dense_int8_speedup is None


def test_recovery_epochs_lengthen_the_student_and_its_estimate(finetuned, tmp_path):
    """``--recovery-epochs`` reaches the student's training (over the recipe's max_steps, which would
    otherwise silently win) and the dry run's estimate counts its steps; no other stage changes."""
    from srnet.experiments.compress.estimate import estimate_seconds
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), data_recipe(), None)  # max_steps 4, 32 pairs at batch 8
    plain_config = CompressConfig(sparsity=0.5, recovery_factor=1)  # the recipe's own length
    longer_config = CompressConfig(sparsity=0.5, recovery_epochs=3)
    plain = compress_sweep(source, 0.5, plain_config, tmp_path / "a")
    longer = compress_sweep(source, 0.5, longer_config, tmp_path / "b")
    assert longer["stages"]["student"]["set"]["training.epochs"] == 3
    assert longer["stages"]["student"]["set"]["training.max_steps"] is None
    assert "training.epochs" not in plain["stages"]["student"]["set"]
    assert {k: v for k, v in longer["stages"].items() if k != "student"} == {
        k: v for k, v in plain["stages"].items() if k != "student"}
    plain_estimate, longer_estimate = (estimate_seconds(source, plain, plain_config),
                                       estimate_seconds(source, longer, longer_config))
    assert plain_estimate["train_steps"] == 4
    assert longer_estimate["train_steps"] == 3 * 4  # 3 epochs of 4 batches
    # the dev split is scored once per epoch during training (eval_every unset) and counted so
    assert (plain_estimate["dev_evaluations"], longer_estimate["dev_evaluations"]) == (1, 3)


@pytest.mark.parametrize(("training", "factor", "expected"), [
    ({"epochs": 1.0, "max_steps": None}, 2.0, {"training.epochs": 2.0, "training.max_steps": None}),  # MNLI
    ({"epochs": 3.0, "max_steps": None}, 2.0, {"training.epochs": 6.0, "training.max_steps": None}),
    ({"epochs": 3.0, "max_steps": 4}, 2.0, {"training.max_steps": 8}),     # max_steps wins over epochs
    ({"epochs": 3.0, "max_steps": 4}, 1.0, {}),
])
def test_the_recovery_is_the_given_multiple_of_the_recipes_training(training, factor, expected):
    from srnet.experiments.compress.plan import recovery_length

    given = CompressConfig(sparsity=0.5, recovery_factor=factor)
    for level in (0.0, 0.5, 0.8):  # a given factor holds at every depth
        assert recovery_length(given, training, level) == expected
    epochs = CompressConfig(sparsity=0.5, recovery_epochs=3)  # sets the length alone, the factor unused
    assert recovery_length(epochs, training, 0.8) == {"training.epochs": 3, "training.max_steps": None}
    assert epochs.recovery_factor == 1.0  # so a stage recorded before the factor existed keeps its key


@pytest.mark.parametrize(("level", "epochs"), [(0.0, 2.0), (0.5, 2.0), (0.6, 2.0), (0.65, 4.0), (0.75, 4.0)])
def test_by_default_the_recovery_is_twice_the_training_and_four_times_from_a_65_percent_cut(level, epochs):
    """The MNLI deep study's lever: a recovery twice as long from a 65% cut on, where factor 4 led
    factor 2 on every seed; shallower cuts keep factor 2."""
    from srnet.experiments.compress.plan import recovery_length

    config = CompressConfig(sparsity=0.5)
    assert config.recovery_factor is None and config.recovery_factor_at(level) == epochs
    assert recovery_length(config, {"epochs": 1.0, "max_steps": None}, level) == {
        "training.epochs": epochs, "training.max_steps": None}


def test_the_default_recovery_reaches_the_student_and_its_estimate(finetuned, tmp_path):
    """... and a layer-wise distilled recovery adds one teacher forward pass per step."""
    from srnet.config import recipe_from_dict
    from srnet.experiments.compress.estimate import estimate_seconds
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), data_recipe(), None)  # max_steps 4
    config = CompressConfig(sparsity=0.5)
    sweep = compress_sweep(source, 0.5, config, tmp_path / "a")
    assert sweep["stages"]["student"]["set"]["training.max_steps"] == 8
    estimate = estimate_seconds(source, sweep, config)
    assert estimate["train_steps"] == 8 and estimate["teacher_s"] == 0  # no bias: no teacher to train
    layers = CompressConfig(sparsity=0.5, recovery_distill="layers")
    distilled = estimate_seconds(source, compress_sweep(source, 0.5, layers, tmp_path / "b"), layers)
    training = recipe_from_dict({**source.recipe, "name": "x"}).training
    per_step = distilled["forward_s"] * training.batch_size / training.eval_batch_size
    assert distilled["teacher_s"] == pytest.approx(8 * per_step) and per_step > 0  # a forward per step


def test_on_a_one_epoch_recipe_the_default_plans_the_stages_the_mnli_study_ran(finetuned, tmp_path):
    """The MNLI study's ``--recovery-epochs 2`` stage and the default (twice the recipe's one epoch)
    plan the same stages, so they get the same keys."""
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    recipe = data_recipe()
    recipe["training"].update(epochs=1, max_steps=None)
    source = resolve_source(str(finetuned), recipe, None)
    runtime = "onnx-int8-per-channel"
    default = compress_sweep(source, 0.3, CompressConfig(speedup=2, bias=BIAS, runtime=runtime), tmp_path)
    two_epochs = CompressConfig(speedup=2, bias=BIAS, runtime=runtime, recovery_epochs=2)
    studied = compress_sweep(source, 0.3, two_epochs, tmp_path)
    assert default["stages"]["student"]["set"]["training.epochs"] == 2
    assert default == studied


@pytest.mark.parametrize(("installed", "dot_products", "expected"), [
    (True, True, "onnx-int8-per-channel"), (True, False, "torch"), (False, True, "torch")])
def test_runtime_auto_is_per_channel_int8_only_with_onnx_runtime_and_int8_dot_products(
        monkeypatch, installed, dot_products, expected):
    import importlib.util

    from srnet import machine
    from srnet.export import runtimes

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in {"onnx", "onnxruntime"} and not installed
                        else real(name, *a))
    monkeypatch.setattr(machine, "has_int8_dot_products", lambda *a: dot_products)
    runtime, why = runtimes.auto_runtime()
    assert runtime == expected and why
    config = CompressConfig(speedup=2)  # the default, resolved when the config is made
    assert config.runtime == expected == CompressConfig.model_validate(config.model_dump()).runtime
    assert CompressConfig(speedup=2, runtime="auto").runtime == expected


def test_recovery_epochs_and_factor_together_are_refused(finetuned, tmp_path, capsys):
    assert main(["compress", str(finetuned), "--out", str(tmp_path / "c"), "--sparsity", "0.5",
                 "--recovery-epochs", "2", "--recovery-factor", "3"]) == 2
    assert "give --recovery-epochs or --recovery-factor, not both" in capsys.readouterr().err


@pytest.mark.parametrize(("distill", "params"), [
    ("plain", {"pred_weight": 1.0, "temperature": 2.0}),
    ("through-bias", {"pred_weight": 1.0, "temperature": 2.0, "through_bias": True}),
    ("none", {"pred_weight": 0.0}),
    ("layers", {"pred_weight": 1.0, "temperature": 2.0, "hidden_weight": 1.0, "distance": "cosine"}),
    ("attention", {"pred_weight": 1.0, "temperature": 2.0, "attention_weight": 1.0})])
def test_recovery_distill_sets_the_students_objective_and_nothing_else(finetuned, tmp_path, distill, params):
    from srnet.config import ObjectiveConfig
    from srnet.experiments.compress.finish import distillation
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), data_recipe(), None)
    default = compress_sweep(source, 0.5, CompressConfig(sparsity=0.5, bias=BIAS), tmp_path / "a")
    chosen = compress_sweep(source, 0.5, CompressConfig(sparsity=0.5, bias=BIAS, recovery_distill=distill),
                            tmp_path / "b")
    objective = chosen["stages"]["student"]["set"]["objective"]
    assert objective == {"name": "kd", "params": params}
    unread = {"teacher_pred"} if distill == "none" else set()  # no distillation: no predictions to read
    assert {k: v for k, v in chosen["stages"].items() if k != "student"} == {
        k: v for k, v in default["stages"].items() if k not in {"student", *unread}}
    assert ("teacher" in chosen["stages"]["student"]["set"]["loss"]) == (distill != "none")
    assert distillation(ObjectiveConfig(**objective)) == distill  # what the record reads back


def test_gradual_cut_deepens_the_students_cut_and_changes_nothing_else(finetuned, tmp_path):
    from srnet.config import recipe_from_dict
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), data_recipe(), None)
    default = compress_sweep(source, 0.5, CompressConfig(sparsity=0.5, bias=BIAS), tmp_path / "a")
    gradual = compress_sweep(source, 0.5, CompressConfig(sparsity=0.5, bias=BIAS, gradual_cut=0.5),
                             tmp_path / "b")
    pruning = gradual["stages"]["student"]["set"]["pruning"]
    assert pruning["params"] == {"importance": "gradient", "gradual": 0.5}
    assert "gradual" not in default["stages"]["student"]["set"]["pruning"]["params"]
    assert {k: v for k, v in gradual["stages"].items() if k != "student"} == {
        k: v for k, v in default["stages"].items() if k != "student"}
    recipe = recipe_from_dict({**source.recipe, "name": "s", "pruning": pruning})
    assert recipe.pruning.params.gradual == 0.5 and recipe.pruning.params.gradual_steps == 4


FIGURES = {"id_split": "dev", "id": 0.80, "hard": 0.60, "collapsed": [],
           "challenge": {"hans": {"accuracy": 0.55}}}


def figures(**changes) -> dict:
    return {**FIGURES, **changes}


def checked_gates(config, reference, student, shipped, speedup: float) -> list[dict]:
    """:func:`gates` of figure dicts, as recorded dicts."""
    from srnet.experiments.compress.record import ModelFigures, Speed

    typed = [ModelFigures.model_validate({"run": "r", **f}) for f in (reference, student, shipped)]
    speed = Speed(dense_ms=1.0, compressed_ms=1.0, speedup=speedup, batch=1, length=8, threads=1, rounds=1)
    return [g.model_dump() for g in gates(config, *typed, speed)]


@pytest.mark.parametrize(("shipped", "speedup", "failed"), [
    (figures(), 2.2, []),
    (figures(id=0.785), 2.2, ["id"]),                       # more than 1 point of ID lost
    (figures(hard=0.59), 2.2, ["hard"]),                    # robustness below the reference
    (figures(challenge={"hans": {"accuracy": 0.50}}), 2.2, ["challenge hans"]),
    (figures(), 1.9, ["speed"]),                            # the target missed on this machine
    (figures(collapsed=["hans"]), 2.2, ["collapse"]),       # a collapse the reference does not have
])
def test_gates_fail_when_they_should(shipped, speedup, failed):
    config = CompressConfig(speedup=2.0, runtime="torch", gate_rule="points", max_robust_drop=0.0)
    checked = checked_gates(config, FIGURES, FIGURES, shipped, speedup)
    assert [g["gate"] for g in checked if not g["passed"]] == failed
    bad = [g["line"] for g in checked if not g["passed"]]
    assert all(line.startswith("FAIL ") for line in bad)


def test_a_speed_miss_on_a_disturbed_bench_says_how_to_time_it_again():
    from srnet.experiments.compress.record import ModelFigures, Speed

    config = CompressConfig(speedup=6.0, runtime="torch", gate_rule="points")
    typed = [ModelFigures.model_validate({"run": "r", **FIGURES})] * 3
    for warnings, hint in (([], False), (["the machine is busy (load average 2.48 on 2 cores)"], True)):
        speed = Speed(dense_ms=6.0, compressed_ms=1.0, speedup=5.9, batch=32, length=78, threads=1, rounds=7,
                      warnings=warnings)
        (line,) = [g.line for g in gates(config, *typed, speed) if g.gate == "speed"]
        assert line.startswith("FAIL speed") and ("another --rounds times it again" in line) == hint


def test_a_collapse_the_reference_shares_is_named_but_does_not_fail():
    """An MNLI model of this size calls nearly every HANS pair entailment: the dense model and its
    dense PoE reference 'collapse' there too, so that alone is no failure of the compressed model."""
    both = figures(collapsed=["hans"])
    points = CompressConfig(speedup=2.0, gate_rule="points")
    [gate] = [g for g in checked_gates(points, both, both, both, 2.2)
              if g["gate"] == "collapse"]
    assert gate["passed"] and gate["line"].endswith("no split (hans: the reference too)")
    worse = figures(collapsed=["hans", "dev"])
    [gate] = [g for g in checked_gates(points, both, both, worse, 2.2)
              if g["gate"] == "collapse"]
    assert not gate["passed"] and gate["value"] == ["dev"]


def test_elapsed_time_counts_each_stage_once_across_resumes(tmp_path):
    import json

    from srnet.experiments.compress.run import stage_seconds

    events = [("00:00:00", "start", "a"), ("00:05:00", "start", "a"),   # killed, then resumed
              ("00:06:00", "done", "a"), ("00:06:00", "start", "b"), ("00:06:30", "done", "b"),
              ("00:07:00", "start", "other"), ("00:09:00", "done", "other"),
              ("00:09:00", "reused", "c")]  # a stage --reuse copied: no time of its own
    lines = [json.dumps({"time": f"2026-11-29T{t}+00:00", "event": e, "stage": k, "key": k})
             for t, e, k in events]
    lines.insert(1, '{"time": "2026-11-29T00:04:00+00:00", "ev')  # cut short by a kill
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    assert stage_seconds(tmp_path, {"a", "b"}) == 90.0
    assert stage_seconds(tmp_path, {"a", "b", "c"}) == 90.0


def test_int8_file_that_loses_accuracy_fails_its_gate():
    config = CompressConfig(sparsity=0.5, runtime="onnx-int8", gate_rule="points")
    checked = checked_gates(config, FIGURES, figures(id=0.83), figures(id=0.815), 2.0)
    assert [g["gate"] for g in checked if not g["passed"]] == ["int8"]


def test_cli_exit_code_is_3_when_a_gate_fails(compressed, tmp_path, capsys):
    import shutil

    if compressed.passed:
        pytest.skip("the tiny model passed every gate")
    out = tmp_path / "c"
    shutil.copytree(compressed.out, out)
    (out / "compress.json").unlink()  # killed after the last stage: --resume only scores and gates
    sweep = (out / "stages" / "sweep.yaml").read_text().replace(str(compressed.out), str(out))
    (out / "stages" / "sweep.yaml").write_text(sweep)
    recipe = tmp_path / "data.yaml"
    recipe.write_text(yaml.safe_dump(data_recipe()))
    code = main(["compress", str(compressed.record.model), "--out", str(out), "--sparsity", "0.5",
                 "--bias", BIAS, "--attack-n", "4", "--rounds", "1", "--batch", "2", "--length", "16",
                 "--runtime", "torch", "--recipe", str(recipe), "--resume"])
    captured = capsys.readouterr()
    assert code == GATE_FAILED_EXIT, captured.err[-500:]
    assert "gate failed:" in captured.err and "FAILED" in captured.out
    assert json.loads((out / "compress.json").read_text())["passed"] is False


@pytest.mark.parametrize(("args", "message"), [
    (["--speedup", "2", "--sparsity", "0.5"], "give exactly one target"),
    (["--sparsity", "0.5", "--runtime", "tensorrt"],
     "--runtime tensorrt: not one of auto, torch, onnx, onnx-int8, onnx-int8-per-channel"),
    (["--speedup", "80"], "--speedup 80: not reachable on this machine"),
    (["--sparsity", "0.5", "--bias", "no_such_feature"], "--bias no_such_feature: neither a bias feature"),
    (["--sparsity", "0.5", "--recovery-distill", "kl"], "--recovery-distill kl: not one of plain"),
    (["--sparsity", "0.5", "--recovery-distill", "through-bias"], "--recovery-distill through-bias combines"),
    (["--sparsity", "0.5", "--drop-layers", "2"], "--drop-layers 2: the model has 2 layers; give at most 1"),
])
def test_bad_input_is_one_line_before_training(finetuned, tmp_path, capsys, args, message):
    out = tmp_path / "c"
    code = main(["compress", str(finetuned), "--out", str(out), "--levels", "0.5", "--rounds", "1",
                 "--batch", "2", "--length", "16", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (out / "stages").exists()


def test_a_bias_file_for_other_data_is_refused(finetuned, tmp_path, capsys):
    bias = tmp_path / "bias.jsonl"
    bias.write_text(json.dumps({"id": "nope", "probs": [0.3, 0.3, 0.4]}) + "\n")
    code = main(["compress", str(finetuned), "--out", str(tmp_path / "c"), "--sparsity", "0.5",
                 "--bias", str(bias)])
    err = capsys.readouterr().err
    assert code == 2 and "does not match the training data" in err and len(err.strip().splitlines()) == 1


def test_a_family_that_cannot_shrink_is_refused(tiny_model_dirs, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump(tiny_recipe(tmp_path, "unused", "r")))
    code = main(["compress", str(tiny_model_dirs("albert")), "--recipe", str(recipe), "--out",
                 str(tmp_path / "c"), "--sparsity", "0.5"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot shrink a 'albert' model" in err and "--quantize int8" in err


def test_an_output_folder_in_use_is_refused(finetuned, tmp_path, capsys):
    out = tmp_path / "c"
    out.mkdir()
    lock = locks.acquire(out, ".compress.lock")
    try:
        code = main(["compress", str(finetuned), "--out", str(out), "--sparsity", "0.5"])
    finally:
        locks.release(out, lock.token, ".compress.lock")
    err = capsys.readouterr().err
    assert code == 2 and "in use by" in err


def test_api_compress_shows_its_settings():
    import inspect

    params = inspect.signature(api.compress).parameters
    assert {"speedup", "sparsity", "runtime", "bias", "max_id_drop", "max_robust_drop"} <= set(params)


def test_a_fused_family_compresses_end_to_end(tmp_path):
    """Issue 50 §7 with the family table: a tiny ModernBERT (fused Wqkv, GLU Wi) fine-tuned, then
    compressed through the CLI to 50% of its heads and neurons: the shrunk export reloads with
    ``trust_remote_code=True`` at half the encoder's parameters, and its card carries the figures.
    (Cut gradually and distilled layer by layer: the record and the card say so.)"""
    from transformers import AutoModelForSequenceClassification

    from conftest import BERT_IDS

    model = save_tiny_model(tmp_path / "tiny", "modernbert", **BERT_IDS)
    recipe = tiny_recipe(tmp_path, model, "ft", training={"max_steps": 8, "eval_every": None,
                                                          "mixed_precision": "no"})
    recipe["data"]["train"]["synthetic"]["n"] = 32
    finetuned = api.run(recipe).run_dir
    data = tmp_path / "data.yaml"
    data.write_text(yaml.safe_dump({**data_recipe(), "training": {"max_steps": 4, "eval_every": None,
                                                                  "mixed_precision": "no"}}))
    out = tmp_path / "c"
    code = main(["compress", str(finetuned), "--recipe", str(data), "--out", str(out), "--sparsity", "0.5",
                 "--attack-n", "4", "--rounds", "1", "--batch", "2", "--length", "16",
                 "--gradual-cut", "0.5", "--recovery-distill", "layers"])
    assert code in (0, GATE_FAILED_EXIT)
    record = json.loads((out / "compress.json").read_text())
    assert record["figures"]["student"]["sparsity"] == pytest.approx(0.5, abs=0.02)
    assert (record["recovery"]["gradual"], record["recovery"]["distill"]) == (0.5, "layers")
    (log,) = (out / "stages" / "student").glob("*/log.jsonl")
    assert "kd_hidden" in log.read_text()
    assert "The cut deepened in 4 steps over its first 50%." in (out / "model" / "README.md").read_text()
    small = AutoModelForSequenceClassification.from_pretrained(out / "model", trust_remote_code=True)
    dense = AutoModelForSequenceClassification.from_pretrained(finetuned / "model")
    count = lambda m: sum(p.numel() for layer in m.model.layers for p in layer.parameters())  # noqa: E731
    assert count(small) < 0.6 * count(dense)
    assert "trust_remote_code=True" in (out / "model" / "README.md").read_text()


def test_the_sweep_stage_prints_what_the_cli_prints(compressed, finetuned, capsys):
    """A study's compress stage ends with the CLI's summary of its record (figures, speed, gates),
    so a sweep's log holds what ``srnet compress`` would have printed; a finished folder is read,
    not recompressed."""
    from srnet.config import as_recipe
    from srnet.experiments.compress.stage import CompressParams, CompressStage
    from srnet.experiments.compress.summary import compress_summary

    before = file_sha256(compressed.out / "compress.json")
    params = CompressParams(model=str(finetuned), sparsity=0.5, bias=BIAS, **FAST)
    recipe = as_recipe({**data_recipe(), "name": "x", "output_dir": "unused", "model": {"name": "unused"}})
    CompressStage().run(recipe, params, compressed.out)
    printed = capsys.readouterr().out
    summary = compress_summary(compressed.record)
    assert printed == f"{compressed.out}:\n{summary}\n"
    assert all(g.line in summary for g in compressed.record.gates)
    ending = "PASSED" if compressed.passed else "FAILED: the model is written, marked as failed"
    assert summary.endswith(ending)
    assert file_sha256(compressed.out / "compress.json") == before


@pytest.mark.parametrize("text", ["{\"figures\": ", "[1, 2]", "{\"passed\": true}"])
def test_a_stage_whose_record_is_not_one_names_the_file(tmp_path, text):
    """A finished stage folder whose ``compress.json`` was cut short or replaced is a one-line
    error naming that file, not a traceback from the summary."""
    from srnet.config import as_recipe
    from srnet.experiments.compress.stage import CompressParams, CompressStage

    (tmp_path / "compress.json").write_text(text)
    params = CompressParams(model="unused", sparsity=0.5, bias=BIAS, **FAST)
    recipe = as_recipe({**data_recipe(), "name": "x", "output_dir": "unused", "model": {"name": "unused"}})
    with pytest.raises(SrnetError, match=r"compress\.json: (unreadable|not a) compression record") as err:
        CompressStage().run(recipe, params, tmp_path)
    assert "\n" not in str(err.value)
    assert (tmp_path / "compress.json").read_text() == text


def write_predictions(run: Path, split: str, right: list[bool], hard: list[bool] | None = None) -> None:
    rows = [{"id": str(i), "gold": "entailment", "pred": "entailment" if ok else "neutral"}
            | ({} if hard is None else {"hard": hard[i]}) for i, ok in enumerate(right)]
    (run / "predictions").mkdir(parents=True, exist_ok=True)
    (run / "predictions" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def interval_figures(tmp_path: Path, name: str, wrong_hard: int) -> dict:
    """A run of 2,000 dev pairs (400 hard) and 600 challenge pairs, wrong on a fixed 10%, then
    ``wrong_hard`` hard pairs lost and as many easy ones won."""
    run = tmp_path / name
    hard = [i < 400 for i in range(2000)]
    def right(i: int) -> bool:  # wrong_hard hard pairs lost, as many easy ones won: ID level
        if i < 400 and i % 10 == 1 and i // 10 < wrong_hard:
            return False
        return i % 10 != 0 or (i >= 400 and (i - 400) // 10 < wrong_hard)

    dev = [right(i) for i in range(2000)]
    write_predictions(run, "dev", dev, hard)
    write_predictions(run, "hans", [i % 5 != 0 for i in range(600)])
    hard_right = [ok for ok, h in zip(dev, hard, strict=True) if h]
    return {"run": str(run), "id_split": "dev", "id": sum(dev) / 2000, "hard": sum(hard_right) / 400,
            "collapsed": [], "challenge": {"hans": {"accuracy": 0.8}}}


def test_interval_gates_pass_a_level_model_and_fail_one_three_points_worse_on_hard(tmp_path):
    """Under the default rule a model equal to its reference passes, and one 3 points worse on the
    hard split (12 of 400 pairs) fails that gate only; each line gives the interval."""
    reference = interval_figures(tmp_path, "reference", 0)
    level = interval_figures(tmp_path, "level", 0)
    worse = interval_figures(tmp_path, "worse", 12)
    config = CompressConfig(sparsity=0.5, runtime="torch")
    assert config.gate_rule == "interval"
    passed = checked_gates(config, reference, level, level, 1.0)
    assert all(g["passed"] for g in passed)
    hard = next(g for g in passed if g["gate"] == "hard")
    assert hard["line"] == "PASS hard: +0.00 points (95% CI −0.90 … +0.90, n 400) vs margin −2.00"
    assert hard["interval"]["n"] == 400 and hard["interval"]["method"] == "newcombe-square-and-add"
    failed = checked_gates(config, reference, worse, worse, 1.0)
    assert [g["gate"] for g in failed if not g["passed"]] == ["hard"]
    line = next(g["line"] for g in failed if g["gate"] == "hard")
    assert line.startswith("FAIL hard: −3.00 points (95% CI ") and "n 400" in line
    assert "cannot show it" not in line  # 3 points down is outside the 2-point margin itself
    tight = CompressConfig(sparsity=0.5, runtime="torch", max_robust_drop=0.5)
    narrow = checked_gates(tight, reference, level, level, 1.0)
    undecided = next(g["line"] for g in narrow if g["gate"] == "hard")
    assert undecided.startswith("FAIL hard: +0.00") and undecided.endswith("but 400 examples cannot show it")


def test_reuse_copies_the_stages_the_cut_does_not_change_and_trains_only_the_new_cut(compressed, tmp_path):
    """--reuse of a 50% compression at 30%: the bias fit, dense scores, teacher and its predictions
    are copied (bit-equal, no start event, no time counted), the student trains at 30%, and the
    result equals a compression of its own; the earlier folder is not written."""
    earlier = {p: file_sha256(p) for p in compressed.out.rglob("*") if p.is_file()}
    common = dict(sparsity=0.3, bias=BIAS, **FAST, recipe=data_recipe(), **QUIET)
    lines: list[str] = []
    reused = api.compress(compressed.record.model, out=tmp_path / "r", reuse=compressed.out,
                          **{**common, "progress": lines.append})
    alone = api.compress(compressed.record.model, out=tmp_path / "a", **common)
    copied = {"bias_fit", "dense", "teacher", "teacher_pred"}
    assert set(reused.record.reused) == copied and not alone.record.reused
    assert all(path.startswith(str(compressed.out)) for path in reused.record.reused.values())
    assert sum("reuse: " in line for line in lines) == len(copied)
    def teacher(record: CompressRecord) -> str:
        return file_sha256(Path(record.stages["teacher"]) / "model" / "model.safetensors")

    assert teacher(reused.record) == teacher(compressed.record)
    log = (tmp_path / "r" / "stages" / "events.jsonl").read_text()
    events = [json.loads(line) for line in log.splitlines()]
    started = {e["stage"] for e in events if e["event"] == "start"}
    assert not started & copied and "student" in started and reused.record.level == 0.3
    assert file_sha256(tmp_path / "r" / "model" / "model.safetensors") == file_sha256(
        tmp_path / "a" / "model" / "model.safetensors")
    assert reused.record.figures["student"].id == alone.record.figures["student"].id
    # copied stages count no time (no start event above; stage_seconds' test has a reused event)
    assert not list((tmp_path / "r" / "stages").rglob("*.lock"))  # the earlier stages' lock files stay there
    assert {p: file_sha256(p) for p in compressed.out.rglob("*") if p.is_file()} == earlier
    from srnet.experiments.compress.summary import compress_summary

    summary = compress_summary(reused.record)
    assert f"reused (bias_fit, dense, teacher, teacher_pred): {compressed.out}" in summary


def _copy_of(compressed, tmp_path: Path, **sizing_changes) -> Path:
    import shutil

    copy = tmp_path / "earlier"
    shutil.copytree(compressed.out, copy)
    sizing = json.loads((copy / "sizing.json").read_text())
    sizing.update(sizing_changes)
    (copy / "sizing.json").write_text(json.dumps({k: v for k, v in sizing.items() if v is not None}))
    return copy


@pytest.mark.parametrize(("changes", "message"), [
    ({"source_sha256": "0" * 64}, "compressed another model"),
    ({"source_sha256": None}, "records no digest of the model it compressed"),
    ({"level": "half"}, "is not a sizing record"),
])
def test_reuse_of_another_models_compression_is_refused_before_anything_runs(
    compressed, tmp_path, changes, message
):
    earlier = _copy_of(compressed, tmp_path, **changes)
    with pytest.raises(SrnetError, match=message) as err:
        api.compress(compressed.record.model, out=tmp_path / "c", reuse=earlier, sparsity=0.3, bias=BIAS,
                     **FAST, recipe=data_recipe(), **QUIET)
    assert "\n" not in str(err.value) and str(earlier) in str(err.value) and not (tmp_path / "c").exists()


def test_reuse_names_what_it_cannot_use(compressed, tmp_path, capsys):
    run = [compressed.record.model, "--sparsity", "0.3", "--bias", BIAS, "--runtime", "torch",
           "--attack-n", "4", "--batch", "2", "--length", "16", "--rounds", "1"]
    assert main(["compress", *run, "--out", str(tmp_path / "c"), "--reuse", str(tmp_path)]) == 2
    assert "not a compression folder (no sizing.json)" in capsys.readouterr().err
    out = str(compressed.out)
    assert main(["compress", *run, "--out", out, "--resume", "--reuse", out]) == 2
    assert "is --out itself" in capsys.readouterr().err
    other = data_recipe()  # other training and dev pairs: every stage's key differs, nothing to take
    other["data"]["train"]["synthetic"]["n"], other["data"]["dev"]["synthetic"]["n"] = 24, 20
    with pytest.raises(SrnetError, match="none of its finished stages is one this compression runs"):
        api.compress(compressed.record.model, out=tmp_path / "n", reuse=compressed.out / "model",
                     sparsity=0.3, bias=BIAS, **FAST, recipe=other, **QUIET)


def test_a_dry_run_with_reuse_estimates_only_what_still_trains(compressed, tmp_path):
    common = dict(sparsity=0.3, bias=BIAS, **FAST, recipe=data_recipe(), dry_run=True)
    lines: list[str] = []
    plain = api.compress(compressed.record.model, out=tmp_path / "c", **common, **QUIET)
    reused = api.compress(compressed.record.model, out=tmp_path / "c", reuse=compressed.out, **common,
                          progress=lines.append)
    assert f"reuse from {compressed.out}: bias_fit, dense, teacher, teacher_pred" in lines
    # the steps, not the seconds: each dry run probes the machine anew, and a busy one varies
    assert "12 training steps" in plain.plan[-1] and "8 training steps" in reused.plan[-1]  # the teacher's 4
    assert not (tmp_path / "c").exists()


def test_a_resume_of_a_model_changed_since_is_refused(compressed, tmp_path):
    copy = _copy_of(compressed, tmp_path, source_sha256="f" * 64)
    (copy / "compress.json").unlink()
    sweep = (copy / "stages" / "sweep.yaml").read_text().replace(str(compressed.out), str(copy))
    (copy / "stages" / "sweep.yaml").write_text(sweep)
    with pytest.raises(SrnetError, match=r"changed since this compression started .*--overwrite"):
        api.compress(compressed.record.model, out=copy, sparsity=0.5, bias=BIAS, **FAST, recipe=data_recipe(),
                     resume=True, **QUIET)


def test_training_stages_checkpoint_every_200_steps_unless_the_recipe_says(finetuned):
    """A one-epoch stage evaluates only at its end: without these checkpoints a kill loses all of it."""
    from srnet.experiments.compress.source import resolve_source

    assert resolve_source(str(finetuned), data_recipe(), None).recipe["training"]["checkpoint_every"] == 200
    own = data_recipe()
    own["training"]["checkpoint_every"] = 7
    assert resolve_source(str(finetuned), own, None).recipe["training"]["checkpoint_every"] == 7


def test_a_sweeps_compress_stage_reuses_an_earlier_stage_by_reference(finetuned, tmp_path):
    """``reuse: "@a"`` in a study: stage b waits for a, copies a's teacher stages and trains its own
    cut; ``reuse`` is not in b's key (the same result, sooner)."""
    common = {"model": str(finetuned), "bias": BIAS, **FAST}
    sweep = {"name": "s", "output_dir": str(tmp_path / "sweep"), "base": data_recipe(), "stages": {
        "a": {"kind": "compress", "with": {**common, "sparsity": 0.5}},
        "b": {"kind": "compress", "with": {**common, "sparsity": 0.3, "reuse": "@a"}}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    jobs = {job.name: job for job in api.sweep(tmp_path / "sweep.yaml", **QUIET).jobs}
    b = CompressRecord.load(jobs["b"].folder)
    assert set(b.reused) == {"bias_fit", "dense", "teacher", "teacher_pred"} and b.level == 0.3
    assert all(path.startswith(str(jobs["a"].folder)) for path in b.reused.values())
    from srnet.experiments.compress.stage import CompressParams
    from srnet.experiments.sweep.plan import key_params
    from srnet.experiments.sweep.stages import get_stage

    params = CompressParams(**{**common, "sparsity": 0.3, "reuse": "x"}).model_dump()
    assert "reuse" not in key_params(get_stage("compress"), params)


def test_drop_layers_removes_the_top_layers_from_the_student_and_the_shipped_model(compressed, tmp_path):
    """--drop-layers 1 on the 2-layer model: the student's recipe drops layer 1, the shipped model
    has one layer (its config records the drop), the record, card and summary say so, and the
    stages the student does not change are reused from the 2-layer compression."""
    from transformers import AutoModelForSequenceClassification

    from srnet.experiments.compress.summary import compress_summary

    result = api.compress(compressed.record.model, out=tmp_path / "d", reuse=compressed.out, sparsity=0.5,
                          drop_layers=1, bias=BIAS, **FAST, recipe=data_recipe(), **QUIET)
    record = result.record
    assert record.dropped_layers == [1] and {"teacher", "teacher_pred"} <= set(record.reused)
    student = yaml.safe_load((Path(record.stages["student"]) / "config.yaml").read_text())
    assert student["model"]["drop_layers"] == [1]
    shipped = AutoModelForSequenceClassification.from_pretrained(tmp_path / "d" / "model",
                                                                 trust_remote_code=True)
    assert len(shipped.bert.encoder.layer) == 1 and shipped.config.srnet_dropped_layers == [1]
    assert record.figures["student"].sparsity == pytest.approx(0.5, abs=0.02)  # of the layer left
    card = (tmp_path / "d" / "model" / "README.md").read_text()
    assert "The cut: layers 1 removed and 50% of the heads and FFN neurons of every remaining layer" in card
    assert "layers 1 removed and 50%" in compress_summary(record)


def test_the_sizing_times_the_levels_on_the_model_without_its_dropped_layers(finetuned):
    """With --drop-layers the levels (and level 0) are timed on the shallower model, against the
    whole dense model in PyTorch; the setting is part of what the sizing was sized for."""
    from srnet.experiments.compress.sizing import size_to_machine, sizing_settings
    from srnet.experiments.compress.source import resolve_source

    config = CompressConfig(speedup=1.01, levels=[0.0, 0.5], drop_layers=1, rounds=3, batch=4, length=32,
                            margin=0.0, runtime="torch", refine=False)
    lines: list[str] = []
    sizing = size_to_machine(resolve_source(str(finetuned), None, None), config, progress=lines.append)
    assert "2 levels of the model without layers 1 (batch 4" in lines[0]
    assert [p.level for p in sizing.curve] == [0.0, 0.5]
    assert sizing.curve[0].speedup != 1.0  # timed: one layer of two, not the baseline itself
    assert sizing_settings(config)["drop_layers"] == 1


def test_the_estimate_counts_a_shallower_students_steps_at_their_share_of_the_layers(finetuned, tmp_path):
    """--drop-layers 1 of 2: the student's steps are estimated at half a whole model's step (the
    stages before it unchanged), since the dry run's probe times the whole model."""
    from srnet.experiments.compress.estimate import Probe, plan_seconds
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source
    from srnet.training.config import TrainingConfig

    source = resolve_source(str(finetuned), data_recipe(), None)  # one training stage of 4 steps each
    whole, shallow = CompressConfig(sparsity=0.5), CompressConfig(sparsity=0.5, drop_layers=1)
    training = source.recipe["training"]
    measured = Probe(step_s=1.0, forward_s=0.1, timing_s=0.01, n_train=32, n_dev=30, n_eval=54, eval_batch=8,
                     training=TrainingConfig(**training), layers=2)
    a = plan_seconds(measured, compress_sweep(source, 0.5, whole, tmp_path / "a"), whole)
    b = plan_seconds(measured, compress_sweep(source, 0.5, shallow, tmp_path / "b"), shallow)
    assert a["train_steps"] == b["train_steps"]
    student_steps = 4 * 2  # the default recovery: twice the recipe's 4 steps
    assert a["train_s"] - b["train_s"] == pytest.approx(student_steps * 0.5)


def _earlier_teacher(earlier: Path) -> Path:
    (folder,) = (earlier / "stages" / "teacher").iterdir()
    return folder


@pytest.mark.parametrize(("spoil", "message"), [
    (lambda t: (t / "model" / "model.safetensors").write_bytes(b"other"), "changed since its stage"),
    (lambda t: (t / "config.yaml").unlink(), "is gone since its stage finished"),
    (lambda t: (t / "stage.json").write_text(json.dumps(
        {k: v for k, v in json.loads((t / "stage.json").read_text()).items() if k != "files"})),
     "records no digests of the stage's files"),
    (lambda t: (t / "stage.json").write_text(json.dumps(
        {**json.loads((t / "stage.json").read_text()), "files": {"../../sizing.json": "0" * 64}})),
     "lists '../../sizing.json', not a file inside its stage folder"),
])
def test_reuse_copies_only_files_that_match_the_stages_recorded_digests(compressed, tmp_path, spoil, message):
    """A finished stage's stage.json lists each file it wrote with its SHA-256; --reuse checks every
    copy against it (one line naming the file, nothing left in --out) and refuses a stage without one."""
    earlier = _copy_of(compressed, tmp_path)
    spoil(_earlier_teacher(earlier))
    with pytest.raises(SrnetError, match=message) as err:
        api.compress(compressed.record.model, out=tmp_path / "c", reuse=earlier, sparsity=0.3, bias=BIAS,
                     **FAST, recipe=data_recipe(), **QUIET)
    assert "\n" not in str(err.value) and not list((tmp_path / "c" / "stages").glob("teacher/*/stage.json"))


def test_reuse_leaves_behind_what_later_stages_wrote_into_a_reused_folder(compressed, tmp_path):
    """The earlier compression's attack wrote its charswap record into the teacher's folder after the
    teacher finished: it belongs to that compression, so the copy (with --attack-n 0) has none."""
    teacher = _earlier_teacher(compressed.out)
    assert (teacher / "attack").is_dir()  # what the earlier attack stage added
    recorded = json.loads((teacher / "stage.json").read_text())["files"]
    assert "model/model.safetensors" in recorded and not any(n.startswith("attack/") for n in recorded)
    result = api.compress(compressed.record.model, out=tmp_path / "c", reuse=compressed.out, sparsity=0.3,
                          bias=BIAS, **{**FAST, "attack_n": 0}, recipe=data_recipe(), **QUIET)
    copied = Path(result.record.stages["teacher"])
    assert "teacher" in result.record.reused and not (copied / "attack").exists()
    assert result.record.figures["teacher"].charswap_aua is None


def test_reuse_of_the_same_compression_runs_the_artifact_stages_again(compressed, tmp_path):
    """Everything trained is copied, but export, shipped, attack and bench run again: the attack
    writes its records into the dense, teacher and shipped folders, which a copy would leave behind."""
    result = api.compress(compressed.record.model, out=tmp_path / "same", reuse=compressed.out, sparsity=0.5,
                          bias=BIAS, **FAST, recipe=data_recipe(), **QUIET)
    assert set(result.record.reused) == {"bias_fit", "dense", "teacher", "teacher_pred", "student"}
    for name in ("dense", "teacher", "shipped"):
        assert result.record.figures[name].charswap_aua == compressed.record.figures[name].charswap_aua
        assert result.record.figures[name].charswap_aua is not None


def test_an_older_attack_stage_is_read_through_the_file_its_marker_names(tmp_path):
    """A compression finished by an older srnet has its charswap results in ``RUN/attack/``; its
    attack stage's ``.done`` markers name them, and only a file they name is read as the stage's."""
    run = tmp_path / "stages" / "dense" / "ee13"
    (run / "attack").mkdir(parents=True)
    (run / "attack" / "charswap.json").write_text("{}")
    stage = tmp_path / "stages" / "attack" / "f880"
    stage.mkdir(parents=True)
    assert stage_attack_file(run, stage) is None  # no marker names it: another attack's result
    (stage / "0_charswap.done").write_text("runs/x/stages/dense/other/attack/charswap.json\n")
    assert stage_attack_file(run, stage) is None
    (stage / "1_charswap.done").write_text("runs/x/stages/dense/ee13/attack/charswap.json\n")
    assert stage_attack_file(run, stage) == run / "attack" / "charswap.json"
    (run / "attack" / "f880").mkdir()
    (run / "attack" / "f880" / "charswap.json").write_text("{}")  # today's layout comes first
    assert stage_attack_file(run, stage) == run / "attack" / "f880" / "charswap.json"
