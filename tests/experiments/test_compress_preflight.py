"""``srnet compress`` refuses every mistake it can see before anything trains (one line, exit 2,
nothing left behind), resumes only what it was sized for, keeps its lock through --overwrite, and
its record and card say what was checked and measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from conftest import save_tiny_model, tiny_recipe
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.record import CompressRecord

REPO = Path(__file__).resolve().parents[2]
FAST = ["--rounds", "1", "--batch", "2", "--length", "16", "--runtime", "torch"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("preflight")
    model = save_tiny_model(root / "tiny")
    recipe = tiny_recipe(root, model, "ft", training={"max_steps": 2, "eval_every": None})
    return api.run(recipe).run_dir


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    code = main(["compress", *args])
    return code, capsys.readouterr().err


def one_line(err: str) -> bool:
    return len(err.strip().splitlines()) == 1


def test_recovery_epochs_alone_is_accepted_from_the_command_line():
    """The CLI passes only the flags a user gave: --recovery-epochs is not "given with the default
    --recovery-factor"; both given are still refused."""
    from srnet.cli import build_parser
    from srnet.experiments.verbs.flags import config_values

    parser = build_parser()
    args = parser.parse_args(["compress", "m", "--out", "o", "--sparsity", "0.5", "--recovery-epochs", "2"])
    config = CompressConfig.resolve(None, config_values(args, CompressConfig))
    assert config.recovery_epochs == 2
    both = parser.parse_args(
        [
            "compress",
            "m",
            "--out",
            "o",
            "--sparsity",
            "0.5",
            "--recovery-epochs",
            "2",
            "--recovery-factor",
            "3",
        ]
    )
    with pytest.raises(SrnetError, match="give --recovery-epochs or --recovery-factor, not both"):
        CompressConfig.resolve(None, config_values(both, CompressConfig))


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--recovery-factor", "inf"),
        ("--recovery-factor", "1e9"),
        ("--max-id-drop", "inf"),
        ("--max-robust-drop", "1000"),
        ("--speedup", "1e6"),
        ("--recovery-epochs", "nan"),
    ],
)
def test_unbounded_numbers_are_refused_in_one_line(flag, value, tmp_path, capsys):
    code, err = run_cli(["nowhere", "--out", str(tmp_path / "c"), "--sparsity", "0.5", flag, value], capsys)
    assert code == 2 and one_line(err) and flag in err
    assert not (tmp_path / "c").exists()


def test_bias_none_is_plain_compression():
    assert CompressConfig(sparsity=0.5, bias="none").bias is None


def test_an_attack_larger_than_the_split_is_refused_before_any_training(finetuned, tmp_path, capsys):
    out = tmp_path / "c"
    code, err = run_cli(
        [str(finetuned), "--out", str(out), "--sparsity", "0.5", "--attack-n", "10000", *FAST], capsys
    )
    assert code == 2 and one_line(err) and "--attack-n 10000: the dev split has 30 examples" in err
    assert not out.exists()


def test_the_default_attack_is_the_whole_split_when_it_is_small(finetuned):
    from srnet.experiments.compress.preflight import preflight
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), None, None)
    assert preflight(source, CompressConfig(sparsity=0.5)).attack_n == 30
    assert preflight(source, CompressConfig(sparsity=0.5, attack_n=0)).attack_n == 0


def test_an_srnet_shrunk_export_is_refused_before_any_training(finetuned, tmp_path, capsys):
    shrunk = tmp_path / "shrunk"
    shrunk.mkdir()
    config = json.loads((finetuned / "model" / "config.json").read_text())
    (shrunk / "config.json").write_text(json.dumps({**config, "srnet_linear_shapes": {}}))
    (shrunk / "srnet_export.json").write_text(json.dumps({"sha256": {}}))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump(tiny_recipe(tmp_path, "unused", "r")))
    code, err = run_cli(
        [str(shrunk), "--recipe", str(recipe), "--out", str(tmp_path / "c"), "--sparsity", "0.5"], capsys
    )
    assert code == 2 and one_line(err) and "shrunk export cannot be compressed again" in err


def test_a_pair_bias_on_a_single_sentence_task_is_refused(finetuned, tmp_path, capsys):
    rows = [{"id": str(i), "sentence": f"good film number {i}", "label": i % 2} for i in range(8)]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = run_cli(
        [
            str(finetuned / "model"),
            "--task",
            "sentiment",
            "--train",
            str(data),
            "--dev",
            str(data),
            "--out",
            str(tmp_path / "c"),
            "--sparsity",
            "0.5",
            "--bias",
            "hypothesis_bow",
        ],
        capsys,
    )
    assert code == 2 and one_line(err) and "--bias hypothesis_bow: models the second text of a pair" in err


