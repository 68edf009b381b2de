"""Each fault a user caused in the audit gives one line, exit 2, and no debris."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

import srnet.io
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.io import atomic_folder, atomic_write_text
from srnet.sparsity.mask_io import MaskMetadata, save_masks
from srnet.tasks import DataSpec, load_examples

ROWS = [("the cat sat on the mat", "a cat sat", "entailment"),
        ("a dog ran in the park", "the dog is asleep", "contradiction"),
        ("the man read a book", "the man read a novel by a famous author", "neutral")] * 6


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), err
    assert "Traceback" not in err
    return lines[-1]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_model_dir):
    """A tiny finished dense run plus its data files: (root, data folder, run dir)."""
    root = tmp_path_factory.mktemp("faults")
    data = root / "data"
    data.mkdir()
    for name in ("train", "dev"):
        (data / f"{name}.jsonl").write_text("".join(
            json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in ROWS))
    (data / "hans.jsonl").write_text(_hans_rows({("lexical_overlap", "entailment"): 4,
                                                 ("lexical_overlap", "non-entailment"): 4}))
    code = main(["finetune", "--model", str(tiny_model_dir), "--task", "nli", "--train",
                 str(data / "train.jsonl"), "--dev", str(data / "dev.jsonl"), "--challenge",
                 str(data / "hans.jsonl"), "--output-dir", str(root / "runs"), "--name", "ft",
                 "--set", "training.max_steps=2"])
    assert code == 0
    return root, data, root / "runs" / "ft"


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder that refuses writes (EROFS), as a read-only mount would (tests run as root)."""
    folder = tmp_path / "ro"
    folder.mkdir()

    def guard(path) -> None:
        if path is not None and Path(path).resolve().is_relative_to(folder.resolve()):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    mkstemp, mkdtemp, mkdir = tempfile.mkstemp, tempfile.mkdtemp, Path.mkdir

    def guarded_mkdir(self, *args, **kwargs):
        if not self.exists():
            guard(self)
        return mkdir(self, *args, **kwargs)

    def guarded(make):
        return lambda *a, dir=None, **k: (guard(dir), make(*a, dir=dir, **k))[1]

    monkeypatch.setattr(srnet.io.tempfile, "mkstemp", guarded(mkstemp))
    monkeypatch.setattr(srnet.io.tempfile, "mkdtemp", guarded(mkdtemp))
    monkeypatch.setattr(Path, "mkdir", guarded_mkdir)
    return folder


def test_write_failures_are_one_line(capsys, finished, read_only, tiny_model_dir, tmp_path):
    _, data, run = finished
    recipe = tmp_path / "bias.yaml"
    recipe.write_text(f"task: nli\ndata:\n  train: {{path: {data / 'train.jsonl'}}}\n"
                      "bias: {feature: hypothesis_bow, k_folds: 2}\n")
    commands = {
        "run": ["finetune", "--model", str(tiny_model_dir), "--task", "nli", "--train",
                str(data / "train.jsonl"), "--output-dir", str(read_only / "runs"),
                "--set", "training.max_steps=1"],
        "export": ["export", "--model", str(run), "--masks", "", "--out", str(read_only / "exp")],
        "bias fit": ["bias", "fit", str(recipe), "--out", str(read_only / "bias")],
        "report --out": ["report", str(run), "--out", str(read_only / "report")],
        "predict --output": ["predict", str(run), "--split", "train", "--output", str(read_only / "p.jsonl")],
    }
    masks = tmp_path / "m.safetensors"
    from srnet.api import prune_
    from srnet.models import load_classifier
    from srnet.sparsity.fingerprint import model_fingerprint

    model = load_classifier(str(run / "model"))
    found = prune_(model, {"method": "omp", "sparsity": 0.5})
    save_masks(masks, found, MaskMetadata(method="omp", base_model=str(run),
                                          base_model_fingerprint=model_fingerprint(model, found)))
    commands["export"][4] = str(masks)
    for what, argv in commands.items():
        code, _, err = run_cli(capsys, *argv)
        line = one_error_line(err)
        assert code == 2, (what, err)
        assert line.startswith(f"error: cannot write {read_only}"), (what, line)
        assert "Read-only file system" in line, (what, line)
    assert not any(read_only.iterdir())


