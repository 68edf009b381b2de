"""The ``kd`` objective: task loss + prediction-layer KL to cached teacher probabilities + hidden
states matched to the dense model, composable with any loss and the pruning methods."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from conftest import FAMILY_MODELS, merge, tiny_classifier, tiny_recipe
from srnet import api
from srnet.errors import SrnetError
from srnet.experiments.verbs.split_predictions import predict_run_split
from srnet.tasks import generate_synthetic
from srnet.training.objectives import build_objective


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, tiny_model_dir):
    """A dense fine-tuned tiny model and its predictions on the training split."""
    root = tmp_path_factory.mktemp("kd")
    run = api.run(tiny_recipe(root, tiny_model_dir, "dense")).run_dir
    predict_run_split(run, "train")
    return run


def kd_recipe(root, model, teacher, name, pruning, loss="ce", **kd) -> dict:
    spec = tiny_recipe(root, model, name, pruning=pruning, loss={"name": loss, "teacher": str(teacher)},
                       objective={"name": "kd", "params": kd})
    return merge(spec, {"model": {"init_from": str(teacher)}})


def log_entries(run) -> list[dict]:
    return [e for e in map(json.loads, (run / "log.jsonl").open()) if e.get("event") == "train"]


def test_kl_term_is_zero_for_the_teacher_itself_and_scaled_by_t_squared():
    objective = build_objective("kd", {"task_weight": 0.0, "pred_weight": 1.0, "temperature": 3.0})
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], requires_grad=True)

    class Tiny(torch.nn.Module):
        def forward(self, **_):
            return type("Out", (), {"logits": logits, "hidden_states": None})()

    batch = {"input_ids": torch.zeros(2, 4, dtype=torch.long), "attention_mask": torch.ones(2, 4),
             "labels": torch.tensor([0, 1]), "teacher_probs": F.softmax(logits.detach(), dim=-1)}
    logs = objective.step(Tiny(), batch, lambda *a: torch.tensor(0.0), progress=0.0, penalty=lambda: None,
                          backward=lambda v: None)
    assert logs["kd_pred"] == pytest.approx(0.0, abs=1e-6)
    batch["teacher_probs"] = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    logs = objective.step(Tiny(), batch, lambda *a: torch.tensor(0.0), progress=0.0, penalty=lambda: None,
                          backward=lambda v: None)
    t = F.log_softmax(batch["teacher_probs"].clamp_min(1e-12).log() / 3.0, dim=-1)
    s = F.log_softmax(logits.detach() / 3.0, dim=-1)
    expected = (t.exp() * (t - s)).sum(-1).mean() * 9.0
    assert logs["kd_pred"] == pytest.approx(expected.item(), rel=1e-5)


def kl_gradient(through_bias: bool, log_bias: torch.Tensor) -> torch.Tensor:
    """The gradient of the ``kd`` objective's KL term (task loss weighted 0) on two examples' logits."""
    objective = build_objective("kd", {"task_weight": 0.0, "pred_weight": 1.0, "temperature": 2.0,
                                       "through_bias": through_bias})
    logits = torch.tensor([[0.2, 0.1, -0.3], [0.0, 0.4, 0.1]], requires_grad=True)

    class Tiny(torch.nn.Module):
        def forward(self, **_):
            return type("Out", (), {"logits": logits, "hidden_states": None})()

    teacher = torch.tensor([[0.9, 0.05, 0.05], [0.1, 0.1, 0.8]])
    batch = {"input_ids": torch.zeros(2, 4, dtype=torch.long), "attention_mask": torch.ones(2, 4),
             "labels": torch.tensor([0, 2]), "teacher_probs": teacher, "bias_log_probs": log_bias}
    objective.step(Tiny(), batch, lambda *a: torch.tensor(0.0), progress=0.0, penalty=lambda: None,
                   backward=lambda v: v.backward())
    return logits.grad


def test_kd_through_the_bias_spares_what_the_bias_explains():
    """``through_bias``: a uniform bias leaves the KL term as it is; a bias confident in the
    teacher's answer on example 0 shrinks that example's pull, and not example 1's (bias uniform)."""
    uniform = torch.full((2, 3), 1 / 3).log()
    assert torch.allclose(kl_gradient(True, uniform), kl_gradient(False, uniform), atol=1e-6)
    confident = torch.tensor([[0.98, 0.01, 0.01], [1 / 3, 1 / 3, 1 / 3]]).log()
    plain, through = kl_gradient(False, confident), kl_gradient(True, confident)
    assert through[0].norm() < plain[0].norm() / 2
    assert torch.allclose(through[1], plain[1], atol=1e-6)


