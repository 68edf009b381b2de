"""Gradient importance of heads and neurons (Michel et al. 2019) for one-shot structured pruning."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoTokenizer

from conftest import synthetic_split as synthetic
from conftest import tiny_classifier, tiny_mlm
from srnet import api, load_model
from srnet.errors import SrnetError
from srnet.export import ExportConfig, export_model
from srnet.losses import build_loss
from srnet.models import find_groups
from srnet.pruning import PruningConfig, build_method
from srnet.pruning.base import Calibration
from srnet.pruning.importance import gradient_importance, normalize_per_layer
from srnet.training.objectives import Standard, loss_backward

HEADS, WIDTH, NEURONS = 2, 16, 64


def bert(seed: int = 0) -> torch.nn.Module:
    """The shared tiny BERT classifier (``HEADS`` heads, ``NEURONS`` FFN neurons) on a 100-word
    vocabulary, in eval mode."""
    return tiny_classifier(seed=seed, vocab_size=100, heads=HEADS, intermediate_size=NEURONS,
                           max_position_embeddings=64).eval()


def batches(n: int = 3, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        mask = torch.ones(4, 7, dtype=torch.long)
        mask[0, 5:] = 0  # padding in one row
        out.append({"input_ids": torch.randint(5, 100, (4, 7), generator=g), "attention_mask": mask,
                    "labels": torch.randint(0, 3, (4,), generator=g)})
    return out


def calibration(data) -> Calibration:
    return Calibration(data, loss_backward(Standard(), build_loss("ce")))


def loss_of(model, batch) -> torch.Tensor:
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    return torch.nn.functional.cross_entropy(model(**inputs).logits, batch["labels"])


def output_module(model, kind: str, layer: int):
    block = model.bert.encoder.layer[layer]
    return block.attention.output.dense if kind == "head" else block.output.dense


def scaled_loss(model, batch, kind: str, layer: int, unit: int, factor: float) -> float:
    """The loss with one head's (neuron's) output multiplied by ``factor`` (Michel et al.'s xi)."""
    width = WIDTH if kind == "head" else 1

    def hook(module, args):
        x = args[0].clone()
        x[..., unit * width: (unit + 1) * width] *= factor
        return (x,)

    handle = output_module(model, kind, layer).register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            return float(loss_of(model, batch))
    finally:
        handle.remove()


def test_importance_is_the_mean_absolute_gate_gradient_by_autograd():
    """E_batches |dL/dxi| equals sum(W * dL/dW) over the group's output columns, per batch."""
    model = bert()
    groups = find_groups(model, ("head", "neuron"))
    data = batches(3)
    ours = gradient_importance(model, groups, calibration(data), batches=3)
    expected = [torch.zeros(g.count) for g in groups]
    for batch in data:
        model.zero_grad()
        loss_of(model, batch).backward()
        for total, group in zip(expected, groups, strict=True):
            weight = output_module(model, group.kind, group.layer).weight
            width = WIDTH if group.kind == "head" else 1
            total += (weight * weight.grad).sum(0).view(group.count, width).sum(1).abs()
    for got, want in zip(ours, expected, strict=True):
        torch.testing.assert_close(got, want / 3, rtol=1e-4, atol=1e-7)
    assert all(p.requires_grad for p in model.parameters())  # restored
    assert not model.training


@pytest.mark.parametrize(("kind", "layer", "unit"), [("head", 0, 1), ("head", 1, 0), ("neuron", 1, 17)])
def test_importance_matches_finite_differences_of_the_loss(kind, layer, unit):
    model = bert().double()
    batch = batches(1, seed=3)[0]
    groups = find_groups(model, (kind,))
    index = next(i for i, g in enumerate(groups) if g.layer == layer)
    ours = gradient_importance(model, groups, calibration([batch]), batches=1)[index][unit]
    eps = 1e-4
    up, down = (scaled_loss(model, batch, kind, layer, unit, 1 + s * eps) for s in (1, -1))
    assert float(ours) == pytest.approx(abs(up - down) / (2 * eps), rel=1e-4)
    assert float(ours) > 0


def test_importance_takes_the_first_batches_and_is_deterministic():
    model = bert()
    groups = find_groups(model, ("head", "neuron"))
    two = gradient_importance(model, groups, calibration(batches(2)), batches=2)
    again = gradient_importance(model, groups, calibration(iter(batches(5))), batches=2)
    for a, b in zip(two, again, strict=True):
        assert torch.equal(a, b)
    with pytest.raises(SrnetError, match="no training batch"):
        gradient_importance(model, groups, calibration([]), batches=2)


def test_a_loss_that_ignores_the_gates_is_refused():
    model = bert()
    zero = Calibration(batches(1), lambda m, b: (m(input_ids=b["input_ids"]).logits.sum() * 0).backward())
    with pytest.raises(SrnetError, match="zero for every head/neuron"):
        gradient_importance(model, find_groups(model, ("head",)), zero, batches=1)


def test_pretraining_objectives_score_with_seeded_masking_and_leave_the_rng_alone():
    from srnet.models import default_model_path
    from srnet.training.objectives.pretraining import HiddenStateDistillation, MaskedLanguageModel

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    model = tiny_mlm(vocab_size=len(tokenizer))
    ids = torch.randint(1000, 2000, (4, 16), generator=torch.Generator().manual_seed(1))
    data = [{"input_ids": ids, "attention_mask": torch.ones_like(ids)}] * 2
    groups = find_groups(model, ("head", "neuron"))
    mlm = MaskedLanguageModel()
    mlm.setup(model, tokenizer)
    state = torch.get_rng_state()
    first = gradient_importance(model, groups, Calibration(data, loss_backward(mlm, None)), 2, seed=5)
    assert torch.equal(torch.get_rng_state(), state)
    again = gradient_importance(model, groups, Calibration(data, loss_backward(mlm, None)), 2, seed=5)
    other = gradient_importance(model, groups, Calibration(data, loss_backward(mlm, None)), 2, seed=6)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))  # other token masks
    distill = HiddenStateDistillation()  # at its minimum with every gate on: (numerically) no signal
    distill.setup(model, tokenizer)
    kd = gradient_importance(model, groups, Calibration(data, loss_backward(distill, None)), 2)
    assert max(float(t.max()) for t in kd) < 1e-4 * min(float(t.max()) for t in first)