def test_a_missing_model_is_not_found(tmp_path, capsys):
    code, err = run_cli(
        [str(tmp_path / "missing" / "run"), "--out", str(tmp_path / "c"), "--sparsity", "0.5"], capsys
    )
    assert code == 2 and "not found" in err and "not an srnet run folder" not in err


def write_sizing(out: Path, **sizing) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sizing.json").write_text(json.dumps({"runtime": "torch", **sizing}))


@pytest.mark.parametrize(
    "settings", [{"settings": {"sparsity": 0.5, "speedup": None, "runtime": "torch"}}, {}]
)
def test_a_resume_with_another_cut_is_refused_naming_both(finetuned, tmp_path, capsys, settings):
    """A recorded sizing (with its settings, or an older one whose level implies them) is compared
    with the flags: another --sparsity is refused, naming both values."""
    out = tmp_path / "c"
    write_sizing(out, level=0.5, needed=None, **settings)
    code, err = run_cli([str(finetuned), "--out", str(out), "--sparsity", "0.3", "--resume", *FAST], capsys)
    assert code == 2 and one_line(err) and "--sparsity 0.3 differs from the recorded sizing's 0.5" in err
    assert not (out / "stages").exists()


def test_a_resume_with_other_levels_is_refused(finetuned, tmp_path, capsys):
    out = tmp_path / "c"
    write_sizing(
        out, level=0.3, needed=1.575, curve=[{"level": 0.3, "speedup": 1.6}, {"level": 0.5, "speedup": 2}]
    )
    code, err = run_cli(
        [str(finetuned), "--out", str(out), "--speedup", "3", "--levels", "0.7", "0.8", "--resume", *FAST],
        capsys,
    )
    assert (
        code == 2 and one_line(err) and "--levels 0.7 0.8 differs from the recorded sizing's 0.3 0.5" in err
    )


@pytest.mark.parametrize("level", ['"half"', "null", "1.5"])
def test_a_sizing_record_that_is_not_one_is_one_line(finetuned, tmp_path, capsys, level):
    out = tmp_path / "c"
    out.mkdir()
    (out / "sizing.json").write_text(f'{{"runtime": "torch", "level": {level}}}')
    code, err = run_cli([str(finetuned), "--out", str(out), "--sparsity", "0.5", "--resume", *FAST], capsys)
    assert code == 2 and one_line(err) and "not a sizing record (level" in err


def test_an_unfinished_compression_names_both_ways_on(finetuned, tmp_path, capsys):
    out = tmp_path / "c"
    write_sizing(out, level=0.5)
    code, err = run_cli([str(finetuned), "--out", str(out), "--sparsity", "0.5", *FAST], capsys)
    assert code == 2 and "--resume" in err and "--overwrite" in err


def test_a_refusal_after_the_lock_leaves_no_folder_behind(finetuned, tmp_path, capsys):
    out = tmp_path / "c"
    code, err = run_cli(
        [str(finetuned), "--out", str(out), "--speedup", "80", "--levels", "0.5", *FAST], capsys
    )
    assert code == 2 and "not reachable on this machine" in err and "measured: 50%" in err
    assert not out.exists()


def test_set_aside_keeps_the_lock_in_place_and_restores_on_failure(tmp_path):
    """--overwrite moves the old compression aside but not its lock, so no other process gets in."""
    from srnet.io import set_aside

    out = tmp_path / "c"
    out.mkdir()
    (out / ".compress.lock").write_text("held")
    (out / "compress.json").write_text("old")
    with pytest.raises(RuntimeError), set_aside(out, "the compression", keep={".compress.lock"}):
        assert (out / ".compress.lock").is_file() and not (out / "compress.json").exists()
        (out / "partial").write_text("new")
        raise RuntimeError("killed")
    assert (out / "compress.json").read_text() == "old" and not (out / "partial").exists()
    (tmp_path / ".c.previous").mkdir()
    with (
        pytest.raises(SrnetError, match="the compression before it is kept in"),
        set_aside(out, "the compression"),
    ):
        pass


def committed_records() -> list[Path]:
    return sorted(p.parent for p in (REPO / "results").rglob("compress.json"))


def test_every_committed_compress_record_loads():
    folders = committed_records()
    assert len(folders) >= 20
    for folder in folders:
        record = CompressRecord.load(folder)
        assert record.figures["shipped"].id is not None and record.speed.speedup > 0


