"""`srnet report` on fixture run folders written here: tables against hand-computed means and
stds, cohorts for incompatible runs, both HANS rules, the no-runs error, and the figures."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
import torch
import yaml

from conftest import hans_block, write_run
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.reporting.runs import find_runs, load_run, run_labels, split_grid_points
from srnet.reporting.stats import cohorts, group_runs
from srnet.reporting.study import write_report
from srnet.rundir.record import SparsityRecord
from srnet.sparsity.mask_io import MaskMetadata, save_masks

PNG = b"\x89PNG\r\n\x1a\n"
@pytest.fixture()
def study(tmp_path) -> Path:
    root = tmp_path / "runs"
    for seed, (dev, acc, gap) in enumerate([(0.80, 0.50, 0.90), (0.82, 0.52, 0.80)], 1):
        write_run(root / "dense", f"ce_s{seed}", seed=seed, dev=dev, hans=hans_block(acc, gap))
    for seed, (dev, acc, gap) in enumerate([(0.70, 0.55, 0.20), (0.74, 0.57, 0.40), (0.75, 0.60, 0.30)], 1):
        write_run(root / "sweep" / "mt50", f"poe_s{seed}", seed=seed, dev=dev, hans=hans_block(acc, gap),
                  method="mask_train", sparsity=0.5, loss="poe", tags={"paradigm": "a"})
    write_run(root / "sweep", "imp70", seed=1, dev=0.6, hans=hans_block(0.51, 0.7),
              method="imp", sparsity=0.7, tags={"paradigm": "a"})
    (root / "sweep" / "unfinished").mkdir()
    (root / "sweep" / "unfinished" / "config.yaml").write_text("name: x\n")
    return root


def test_labels_from_tags_then_recipe():
    assert run_labels({}) == {"method": "dense", "loss": "ce", "paradigm": "-", "sparsity": 0.0}
    recipe = {"pruning": {"method": "imp", "sparsity": 0.3}, "loss": {"name": "poe"},
              "tags": {"paradigm": "b", "schedule": "cubic"}}
    assert run_labels(recipe) == {"method": "imp", "loss": "poe", "paradigm": "b", "sparsity": 0.3,
                                  "schedule": "cubic"}
    assert run_labels({}, SparsityRecord(overall=0.4987))["method"] == "subnetwork"
    assert run_labels({"tags": {"sparsity": "high"}})["sparsity"] == 0.0  # a tag cannot replace it


def test_runs_that_differ_only_in_their_objective_settings_get_different_labels():
    def objective(name, **params):
        return run_labels({"objective": {"name": name, "params": params}}).get("objective")

    assert objective("standard") is None
    assert objective("kd", pred_weight=1.0, temperature=2.0) == "kd"  # the defaults
    assert objective("kd", pred_weight=0.0) == "kd pred_weight=0"
    assert objective("kd", pred_weight=1.0, hidden_weight=0.5) == "kd hidden_weight=0.5"
    tagged = {"objective": {"name": "kd"}, "tags": {"objective": "distilled"}}
    assert run_labels(tagged)["objective"] == "distilled"


def test_runs_of_different_grid_points_are_not_pooled_as_seeds(tmp_path):
    """Same labels, different upstream grid values (stage.json): two rows, named by the values
    that differ; the seed alone never splits a row, and plain runs are unchanged."""
    root = tmp_path / "runs"
    for steps, devs in ((300, (0.70, 0.72)), (3000, (0.80, 0.84))):
        for seed, dev in enumerate(devs, 1):
            run = write_run(root, f"ticket_{steps}_{seed}", seed=seed, dev=dev, method="fixed", sparsity=0.3)
            grid = {"seed": seed, "gates.training.max_steps": steps,
                    "gates.objective.params": {"steps": 2, "step_size": 0.03}}
            (run / "stage.json").write_text(json.dumps({"stage": "ticket", "grid": grid}))
    write_run(root, "dense", seed=1, dev=0.9)
    runs = split_grid_points(load_run(p) for p in find_runs([root]))
    groups = {g.labels.get("grid"): g for g in group_runs(cohorts(runs)[0])}
    assert set(groups) == {None, "gates.training.max_steps=300", "gates.training.max_steps=3000"}
    assert groups["gates.training.max_steps=300"].stats["ID mnli_dev"].mean == pytest.approx(0.71)
    assert groups["gates.training.max_steps=3000"].stats["ID mnli_dev"].mean == pytest.approx(0.82)
    assert len(groups[None].runs) == 1
    assert "gates.training.max_steps=3000" in write_report([root], tmp_path / "rep").path.read_text()
    (root / "ticket_300_1" / "stage.json").write_text("{not json")
    with pytest.raises(SrnetError, match=r"ticket_300_1/stage.json: unreadable stage record"):
        load_run(root / "ticket_300_1")


def test_unreadable_run_files_are_one_line_errors(tmp_path):
    run = write_run(tmp_path, "r", seed=1, dev=0.5)
    (run / "metrics.json").write_text('{"id": [1, 2]}')
    with pytest.raises(SrnetError, match=r"metrics.json: not a run record \(id: Input should be"):
        load_run(run)
    (run / "metrics.json").write_text("{not json")
    with pytest.raises(SrnetError, match=r"metrics.json: unreadable run record \(not valid JSON\)"):
        load_run(run)
    (run / "metrics.json").write_bytes(b'{"run": "\xff"}')
    with pytest.raises(SrnetError, match=r"metrics.json: unreadable run record"):
        load_run(run)


def test_a_report_skips_an_unreadable_run_with_a_note(tmp_path):
    write_run(tmp_path, "good", seed=1, dev=0.5)
    bad = write_run(tmp_path, "bad", seed=2, dev=0.6)
    (bad / "metrics.json").write_text("{not json")
    text = write_report([tmp_path], tmp_path / "rep", figures=False).path.read_text()
    assert "1 complete runs" in text
    assert "1 run(s) skipped, unreadable: " in text and "bad/metrics.json: unreadable run record" in text


def test_groups_match_hand_computed_means_and_stds(study):
    runs = [load_run(p) for p in find_runs([study])]
    assert len(runs) == 6  # the unfinished folder (no metrics.json) is not a run
    (cohort,) = cohorts(runs)
    assert cohort.rule == "sum" and cohort.merging_splits() == ["hans"]
    groups = {(g.labels["method"], g.labels["sparsity"]): g for g in group_runs(cohort)}
    dense, poe, imp = groups[("dense", 0.0)], groups[("mask_train", 0.5)], groups[("imp", 0.7)]
    assert [len(g.runs) for g in (dense, poe, imp)] == [2, 3, 1]
    stat = poe.stats["ID mnli_dev"]
    assert stat.mean == pytest.approx((0.70 + 0.74 + 0.75) / 3)
    assert stat.std == pytest.approx(statistics.stdev([0.70, 0.74, 0.75]))
    assert poe.stats["gap hans"].mean == pytest.approx(0.3)
    assert poe.stats["gap hans"].std == pytest.approx(0.1)
    assert imp.stats["hans"].std is None and imp.stats["hans"].n == 1
    # F_bias against the mean dense CE model: dense dev 0.81, HANS 0.51 -> drop 0.30 / 0.81
    dense_drop = (0.81 - 0.51) / 0.81
    expected = [((d - o) / d) / dense_drop for d, o in [(0.70, 0.55), (0.74, 0.57), (0.75, 0.60)]]
    assert poe.stats["F_bias hans"].mean == pytest.approx(statistics.fmean(expected))
    assert poe.stats["F_bias hans"].std == pytest.approx(statistics.stdev(expected))
    argmax = {g.labels["method"]: g for g in group_runs(cohort, "argmax")}
    assert argmax["mask_train"].stats["hans"].mean == pytest.approx(0.5)
    assert argmax["mask_train"].stats["gap hans"].std == pytest.approx(0.0)


def test_report_markdown_and_figures(study, tmp_path):
    out = tmp_path / "report"
    report = write_report([study], out)
    text = report.path.read_text()
    assert "collapse rule `sum`" in text and "other rule, `argmax`" in text
    row = next(line for line in text.splitlines() if line.startswith("| mask_train"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    dev = [0.70, 0.74, 0.75]
    assert cells[:5] == ["mask_train", "poe", "a", "50%", "3"]
    assert cells[5] == f"{statistics.fmean(dev):.4f} ± {statistics.stdev(dev):.4f}"
    hans = [0.55, 0.57, 0.60]
    assert cells[6] == f"{statistics.fmean(hans):.4f} ± {statistics.stdev(hans):.4f}"
    assert "| dense" in text and "0.8100 ± 0.0141" in text
    names = sorted(p.name for p in report.figures)
    assert names == ["s1_hans_by_heuristic.png", "s1_sparsity_imp_ce_a_70.png",
                     "s1_sparsity_mask_train_poe_a_50.png", "s1_vs_sparsity.png"]
    for figure in report.figures:
        assert figure.read_bytes()[:8] == PNG and f"]({figure.name})" in text


def test_incompatible_runs_get_separate_sections(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "a", seed=1, dev=0.8, hans=hans_block(0.5, 0.9))
    write_run(root, "b", seed=2, dev=0.7, hans=hans_block(0.5, 0.9))
    write_run(root, "small_dev", seed=1, dev=0.6, hans=hans_block(0.5, 0.9), dev_n=50)
    write_run(root, "sst", seed=1, dev=0.9, task="sentiment")
    found = cohorts(load_run(p) for p in find_runs([root]))
    assert [(s.task, len(s.runs)) for s in found] == [("nli", 2), ("nli", 1), ("sentiment", 1)]
    assert [s.sizes["mnli_dev"] for s in found] == [200, 50, 200]
    text = write_report([root], tmp_path / "rep", figures=False).path.read_text()
    assert "## 1. nli: mnli_dev (n=200), hans (n=300)" in text
    assert "## 2. nli: mnli_dev (n=50), hans (n=300)" in text
    assert "## 3. sentiment: mnli_dev (n=200)" in text


def test_section_uses_the_runs_primary_rule(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "a", seed=1, dev=0.8, hans=hans_block(0.6, -0.2, rule="argmax", other=(0.5, 0.9)))
    (cohort,) = cohorts([load_run(root / "a")])
    assert cohort.rule == "argmax"
    assert group_runs(cohort)[0].stats["gap hans"].mean == pytest.approx(-0.2)
    text = write_report([root], tmp_path / "rep", figures=False).path.read_text()
    assert "collapse rule `argmax`" in text and "other rule, `sum`" in text


def test_mask_jaccard_heatmap_is_the_mean_over_shared_seeds(tmp_path):
    root = tmp_path / "runs"
    name = "bert.encoder.layer.0.attention.self.query.weight"
    keep = {name: torch.tensor([[1, 1, 0, 0]], dtype=torch.bool)}
    other = {name: torch.tensor([[1, 0, 1, 0]], dtype=torch.bool)}
    meta = MaskMetadata(method="x", base_model="m", base_model_fingerprint="f")
    # seed 1: Jaccard 1/3; seed 2: identical masks, 1; seed 3 (omp only) has no partner
    for run_name, method, seed, masks in (("omp1", "omp", 1, keep), ("imp1", "imp", 1, other),
                                          ("omp2", "omp", 2, keep), ("imp2", "imp", 2, keep),
                                          ("omp3", "omp", 3, other)):
        run = write_run(root, run_name, seed=seed, dev=0.7, hans=hans_block(0.5, 0.5), method=method,
                        sparsity=0.5)
        save_masks(run / "masks.safetensors", masks, meta)
    report = write_report([root], tmp_path / "rep")
    assert "s1_mask_jaccard.png" in [p.name for p in report.figures]
    text = report.path.read_text()
    assert "Mask similarity at 50% sparsity" in text
    row = next(line for line in text.splitlines() if line.startswith("| imp/ce"))
    assert [cell.strip() for cell in row.strip("|").split("|")][1:] == ["1.000", "0.667"]


def test_hidden_overwrite_and_replaced_folders_are_skipped(study):
    before = find_runs([study])
    write_run(study / "sweep", ".imp70.overwrite", seed=1, dev=0.1, method="imp", sparsity=0.7)
    write_run(study / ".old.replaced", "ce_s1", seed=1, dev=0.2)
    assert find_runs([study]) == before and len(before) == 6
    assert find_runs([study / "sweep" / ".imp70.overwrite"])  # named explicitly, it is read


def test_no_complete_runs_is_one_line(tmp_path, capsys):
    (tmp_path / "empty" / "half").mkdir(parents=True)
    (tmp_path / "empty" / "half" / "config.yaml").write_text("name: x\n")
    with pytest.raises(SrnetError, match=r"empty: no complete runs \(no metrics.json under it\)"):
        find_runs([tmp_path / "empty"])
    assert main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "no complete runs" in err
    assert not (tmp_path / "empty" / "report").exists()
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_cli_report_default_out(study, capsys):
    for _ in range(2):  # a second report ignores the first one's folder
        assert main(["report", str(study), "--no-figures"]) == 0
        out = capsys.readouterr().out
        assert "| mask_train" in out and f"wrote {study / 'report' / 'report.md'} and 0 figures" in out


def test_a_report_replaces_only_its_own_report_and_one_writer_at_a_time(study, tmp_path, capsys):
    """An earlier srnet report in --out is rewritten; a report.md srnet did not write is refused in
    one line (kept byte for byte) unless --overwrite; a file as --out and a folder another report
    is writing are one line each."""
    from srnet.rundir import locks

    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("my notes\n")
    assert main(["report", str(study), "--out", str(out), "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {out / 'report.md'}: exists and is not an srnet report; pass --overwrite to " \
                  "replace it\n"
    assert (out / "report.md").read_text() == "my notes\n"
    assert main(["report", str(study), "--out", str(out), "--no-figures", "--overwrite"]) == 0
    assert (out / "report.md").read_text().startswith("# srnet report\n")
    assert main(["report", str(study), "--out", str(out), "--no-figures"]) == 0  # its own: rewritten
    (tmp_path / "file").write_text("x")
    assert main(["report", str(study), "--out", str(tmp_path / "file")]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    held = locks.acquire(out, ".report.lock")
    try:
        assert main(["report", str(study), "--out", str(out), "--no-figures"]) == 2
        assert "another srnet report is writing there" in capsys.readouterr().err
    finally:
        locks.release(out, held.token, ".report.lock")


def test_report_of_real_runs_on_a_tiny_model(tmp_path, tiny_model_dir):
    """dense (primary rule argmax) + one-shot omp and random subnetworks -> a report with masks."""
    from srnet import api

    def synthetic(split: str, n: int) -> dict:
        return {"format": "synthetic", "synthetic": {"split": split, "n": n, "seed": 0}}

    runs = tmp_path / "runs"
    base = {"task": "synthetic_nli", "seed": 0, "output_dir": str(runs),
            "model": {"name": str(tiny_model_dir), "max_length": 32},
            "data": {"dev": synthetic("dev", 20), "challenge": [synthetic("challenge", 24)]}}
    train = {"train": synthetic("train", 16), **base["data"]}
    dense = api.run(base | {"name": "dense", "data": train, "evaluation": {"collapse": "argmax"},
                            "training": {"max_steps": 2, "batch_size": 8}}).metrics
    block = dense.ood["synthetic_challenge"]
    assert block["collapse"] == "argmax" and set(block["by_rule"]) == {"sum", "argmax"}
    assert block["accuracy"] == block["by_rule"]["argmax"]["accuracy"]
    assert "shortcut_gap" in block["by_rule"]["sum"]
    assert (runs / "dense" / "predictions" / "synthetic_challenge_hans_predictions.txt").is_file()
    for method in ("omp", "random"):
        api.run(base | {"name": method, "model": base["model"] | {"init_from": str(runs / "dense")},
                        "pruning": {"method": method, "sparsity": 0.4}, "tags": {"paradigm": "a"}})
    report = write_report([runs], tmp_path / "report")
    text = report.path.read_text()
    assert "collapse rule `sum`" in text  # the runs disagree on the primary rule: sum, which all record
    assert {"s1_vs_sparsity.png", "s1_mask_jaccard.png", "s1_synthetic_challenge_by_heuristic.png"} <= {
        p.name for p in report.figures}


def write_attack(run: Path, name: str, successful: int, failed: int, skipped: int, queries: float) -> None:
    """``attack/<name>.json`` as ``srnet attack`` writes it, from hand-chosen counts."""
    total, done = successful + failed + skipped, successful + failed
    summary = {"attack": name, "split": "sst2_test", "total": total, "attacked": done,
               "successful": successful, "failed": failed, "skipped": skipped,
               "clean": done / total, "aua": failed / total, "success_rate": successful / done,
               "avg_queries": queries}
    (run / "attack").mkdir(exist_ok=True)
    (run / "attack" / f"{name}.json").write_text(json.dumps(summary))


def test_attack_tables_match_hand_computed_means(tmp_path):
    root = tmp_path / "runs"
    # dense, 2 seeds, 20 examples each: clean 18/20, 16/20; aua 2/20, 6/20; suc 16/18, 10/16
    for seed, (s, f, k, q) in enumerate([(16, 2, 2, 30.0), (10, 6, 4, 40.0)], 1):
        run = write_run(root, f"ft{seed}", seed=seed, dev=0.9, task="sentiment")
        write_attack(run, "wordswap", s, f, k, q)
        write_attack(run, "charswap", 5, 15, 0, 12.0)
    ticket = write_run(root, "ticket", seed=1, dev=0.85, task="sentiment", method="fixed", sparsity=0.3,
                       tags={"method": "robust_ticket"})
    write_attack(ticket, "wordswap", 4, 12, 4, 50.0)
    write_run(root, "unattacked", seed=1, dev=0.8, task="sentiment", method="imp", sparsity=0.3)
    (cohort,) = cohorts([load_run(p) for p in find_runs([root])])
    groups = {g.labels["method"]: g for g in group_runs(cohort)}
    dense = groups["dense"].stats
    assert dense["wordswap Clean%"].mean == pytest.approx(85.0)
    assert dense["wordswap Aua%"].mean == pytest.approx(20.0)
    assert dense["wordswap Aua%"].std == pytest.approx(statistics.stdev([10.0, 30.0]))
    assert dense["wordswap Suc%"].mean == pytest.approx((100 * 16 / 18 + 100 * 10 / 16) / 2)
    assert dense["wordswap #Query"].mean == pytest.approx(35.0)
    assert dense["charswap Suc%"].mean == pytest.approx(25.0) and dense["charswap Suc%"].std == 0.0
    assert "wordswap Aua%" not in groups["imp"].stats

    text = write_report([root], tmp_path / "report", figures=False).path.read_text()
    assert "### Attack `charswap`" in text and "### Attack `wordswap`" in text
    word = text[text.index("### Attack `wordswap`"):]
    header = next(line for line in word.splitlines() if line.startswith("| method"))
    assert [c.strip() for c in header.strip("|").split("|")][4:] == ["n", "Clean%", "Aua%", "Suc%", "#Query"]
    row = next(line for line in word.splitlines() if line.startswith("| dense"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    suc = [100 * 16 / 18, 100 * 10 / 16]
    assert cells[4:] == ["2", f"85.0 ± {statistics.stdev([90.0, 80.0]):.1f}", "20.0 ± 14.1",
                         f"{statistics.fmean(suc):.1f} ± {statistics.stdev(suc):.1f}", "35.0 ± 7.1"]
    row = next(line for line in word.splitlines() if line.startswith("| robust_ticket"))
    assert [c.strip() for c in row.strip("|").split("|")][3:] == ["30%", "1", "80.0", "60.0", "25.0", "50.0"]
    assert "| imp" not in word.split("### Runs")[0]  # never attacked: not in the attack's table
    main_table = text.split("### Attack")[0]
    assert "Aua%" not in main_table and "wordswap" not in main_table


def test_malformed_attack_summary_is_one_line(tmp_path):
    run = write_run(tmp_path, "r", seed=1, dev=0.5)
    (run / "attack").mkdir()
    (run / "attack" / "wordswap.json").write_text('{"clean": 0.5}')
    with pytest.raises(SrnetError, match=r"wordswap.json: not an attack summary"):
        load_run(run)


def test_runs_that_differ_in_more_than_the_seed_are_never_pooled(tmp_path):
    root = tmp_path / "runs"
    with_recipe(write_run(root, "bert", seed=1, dev=0.80), **{"model.name": "runs/tiny_bert"})
    with_recipe(write_run(root, "roberta", seed=1, dev=0.60), **{"model.name": "runs/tiny_roberta"})
    for seed in (1, 2):  # seeds of one sweep configuration: stage keys and seed names differ only
        key = f"{seed:016x}"
        with_recipe(write_run(root, f"ticket{seed}", seed=seed, dev=0.7, method="omp", sparsity=0.5),
                    **{"model.name": "default", "model.init_from": f"runs/study/ft/{key}/seed{seed}"})
    runs = split_grid_points(load_run(p) for p in find_runs([root]))
    (cohort,) = cohorts(runs)
    groups = group_runs(cohort)
    dense = [g for g in groups if g.labels["method"] == "dense"]
    labels = sorted(g.labels["recipe"] for g in dense)
    assert labels == ["model.name=runs/tiny_bert", "model.name=runs/tiny_roberta"]
    assert [len(g.runs) for g in dense] == [1, 1]
    (pruned,) = [g for g in groups if g.labels["method"] == "omp"]
    assert len(pruned.runs) == 2 and "recipe" not in pruned.labels


def with_recipe(run: Path, **changes) -> Path:
    """Set dotted recipe keys in a fixture run's config.yaml."""
    recipe = yaml.safe_load((run / "config.yaml").read_text())
    for key, value in changes.items():
        *parents, last = key.split(".")
        node = recipe
        for part in parents:
            node[part] = node.get(part) or {}
            node = node[part]
        node[last] = value
    (run / "config.yaml").write_text(yaml.safe_dump(recipe))
    return run


