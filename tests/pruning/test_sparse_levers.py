"""The levers of the sparser-and-faster study, each a recipe option that must change
what it claims: distillation during a PoE mask search, a gradual target, a longer search on the
square-root budget, and a structured PoE mask whose search starts from OMP-gradient's heads and
neurons and moves beyond them."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import merge, tiny_recipe
from srnet import api
from srnet.errors import SrnetError
from srnet.evaluation.mask_analysis import mask_movement
from srnet.experiments.verbs.split_predictions import predict_run_split
from srnet.pruning import PruningConfig
from srnet.pruning.mask_training import MIN_STEPS_PER_THRESHOLD, auto_mask_lr, implied_reach
from srnet.sparsity.mask_io import load_masks
from srnet.tasks import generate_synthetic

MASK = {"method": "mask_train", "sparsity": 0.5, "params": {"init": "soft", "mask_lr": "auto",
                                                            "rerank_every": 2}}


@pytest.fixture(scope="module")
def dense(tmp_path_factory, tiny_model_dir):
    """A dense fine-tuned tiny model, its train predictions (the teacher) and a bias file."""
    root = tmp_path_factory.mktemp("levers")
    run = api.run(tiny_recipe(root, tiny_model_dir, "dense")).run_dir
    predict_run_split(run, "train")
    bias = root / "bias.jsonl"
    ids = [ex.id for ex in generate_synthetic("train", 48, seed=0)]
    with bias.open("w") as f:
        for i, example_id in enumerate(ids):
            probs = [0.8, 0.1, 0.1] if i % 2 else [0.2, 0.4, 0.4]
            f.write(json.dumps({"id": example_id, "probs": probs}) + "\n")
    return run, bias


def poe_search(root, model, dense, name, pruning=MASK, **extra) -> dict:
    """A PoE mask search on the frozen dense weights (``extra`` sections merged in)."""
    run, bias = dense
    spec = tiny_recipe(root, model, name, pruning=pruning,
                       loss={"name": "poe", "bias_predictions": str(bias)},
                       training={"max_steps": 12, "eval_every": 12})
    return merge(merge(spec, {"model": {"init_from": str(run)}}), extra)


def masks_of(run_dir) -> dict[str, torch.Tensor]:
    return load_masks(run_dir / "masks.safetensors")[0]


def test_distillation_during_the_search_changes_the_mask(tmp_path, tiny_model_dir, dense):
    plain = api.run(poe_search(tmp_path, tiny_model_dir, dense, "plain"))
    kd = api.run(poe_search(tmp_path, tiny_model_dir, dense, "kd",
                            loss={"teacher": str(dense[0])},
                            objective={"name": "kd", "params": {"pred_weight": 5.0, "temperature": 2.0}}))
    entries = [json.loads(line) for line in (kd.run_dir / "log.jsonl").open()]
    assert any("kd_pred" in e for e in entries)
    a, b = masks_of(plain.run_dir), masks_of(kd.run_dir)
    assert any(not torch.equal(a[k], b[k]) for k in a)
    for result in (plain, kd):
        assert result.metrics.sparsity.overall == pytest.approx(0.5, abs=0.01)


def test_gradual_target_ends_at_the_target_and_a_longer_search_keeps_the_reach(tmp_path, tiny_model_dir,
                                                                                dense):
    gradual = {**MASK, "sparsity": 0.7, "schedule": {"kind": "cubic", "initial": 0.5, "end": 0.7}}
    short = api.run(poe_search(tmp_path, tiny_model_dir, dense, "short", gradual,
                               training={"max_steps": 16}))
    long = api.run(poe_search(tmp_path, tiny_model_dir, dense, "long", gradual,
                              training={"max_steps": 64}))
    for result in (short, long):
        report = json.loads((result.run_dir / "metrics.json").read_text())["sparsity"]
        assert report["target"] == pytest.approx(0.7)
        assert all(v == pytest.approx(0.7, abs=0.02) for v in report["per_matrix"].values())
    budgets = [json.loads((r.run_dir / "metrics.json").read_text())["mask_budget"] for r in (short, long)]
    assert budgets[1]["steps"] == 4 * budgets[0]["steps"]
    for b in budgets:
        assert b["mask_lr"] == pytest.approx(auto_mask_lr(0.16, b["score_scale"], b["steps"]), rel=1e-6)
    # 16 steps: the square-root rule would cross a threshold in 18 steps, so the cap (33) sets the
    # lr; 64 steps: the rule does (36 steps per threshold), and keeps the reach
    short_budget, long_budget = budgets
    assert short_budget["capped"]
    assert short_budget["steps_per_threshold"] == pytest.approx(MIN_STEPS_PER_THRESHOLD)
    assert not long_budget["capped"]
    assert implied_reach(long_budget["mask_lr"], long_budget["score_scale"], 64) == pytest.approx(0.16)


def test_gradual_target_below_its_start_is_one_line(tmp_path, tiny_model_dir, dense):
    bad = {**MASK, "sparsity": 0.5, "schedule": {"kind": "cubic", "initial": 0.7}}
    with pytest.raises(SrnetError, match=r"schedule\.initial 0\.7 is above the target sparsity 0\.5") as info:
        api.run(poe_search(tmp_path, tiny_model_dir, dense, "bad", bad))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "bad").exists()


def test_structured_search_starts_from_omp_gradient_and_moves_beyond_it(tmp_path, tiny_model_dir, dense):
    structured = {"sparsity": 0.5, "granularity": "head+neuron"}
    omp = api.run(poe_search(tmp_path, tiny_model_dir, dense, "omp",
                             {**structured, "method": "omp", "params": {"importance": "gradient"}},
                             training={"max_steps": 1}))
    learned = api.run(poe_search(tmp_path, tiny_model_dir, dense, "learned",
                                 {**structured, "method": "mask_train", "params": {
                                     "init": "importance", "mask_lr": "auto", "mask_reach": 3.0,
                                     "rerank_every": 1}}))
    metrics = json.loads((learned.run_dir / "metrics.json").read_text())
    movement = metrics["mask_movement"]
    assert movement["flipped"] > 0 and movement["moved"]
    omp_masks, end = masks_of(omp.run_dir), masks_of(learned.run_dir)
    assert set(omp_masks) == set(end) and all(k.endswith(("heads", "neurons")) for k in end)
    # it moved from OMP-gradient's mask exactly as far as from its own start: that is its start
    from_omp = mask_movement(omp_masks, end)
    assert (from_omp["flipped_entries"], from_omp["jaccard"]) == (movement["flipped_entries"],
                                                                  movement["jaccard"])
    for mask in end.values():  # local scope: half of every layer's heads and neurons
        assert int((~mask.bool()).sum()) == mask.numel() // 2


def test_importance_init_needs_heads_or_neurons():
    with pytest.raises(ValueError, match="init 'importance' scores heads and neurons"):
        PruningConfig(method="mask_train", params={"init": "importance", "mask_lr": 1e-3})


def test_a_teacher_predicted_on_other_labels_is_one_line(tmp_path, tiny_model_dir, dense):
    rows = [json.loads(line) for line in (dense[0] / "predictions" / "train.jsonl").open()]
    swap = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}
    rows[5]["gold"] = swap[rows[5]["gold"]]
    teacher = tmp_path / "teacher.jsonl"
    teacher.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = poe_search(tmp_path, tiny_model_dir, dense, "bad", loss={"teacher": str(teacher)},
                      objective={"name": "kd", "params": {"pred_weight": 1.0}})
    with pytest.raises(SrnetError, match=f"example id '{rows[5]['id']}' has gold label") as info:
        api.run(spec)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "bad").exists()