def test_a_failed_compression_says_failed_in_its_front_matter():
    from srnet.experiments.compress.card import compress_card

    record = CompressRecord.load(committed_records()[0])
    failed = record.model_copy(
        update={
            "passed": False,
            "labels": ["entailment", "neutral", "contradiction"],
            "datasets": ["nyu-mll/multi_nli"],
        }
    )
    card = ModelCard(compress_card(failed))
    assert card.data.model_name.startswith("FAILED") and "failed-gates" in card.data.tags
    assert card.data.to_dict()["srnet_status"] == "FAILED"
    assert card.data.to_dict()["labels"] == ["entailment", "neutral", "contradiction"]
    assert card.data.datasets == ["nyu-mll/multi_nli"]
    passed = ModelCard(compress_card(record.model_copy(update={"passed": True})))
    assert not passed.data.model_name.startswith("FAILED") and "failed-gates" not in passed.data.tags
    assert "**hard**" in card.text and "**Aua**" in card.text


def test_the_card_shows_every_evaluated_split_and_the_recovery_as_recorded():
    from srnet.experiments.compress.card import compress_card, recovery_sentence
    from srnet.experiments.compress.record import SplitScore

    record = next(r for r in map(CompressRecord.load, committed_records()) if r.recovery is not None)
    figures = {
        name: f.model_copy(update={"evaluated": {"sst2_test": SplitScore(accuracy=0.812)}})
        for name, f in record.figures.items()
    }
    card = ModelCard(compress_card(record.model_copy(update={"figures": figures})))
    header = next(line for line in card.text.splitlines() if line.startswith("| model |"))
    assert "sst2_test" in header and "| 81.2 |" in card.text
    names = {r.dataset_name for r in card.data.eval_results}
    assert "sst2_test" in names
    assert recovery_sentence(record) in card.text and record.recovery is not None
    assert f"{record.recovery.epochs:g} epoch(s) at lr {record.recovery.lr:g}" in recovery_sentence(record)
    assert "W6" not in card.text and "s50_omp" not in card.text


def test_the_plan_attacks_the_shipped_file_and_level_zero_ships_the_uncut_model(finetuned, tmp_path):
    from srnet.experiments.compress.plan import compress_sweep
    from srnet.experiments.compress.source import resolve_source

    source = resolve_source(str(finetuned), None, None)
    config = CompressConfig(speedup=2, bias="hypothesis_bow", runtime="onnx-int8-per-channel", attack_n=8)
    cut = compress_sweep(source, 0.5, config, tmp_path, 8)["stages"]
    assert cut["attack"]["with"]["runs"] == ["@dense", "@teacher", "@shipped"]
    assert cut["student"]["set"]["pruning"]["sparsity"] == 0.5 and cut["export"]["with"]["shrink"] is True
    uncut = compress_sweep(source, 0.0, config, tmp_path, 8)["stages"]
    assert "pruning" not in uncut["student"]["set"] and uncut["export"]["with"]["shrink"] is False
    assert uncut["export"]["with"]["quantize"] == "int8-per-channel"


def test_length_auto_times_the_dev_splits_own_batches_at_batch_and_batch_one(finetuned, monkeypatch):
    """``--length auto`` (the default) sizes on batches drawn from the dev split, padded per batch
    to their own longest text (here far below 128 tokens), at --batch and at 1, and records them."""
    from srnet.experiments import timing as bench_timing
    from srnet.experiments.compress.sizing import size_to_machine
    from srnet.experiments.compress.source import resolve_source

    seen = []
    real = bench_timing.run_bench

    def recording(candidates, config, inputs=None):
        seen.append(inputs)
        return real(candidates, config, inputs)

    monkeypatch.setattr(bench_timing, "run_bench", recording)
    config = CompressConfig(speedup=1.01, levels=[0.5], rounds=1, batch=4, runtime="torch", margin=0.0)
    assert config.length == "auto"
    try:
        sizing = size_to_machine(resolve_source(str(finetuned), None, None), config, progress=lambda _: None)
    except SrnetError as exc:  # the tiny model's timing may miss 1.01x; the inputs are the point here
        assert "not reachable" in str(exc)
        sizing = None
    (cells,) = seen
    assert [cell.batch for cell in cells] == [4, 1] and all(cell.kind == "data" for cell in cells)
    assert all(cell.split == "dev" and cell.longest < 64 for cell in cells)
    if sizing is not None:
        assert [c["batch"] for c in sizing.inputs] == [4, 1] and sizing.inputs[0]["lengths"]["median"] < 64
        assert sizing.curve[0].speedup_batch1 is not None