def test_runs_that_differ_in_a_fourth_key_are_not_pooled_and_labels_stay_short(tmp_path):
    """Labels were once built from the first three differing keys plus '...', so two
    runs that differed only in a later key shared a label and were pooled as n = 2."""
    root = tmp_path / "runs"
    settings = {"mnli_ft": (0.80, "runs/tiny_bert", 5e-5, 20, 32),  # keys apart, in recipe order: model.name,
                "api_ft": (0.60, "runs/tiny_bert", 1e-4, 20, 32),  # training.max_steps, .batch_size, .lr
                "other": (0.70, "runs/tiny_roberta", 5e-5, 10, 16)}
    for name, (dev, model, lr, steps, batch) in settings.items():
        with_recipe(write_run(root, name, seed=1, dev=dev), **{"model.name": model, "training.lr": lr,
                    "training.max_steps": steps, "training.batch_size": batch})
    for seed in (1, 2):  # seeds of one long setting: one row
        with_recipe(write_run(root, f"long{seed}", seed=seed, dev=0.5 + seed / 10), **{
            "model.name": "runs/" + "a_backbone_with_a_long_name_" * 3, "training.lr": 1e-3,
            "training.max_steps": 20, "training.batch_size": 32})
    groups = group_runs(cohorts(split_grid_points(load_run(p) for p in find_runs([root])))[0])
    assert sorted(len(g.runs) for g in groups) == [1, 1, 1, 2]
    labels = [g.labels["recipe"] for g in groups]
    assert len(set(labels)) == 4 and all(len(label) <= 60 for label in labels), labels
    assert all(re.search(r"… #[0-9a-f]{8}$", label) for label in labels), labels  # cut: digest beside
    pooled = next(g for g in groups if len(g.runs) == 2)
    assert pooled.stats["ID mnli_dev"].mean == pytest.approx(0.65)