@pytest.mark.parametrize(("method", "granularity", "loss", "hidden"), [
    ("mask_train", "head+neuron", "ce", 1.0),   # structured mask training: both terms
    ("l0", "head+neuron", "poe", 1.0),          # structured L0 with a debiasing task loss
    ("omp", "head+neuron", "poe", "through"),   # structured OMP + recovery, KL through the bias
    ("omp", "head+neuron", "ce", 0.0),          # structured OMP + recovery: weights train, KL only
    ("omp", "head+neuron", "poe", 1.0),         # weights train: hidden states of a frozen copy
    ("omp", "head+neuron", "poe", "attention"),  # weights train: attention maps of a frozen copy
    ("mask_train", "head+neuron", "ce", "attention"),  # frozen weights: its own maps, masks lifted
    ("imp", "unstructured", "ce", 0.0),         # unstructured
])
def test_kd_runs_with_structured_and_unstructured_methods(tmp_path, tiny_model_dir, teacher, method,
                                                          granularity, loss, hidden):
    pruning = {"method": method, "sparsity": 0.5, "granularity": granularity}
    if loss == "poe":
        bias = tmp_path / "bias.jsonl"
        ids = [ex.id for ex in generate_synthetic("train", 48, seed=0)]
        rows = [{"id": i, "probs": [0.5, 0.25, 0.25]} for i in ids]
        bias.write_text("".join(json.dumps(r) + "\n" for r in rows))
    through, attention = hidden == "through", hidden == "attention"
    terms = {"through_bias": True} if through else {"attention_weight": 1.0} if attention else {
        "hidden_weight": hidden}
    spec = kd_recipe(tmp_path, tiny_model_dir, teacher, "kd", pruning, loss, pred_weight=0.5, **terms)
    if loss == "poe":
        spec["loss"]["bias_predictions"] = str(bias)
    result = api.run(spec)
    entries = log_entries(result.run_dir)
    assert entries and all("kd_pred" in e for e in entries)
    assert all(("kd_hidden" in e) == (not (through or attention) and hidden > 0) for e in entries)
    assert all(("kd_attention" in e) == attention for e in entries)
    assert not attention or any(e["kd_attention"] > 0 for e in entries)
    assert result.metrics.sparsity.overall == pytest.approx(0.5, abs=0.01)


def test_where_weights_train_the_hidden_targets_are_the_starting_model_with_masks_lifted(tiny_model_dir):
    """A weight-training method: the targets come from a frozen copy taken at setup, so training
    the weights (or masking them) leaves the targets at the starting model's dense states; a
    frozen-weight method reads its own unmasked weights and copies nothing."""
    from transformers import AutoModelForSequenceClassification

    from srnet.sparsity.masks import FixedMask, attach

    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    inputs = {"input_ids": torch.tensor([[2, 5, 7, 9]]), "attention_mask": torch.ones(1, 4, dtype=torch.long)}
    model.eval()
    with torch.no_grad():
        start = model.base_model(**inputs, output_hidden_states=True).hidden_states
    dense = model.base_model.encoder.layer[0].intermediate.dense
    attach(dense, FixedMask(torch.zeros_like(dense.weight), dense.weight))
    objective = build_objective("kd", {"hidden_weight": 1.0})
    objective.setup(model, None)
    assert objective.frozen_teacher is not None
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
    targets = objective._teacher(model, inputs, {"output_hidden_states": True}).hidden_states
    assert not dense.weight.any()  # the copy lifted its own masks, not the model's
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(start, targets, strict=True))
    model.requires_grad_(False)
    frozen = build_objective("kd", {"hidden_weight": 1.0})
    frozen.setup(model, None)
    assert frozen.frozen_teacher is None