def test_length_auto_needs_a_split_and_a_fixed_length_fits_the_model(finetuned, tmp_path, capsys):
    code, err = run_cli(
        [
            str(finetuned),
            "--out",
            str(tmp_path / "c"),
            "--sparsity",
            "0.5",
            "--length",
            "4096",
            "--runtime",
            "torch",
        ],
        capsys,
    )
    assert code == 2 and one_line(err) and "--length 4096: longer than the model's" in err
    code, err = run_cli(
        [str(finetuned), "--out", str(tmp_path / "c"), "--sparsity", "0.5", "--length", "1"], capsys
    )
    assert code == 2 and one_line(err) and "--length 1: give auto or a number of tokens from 2 to 8192" in err
    recipe = tiny_recipe(tmp_path, "unused", "r")
    del recipe["data"]["dev"]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    code, err = run_cli(
        [
            str(finetuned / "model"),
            "--recipe",
            str(tmp_path / "r.yaml"),
            "--out",
            str(tmp_path / "c"),
            "--sparsity",
            "0.5",
            "--runtime",
            "torch",
        ],
        capsys,
    )
    assert code == 2 and one_line(err) and "--length auto: the recipe has no dev or eval split" in err


@pytest.mark.skipif(__import__("importlib").util.find_spec("onnxruntime") is None, reason="needs srnet[onnx]")
def test_when_no_cut_reaches_the_target_the_uncut_model_ships_and_says_so(finetuned, tmp_path):
    """Level 0 is the first candidate: the dense graph in ONNX Runtime beats dense PyTorch on a tiny
    model by far, so --speedup 1.01 needs no cut; the teacher's recovery runs without pruning,
    the export is not shrunk, and the console, the record and the card say no cut was needed."""
    lines = []
    data = tiny_recipe(tmp_path, "unused", "x", training={"max_steps": 2, "eval_every": None})
    del data["name"], data["output_dir"], data["model"]
    result = api.compress(
        str(finetuned),
        out=tmp_path / "c",
        speedup=1.01,
        levels=[0.0, 0.5],
        bias="hypothesis_bow",
        runtime="onnx-int8-per-channel",
        rounds=1,
        batch=4,
        attack_n=4,
        recipe=data,
        progress=lines.append,
    )
    record = result.record
    assert record.level == 0.0 and record.figures["student"].sparsity in (None, 0.0)
    assert any(line.startswith("sizing: no cut needed") for line in lines)
    card = (tmp_path / "c" / "model" / "README.md").read_text()
    assert "No cut was needed" in card and "trust_remote_code" not in card
    info = json.loads((tmp_path / "c" / "model" / "srnet_export.json").read_text())
    assert not info.get("shrunk") and "model.int8.onnx" in info["sha256"]
    assert record.hashed == info["sha256"] and "config.json" in record.hashed
    assert record.speed.speedup_batch1 is not None and record.speed.inputs["kind"] == "data"
    assert record.labels == ["entailment", "neutral", "contradiction"]
    assert "synthetic_train" in record.datasets
    assert record.base_model is None  # fine-tuned from a local tiny model: no hub id to claim
    # the attack ran on the shipped INT8 file itself, and the card labels the figure by that file
    assert record.figures["shipped"].charswap_file == "model.int8.onnx"
    assert "charswap Aua (model.int8.onnx)" in card
    # the frontier: every trained model at its measured speed-up, the "debias + quantize" control too
    labels = [p.label for p in record.frontier]
    assert labels == [
        "original, PyTorch",
        "dense PoE reference, PyTorch",
        "reference in onnx-int8-per-channel, no cut",
        "shipped, onnx-int8-per-channel",
    ]
    control = record.frontier[2]
    assert (
        control.speedup == record.speed.dense_int8_speedup
        and control.hard == record.figures["reference_runtime"].hard
    )
    assert (tmp_path / "c" / "model" / "frontier.png").is_file() and "## Speed and robustness" in card