def test_recipe_labels_name_every_differing_key_or_add_a_digest():
    from srnet.reporting.runs import recipe_labels

    keys = ["model.name", "training.lr", "training.max_steps", "training.batch_size"]
    a = {"model.name": "x", "training.lr": 1e-4, "training.max_steps": 20, "training.batch_size": 32}
    b = a | {"training.batch_size": 16}
    batch = ["training.batch_size"]
    assert recipe_labels([a, b], batch) == ["training.batch_size=32", "training.batch_size=16"]
    long = recipe_labels([a, b], keys)
    assert long[0] != long[1] and all(len(label) <= 60 and "#" in label for label in long)
    same = recipe_labels([{"k": 1}, {"k": "1"}], ["k"])  # would read alike: told apart by the digest
    assert same[0] != same[1]


def test_an_evaluated_export_is_a_subnetwork_and_never_joins_the_dense_baseline(tmp_path):
    """config.yaml always holds ``pruning: {method: dense}``, so a 70% export
    evaluated by ``srnet evaluate`` was labelled dense and moved the dense runs' F_bias."""
    root = tmp_path / "runs"
    write_run(root, "dense", seed=1, dev=0.80, hans=hans_block(0.50, 0.9))
    export = write_run(root, "eval_export", seed=1, dev=0.70, hans=hans_block(0.60, 0.3), sparsity=0.7)
    with_recipe(export, pruning={"method": "dense", "sparsity": 0.0})
    runs = split_grid_points(load_run(p) for p in find_runs([root]))
    groups = {g.labels["method"]: g for g in group_runs(cohorts(runs)[0])}
    assert set(groups) == {"dense", "subnetwork"}
    assert groups["subnetwork"].labels["sparsity"] == 0.7 and len(groups["dense"].runs) == 1
    assert groups["dense"].stats["F_bias hans"].mean == pytest.approx(1.0)