def test_per_layer_normalisation_is_michels_l2_norm_up_to_sqrt_count():
    scores = [torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0]), torch.rand(64)]
    normed = normalize_per_layer(scores)
    torch.testing.assert_close(normed[0], torch.tensor([3.0, 4.0]) / 5 * 2**0.5)
    assert torch.equal(normed[1], torch.zeros(2))
    assert float(normed[2].pow(2).mean()) == pytest.approx(1.0)


def omp(granularity="head+neuron", sparsity=0.3, **cfg):
    return build_method(PruningConfig(method="omp", granularity=granularity, sparsity=sparsity,
                                      params={"importance": "gradient", "importance_batches": 2}, **cfg))


@pytest.mark.parametrize(("granularity", "scope"), [("head+neuron", "local"), ("head+neuron", "global"),
                                                    ("neuron", "global")])
def test_gradient_omp_keeps_the_exact_count_of_the_most_important_groups(granularity, scope):
    model = bert()
    method = omp(granularity, 0.3, scope=scope)
    method.prepare(model, 1)
    assert all(bool(m.mask.all()) for m in method._masks)  # xi = 1 until calibrated
    with pytest.raises(RuntimeError, match="never calibrated"):
        method.masks()
    method.calibrate(model, calibration(batches(3)))
    masks = method.masks()
    with pytest.raises(SrnetError, match="already calibrated"):
        method.calibrate(model, calibration(batches(3)))
    pruned = {k: int((~m).sum()) for k, m in masks.items()}
    if scope == "local":  # round(0.3 * 2) = 1 head, round(0.3 * 64) = 19 neurons per layer
        assert pruned == {"bert.encoder.layer.0.heads": 1, "bert.encoder.layer.0.neurons": 19,
                          "bert.encoder.layer.1.heads": 1, "bert.encoder.layer.1.neurons": 19}
    else:
        total = sum(g.count for g in find_groups(model, tuple(granularity.split("+"))))
        assert sum(pruned.values()) == round(0.3 * total)
    # every kept group is at least as important as every pruned one (one threshold when global)
    scores = method.importances
    layers = [(s, m) for s, m in zip(scores, masks.values(), strict=True)]
    if scope == "global":
        layers = [(torch.cat([s for s, _ in layers]), torch.cat([m for _, m in layers]))]
    for s, keep in layers:
        if (~keep).any() and keep.any():
            assert float(s[keep].min()) >= float(s[~keep].max())
    # deterministic: a fresh model with the same weights and batches gives the same gates
    twin = bert()
    again = omp(granularity, 0.3, scope=scope)
    again.prepare(twin, 1)
    again.calibrate(twin, calibration(batches(3)))
    assert all(torch.equal(masks[k], v) for k, v in again.masks().items())