def test_the_attention_term_matches_live_heads_only(tiny_model_dir):
    """KL of each live head's attention maps: 0 against the model itself; a head whose output
    columns are masked is left out (its maps may be anything), and the value is the hand-computed
    mean over the live heads' non-padding queries."""
    from transformers import AutoModelForSequenceClassification

    from srnet.models import find_groups
    from srnet.sparsity.masks import FixedMask, attach
    from srnet.training.objectives.kd import attention_distance, eager_attention, live_heads

    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    eager_attention(model)
    inputs = {"input_ids": torch.tensor([[2, 5, 7, 9], [3, 4, 0, 0]]),
              "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])}
    model.eval()
    maps = model(**inputs, output_attentions=True).attentions
    heads = find_groups(model, ["head"])
    layers = list(range(1, len(maps) + 1))
    assert attention_distance(maps, maps, inputs["attention_mask"], layers, live_heads(heads)).item() == 0
    out = model.base_model.encoder.layer[0].attention.output.dense
    keep = torch.ones_like(out.weight)
    keep[:, : out.weight.shape[1] // 2] = 0  # head 0 of layer 0's output columns
    attach(out, FixedMask(keep, out.weight))
    live = live_heads(heads)
    assert live[0].tolist() == [False, True] and live[1].all()
    padded_keys = (inputs["attention_mask"] == 0)[:, None, None, :]
    other = tuple(torch.softmax(torch.randn_like(m).masked_fill(padded_keys, -torch.inf), dim=-1)
                  for m in maps)
    changed_dead = (other[0].clone(), *other[1:])
    changed_dead[0][:, 0] = maps[0][:, 0]
    mask = inputs["attention_mask"].bool()
    got = attention_distance(maps, other, mask.long(), layers, live)
    dead_changed = attention_distance(maps, changed_dead, mask.long(), layers, live)
    assert got.item() == pytest.approx(dead_changed.item())
    per_layer = []
    for i, alive in live.items():
        t, s_ = other[i][:, alive], maps[i][:, alive]
        kl = torch.xlogy(t, t / s_).nan_to_num().sum(-1).transpose(1, 2)[mask]  # 0 log 0/0 = 0
        per_layer.append(kl.mean())
    assert got.item() == pytest.approx(torch.stack(per_layer).mean().item(), rel=1e-5)


def test_kd_changes_what_is_learned(tmp_path, tiny_model_dir, teacher):
    """The same OMP recovery with and without the KL term ends with other weights."""
    from transformers import AutoModelForSequenceClassification

    pruning = {"method": "omp", "sparsity": 0.5}
    plain = api.run(merge(tiny_recipe(tmp_path, tiny_model_dir, "plain", pruning=pruning),
                          {"model": {"init_from": str(teacher)}})).run_dir
    kd = api.run(kd_recipe(tmp_path, tiny_model_dir, teacher, "kd", pruning, pred_weight=5.0)).run_dir
    a, b = (AutoModelForSequenceClassification.from_pretrained(r / "model").state_dict() for r in (plain, kd))
    assert any(not torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(("change", "message"), [
    ({"objective": {"name": "kd", "params": {"pred_weight": -1}}}, "parameter 'pred_weight' = -1"),
    ({"objective": {"name": "kd", "params": {"temperature": 0}}}, "parameter 'temperature' = 0"),
    ({"loss": {"teacher": None}}, "objective 'kd' needs loss.teacher"),
    ({"loss": {"teacher": "/no/such/run"}}, "/no/such/run"),
    ({"objective": {"name": "kd", "params": {"hidden_weight": 1, "layers": [9]}}}, "out of range"),
    ({"objective": {"name": "kd", "params": {"through_bias": True}}}, "objective 'kd' needs"),
])
def test_kd_bad_input_is_one_line(tmp_path, tiny_model_dir, teacher, change, message):
    spec = kd_recipe(tmp_path, tiny_model_dir, teacher, "bad", {"method": "mask_train", "sparsity": 0.5})
    for key, value in change.items():
        spec[key] = {**spec[key], **value} if key != "objective" else value
    with pytest.raises(SrnetError, match=message) as info:
        api.run(spec)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "bad").exists() or "hidden_weight" in message or "range" in message


@pytest.mark.parametrize("family", sorted(FAMILY_MODELS))
def test_every_family_gives_the_attention_maps_the_attention_term_reads(family):
    """``--recovery-distill attention`` reads one map per layer and head: every family entry's model,
    switched to eager attention, returns them (a family that could not would fail only after the
    teacher had trained)."""
    from srnet.training.objectives.kd import eager_attention

    model_type, config = FAMILY_MODELS[family]
    model = tiny_classifier(model_type, layers=2, heads=2, **config).eval()
    eager_attention(model)
    ids = torch.randint(1000, 2000, (2, 7))
    with torch.no_grad():
        maps = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True).attentions
    assert maps is not None and [tuple(m.shape) for m in maps] == [(2, 2, 7, 7)] * 2
