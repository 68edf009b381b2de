"""Pre-training objectives on tiny random models: mlm masking statistics and head, distill's
teacher (no gradient, no weight copy, masks off), embedding masks and the bad-input errors."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import AutoTokenizer

from conftest import tiny_mlm
from srnet.errors import SrnetError
from srnet.models import default_model_path, find_prunable, load_masked_lm
from srnet.pruning import PruningConfig, build_method
from srnet.sparsity import original_weight
from srnet.training.loop import optimizer_groups
from srnet.training.objectives import build_objective, train_step
from srnet.training.objectives.pretraining import (
    IGNORE,
    Masking,
    MLMParams,
    head_parameters,
    mask_tokens,
    teacher_hidden_states,
    unmasked_weights,
)

ENCODER = ["query", "key", "value", "attn_out", "ffn_in", "ffn_out"]
MLM = dict(layers=3, dropout=0.0, max_position_embeddings=64)
"""This file's tiny MLM: three layers (the distill tests name layer 3), no dropout."""


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(default_model_path())


def blocks(tokenizer, n: int = 4, length: int = 16) -> dict[str, torch.Tensor]:
    ids = torch.randint(1000, 2000, (n, length), generator=torch.Generator().manual_seed(1))
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def prepared(model, roles=ENCODER, method="mask_train", sparsity=0.5):
    m = build_method(PruningConfig(method=method, sparsity=sparsity, roles=roles), seed=0)
    m.prepare(model, 10)
    return m


def test_mlm_masking_statistics(tokenizer):
    torch.manual_seed(0)
    ids = torch.randint(1000, 20000, (400, 256))
    ids[:, 0], ids[:, 100] = tokenizer.cls_token_id, tokenizer.sep_token_id
    attention = torch.ones_like(ids)
    attention[:, 200:] = 0
    masking = Masking.from_tokenizer(tokenizer)
    corrupted, labels = mask_tokens(ids, attention, masking, MLMParams())
    chosen = labels != IGNORE
    assert not chosen[:, [0, 100]].any() and not chosen[:, 200:].any()  # special tokens, padding
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(corrupted[~chosen], ids[~chosen])
    eligible = 400 * 198
    assert abs(chosen.sum().item() / eligible - 0.15) < 0.005
    to_mask = (corrupted == tokenizer.mask_token_id) & chosen
    kept = (corrupted == ids) & chosen
    replaced = chosen & ~to_mask & ~kept
    n = chosen.sum().item()
    assert abs(to_mask.sum().item() / n - 0.8) < 0.01
    assert abs(replaced.sum().item() / n - 0.1) < 0.01
    assert abs(kept.sum().item() / n - 0.1) < 0.01
    assert corrupted.max() < len(tokenizer)


def test_mlm_needs_a_mask_token_and_sane_fractions(tokenizer):
    no_mask = copy.deepcopy(tokenizer)
    no_mask.mask_token = None
    objective = build_objective("mlm")
    with pytest.raises(SrnetError, match="objective 'mlm' needs a tokenizer with a mask token"):
        objective.setup(tiny_mlm(**MLM), no_mask)
    with pytest.raises(SrnetError, match=r"random_fraction.*mask_fraction \+ random_fraction = 1.05 > 1"):
        build_objective("mlm", {"mask_fraction": 0.95})


def test_mlm_step_trains_a_fresh_head_and_the_scores_only(tokenizer):
    model = tiny_mlm(**MLM)
    method = prepared(model)
    objective = build_objective("mlm")
    assert objective.trains_head(fresh=True) and objective.params.train_head is True
    objective.setup(model, tokenizer)
    head = head_parameters(model)
    assert head and all(p.requires_grad for p in head)
    assert not model.bert.embeddings.word_embeddings.weight.requires_grad  # tied decoder stays frozen
    params = [p for g in optimizer_groups(method, model, 1e-3) for p in g["params"]]  # scores + head
    assert {id(p) for p in head} <= {id(p) for p in params}
    optimizer = torch.optim.AdamW(params, lr=1e-2)
    before = [p.detach().clone() for p in head]
    torch.manual_seed(0)
    logs = train_step(model, blocks(tokenizer), objective, None, optimizer)
    assert logs["loss"] == pytest.approx(logs["mlm"]) and logs["mlm"] > 0
    assert any(not torch.equal(b, p) for b, p in zip(before, head, strict=True))
    frozen = original_weight(model.bert.encoder.layer[0].attention.self.query)
    assert frozen.grad is None and not frozen.requires_grad