def test_runtimes_are_labelled_and_never_pooled(tmp_path):
    """The torch and onnx-int8 evaluations of one model are two rows (``runtime``); a dense
    onnx-int8 run is no dense baseline of F_bias."""
    root = tmp_path / "runs"
    for runtime, dev, acc in (("torch", 0.80, 0.50), ("onnx-int8", 0.78, 0.58)):
        run = with_recipe(write_run(root, f"dense_{runtime}", seed=1, dev=dev, hans=hans_block(acc, 0.5)),
                          **{"evaluation.runtime": runtime})
        if runtime != "torch":
            metrics = json.loads((run / "metrics.json").read_text())
            (run / "metrics.json").write_text(json.dumps(metrics | {"runtime": {"runtime": runtime}}))
    runs = split_grid_points(load_run(p) for p in find_runs([root]))
    groups = {g.labels.get("runtime", "torch"): g for g in group_runs(cohorts(runs)[0])}
    assert set(groups) == {"torch", "onnx-int8"} and all(len(g.runs) == 1 for g in groups.values())
    assert "recipe" not in groups["onnx-int8"].labels and groups["torch"].stats["F_bias hans"].mean == 1.0
    text = write_report([root], tmp_path / "rep", figures=False).path.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| dense")]
    assert any("| torch " in row for row in rows) and any("| onnx-int8 " in row for row in rows)