def test_predict_twice_needs_overwrite_which_replaces_atomically(capsys, finished, tmp_path, monkeypatch):
    """A second ``srnet predict`` of a split is refused in one line naming the file and --overwrite
    (before any work); --overwrite replaces it, and a failed replace keeps the old file whole."""
    import shutil

    from srnet import api
    from srnet.errors import NeedsOption

    run = Path(shutil.copytree(finished[2], tmp_path / "ft"))
    train = run / "predictions" / "train.jsonl"
    assert run_cli(capsys, "predict", str(run), "--split", "train")[0] == 0
    written = train.read_bytes()
    monkeypatch.setattr("srnet.experiments.verbs.split_predictions.load_examples", None)  # no work
    code, _, err = run_cli(capsys, "predict", str(run), "--split", "train")
    assert code == 2
    assert one_error_line(err) == f"error: {train}: already exists; pass --overwrite to replace it"
    monkeypatch.undo()
    with pytest.raises(NeedsOption, match=r"train\.jsonl: already exists; pass overwrite=True to replace"):
        api.predict(run, split="train")
    train.write_text("older\n")
    assert run_cli(capsys, "predict", str(run), "--split", "train", "--overwrite")[0] == 0
    assert train.read_bytes() == written
    monkeypatch.setattr("srnet.evaluation.predict.softmax", lambda logits: logits[:1])  # fails mid-write
    with pytest.raises(ValueError):
        api.predict(run, split="train", overwrite=True)
    assert train.read_bytes() == written
    assert sorted(p.name for p in train.parent.iterdir() if p.name.startswith(".")) == []


def test_output_dir_under_a_regular_file(capsys, finished, tiny_model_dir, tmp_path):
    _, data, _ = finished
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code, _, err = run_cli(capsys, "finetune", "--model", str(tiny_model_dir), "--task", "nli", "--train",
                           str(data / "train.jsonl"), "--output-dir", str(blocker / "runs"), "--set",
                           "training.max_steps=1")
    line = one_error_line(err)
    assert code == 2 and line == f"error: output_dir: cannot create {blocker}/runs/run: {blocker} is a file"


def test_full_disk_gives_one_line_and_no_debris_so_a_rerun_works(capsys, finished, tiny_model_dir, tmp_path,
                                                                   monkeypatch):
    _, data, _ = finished
    argv = ["finetune", "--model", str(tiny_model_dir), "--task", "nli", "--train", str(data / "train.jsonl"),
            "--dev", str(data / "dev.jsonl"), "--output-dir", str(tmp_path / "runs"), "--name", "full",
            "--set", "training.max_steps=2"]

    def disk_full(model, path):
        Path(path).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr("srnet.training.checkpoint.save_model", disk_full)
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "No space left on device" in one_error_line(err)
    assert not [p for p in (tmp_path / "runs").rglob("*") if ".tmp" in p.name or ".old" in p.name]
    monkeypatch.undo()
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err


def test_missing_model_paths_fail_at_once_without_a_run_folder(capsys, finished, tmp_path, monkeypatch):
    _, data, _ = finished
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "evaluate", "runs/nonexistent_run", "--task", "nli", "--dev",
                           str(data / "dev.jsonl"))
    assert code == 2 and "model 'runs/nonexistent_run' not found" in one_error_line(err)
    assert not any((tmp_path / "runs").iterdir())
    code, _, err = run_cli(capsys, "finetune", "--task", "nli", "--train", str(data / "train.jsonl"),
                           "--set", "model.name=/path/that/does/not/exist")
    assert code == 2 and "not found" in one_error_line(err)
    monkeypatch.setattr("srnet.models.loading._hub_reachable", lambda: False)  # offline or no network
    code, _, err = run_cli(capsys, "evaluate", "someorg/no-such-model", "--task", "nli", "--dev",
                           str(data / "dev.jsonl"))
    assert code == 2 and "hub cannot be reached (offline)" in one_error_line(err)
    assert time.perf_counter() - started < 10
    assert not any((tmp_path / "runs").iterdir())


