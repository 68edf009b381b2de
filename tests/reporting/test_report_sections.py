"""``srnet report``'s sections, each on small run folders written here (metrics.json, config.yaml,
stage.json, masks, logs, bench.json): the registry and its order, the easy/hard Table 6 layout,
mask similarity, learning curves, structured speed vs accuracy and TAMT loss vs transfer (tables
checked cell by cell and byte for byte), and the committed study tables regenerated from their
committed inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from srnet.reporting.study import (
    SECTIONS,
    Part,
    RunSet,
    SetSection,
    Study,
    StudySection,
    register_section,
    write_report,
)
from srnet.reporting.study.base import ordered
from srnet.sparsity.mask_io import MaskMetadata, save_masks

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"
DEV = {"path": "mnli/dev_matched.jsonl", "name": "mnli_dev", "n": 100}
HANS = {"path": "hans/train.jsonl", "name": "hans", "challenge": "hans", "n": 60}
META = MaskMetadata(method="x", base_model="m", base_model_fingerprint="f")
WEIGHT = "bert.encoder.layer.0.attention.self.query.weight"


def run_folder(folder: Path, *, task: str = "nli", seed: int = 1, metrics: dict | None = None,
               pruning: dict | None = None, tags: dict | None = None, data: dict | None = None,
               stage: str | None = None, loss: str = "ce") -> Path:
    """A finished run: metrics.json and config.yaml as srnet writes them (and stage.json in a sweep)."""
    folder.mkdir(parents=True)
    recipe = {"name": folder.name, "task": task, "seed": seed, "loss": {"name": loss}, "pruning": pruning,
              "data": data if data is not None else {"dev": DEV, "challenge": [HANS]}, "tags": tags or {}}
    (folder / "config.yaml").write_text(yaml.safe_dump(recipe))
    (folder / "metrics.json").write_text(json.dumps({"run": folder.name, "task": task, "seed": seed,
                                                     **(metrics or {})}))
    if stage:
        (folder / "stage.json").write_text(json.dumps({"stage": stage}))
    return folder


def nli_metrics(dev: float, hans: float, gap: float, *, easy_hard: tuple | None = None,
                collapsed: bool = False, sparsity: float = 0.0) -> dict:
    block = {"n": 100, "accuracy": dev, "primary": dev, "majority": {"label": "entailment", "fraction": 0.36}}
    if easy_hard:
        easy, hard = easy_hard
        block["easy_hard"] = {"easy": easy, "hard": hard, "gap": easy - hard, "n_easy": 55, "n_hard": 45}
    return {"id": {"mnli_dev": block},
            "ood": {"hans": {"n": 60, "accuracy": hans, "primary": hans, "shortcut_gap": gap,
                             "collapsed": collapsed}},
            "sparsity": {"overall": sparsity, "by_layer_role": {"0.query": sparsity}}}


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_sections_are_registered_in_a_fixed_order():
    assert [s.name for s in ordered(SetSection)] == [
        "tables", "attacks", "easy_hard", "winwin", "jaccard", "layers", "learning_curves"]
    assert [s.name for s in ordered(StudySection)] == ["structured", "tamt"]
    assert SECTIONS.help("easy_hard").startswith("Hard / easy / easy − hard accuracy")


def test_a_new_section_is_one_registered_class(tmp_path):
    run_folder(tmp_path / "runs" / "a", metrics=nli_metrics(0.8, 0.5, 0.9))
    run_folder(tmp_path / "runs" / "b", metrics=nli_metrics(0.7, 0.5, 0.4), tags={"toy": "yes"})
    with SECTIONS.scoped():
        @register_section("toy")
        class Toy(SetSection):
            """Counts the runs tagged toy."""

            order = 15  # between the tables and the attacks

            def applies(self, study: Study, runs: RunSet) -> bool:
                return any("toy" in run.labels for run in runs.cohort.runs)

            def render(self, study: Study, runs: RunSet) -> Part:
                count = sum("toy" in run.labels for run in runs.cohort.runs)
                return Part(lines=["### Toy", "", f"{count} toy run(s)", ""])

        text = write_report([tmp_path / "runs"], tmp_path / "report", figures=False).path.read_text()
        assert "### Toy\n\n1 toy run(s)\n\n### Runs" in text
        assert text.index("| method") < text.index("### Toy")
    assert "toy" not in SECTIONS  # gone with the scope
    assert "### Toy" not in write_report([tmp_path / "runs"], tmp_path / "r2", figures=False).path.read_text()


def test_easy_hard_table6_layout_and_figure(tmp_path):
    root = tmp_path / "runs"
    for seed, (dev, hans, easy, hard, collapsed) in enumerate(
            [(0.80, 0.50, 0.90, 0.70, True), (0.82, 0.52, 0.92, 0.72, False)], 1):
        metrics = nli_metrics(dev, hans, 0.9, easy_hard=(easy, hard), collapsed=collapsed)
        run_folder(root / f"dense{seed}", seed=seed, metrics=metrics)
    run_folder(root / "imp50", pruning={"method": "imp", "sparsity": 0.5}, tags={"paradigm": "a"},
               metrics=nli_metrics(0.75, 0.55, 0.3, easy_hard=(0.80, 0.71), sparsity=0.5))
    other = nli_metrics(0.6, 0.5, 0.1)
    other["id"]["mnli_dev"]["n"] = 50  # another set of comparable runs, without an easy/hard split
    run_folder(root / "no_split", metrics=other)
    report = write_report([root], tmp_path / "report")
    text = report.path.read_text()
    table = text[text.index("| model | sparsity"):].split("\n\n")[0].splitlines()
    assert table[:2] == ["| model | sparsity | n | mnli_dev | Hard | Easy | Gap (E − H) | hans |",
                         "|---|---|---|---|---|---|---|---|"]
    assert cells(table[2]) == ["dense/ce", "0%", "2", "81.0 ± 1.4", "71.0 ± 1.4", "91.0 ± 1.4", "20.0 ± 0.0",
                               "51.0 ± 1.4 †1/2"]
    assert cells(table[3]) == ["imp/ce (a)", "50%", "1", "75.0", "71.0", "80.0", "9.0", "55.0"]
    assert len(table) == 4  # the set without an easy/hard split has no Table 6
    assert text.count("### Easy / hard split") == 1
    figure = tmp_path / "report" / "s1_easy_hard_vs_sparsity.png"
    assert figure in report.figures and figure.read_bytes()[:8] == PNG
    assert not (tmp_path / "report" / "s2_easy_hard_vs_sparsity.png").exists()


def with_confusion(metrics: dict, confusion: list[list[int]], movement: tuple | None = None) -> dict:
    """``metrics`` whose ID block holds a confusion matrix (ID collapse is read from it) and,
    for a learned mask, its movement (flipped, Jaccard)."""
    metrics["id"]["mnli_dev"]["confusion"] = confusion
    if movement:
        metrics["mask_movement"] = {"flipped": movement[0], "jaccard": movement[1]}
    return metrics


def test_winwin_layout_by_paradigm_with_movement_timing_and_id_collapse(tmp_path):
    root = tmp_path / "runs"
    fine = [[30, 3, 3], [3, 30, 3], [4, 4, 20]]  # 80 of 100 right
    lost = [[36, 0, 0], [32, 0, 0], [32, 0, 0]]  # the majority class: at chance
    for seed in (1, 2):
        run_folder(root / f"ce{seed}", seed=seed, tags={"paradigm": "dense"},
                   metrics=with_confusion(nli_metrics(0.80, 0.5, 0.9, easy_hard=(0.90, 0.68)), fine))
        run_folder(root / f"poe{seed}", seed=seed, loss="poe", tags={"paradigm": "dense"},
                   metrics=with_confusion(nli_metrics(0.78, 0.5, 0.5, easy_hard=(0.85, 0.70)), fine))
        run_folder(root / f"m50_{seed}", seed=seed, loss="poe", tags={"paradigm": "a (from CE)"},
                   pruning={"method": "mask_train", "sparsity": 0.5},
                   metrics=with_confusion(nli_metrics(0.79, 0.5, 0.5, easy_hard=(0.86, 0.71 + seed / 100),
                                                      sparsity=0.5), fine, (0.05, 0.9 + seed / 100)))
    run_folder(root / "m70", loss="poe", tags={"paradigm": "a (from CE)"},
               pruning={"method": "mask_train", "sparsity": 0.7},
               metrics=with_confusion(nli_metrics(0.36, 0.5, 0.0, easy_hard=(0.40, 0.30), sparsity=0.7),
                                      lost, (0.3, 0.5)))
    run_folder(root / "t20", loss="poe", tags={"paradigm": "timing", "start": "20%"},
               pruning={"method": "mask_train", "sparsity": 0.7},
               metrics=with_confusion(nli_metrics(0.70, 0.5, 0.4, easy_hard=(0.80, 0.60), sparsity=0.7),
                                      fine, (0.1, 0.8)))
    run_folder(root / "t50", loss="poe", tags={"paradigm": "timing", "start": "50%"},
               pruning={"method": "mask_train", "sparsity": 0.7},
               metrics=with_confusion(nli_metrics(0.72, 0.5, 0.4, easy_hard=(0.82, 0.62), sparsity=0.7),
                                      fine, (0.1, 0.8)))
    report = write_report([root], tmp_path / "report")
    text = report.path.read_text()
    table = text[text.index("| paradigm | model"):].split("\n\n")[0].splitlines()
    assert cells(table[0]) == ["paradigm", "model", "sparsity", "n", "mnli_dev", "Hard", "Easy",
                               "Gap (E − H)", "hans", "flipped %", "Jaccard"]
    rows = [cells(line) for line in table[2:]]
    assert [r[:4] for r in rows] == [
        ["dense", "dense/ce", "0%", "2"], ["dense", "dense/poe", "0%", "2"],
        ["a (from CE)", "mask_train/poe", "50%", "2"], ["a (from CE)", "mask_train/poe", "70%", "1"],
        ["timing", "mask_train/poe from 20%", "70%", "1"], ["timing", "mask_train/poe from 50%", "70%", "1"]]
    assert rows[2][4:] == ["79.0 ± 0.0", "72.5 ± 0.7", "86.0 ± 0.0", "13.5 ± 0.7", "50.0 ± 0.0",
                           "5.0 ± 0.0", "0.915 ± 0.007"]
    assert rows[3][4] == "36.0 †1/1"  # at chance on the ID split: marked
    assert rows[0][-2:] == ["-", "-"]  # dense: no mask
    for name in ("s1_winwin_vs_sparsity.png", "s1_winwin_timing.png"):
        figure = tmp_path / "report" / name
        assert figure in report.figures and figure.read_bytes()[:8] == PNG


def test_winwin_layout_needs_several_paradigms(tmp_path):
    root = tmp_path / "runs"
    run_folder(root / "ce", metrics=nli_metrics(0.8, 0.5, 0.9, easy_hard=(0.9, 0.7)))
    run_folder(root / "imp", pruning={"method": "imp", "sparsity": 0.5}, tags={"paradigm": "a"},
               metrics=nli_metrics(0.75, 0.55, 0.3, easy_hard=(0.80, 0.71), sparsity=0.5))
    assert "Win-win layout" not in write_report([root], tmp_path / "report", figures=False).path.read_text()


def test_mask_similarity_table_and_heatmap(tmp_path):
    root = tmp_path / "runs"
    for name, method, keep in (("omp", "omp", [1, 1, 0, 0]), ("imp", "imp", [1, 0, 1, 0])):
        run = run_folder(root / name, pruning={"method": method, "sparsity": 0.5},
                         metrics=nli_metrics(0.7, 0.5, 0.5, sparsity=0.5))
        save_masks(run / "masks.safetensors", {WEIGHT: torch.tensor([keep], dtype=torch.bool)}, META)
    report = write_report([root], tmp_path / "report")
    text = report.path.read_text()
    part = text[text.index("### Mask similarity"):text.index("### Figures")]
    assert "Mask similarity at 50% sparsity (Jaccard of kept weights); the mean over the seeds both" in part
    rows = [cells(line) for line in part.splitlines() if line.startswith("| ")]
    assert rows[0] == ["", "imp/ce", "omp/ce"]
    assert rows[2:] == [["imp/ce", "1.000", "0.333"], ["omp/ce", "0.333", "1.000"]]  # 1 shared of 3 kept
    assert (tmp_path / "report" / "s1_mask_jaccard.png") in report.figures


def test_learning_curves_from_eval_events(tmp_path):
    root = tmp_path / "runs"
    for seed in (1, 2):
        run = run_folder(root / f"ft{seed}", seed=seed, metrics=nli_metrics(0.8, 0.5, 0.5))
        events = [{"step": 5, "event": "train", "loss": 1.0}, {"step": 10, "event": "eval", "dev": 0.4},
                  {"step": 20, "event": "eval", "dev": 0.6 + seed / 100}]
        (run / "log.jsonl").write_text("\n".join(map(json.dumps, events)) + '\n{"step": 30, "ev')
    run_folder(root / "evaluated", pruning={"method": "omp", "sparsity": 0.5},
               metrics=nli_metrics(0.7, 0.5, 0.5, sparsity=0.5))  # no log: no line
    report = write_report([root], tmp_path / "report")
    figure = tmp_path / "report" / "s1_learning_curves.png"
    assert figure in report.figures and figure.read_bytes()[:8] == PNG
    assert "dev accuracy during training" in report.path.read_text()
    (root / "ft1" / "log.jsonl").unlink()
    (root / "ft2" / "log.jsonl").unlink()
    report = write_report([root], tmp_path / "report2")
    assert not any(p.name.endswith("learning_curves.png") for p in report.figures)


STRUCTURED_TABLE = """\
| model          | loss | removed | params_m | mnli_dev |  hans |    gap | speedup_b1 | speedup_b8 |
| -------------- | ---- | ------: | -------: | -------: | ----: | -----: | ---------: | ---------: |
| dense          | ce   |      0% |     22.7 |    0.612 | 0.485 |  0.863 |       1.00 |       1.00 |
| mask_train -   | poe  |     50% |     17.4 |    0.448 | 0.500 | -1.000 |       1.78 |       2.50 |
| omp structured | ce   |     30% |     19.4 |    0.506 | 0.498 |  0.167 |       1.38 |       1.20 |