def test_seeds_written_by_two_sweep_folders_pool_and_other_settings_split():
    """A stage-run path compares by stage: seeds whose sweep wrote to different folders (a copy run on
    another machine) are one configuration; a different learning rate still sets runs apart."""
    from srnet.reporting.runs import Run, split_recipes

    def run(seed: int, root: str, key: str, lr: float = 1e-4) -> Run:
        recipe = {"task": "nli", "seed": seed, "output_dir": f"{root}/mask/{key}",
                  "model": {"name": "default", "init_from": f"{root}/ft/{key}"},
                  "training": {"lr": lr}}
        return Run(Path(root), {}, recipe, {"method": "mask_train"}, seed)

    pooled = split_recipes([run(1, "runs/study_gpu", "429b8f061a2c2ff3"),
                            run(2, "runs/study_cpu", "9fc5923da68b01f1")])
    assert all("recipe" not in r.labels for r in pooled)
    apart = split_recipes([run(1, "runs/study", "429b8f061a2c2ff3"),
                           run(2, "runs/study", "9fc5923da68b01f1", lr=2e-5)])
    assert [r.labels["recipe"] for r in apart] == ["training.lr=0.0001", "training.lr=2e-05"]


def _summary(survivors: list[str], *, total: int = 6, attacked: int = 5, queries: float = 10.0,
             split: str = "sst2_test") -> dict:
    failed = len(survivors)
    return {"split": split, "seed": 0, "total": total, "attacked": attacked, "successful": attacked - failed,
            "failed": failed, "skipped": total - attacked, "clean": attacked / total, "aua": failed / total,
            "success_rate": 1 - failed / attacked, "avg_queries": queries, "survivors": survivors}