def test_gradient_importance_is_only_for_omp_and_structured_granularities():
    gradient = {"importance": "gradient"}
    with pytest.raises(ValueError, match="not 'unstructured'"):
        PruningConfig(method="omp", params=gradient)
    with pytest.raises(ValueError, match=r"not a parameter of method 'mask_train' \(a parameter of omp\)"):
        PruningConfig(method="mask_train", granularity="head", params=gradient)
    with pytest.raises(ValueError, match="importance_batches"):
        PruningConfig(method="omp", granularity="head", params={**gradient, "importance_batches": 0})
    with pytest.raises(SrnetError, match="pass batches="):
        api.prune_(bert(), {"method": "omp", "granularity": "head", "params": gradient})
    with pytest.raises(SrnetError, match="does not calibrate"):
        method = build_method(PruningConfig(method="omp", granularity="head"))
        method.calibrate(bert(), calibration(batches(1)))


def logits(model, batch) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits


def test_prune_api_with_gradient_importance_exports_a_shrunk_model_with_the_same_logits(tmp_path,
                                                                                       tiny_model_dir):
    path = tiny_model_dir
    model = load_model_plain(path)
    cfg = {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5,
           "params": {"importance": "gradient", "importance_batches": 2}}
    masks = api.prune_(model, cfg, batches=batches(4))
    assert {k: int((~m).sum()) for k, m in masks.items()} == {
        "bert.encoder.layer.0.heads": 1, "bert.encoder.layer.0.neurons": 32,
        "bert.encoder.layer.1.heads": 1, "bert.encoder.layer.1.neurons": 32}
    probe = batches(1, seed=9)[0]
    masked = logits(model, probe)
    out = export_model(model, masks, AutoTokenizer.from_pretrained(path), tmp_path / "out", metadata=None,
                       config=ExportConfig(shrink=True))
    torch.testing.assert_close(logits(load_model(out), probe), masked, rtol=0, atol=1e-5)


def load_model_plain(path):
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(path).eval()


def test_a_run_scores_heads_on_its_training_batches_and_shrinks_exactly(tmp_path, tiny_model_dir):
    def run(name: str, importance: str = "gradient") -> object:
        return api.run({
            "name": name, "task": "synthetic_nli", "seed": 0, "output_dir": str(tmp_path),
            "model": {"name": str(tiny_model_dir), "max_length": 48},
            "data": {"train": synthetic("train", 32), "dev": synthetic("dev", 16)},
            "training": {"max_steps": 2, "batch_size": 8, "eval_every": 2, "lr": 1e-3},
            "pruning": {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5,
                        "params": {"importance": importance, "importance_batches": 3}},
        })

    first = run("grad")
    assert first.metrics.sparsity.overall == pytest.approx(0.5, abs=0.02)
    second = run("grad_again")
    from safetensors.torch import load_file

    gates = load_file(first.run_dir / "masks.safetensors")
    assert gates.keys() == {"bert.encoder.layer.0.heads", "bert.encoder.layer.0.neurons",
                            "bert.encoder.layer.1.heads", "bert.encoder.layer.1.neurons"}
    assert all(torch.equal(v, load_file(second.run_dir / "masks.safetensors")[k]) for k, v in gates.items())
    magnitude = run("magnitude", importance="magnitude")
    assert any(not torch.equal(v, load_file(magnitude.run_dir / "masks.safetensors")[k])
               for k, v in gates.items())  # the importance changes which groups go
    out = api.export_masked(str(first.run_dir), first.run_dir / "masks.safetensors", tmp_path / "shrunk",
                            shrink=True)
    info = json.loads((out / "srnet_export.json").read_text())
    assert info["shrunk"]["parameters"] < info["shrunk"]["dense_parameters"]
    probe = batches(1, seed=9)[0]
    baked = load_model_plain(first.run_dir / "model")
    torch.testing.assert_close(logits(load_model(out), probe), logits(baked, probe), rtol=0, atol=1e-5)


