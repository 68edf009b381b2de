"""The ``export`` and ``bench`` stage kinds: a structured study as one sweep on a tiny random BERT
(fine-tune, one-shot structured OMP at two sparsities, shrunk exports, one bench over all of
them, then ``srnet report``'s speed-vs-accuracy section), and how a gathering stage plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.experiments.refs import resolve_gathered_refs
from srnet.experiments.sweep.stages import run_masks
from srnet.reporting.study import write_report


@pytest.fixture(autouse=True)
def one_thread_workers(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def study_file(tmp_path: Path, model, stages: dict | None = None, grid: dict | None = None) -> Path:
    stages = stages or {
        "ft": {"kind": "train", "set": {"tags.paradigm": "dense"}},
        "omp": {"kind": "train", "set": {"model.init_from": "@ft", "data.train": None,
                                         "pruning": {"method": "omp", "granularity": "head+neuron"},
                                         "tags.paradigm": "structured"}},
        "omp_export": {"kind": "export", "with": {"run": "@omp", "shrink": True}},
        "bench": {"kind": "bench", "with": {"models": ["@ft", "@omp_export"], "batch_sizes": [1, 2],
                                            "lengths": [8], "rounds": 1, "warmup": 0, "threads": 1}},
    }
    data = {
        "name": "structured", "output_dir": str(tmp_path / "out"),
        "base": {"task": "synthetic_nli", "model": {"name": str(model), "max_length": 32},
                 "data": {"train": synthetic("train", 16), "dev": synthetic("dev", 12),
                          "challenge": [synthetic("challenge", 12)]},
                 "training": {"max_steps": 2, "batch_size": 8, "lr": 1e-3}},
        "stages": stages,
        "grid": {"omp.pruning.sparsity": [0.5, 0.25]} if grid is None else grid,
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_bench_gathers_every_grid_point_once(tmp_path):
    jobs = api.sweep(study_file(tmp_path, "m"), dry_run=True, progress=lambda _: None).jobs
    assert [job.name for job in jobs] == ["ft", "omp", "omp_export", "omp", "omp_export", "bench"]
    exports = [job for job in jobs if job.name == "omp_export"]
    ft, bench = jobs[0], jobs[-1]
    assert bench.params["models"] == [str(ft.folder), *(str(job.folder / "model") for job in exports)]
    assert bench.deps == [ft.key, *(job.key for job in exports)] and bench.grid == {}
    assert exports[0].params == {"run": str(jobs[1].folder), "masks": None, "shrink": True, "onnx": False,
                                 "quantize": None}
    # the same sweep with a third sparsity: a new bench (it times more models), the rest kept
    more = api.sweep(study_file(tmp_path / "b", "m", grid={"omp.pruning.sparsity": [0.5, 0.25, 0.7]}),
                     dry_run=True, progress=lambda _: None).jobs
    assert more[-1].key != bench.key and {j.key for j in jobs[:-1]} < {j.key for j in more}


@pytest.mark.parametrize(("stages", "message"), [
    ({"ft": {"kind": "train"}, "bench": {"kind": "bench", "with": {"models": ["@ft"]}},
      "after": {"kind": "train", "set": {"model.init_from": "@bench"}}},
     "stage 'after' refers to '@bench', which runs once for the whole sweep"),
    ({"ft": {"kind": "train"}, "bench": {"kind": "bench", "with": {"models": ["@ft"]},
                                         "set": {"model.init_from": "@ft"}}},
     "stage 'bench': a bench stage runs once for the whole sweep: refer to stages in its 'with'"),
])
def test_gathering_stage_misuse_is_one_line(tmp_path, stages, message):
    with pytest.raises(SrnetError, match=message):
        api.sweep(study_file(tmp_path, "m", stages, grid={}), dry_run=True, progress=lambda _: None)
    grid = {"bench.training.lr": [0.1, 0.2]}
    stages = {"ft": {"kind": "train"}, "bench": {"kind": "bench", "with": {"models": ["@ft"]}}}
    with pytest.raises(SrnetError, match=r"grid key 'bench\.training\.lr': stage 'bench' runs once"):
        api.sweep(study_file(tmp_path, "m", stages, grid), dry_run=True, progress=lambda _: None)


def test_gathered_refs_expand_in_lists_only():
    outputs = {"a": [Path("x/1"), Path("x/2")], "b": [Path("y")]}
    assert resolve_gathered_refs({"m": ["@a/model", "z", "@b"], "one": "@b"}, outputs) == {
        "m": ["x/1/model", "x/2/model", "z", "y"], "one": "y"}
    with pytest.raises(ValueError, match="'@a' stands for 2 outputs"):
        resolve_gathered_refs({"one": "@a"}, outputs)


def test_run_masks_prefers_the_runs_own_then_its_recipes(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump({"pruning": {"method": "dense"}}))
    with pytest.raises(SrnetError, match=r"no masks\.safetensors and no pruning mask file"):
        run_masks(run)
    fixed = {"method": "fixed", "params": {"mask_file": "s/m.safetensors"}}
    (run / "config.yaml").write_text(yaml.safe_dump({"pruning": fixed}))
    assert run_masks(run) == Path("s/m.safetensors")
    (run / "config.yaml").write_text(yaml.safe_dump({"pruning": {"mask_file": "old.safetensors"}}))
    assert run_masks(run) == Path("old.safetensors")  # a run recorded before per-method params
    (run / "masks.safetensors").write_bytes(b"")
    assert run_masks(run) == run / "masks.safetensors"


def test_structured_study_as_one_sweep(tmp_path, tiny_model_dir):
    from srnet.export import EXPORT_INFO_FILENAME, load_model

    result = api.sweep(study_file(tmp_path, tiny_model_dir), progress=lambda _: None)
    assert result.ok, result.failed
    omp = next(job for job in result.jobs if job.grid.get("omp.pruning.sparsity") == 0.5)
    export = next(job.folder for job in result.jobs if job.params.get("run") == str(omp.folder))
    info = json.loads((export / "model" / EXPORT_INFO_FILENAME).read_text())
    assert info["shrunk"]["parameters"] < info["shrunk"]["dense_parameters"]
    assert json.loads((export / "export.json").read_text())["run"] == str(omp.folder)
    shrunk = load_model(export / "model")
    assert shrunk.bert.encoder.layer[0].intermediate.dense.out_features == 32  # half of 64 neurons
    # one export verb: `srnet export` of the same run writes the same bytes, model card included
    assert main(["export", "--masks", str(omp.folder / "masks.safetensors"), "--shrink",
                 "--out", str(tmp_path / "cli_export")]) == 0
    for name in ("model.safetensors", "config.json", "README.md", EXPORT_INFO_FILENAME):
        assert (tmp_path / "cli_export" / name).read_bytes() == (export / "model" / name).read_bytes(), name

    bench = json.loads((result.jobs[-1].folder / "bench.json").read_text())
    assert bench["rounds"] == 1 and len(bench["rows"]) == 3 * 2  # 3 models x batch 1, 2 x length 8
    assert bench["rows"][0]["speedup"] == 1.0 and bench["environment"]["torch_threads"] >= 1

    report = write_report([tmp_path / "out"], tmp_path / "report", figures=False)
    table = (tmp_path / "report" / "structured_table.md").read_text()
    assert table.rstrip("\n") in report.path.read_text()
    lines = table.strip().splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == [
        "model", "loss", "removed", "params_m", "synthetic_dev", "synthetic_challenge", "gap",
        "speedup_b1", "speedup_b2"]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [r[:3] for r in rows] == [["dense", "ce", "0%"], ["omp structured", "ce", "25%"],
                                     ["omp structured", "ce", "50%"]]
    assert rows[0][-2:] == ["1.00", "1.00"]
    params = {row["model"]: row["params_m"] for row in bench["rows"]}
    assert params[str(export / "model")] < params[str(result.jobs[0].folder)]  # shrunk < dense


def test_a_parameter_added_later_leaves_recorded_stage_keys_alone():
    """``quantize`` joined the export and bench stages after studies were recorded: at its default
    it is not part of the stage key (recorded sweeps resume), set it is."""
    from srnet.experiments.sweep.plan import key_params
    from srnet.experiments.sweep.stages import get_stage

    export = get_stage("export")
    old = {"run": "r", "masks": None, "shrink": True, "onnx": False}
    assert key_params(export, {**old, "quantize": None}) == old
    assert key_params(export, {**old, "onnx": True, "quantize": "int8"})["quantize"] == "int8"