"""


def test_structured_speed_vs_accuracy(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "sweep.yaml").parent.mkdir()
    (sweep / "sweep.yaml").write_text("name: s\n")
    ft = run_folder(sweep / "ft_ce" / "k0", metrics=nli_metrics(0.612, 0.485, 0.863), stage="ft_ce")
    omp = run_folder(sweep / "omp" / "k1", pruning={"method": "omp", "sparsity": 0.3},
                     tags={"paradigm": "structured"}, metrics=nli_metrics(0.506, 0.498, 0.167, sparsity=0.3),
                     stage="omp")
    recover = run_folder(sweep / "recover" / "k2", pruning={"method": "fixed", "sparsity": 0.5}, loss="poe",
                         tags={"method": "mask_train"}, metrics=nli_metrics(0.448, 0.5, -1.0, sparsity=0.5))
    export = sweep / "recover_export" / "k3"
    (export / "model").mkdir(parents=True)
    (export / "export.json").write_text(json.dumps({"run": str(recover), "masks": "m", "shrink": True}))
    (sweep / "shrunk" / "omp_k1").mkdir(parents=True)

    def rows(model: Path | str, params: float, speedups: dict[int, float]) -> list[dict]:
        out = [{"model": str(model), "runtime": "torch", "params_m": params, "batch": b, "length": 16,
                "speedup": s} for b, s in speedups.items()]
        out.append({"model": str(model), "runtime": "torch", "params_m": params, "batch": 1, "length": 8,
                    "speedup": 9.0})  # a shorter length: not in the table
        out.append({"model": str(model), "runtime": "onnxruntime", "params_m": params, "batch": 1,
                    "length": 16, "speedup": 7.0})
        return out

    bench = {"rounds": 1, "warmup": 0, "rows": [
        *rows(Path("/moved/away/ft_ce/k0"), 22.714, {1: 1.0, 8: 1.0}),  # a moved sweep: found by stage/key
        *rows(sweep / "shrunk" / "omp_k1", 19.405, {1: 1.38, 8: 1.2}),  # the older shell loop's layout
        *rows(export / "model", 17.398, {1: 1.78, 8: 2.5}),  # an export stage's output
        *rows("/nowhere/model", 1.0, {1: 0.5, 8: 0.5})]}
    (sweep / "bench.json").write_text(json.dumps(bench))
    report = write_report([sweep], tmp_path / "report")
    table = (tmp_path / "report" / "structured_table.md").read_text()
    assert table == STRUCTURED_TABLE
    text = report.path.read_text()
    assert "## Speed vs accuracy (structured subnetworks)" in text and STRUCTURED_TABLE.rstrip() in text
    assert "Timed models whose run was not found: /nowhere/model." in text
    assert (tmp_path / "report" / "speed_vs_accuracy.png").read_bytes()[:8] == PNG
    assert ft.is_dir() and omp.is_dir()
    assert "Speed vs accuracy" not in write_report([sweep / "omp"], tmp_path / "r2").path.read_text()


TAMT_TABLE = """\
| method   | sparsity | mlm_dev_loss | kd_dev_loss |  sst2 | mnli_m |  hans | hans_gap |
| -------- | -------: | -----------: | ----------: | ----: | -----: | ----: | -------: |
| dense    |       0% |        6.900 |      0.0000 | 0.850 |      - |     - |        - |
| random   |      50% |        8.000 |      0.5000 | 0.500 |      - |     - |        - |
| OMP      |      50% |        7.500 |      0.1000 | 0.700 |  0.400 | 0.500 |   -1.000 |
| TAMT-MLM |      50% |        7.000 |      0.8000 | 0.800 |      - |     - |        - |
| TAMT-KD  |      50% |        9.000 |      0.2000 | 0.600 |      - |     - |        - |


