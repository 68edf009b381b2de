"""Training objectives: the registry, the one train_step, and FreeLB's perturbation."""

from __future__ import annotations

import pytest
import torch

from conftest import tiny_classifier
from srnet.config import recipe_from_dict
from srnet.errors import SrnetError
from srnet.losses import build_loss
from srnet.training.objectives import (
    FreeLB,
    FreeLBParams,
    Objective,
    available_objectives,
    build_objective,
    register_objective,
    train_step,
)

VOCAB = 50
SMALL = dict(vocab_size=VOCAB, max_position_embeddings=40)
"""This file's tiny classifiers: a 50-word vocabulary, 40 positions (used in eval mode: no dropout)."""


def padded_batch() -> dict[str, torch.Tensor]:
    """Four examples of lengths 10, 7, 4, 10, padded with id 0; two token types."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, VOCAB, (4, 10), generator=g)
    mask = torch.ones(4, 10, dtype=torch.long)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    types = torch.zeros(4, 10, dtype=torch.long)
    types[:, 5:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types * mask,
            "labels": torch.tensor([0, 1, 2, 1])}


def grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_registry_names_and_bad_input():
    assert available_objectives() == ["distill", "freelb", "kd", "mlm", "mlm+distill", "standard"]
    with pytest.raises(ValueError, match="already registered"):
        register_objective("standard")(Objective)
    with pytest.raises(SrnetError, match="unknown objective 'adv'"):
        build_objective("adv")
    for params, field in [({"init_magnitude": -0.1}, "init_magnitude"), ({"step_size": -1}, "step_size"),
                          ({"steps": 0}, "steps"), ({"stepz": 2}, "unknown parameter 'stepz'")]:
        with pytest.raises(SrnetError, match=field) as err:
            build_objective("freelb", params)
        assert "\n" not in str(err.value)
    message = r"recipe: objective.params: objective 'freelb': parameter 'steps' = 0"
    with pytest.raises(SrnetError, match=message):
        recipe_from_dict({"objective": {"name": "freelb", "params": {"steps": 0}}})


def test_standard_step_is_the_models_own_loss():
    """train_step with `standard` + `ce` gives the gradients of HF's built-in classification loss."""
    batch = padded_batch()
    a, b = tiny_classifier(**SMALL).eval(), tiny_classifier(**SMALL).eval()
    a(**batch).loss.backward()
    expected = grads(a)
    seen = {}
    optimizer = torch.optim.SGD(b.parameters(), lr=0.0)
    optimizer.step = lambda: seen.update(grads(b))  # capture the gradients the step applies
    logs = train_step(b, batch, build_objective("standard"), build_loss("ce"), optimizer)
    assert logs["loss"] == pytest.approx(a(**batch).loss.item())
    assert seen.keys() == expected.keys()
    assert all(torch.allclose(seen[k], expected[k], atol=1e-7) for k in expected)


def test_freelb_never_perturbs_padding_and_keeps_token_types():
    model = tiny_classifier(**SMALL).eval()
    batch = padded_batch()
    embeds_seen, kwargs_seen = [], []

    def spy(module, args, kwargs):
        embeds_seen.append(kwargs["inputs_embeds"].detach().clone())
        kwargs_seen.append({k: kwargs.get(k) for k in ("attention_mask", "token_type_ids", "input_ids")})

    model.register_forward_pre_hook(spy, with_kwargs=True)
    params = FreeLBParams(steps=4, init_magnitude=0.5, step_size=0.3)
    FreeLB(params).step(model, batch, build_loss("ce"), progress=0.0, penalty=lambda: None,
                        backward=torch.Tensor.backward)
    clean = model.get_input_embeddings()(batch["input_ids"]).detach()
    pad = batch["attention_mask"] == 0
    assert len(embeds_seen) == 4
    for embeds, kwargs in zip(embeds_seen, kwargs_seen, strict=True):
        assert torch.equal(embeds[pad], clean[pad])  # padding: exactly the clean embedding
        assert (embeds[~pad] - clean[~pad]).abs().amax() > 0  # real tokens: perturbed
        assert torch.equal(kwargs["attention_mask"], batch["attention_mask"])
        assert torch.equal(kwargs["token_type_ids"], batch["token_type_ids"])
        assert kwargs["input_ids"] is None


def test_freelb_accumulates_the_k_ascent_gradients():
    """Zero start, K = 3: the parameter gradients are the sum over the K ascent points of
    grad L(E + delta_k) / K, with delta_{k+1} = delta_k + eta * g_k / ||g_k|| (per example)."""
    k, eta = 3, 0.4
    batch = padded_batch()
    keep = batch["attention_mask"].unsqueeze(-1).float()
    model = tiny_classifier(**SMALL).eval()
    FreeLB(FreeLBParams(steps=k, init_magnitude=0.0, step_size=eta)).step(
        model, batch, build_loss("ce"), progress=0.0, penalty=lambda: None, backward=torch.Tensor.backward)
    got = grads(model)

    ref = tiny_classifier(**SMALL).eval()
    inputs = {"attention_mask": batch["attention_mask"], "token_type_ids": batch["token_type_ids"]}
    delta = torch.zeros(4, 10, 32)
    total = {}
    for _ in range(k):
        ref.zero_grad()
        delta = delta.detach().requires_grad_(True)
        embeds = ref.get_input_embeddings()(batch["input_ids"])
        logits = ref(inputs_embeds=embeds + delta, **inputs).logits
        (torch.nn.functional.cross_entropy(logits, batch["labels"]) / k).backward()
        for name, p in ref.named_parameters():
            total[name] = total.get(name, 0) + p.grad.clone()
        g = delta.grad * keep
        delta = delta + eta * g / g.flatten(1).norm(dim=1).view(-1, 1, 1)
    assert got.keys() == total.keys()
    for name in total:
        torch.testing.assert_close(got[name], total[name], atol=1e-6, rtol=1e-5)
    single = tiny_classifier(**SMALL).eval()
    single(**batch).loss.backward()
    word = "bert.embeddings.word_embeddings.weight"
    assert not torch.allclose(got[word], single.get_parameter(word).grad, atol=1e-6)  # the ascent mattered


def test_freelb_norm_bound_and_penalty_added_once():
    model = tiny_classifier(**SMALL).eval()
    batch = padded_batch()
    norms = []

    def spy(module, args, kwargs):
        clean = module.get_input_embeddings()(batch["input_ids"])
        norms.append((kwargs["inputs_embeds"] - clean).detach().flatten(1).norm(dim=1))

    model.register_forward_pre_hook(spy, with_kwargs=True)
    calls = []

    def penalty():
        calls.append(1)
        return torch.tensor(10.0)

    logs = FreeLB(FreeLBParams(steps=3, init_magnitude=0.0, step_size=5.0, max_norm=0.2)).step(
        model, batch, build_loss("ce"), progress=0.0, penalty=penalty, backward=torch.Tensor.backward)
    assert len(calls) == 1 and logs["loss"] > 10
    assert all(float(n.max()) <= 0.2 + 1e-5 for n in norms[1:])
    assert float(norms[-1].min()) == pytest.approx(0.2, abs=1e-5)