def test_model_loading_is_quiet_and_says_new_head_in_one_line(tiny_model_dir, capfd, caplog):
    from srnet.models import load_classifier

    with caplog.at_level(logging.INFO, logger="srnet"):
        load_classifier(str(tiny_model_dir), ("a", "b"))  # generic 3-way head -> a fresh 2-way head
    out, err = capfd.readouterr()
    assert "LOAD REPORT" not in out + err and "MISSING" not in out + err and "Loading weights" not in err
    notes = [r.getMessage() for r in caplog.records]
    assert notes == [f"new classifier head (2 labels) on top of {tiny_model_dir}"]


def test_ctrl_c_message_on_its_own_line(capsys, monkeypatch):
    def interrupted():
        from tqdm import tqdm

        bar = tqdm(total=10, desc="train")
        bar.update(3)
        raise KeyboardInterrupt

    monkeypatch.setattr("srnet.api.info", interrupted)
    code, _, err = run_cli(capsys, "info")
    assert code == 130 and err.splitlines()[-1].startswith("interrupted:")


@pytest.mark.parametrize("bad_line", [3, 45])
def test_bad_utf8_byte_names_its_line(tmp_path, bad_line):
    lines = [json.dumps({"premise": "p é", "hypothesis": "h", "label": "neutral"}).encode()] * 60
    lines[bad_line - 1] = b'{"premise": "caf\xe9", "hypothesis": "h", "label": "neutral"}'
    (tmp_path / "latin1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(SrnetError, match=rf"latin1\.jsonl:{bad_line}: not valid UTF-8"):
        load_examples("nli", DataSpec(path=str(tmp_path / "latin1.jsonl")))


def test_recipe_error_prints_the_value_once():
    from srnet.config import load_recipe

    with pytest.raises(SrnetError) as info:
        load_recipe(None, ["pruning.method=omp", "pruning.sparsity=1.5"])
    assert str(info.value).count("1.5") == 1


def test_atomic_writes_keep_the_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        file = atomic_write_text(tmp_path / "a.txt", "x")
        folder = atomic_folder(tmp_path / "f", lambda d: (d / "x").write_text("y"))
    finally:
        os.umask(old)
    assert file.stat().st_mode & 0o777 == 0o644
    assert folder.stat().st_mode & 0o777 == 0o755


def test_an_exported_checkpoint_is_readable_by_others(tmp_path, tiny_model_dir):
    """safetensors writes its file 0600; every file of an export follows the umask (0644)."""
    from transformers import AutoTokenizer

    from srnet.export import export_model
    from srnet.models import load_classifier

    old = os.umask(0o022)
    try:
        tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
        out = export_model(load_classifier(str(tiny_model_dir)), {}, tokenizer, tmp_path / "export",
                           metadata=None)
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in out.rglob("*")}
    assert "model.safetensors" in modes and set(modes.values()) == {"0o644"}, modes


def test_mask_files_are_byte_identical(tmp_path):
    masks = {f"layer.{i}.weight": torch.rand(4, 4) > 0.5 for i in range(3)}
    meta = MaskMetadata(method="omp", base_model="m", base_model_fingerprint="f", recipe_hash="abc",
                        target_sparsity=0.5)
    for i in range(4):
        save_masks(tmp_path / f"m{i}.safetensors", masks, meta)
    assert len({(tmp_path / f"m{i}.safetensors").read_bytes() for i in range(4)}) == 1


def test_score_files_are_byte_identical(tmp_path):
    from srnet.sparsity.tickets import load_scores, save_scores

    scores = {f"layer.{i}.weight": torch.rand(4, 4) for i in range(3)}
    meta = MaskMetadata(method="mask_train", base_model="m", base_model_fingerprint="f", recipe_hash="abc",
                        target_sparsity=0.5)
    for i in range(6):
        save_scores(tmp_path / f"s{i}.safetensors", scores, meta)
    assert len({(tmp_path / f"s{i}.safetensors").read_bytes() for i in range(6)}) == 1
    loaded, _ = load_scores(tmp_path / "s0.safetensors")
    assert list(loaded) == list(scores) and all(torch.equal(loaded[k], scores[k]) for k in scores)