Spearman rank correlation of dev loss with downstream accuracy (negative = lower loss, better transfer):

| dev loss     | score |   n | levels | spearman pooled | spearman within sparsity (mean) |
| ------------ | ----- | --: | -----: | --------------: | ------------------------------: |
| mlm_dev_loss | sst2  |   4 |      1 |           -0.80 |                           -0.80 |
| kd_dev_loss  | sst2  |   4 |      1 |            0.20 |                            0.20 |


Jaccard of kept weights at sparsity 50% (mask_jaccard_50.png):

|          | random |   OMP | TAMT-MLM | TAMT-KD |
| -------- | -----: | ----: | -------: | ------: |
| random   |  1.000 | 0.333 |    0.333 |   0.333 |
| OMP      |  0.333 | 1.000 |    0.333 |   1.000 |
| TAMT-MLM |  0.333 | 0.333 |    1.000 |   0.333 |
| TAMT-KD  |  0.333 | 1.000 |    0.333 |   1.000 |

"""


def test_tamt_loss_vs_transfer(tmp_path):
    sweep = tmp_path / "tamt"
    text = {"train": None, "dev": {"path": "mnli/dev_matched.jsonl"}}
    run_folder(sweep / "mlm_head" / "h", task="text", data=text, stage="mlm_head",
               pruning={"method": "dense"}, metrics={"objective": "mlm", "method": "dense",
                        "pretraining": {"mlm_dev_loss": 6.9, "kd_dev_loss": 0.0}})
    searches = {  # stage: (method, objective, mlm loss, kd loss, kept weights, SST-2 after transfer)
        "tamt_kd": ("mask_train", "distill", 9.0, 0.2, [1, 1, 0, 0, 1, 1, 0, 0], 0.6),
        "omp": ("omp", "mlm", 7.5, 0.1, [1, 1, 0, 0, 1, 1, 0, 0], 0.7),
        "random": ("random", "mlm", 8.0, 0.5, [1, 1, 1, 1, 0, 0, 0, 0], 0.5),
        "tamt_mlm": ("mask_train", "mlm", 7.0, 0.8, [1, 1, 0, 0, 0, 0, 1, 1], 0.8),
    }
    sst2 = {"dev": {"path": "sst2/test.jsonl", "name": "sst2_dev"}}
    for stage, (method, objective, mlm, kd, keep, score) in searches.items():
        run = run_folder(sweep / stage / "k", task="text", data=text, stage=stage,
                         pruning={"method": method, "sparsity": 0.5},
                         metrics={"objective": objective, "method": method,
                                  "pretraining": {"mlm_dev_loss": mlm, "kd_dev_loss": kd},
                                  "sparsity": {"overall": 0.5}})
        save_masks(run / "masks.safetensors", {WEIGHT: torch.tensor([keep], dtype=torch.bool)}, META)
        # a mask named by the folder, as the sweep wrote it from its own working directory (which
        # does not resolve from here), or by the mask file's absolute path
        mask = f"elsewhere/tamt/{stage}/k" if stage != "omp" else str(run / "masks.safetensors")
        run_folder(sweep / "transfer_sst2" / stage, task="sentiment", data=sst2, stage="transfer_sst2",
                   pruning={"method": "fixed", "sparsity": 0.5, "params": {"mask_file": mask}},
                   metrics={"id": {"sst2_dev": {"n": 872, "accuracy": score, "primary": score}}})
    run_folder(sweep / "transfer_mnli" / "omp", stage="transfer_mnli",
               data={"dev": DEV | {"name": "mnli_dev_matched"}, "challenge": [HANS]},
               pruning={"method": "fixed", "sparsity": 0.5, "mask_file": "x/omp/k"},  # the older spelling
               metrics={"id": {"mnli_dev_matched": {"n": 100, "accuracy": 0.4, "primary": 0.4}},
                        "ood": {"hans": {"n": 60, "accuracy": 0.5, "primary": 0.5, "shortcut_gap": -1.0}}})
    run_folder(sweep / "dense_sst2" / "d", task="sentiment", data=sst2, stage="dense_sst2",
               pruning={"method": "dense"}, metrics={"id": {"sst2_dev": {"n": 872, "accuracy": 0.85}}})
    report = write_report([sweep], tmp_path / "report")
    table = (tmp_path / "report" / "tamt_table.md").read_text()
    assert table == TAMT_TABLE
    markdown = report.path.read_text()
    assert "## TAMT: pre-training dev loss vs transfer" in markdown and TAMT_TABLE.rstrip() in markdown
    assert "5 further run(s) have no evaluation split" in markdown and "## 3." not in markdown
    names = {p.name for p in report.figures}
    assert {"loss_vs_downstream.png", "mask_jaccard_50.png"} <= names
    assert (tmp_path / "report" / "loss_vs_downstream.png").read_bytes()[:8] == PNG


def committed(name: str) -> Path:
    path = REPO / "docs" / "results" / name
    if not path.is_dir():
        pytest.skip(f"{path} is not in this checkout")
    return path


def test_committed_structured_table_is_regenerated(tmp_path):
    """The run folders of docs/results/structured_cpu rebuilt from its report.md (their recorded
    numbers) and its bench.json as committed (paths of the machine that ran it): the section's
    table is the committed table.md, byte for byte."""
    docs = committed("structured_cpu")
    report = (docs / "report.md").read_text()
    main = report.split("The same OOD columns")[0]
    rows = [cells(line) for line in main.splitlines()
            if line.startswith("| ") and not line.startswith(("| method", "| ---"))]
    runs = [line.split(": ", 1)[1] for line in report.split("### Runs")[1].splitlines()
            if line.startswith("- ")]
    assert len(rows) == len(runs) > 0
    sweep = tmp_path / "structured"
    sweep.mkdir()
    (sweep / "sweep.yaml").write_text("name: structured_cpu\n")
    for row, where in zip(rows, runs, strict=True):
        method, loss, paradigm, sparsity = row[:4]
        mnli, hans, gap = (float(c.split()[0]) for c in row[5:8])
        stage, key = Path(where).parts[-2:]
        s = int(sparsity.rstrip("%")) / 100
        tags = {"paradigm": paradigm} | ({"method": method} if stage == "recover" else {})
        kind = "fixed" if stage == "recover" else method
        pruning = None if method == "dense" else {"method": kind, "sparsity": s}
        metrics = {"id": {"mnli_dev_matched": {"n": 1000, "accuracy": mnli, "primary": mnli}},
                   "ood": {"hans": {"n": 1200, "accuracy": hans, "primary": hans, "shortcut_gap": gap}}}
        run_folder(sweep / stage / key, loss=loss, pruning=pruning, tags=tags, metrics=metrics, stage=stage,
                   data={"dev": {"path": "d.jsonl", "name": "mnli_dev_matched"}, "challenge": [HANS]})
    (sweep / "bench.json").write_text((docs / "bench.json").read_text())
    write_report([sweep], tmp_path / "report", figures=False)
    assert (tmp_path / "report" / "structured_table.md").read_text() == (docs / "table.md").read_text()


def test_committed_tamt_tables_are_regenerated(tmp_path):
    """The runs of docs/results/tamt_cpu rebuilt from its table.md (dev losses, transfer scores;
    the masks are not committed): the section's main table and correlations are the committed
    ones, byte for byte (the Jaccard tables that follow them need the masks)."""
    docs = committed("tamt_cpu")
    text = (docs / "table.md").read_text()
    rows = [cells(line) for line in text.split("\n\n")[0].splitlines()[2:]]
    methods = {"random": ("random", "mlm"), "OMP": ("omp", "mlm"), "IMP-MLM": ("imp", "mlm"),
               "TAMT-MLM": ("mask_train", "mlm"), "TAMT-KD": ("mask_train", "distill"),
               "TAMT-MLM+KD": ("mask_train", "mlm+distill")}
    sweep = tmp_path / "tamt_cpu"
    sst2 = {"dev": {"path": "sst2/test.jsonl", "name": "sst2_dev"}}
    mnli = {"dev": {"path": "m.jsonl", "name": "mnli_dev_matched"}, "challenge": [HANS]}
    for i, (name, sparsity, mlm, kd, *scores) in enumerate(rows):
        sst, mnli_m, hans, gap = (None if c == "-" else float(c) for c in scores)
        losses = {"mlm_dev_loss": float(mlm), "kd_dev_loss": float(kd)}
        s = int(sparsity.rstrip("%")) / 100
        method, objective = methods.get(name, ("dense", "mlm"))
        stage = f"m{i}"
        metrics = {"objective": objective, "method": method, "pretraining": losses}
        metrics |= {"sparsity": {"overall": s}} if method != "dense" else {}
        run_folder(sweep / stage / "k", task="text", data={}, stage=stage,
                   pruning={"method": method, "sparsity": s}, metrics=metrics)
        mask = None if method == "dense" else str(sweep / stage / "k")
        pruning = {"method": "dense"} if mask is None else {"method": "fixed", "params": {"mask_file": mask}}
        if sst is not None:
            run_folder(sweep / f"sst2_{stage}" / "k", task="sentiment", data=sst2, pruning=pruning,
                       stage="transfer", metrics={"id": {"sst2_dev": {"n": 872, "accuracy": sst}}})
        if mnli_m is not None:
            run_folder(sweep / f"mnli_{stage}" / "k", data=mnli, pruning=pruning, stage="transfer",
                       metrics={"id": {"mnli_dev_matched": {"n": 500, "accuracy": mnli_m}},
                                "ood": {"hans": {"n": 600, "accuracy": hans, "shortcut_gap": gap}}})
    write_report([sweep], tmp_path / "report", figures=False)
    regenerated = (tmp_path / "report" / "tamt_table.md").read_text()
    assert "Spearman rank correlation" in regenerated and text.startswith(regenerated)