def test_the_attack_union_counts_a_sentence_only_if_it_survives_every_attack(tmp_path):
    from srnet.rundir.layout import UNION, load_attacks, union_summary

    char, word = _summary(["a", "b", "c"], queries=12.0), _summary(["b", "c", "d", "e"], queries=30.0)
    union = union_summary({"charswap": char, "textfooler": word})
    assert union["attacks"] == ["charswap", "textfooler"]
    assert union["aua"] == pytest.approx(2 / 6) and union["success_rate"] == pytest.approx(1 - 2 / 5)
    assert union["clean"] == pytest.approx(5 / 6) and union["avg_queries"] == 42.0
    assert union_summary({"charswap": char}) is None  # one attack is no union
    assert union_summary({"charswap": char, "wordswap": _summary(["a"], split="dev")}) is None
    older = {k: v for k, v in word.items() if k != "survivors"}
    assert union_summary({"charswap": char, "wordswap": older}) is None  # no survivors recorded

    run = write_run(tmp_path, "dense", seed=1, dev=0.9)
    (run / "attack").mkdir()
    for name, summary in (("charswap", char), ("textfooler", word)):
        (run / "attack" / f"{name}.json").write_text(json.dumps(summary))
    assert load_attacks(run)[UNION + "charswap+textfooler"]["aua"] == pytest.approx(2 / 6)
    other = write_run(tmp_path, "dense2", seed=2, dev=0.9)  # attacked by another set: its own table
    (other / "attack").mkdir()
    for name, summary in (("charswap", char), ("wordswap", _summary(["a"]))):
        (other / "attack" / f"{name}.json").write_text(json.dumps(summary))
    text = write_report([tmp_path], tmp_path / "rep", figures=False).path.read_text()
    assert "### All attacks (union of charswap, textfooler)" in text
    assert "### All attacks (union of charswap, wordswap)" in text
    assert "every attack (charswap, textfooler)" in text
    assert text.index("### Attack `wordswap`") < text.index("### All attacks (union of charswap, textfooler)")