def test_relative_data_path_says_where_and_names_srnet_data_dir(tmp_path):
    with pytest.raises(SrnetError, match=rf"looked for in {tmp_path}.*SRNET_DATA_DIR"):
        load_examples("nli", DataSpec(path="mnli/train.jsonl"), base_dir=tmp_path)


def test_load_examples_reads_relative_paths_from_srnet_data_dir(tmp_path, monkeypatch):
    """The library reads ``$SRNET_DATA_DIR`` as ``srnet run`` does, and its error names it."""
    (tmp_path / "d.jsonl").write_text('{"premise": "p", "hypothesis": "h", "label": "neutral"}\n')
    monkeypatch.chdir(tmp_path.parent)
    monkeypatch.setenv("SRNET_DATA_DIR", str(tmp_path))
    assert [ex.label for ex in load_examples("nli", DataSpec(path="d.jsonl"))] == [1]
    with pytest.raises(SrnetError, match=rf"'nope.jsonl' looked for in {tmp_path}"):
        load_examples("nli", DataSpec(path="nope.jsonl"))


@pytest.mark.parametrize("label_map, labels", [
    ({"e": "entailment", "n": "neutral", "c": "contradiction"}, ["e", "n", "c", "e"]),
    ({0: "entailment", 1: "neutral", 2: "contradiction", -1: "-"}, [0, 1, 2, -1]),
])
def test_label_map(tmp_path, label_map, labels):
    path = tmp_path / "d.jsonl"
    rows = [{"premise": "p", "hypothesis": "h", "label": y} for y in labels]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    examples = load_examples("nli", DataSpec(path=str(path), label_map=label_map))
    assert [ex.label for ex in examples] == [0, 1, 2, 0][: len(examples)]
    assert len(examples) == 3 + (labels[-1] == "e")  # -1 -> '-': a row without a gold label
    path.write_text(json.dumps({"premise": "p", "hypothesis": "h", "label": "x"}) + "\n")
    with pytest.raises(SrnetError, match=r"d\.jsonl:1: unknown label 'x'.*label_map"):
        load_examples("nli", DataSpec(path=str(path), label_map=label_map))