def test_a_gradual_cut_deepens_in_steps_rescoring_the_model_as_it_is_and_resumes_at_its_level():
    """``gradual``: the first cut at calibration, the rest after the scheduled optimizer steps, each
    scored on the masked model (a cut group scores 0 and stays cut); the level resumes from state."""
    model = bert()
    params = {"importance": "gradient", "importance_batches": 2, "gradual": 0.5, "gradual_steps": 4}
    method = build_method(PruningConfig(method="omp", granularity="head+neuron", sparsity=0.5, params=params))
    method.prepare(model, 16)
    method.calibrate(model, calibration(batches(3)))
    assert method.cut_steps() == [2, 4, 6]
    assert [method.current_sparsity(s) for s in (0, 1, 2, 5, 6, 16)] == [0.125, 0.125, 0.25, 0.375, 0.5, 0.5]
    neurons = "bert.encoder.layer.0.neurons"
    kept = [method.masks()[neurons]]
    for step in range(1, 17):
        before = {k: m.clone() for k, m in method.masks().items()}
        method.on_step(step)
        after = method.masks()
        assert all(bool((after[k] <= before[k]).all()) for k in after)  # cut groups stay cut
        if step in method.cut_steps():
            cut_before = ~before[neurons]
            assert not method.importances[1][cut_before].any()  # scored on the masked model
        kept.append(after[neurons])
    assert [int((~k).sum()) for k in kept[::2]] == [8, 16, 24, 32, 32, 32, 32, 32, 32]
    assert {k: int((~m).sum()) for k, m in method.masks().items()} == {
        "bert.encoder.layer.0.heads": 1, "bert.encoder.layer.0.neurons": 32,
        "bert.encoder.layer.1.heads": 1, "bert.encoder.layer.1.neurons": 32}
    resumed = build_method(PruningConfig(method="omp", granularity="head+neuron", sparsity=0.5,
                                         params=params))
    resumed.load_state_dict(method.state_dict())
    assert resumed.level == 0.5 and resumed.step == 16
    with pytest.raises(ValueError, match="needs importance 'gradient'"):
        PruningConfig(method="omp", granularity="head", params={"gradual": 0.5})


def test_a_gradual_omp_run_trains_through_its_cuts_and_ends_at_the_target(tmp_path, tiny_model_dir):
    from conftest import tiny_recipe

    pruning = {"method": "omp", "granularity": "head+neuron", "sparsity": 0.5,
               "params": {"importance": "gradient", "importance_batches": 2, "gradual": 0.5,
                          "gradual_steps": 3}}
    result = api.run(tiny_recipe(tmp_path, tiny_model_dir, "gradual", pruning=pruning,
                                 training={"eval_every": 1}))
    targets = [e["sparsity"] for e in map(json.loads, (result.run_dir / "log.jsonl").open())
               if e["event"] == "eval"]  # 1/6 cut before step 1, 1/3 after it, 1/2 after step 2
    assert targets == pytest.approx([1 / 3, 0.5, 0.5, 0.5, 0.5, 0.5])
    assert result.metrics.sparsity.overall == pytest.approx(0.5, abs=0.01)
