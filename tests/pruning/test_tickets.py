"""Robust Tickets pieces: the L0 lambda schedule, the global ticket draw, random tickets, retraining."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import load_file

from srnet import api
from srnet.cli import main
from srnet.pruning import L0Params, PruningConfig
from srnet.sparsity.mask_io import load_masks
from srnet.sparsity.tickets import draw_ticket, load_scores, random_like


def test_l0_lambda_is_zero_then_ramps_linearly():
    cfg = L0Params(lambda_=2.0, lambda_start=0.1, lambda_warmup=0.3)  # Robust Tickets' code
    steps = [0, 9, 10, 25, 39, 40, 99]
    assert [cfg.lambda_at(s, 100) for s in steps] == pytest.approx([0, 0, 0, 1.0, 29 / 15, 2.0, 2.0])
    assert L0Params(lambda_=3.0, lambda_start=0.2).lambda_at(20, 100) == 3.0  # no ramp: a step
    with pytest.raises(ValidationError, match="exceeds 1"):
        PruningConfig(method="l0", params={"lambda_start": 0.8, "lambda_warmup": 0.3})


def test_ticket_draw_is_exact_and_global():
    gen = torch.Generator().manual_seed(0)
    scores = {"a": torch.rand(7, 13, generator=gen), "b": torch.rand(5, 3, generator=gen) + 0.3,
              "c": torch.rand(11, generator=gen) - 0.2}
    total = sum(s.numel() for s in scores.values())
    for sparsity in (0.0, 0.37, 0.9):
        ticket = draw_ticket(scores, sparsity)
        assert sum(int((~m).sum()) for m in ticket.values()) == round(sparsity * total)
        kept = torch.cat([scores[n][ticket[n]] for n in scores])
        dropped = torch.cat([scores[n][~ticket[n]] for n in scores])
        assert dropped.numel() == 0 or kept.min() >= dropped.max()
    per_matrix = {n: float((~m).float().mean()) for n, m in draw_ticket(scores, 0.37).items()}
    assert per_matrix["b"] < per_matrix["a"] < per_matrix["c"]  # one global threshold, not per matrix


def test_random_like_keeps_per_matrix_sparsity():
    masks = draw_ticket({"a": torch.arange(40.0).view(5, 8), "b": -torch.arange(12.0)}, 0.5)
    one, same, other = random_like(masks, 1), random_like(masks, 1), random_like(masks, 2)
    for name, mask in masks.items():
        assert one[name].shape == mask.shape and int((~one[name]).sum()) == int((~mask).sum())
        assert torch.equal(one[name], same[name])
    assert any(not torch.equal(one[n], other[n]) for n in masks)


def _synthetic(split: str, n: int) -> dict:
    return {"format": "synthetic", "synthetic": {"split": split, "n": n, "seed": 0}}


def test_l0_run_ticket_draw_and_fixed_retraining_from_pretrained(tmp_path, tiny_model_dir, capsys):
    base = {"task": "synthetic_nli", "seed": 0, "output_dir": str(tmp_path),
            "model": {"name": str(tiny_model_dir), "max_length": 48},
            "data": {"train": _synthetic("train", 32), "dev": _synthetic("dev", 16)},
            "training": {"max_steps": 4, "batch_size": 8, "eval_every": 2, "lr": 1e-3, "select_after": 0.0}}
    roles = ["query", "key", "value", "attn_out", "ffn_in", "ffn_out"]
    l0 = api.run(base | {"name": "l0", "pruning": {
        "method": "l0", "sparsity": 0.2, "scope": "global", "roles": roles,
        "params": {"mask_lr": 0.1, "lambda_": 1.0, "lambda_start": 0.25, "lambda_warmup": 0.5}}})
    scores, meta = load_scores(l0.run_dir)
    assert meta.method == "l0" and set(scores) == set(load_masks(l0.run_dir)[0])
    assert all(float(s.min()) >= 0.0 and float(s.max()) <= 1.0 for s in scores.values())

    ticket_file, random_file = tmp_path / "ticket.safetensors", tmp_path / "random.safetensors"
    assert main(["masks", "draw", str(l0.run_dir), "--sparsity", "0.45", "--out", str(ticket_file)]) == 0
    assert main(["masks", "random-like", str(ticket_file), "--out", str(random_file), "--seed", "3"]) == 0
    ticket, ticket_meta = load_masks(ticket_file)
    total = sum(m.numel() for m in ticket.values())
    assert sum(int((~m).sum()) for m in ticket.values()) == round(0.45 * total)
    assert ticket_meta.method == "ticket:l0" and ticket_meta.target_sparsity == 0.45
    randomised, _ = load_masks(random_file)
    assert all(int((~randomised[n]).sum()) == int((~m).sum()) for n, m in ticket.items())
    before = (ticket_file.read_bytes(), random_file.read_bytes())
    capsys.readouterr()
    assert main(["masks", "draw", str(l0.run_dir), "--sparsity", "0.3", "--out", str(ticket_file)]) == 2
    assert main(["masks", "random-like", str(ticket_file), "--out", str(random_file), "--seed", "4"]) == 2
    assert capsys.readouterr().err.count("already exists; pass --overwrite to replace it") == 2
    assert (ticket_file.read_bytes(), random_file.read_bytes()) == before  # nothing lost
    assert main(["masks", "draw", str(l0.run_dir), "--sparsity", "0.45", "--out", str(ticket_file),
                 "--overwrite"]) == 0
    assert ticket_file.read_bytes() == before[0]  # the same ticket, drawn again
    capsys.readouterr()

    # retrain from the *pre-trained* weights with the ticket held fixed
    fixed = {"method": "fixed", "params": {"mask_file": str(ticket_file)}}
    retrained = api.run(base | {"name": "retrain", "pruning": fixed})
    kept, _ = load_masks(retrained.run_dir)
    assert all(torch.equal(kept[n], ticket[n]) for n in ticket)
    weights = load_file(str(retrained.run_dir / "model" / "model.safetensors"))
    pretrained = load_file(str(tiny_model_dir / "model.safetensors"))
    name = next(iter(ticket))
    weight = weights[f"{name}.weight"]
    assert bool((weight[~ticket[name]] == 0).all())
    assert not torch.equal(weight[ticket[name]], pretrained[f"{name}.weight"][ticket[name]])  # it trained
    assert retrained.metrics.sparsity.overall == pytest.approx(ticket_meta.sparsity)


def test_structured_l0_ticket_retrains_with_its_gates_and_shrinks(tmp_path, tiny_model_dir, capsys):
    """l0 over heads and neurons -> an exact structured ticket -> fixed retraining keeps the gates
    -> the shrunk export gives the masked model's logits."""
    from transformers import AutoModelForSequenceClassification

    from srnet import load_model
    from srnet.pruning import FixedMaskMethod

    base = {"task": "synthetic_nli", "seed": 0, "output_dir": str(tmp_path),
            "model": {"name": str(tiny_model_dir), "max_length": 48},
            "data": {"train": _synthetic("train", 32), "dev": _synthetic("dev", 16)},
            "training": {"max_steps": 4, "batch_size": 8, "eval_every": 2, "lr": 1e-3, "select_after": 0.0}}
    l0 = api.run(base | {"name": "l0", "pruning": {
        "method": "l0", "sparsity": 0.2, "granularity": "head+neuron",
        "params": {"mask_lr": 0.1, "lambda_": 1.0, "lambda_start": 0.25, "lambda_warmup": 0.5}}})
    scores, meta = load_scores(l0.run_dir)
    assert meta.granularity == "head+neuron"
    sizes = {"heads": 2, "neurons": 64}
    assert {k: tuple(s.shape) for k, s in scores.items()} == {
        f"bert.encoder.layer.{i}.{kind}": (n,) for i in range(2) for kind, n in sizes.items()}

    ticket_file = tmp_path / "ticket.safetensors"
    assert main(["masks", "draw", str(l0.run_dir), "--sparsity", "0.45", "--out", str(ticket_file)]) == 0
    ticket, ticket_meta = load_masks(ticket_file)
    assert set(ticket) == set(scores) and ticket_meta.granularity == "head+neuron"
    assert sum(int((~m).sum()) for m in ticket.values()) == round(0.45 * 132)  # heads and neurons
    kept = torch.cat([scores[n][ticket[n]] for n in ticket])
    dropped = torch.cat([scores[n][~ticket[n]] for n in ticket])
    assert kept.min() >= dropped.max()

    # retrain with the ticket held fixed: no granularity given, it follows the file
    fixed = {"method": "fixed", "params": {"mask_file": str(ticket_file)}}
    retrained = api.run(base | {"name": "retrain", "pruning": fixed})
    gates, gates_meta = load_masks(retrained.run_dir)
    assert gates_meta.granularity == "head+neuron"
    assert list(gates) == list(ticket) and all(torch.equal(gates[n], ticket[n]) for n in ticket)
    assert retrained.metrics.sparsity.overall == pytest.approx(59 / 132)

    capsys.readouterr()
    out = tmp_path / "shrunk"
    assert main(["export", "--model", str(retrained.run_dir), "--masks", str(retrained.run_dir),
                 "--out", str(out), "--shrink"]) == 0
    shrunk = load_model(out)
    masked = AutoModelForSequenceClassification.from_pretrained(retrained.run_dir / "model").eval()
    FixedMaskMethod(PruningConfig(method="fixed"), masks=gates).prepare(masked, 1)
    assert shrunk.bert.encoder.layer[0].intermediate.dense.weight.shape[0] < 64
    g = torch.Generator().manual_seed(0)
    inputs = {"input_ids": torch.randint(1000, 2000, (3, 9), generator=g),
              "attention_mask": torch.ones(3, 9, dtype=torch.long)}
    with torch.no_grad():
        torch.testing.assert_close(shrunk(**inputs).logits, masked(**inputs).logits, rtol=0, atol=1e-5)


def test_bias_fit_refuses_a_folder_that_holds_predictions(tmp_path, capsys):
    import yaml

    from srnet.cli import main

    recipe = tmp_path / "bias.yaml"
    recipe.write_text(yaml.safe_dump({
        "task": "synthetic_nli", "model": {"name": "default"},
        "data": {"train": _synthetic("train", 40), "dev": _synthetic("dev", 16)},
        "bias": {"feature": "overlap"}}), encoding="utf-8")
    out = tmp_path / "bias"
    assert main(["bias", "fit", str(recipe), "--out", str(out)]) == 0
    before = (out / "train.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["bias", "fit", str(recipe), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already holds bias predictions" in err and "--overwrite" in err and err.count("\n") == 1
    assert (out / "train.jsonl").read_bytes() == before
    assert main(["bias", "fit", str(recipe), "--out", str(out), "--overwrite"]) == 0