def _hans_rows(counts: dict[tuple[str, str], int]) -> str:
    rows = []
    for (heuristic, label), count in counts.items():
        rows += [{"sentence1": f"p {heuristic} {i}", "sentence2": "h", "gold_label": label,
                  "heuristic": heuristic, "pairID": f"{heuristic}-{label}-{i}"} for i in range(count)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_hans_subsample_stratifies_by_heuristic_and_label(tmp_path):
    heuristics = ("lexical_overlap", "subsequence", "constituent")
    path = tmp_path / "hans.jsonl"  # unequal cells: 30..65 pairs, 285 in all
    path.write_text(_hans_rows({(h, y): 30 + 7 * (2 * i + j) for i, h in enumerate(heuristics)
                                for j, y in enumerate(("entailment", "non-entailment"))}))
    examples = load_examples("nli", DataSpec(path=str(path), challenge="hans", n=57))
    cells = Counter((ex.meta["heuristic"], ex.label) for ex in examples)
    assert sorted(cells.values()) == [6, 7, 9, 10, 12, 13]  # 57/285 = 1/5 of 30, 37, ..., 65 (rounded)


def test_real_hans_subsample_has_500_per_cell(shared_data):
    path = shared_data / "hans" / "train.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    examples = load_examples("nli", DataSpec(path=str(path), challenge="hans", n=3000))
    assert set(Counter((ex.meta["heuristic"], ex.label) for ex in examples).values()) == {500}


def test_run_paths_are_checked_before_anything_loads(tmp_path, tiny_model_dir, monkeypatch):
    import srnet.experiments.run.task as task_run
    from conftest import synthetic_split
    from srnet import api

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the error")

    monkeypatch.setattr(task_run, "load_classifier", refuse)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    recipe = {"task": "synthetic_nli", "model": {"name": str(tiny_model_dir)},
              "data": {"train": synthetic_split("train", 16)}, "output_dir": str(blocker / "runs")}
    with pytest.raises(SrnetError, match=r"output_dir: cannot create .*a_file/runs/run: .*a_file is a file"):
        api.run(recipe)
    recipe |= {"output_dir": str(tmp_path / "runs"),
               "pruning": {"method": "fixed", "params": {"mask_file": "/nope"}}}
    with pytest.raises(SrnetError, match=r"pruning\.params\.mask_file: /nope not found"):
        api.run(recipe)
    assert not (tmp_path / "runs").exists()


def test_a_recipe_path_that_is_a_folder_says_so(tmp_path):
    from srnet.config import load_recipe

    with pytest.raises(SrnetError, match="is a folder, not a recipe file"):
        load_recipe(tmp_path)


VARYING = {"config.yaml": "output_dir", "log.jsonl": "s_per_step", "metrics.json": "time_s"}
"""The files two same-seed runs may differ in, and the one key that differs (docs/run-directory.md:
same recipe, same seed, same bytes)."""


def test_bench_out_is_checked_before_the_bench_and_never_replaced_silently(capsys, tmp_path, tiny_model_dir,
                                                                          monkeypatch):
    """`srnet bench --out F` once replaced F; `--out DIR` failed after the whole bench, naming a
    temporary file."""
    import srnet.experiments.timing as bench_verb

    argv = ["bench", str(tiny_model_dir), "--batch-sizes", "1", "--lengths", "8", "--rounds", "1",
            "--warmup", "0"]
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    with monkeypatch.context() as patch:
        patch.setattr(bench_verb, "run_bench", lambda *a, **k: pytest.fail("benched before checking --out"))
        for out, message in ((taken, f"{taken}: already exists; pass --overwrite to replace it"),
                             (tmp_path, f"--out {tmp_path}: is a folder; give a file name")):
            code, _, err = run_cli(capsys, *argv, "--out", str(out))
            assert code == 2 and message in one_error_line(err)
    assert taken.read_text() == "{}"
    code, _, err = run_cli(capsys, *argv, "--out", str(taken), "--overwrite")
    assert code == 0, err
    assert json.loads(taken.read_text())["rows"]


def test_trainer_pruning_takes_a_method_name_and_refuses_other_types_in_one_line(tiny_model_dir, tmp_path):
    """SrnetTrainer(pruning="omp") (or a list, an int) was a traceback."""
    from transformers import AutoModelForSequenceClassification, TrainingArguments

    from srnet.integrations.transformers import SrnetTrainer

    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[])
    trainer = SrnetTrainer(model=model, args=args, pruning="omp")
    assert (trainer.pruning_config.method, trainer.pruning_config.sparsity) == ("omp", 0.5)
    for bad in (["omp"], 3):
        with pytest.raises(SrnetError, match=re.escape(f"pruning={bad!r}: expected a method name")):
            SrnetTrainer(model=model, args=args, pruning=bad)


def test_same_recipe_and_seed_write_the_same_bytes(tmp_path, tiny_model_dir):
    from conftest import synthetic_split
    from srnet import api

    def without(name: str, text: str) -> list:
        key = VARYING[name]
        if name == "config.yaml":
            return [line for line in text.splitlines() if not line.startswith(f"{key}:")]
        rows = [json.loads(text)] if name == "metrics.json" else [json.loads(t) for t in text.splitlines()]
        return [{k: v for k, v in row.items() if k != key} for row in rows]

    for out in ("a", "b"):
        api.run({"name": "r", "task": "synthetic_nli", "seed": 3, "output_dir": str(tmp_path / out),
                 "model": {"name": str(tiny_model_dir), "max_length": 48},
                 "data": {"train": synthetic_split("train", 48), "dev": synthetic_split("dev", 30),
                          "challenge": [synthetic_split("challenge", 24)]},
                 "training": {"max_steps": 6, "batch_size": 8, "eval_every": 3, "lr": 1e-3},
                 "pruning": {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.1}}})
    a, b = tmp_path / "a" / "r", tmp_path / "b" / "r"
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    written = {str(f) for f in files}
    assert {"mask_scores.safetensors", "masks.safetensors", "model/model.safetensors"} <= written
    for name in files:
        first, second = (a / name).read_bytes(), (b / name).read_bytes()
        if str(name) in VARYING:
            assert without(str(name), first.decode()) == without(str(name), second.decode()), name
        else:
            assert first == second, name