def test_backfill_gives_older_attack_summaries_their_survivors(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("backfill", Path(__file__).parents[2] / "benchmarks"
                                                  / "backfill_attack_survivors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    attack = tmp_path / "run" / "attack"
    attack.mkdir(parents=True)
    summary = {k: v for k, v in _summary(["x"], total=3, attacked=2).items() if k != "survivors"}
    (attack / "charswap.json").write_text(json.dumps(summary))
    rows = [{"id": "x", "result": "failed"}, {"id": "y", "result": "successful"},
            {"id": "z", "result": "skipped"}]
    (attack / "charswap.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert module.backfill(tmp_path) == 1
    assert json.loads((attack / "charswap.json").read_text())["survivors"] == ["x"]
    assert module.backfill(tmp_path) == 0  # already there


def test_two_results_of_one_attack_in_a_run_are_refused_not_chosen(tmp_path):
    """A sweep stage's sub-folder result and an ``srnet attack`` result of the same attack: the
    report names both rather than picking one."""
    from srnet.rundir.layout import load_attacks

    run = write_run(tmp_path, "dense", seed=1, dev=0.9)
    (run / "attack" / "f00d").mkdir(parents=True)
    (run / "attack" / "f00d" / "charswap.json").write_text(json.dumps(_summary(["a"])))
    assert list(load_attacks(run)) == ["charswap"]
    (run / "attack" / "charswap.json").write_text(json.dumps(_summary(["b"])))
    second = r"f00d/charswap.json: a second 'charswap' result .*the first: "
    with pytest.raises(SrnetError, match=second) as err:
        load_attacks(run)
    assert "\n" not in str(err.value)