def test_the_level_is_chosen_at_the_lengths_that_were_timed(finetuned, monkeypatch):
    """A cut pays more on long inputs than on short ones: with a bench whose speed-ups grow with
    the padded length, the dev split's short texts (--length auto) need a deeper cut than 128
    random tokens for the same target, and the level is read from the rows at --batch."""
    from srnet.experiments import timing as bench_timing
    from srnet.experiments.compress.sizing import size_to_machine
    from srnet.experiments.compress.source import resolve_source

    def timed(candidates, config, inputs=None):
        cells = inputs or [bench_timing.fixed_inputs(1000, config.batch_sizes[0], config.lengths[0], None)]
        rows = []
        for cell in cells:
            gain = cell.length / 16  # 8 at 128 tokens, about 1.2 at the tiny dev split's padded length
            rows += [
                {
                    "model": c.label,
                    "runtime": "torch",
                    "batch": cell.batch,
                    "length": cell.length,
                    "speedup": 1 + i * gain,
                    "latency_ms": 1.0,
                }
                for i, c in enumerate(candidates)
            ]
        return {"rows": rows, "environment": {}, "warnings": [], "inputs": [c.record() for c in cells]}

    monkeypatch.setattr(bench_timing, "run_bench", timed)
    source = resolve_source(str(finetuned), None, None)
    levels = dict(speedup=2.5, levels=[0.3, 0.5, 0.7], margin=0.0, rounds=1, batch=4, runtime="torch")
    fixed = size_to_machine(source, CompressConfig(length=128, **levels), progress=lambda _: None)
    auto = size_to_machine(source, CompressConfig(**levels), progress=lambda _: None)
    assert fixed.level == 0.3 and auto.level > fixed.level
    assert auto.inputs[0]["kind"] == "data" and fixed.inputs[0]["kind"] == "fixed"


def test_sizing_refines_between_the_levels_around_the_target(finetuned, monkeypatch):
    """With 10-point levels a target between two of them takes the deeper one; the refinement
    times the 5-point step between them and takes it when it reaches the target; --no-refine
    keeps the grid's level."""
    from srnet.experiments import timing as bench_timing
    from srnet.experiments.compress.sizing import size_to_machine
    from srnet.experiments.compress.source import resolve_source

    def timed(candidates, config, inputs=None):  # speed-up = 1 + 10 x the level in each label
        def speedup(label: str) -> float:
            return 1 + 10 * int(label.split("%")[0].split()[-1]) / 100 if "%" in label else 1.0

        rows = [
            {
                "model": c.label,
                "runtime": "torch",
                "batch": config.batch_sizes[0],
                "length": 16,
                "speedup": speedup(c.label),
                "latency_ms": 1.0,
            }
            for c in candidates
        ]
        return {"rows": rows, "environment": {}, "warnings": [], "inputs": []}

    monkeypatch.setattr(bench_timing, "run_bench", timed)
    source = resolve_source(str(finetuned), None, None)
    settings = dict(
        speedup=5.2, levels=[0.0, 0.3, 0.5, 0.7], margin=0.0, rounds=1, batch=4, length=16, runtime="torch"
    )
    refined = size_to_machine(source, CompressConfig(**settings), progress=lambda _: None)
    assert [p.level for p in refined.curve] == [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.7]
    assert refined.level == 0.45 and refined.settings["refine"] is True
    grid = size_to_machine(source, CompressConfig(refine=False, **settings), progress=lambda _: None)
    assert grid.level == 0.5 and [p.level for p in grid.curve] == [0.0, 0.3, 0.5, 0.7]


def test_sparsity_0_ships_the_reference_after_the_same_recovery_uncut(finetuned, tmp_path):
    """``--sparsity 0`` is the compute-matched control: nothing timed or cut, the teacher given the
    student's recovery ships unshrunk, no speed gate, and the card says it is a control."""
    lines = []
    data = tiny_recipe(tmp_path, "unused", "x", training={"max_steps": 2, "eval_every": None})
    del data["name"], data["output_dir"], data["model"]
    result = api.compress(str(finetuned), out=tmp_path / "c", sparsity=0, bias="hypothesis_bow",
                          runtime="torch", rounds=1, batch=4, length=16, attack_n=0, recipe=data,
                          progress=lines.append)
    record = result.record
    assert record.level == 0.0 and not record.sizing.get("curve")
    assert not any(line.startswith("sizing: timing") for line in lines)  # a given level is not sized
    student = yaml.safe_load((Path(record.stages["student"]) / "config.yaml").read_text())
    assert student["pruning"]["method"] == "dense"  # no cut
    assert student["model"]["init_from"] == record.stages["teacher"]  # the teacher, uncut
    assert student["training"]["max_steps"] == 4  # the recovery: twice the recipe's 2 steps
    info = json.loads((tmp_path / "c" / "model" / "srnet_export.json").read_text())
    assert not info.get("shrunk")
    assert "speed" not in [g.gate for g in record.gates]
    assert "No cut (`--sparsity 0`)" in (tmp_path / "c" / "model" / "README.md").read_text()