def test_distill_is_zero_for_an_unmasked_student_and_positive_for_a_masked_one(tokenizer):
    model = tiny_mlm(**MLM)
    objective = build_objective("distill")
    objective.setup(model, tokenizer)
    assert objective.losses(model, blocks(tokenizer))["kd"].item() == pytest.approx(0.0, abs=1e-6)
    prepared(model, roles=[*ENCODER, "embeddings"])
    assert objective.losses(model, blocks(tokenizer))["kd"].item() > 0.01
    mse = build_objective("distill", {"distance": "mse", "layers": [2]})
    mse.setup(model, tokenizer)
    assert mse.layers == [2] and mse.losses(model, blocks(tokenizer))["kd"].item() > 0


def test_teacher_takes_no_gradient_and_holds_no_weight_copy(tokenizer):
    model = tiny_mlm(**(MLM | {"dropout": 0.1}))
    reference = copy.deepcopy(model).eval()
    prepared(model, method="omp")  # fixed masks, weights trainable
    model.train()
    masked = find_prunable(model, ENCODER)
    with unmasked_weights(model):
        assert all(w.module.weight is original_weight(w.module) for w in masked)  # the same tensor
    batch = blocks(tokenizer)
    teacher = teacher_hidden_states(model, batch)
    assert model.training and all(not h.requires_grad and h.grad_fn is None for h in teacher)
    with torch.no_grad():
        expected = reference.bert(**batch, output_hidden_states=True).hidden_states
    assert all(torch.allclose(t, e, atol=1e-6) for t, e in zip(teacher, expected, strict=True))
    objective = build_objective("distill")
    objective.setup(model, tokenizer)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    train_step(model, batch, objective, None, optimizer)
    with torch.no_grad():  # the teacher shares the updated weights: its states move with them
        moved = teacher_hidden_states(model, batch)
    assert not torch.allclose(moved[-1], teacher[-1])


def test_distill_layer_out_of_range(tokenizer):
    objective = build_objective("distill", {"layers": [1, 4]})
    with pytest.raises(SrnetError, match=r"layers \[4\] out of range; the model has layers 1..3"):
        objective.setup(tiny_mlm(**MLM), tokenizer)


def test_embedding_masks_train_with_mlm_plus_distill(tokenizer):
    model = tiny_mlm(**MLM)
    method = prepared(model, roles=[*ENCODER, "embeddings"])
    embedding = model.bert.embeddings.word_embeddings
    assert "bert.embeddings.word_embeddings" in method.masks()
    objective = build_objective("mlm+distill", {"layers": [3]})
    objective.trains_head(fresh=True)
    objective.setup(model, tokenizer)
    groups = optimizer_groups(method, model, 1e-3)
    optimizer = torch.optim.AdamW([p for g in groups for p in g["params"]], lr=1e-2)
    scores = embedding.parametrizations.weight[0].scores
    before = scores.detach().clone()
    logs = train_step(model, blocks(tokenizer), objective, None, optimizer)
    assert logs["loss"] == pytest.approx(logs["mlm"] + logs["kd"]) and logs["kd"] > 0
    assert not torch.equal(before, scores.detach())
    method.freeze()
    keep = method.masks()["bert.embeddings.word_embeddings"]
    assert abs(1 - keep.float().mean().item() - 0.5) < 1e-3
    assert torch.equal(embedding.weight, original_weight(embedding) * keep)


def test_load_masked_lm_reports_a_fresh_head(tiny_model_dir, tmp_path, tokenizer):
    model, fresh = load_masked_lm(str(tiny_model_dir))
    assert fresh and type(model).__name__ == "BertForMaskedLM"
    model.save_pretrained(tmp_path / "mlm")
    tokenizer.save_pretrained(tmp_path / "mlm")
    again, fresh = load_masked_lm(str(tmp_path / "mlm"))
    assert not fresh
    head = again.cls.predictions.transform.dense.weight
    assert torch.equal(head, model.cls.predictions.transform.dense.weight)
