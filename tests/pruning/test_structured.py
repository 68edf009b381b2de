"""Structured masks (heads, FFN neurons): groups, exact rankings, mask training, shrinking, reloading."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from srnet import api, load_model
from srnet.errors import SrnetError
from srnet.export import EXPORT_INFO_FILENAME, shrink_model
from srnet.io import file_sha256
from srnet.models import find_groups
from srnet.pruning import FixedMaskMethod, PruningConfig, build_method
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import MaskMetadata, load_masks, save_masks
from srnet.training.loop import optimizer_groups

FAMILIES = ["bert", "roberta", "distilbert"]


def load(path) -> torch.nn.Module:
    return AutoModelForSequenceClassification.from_pretrained(path).eval()


def pruned(model, granularity="head+neuron", sparsity=0.5, **cfg):
    method = build_method(PruningConfig(method="omp", granularity=granularity, sparsity=sparsity, **cfg))
    method.prepare(model, 1)
    return method


def batch(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(1000, 2000, (3, 9), generator=g),
            "attention_mask": torch.ones(3, 9, dtype=torch.long)}


def logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(**batch()).logits


@pytest.mark.parametrize("family", FAMILIES)
def test_groups_tie_heads_and_neurons_to_their_rows_and_columns(tiny_model_dirs, family):
    model = load(tiny_model_dirs(family))
    groups = find_groups(model, ("head", "neuron"))
    assert [(g.kind, g.layer, g.count) for g in groups] == [
        ("head", 0, 2), ("neuron", 0, 64), ("head", 1, 2), ("neuron", 1, 64)]
    head = groups[0]
    assert [(m.axis, m.width) for m in head.members] == [(0, 16), (0, 16), (0, 16), (1, 16)]
    assert [(m.axis, m.width) for m in groups[1].members] == [(0, 1), (1, 1)]


def test_architecture_without_groups_is_named():
    with pytest.raises(SrnetError, match=r"not supported for .Linear. models: no head count in its config"):
        find_groups(torch.nn.Linear(2, 2), ("head",))


@pytest.mark.parametrize(("granularity", "scope"), [("head+neuron", "local"), ("neuron", "global")])
def test_group_rankings_are_exact(tiny_model_dirs, granularity, scope):
    model = load(tiny_model_dirs("bert"))
    masks = pruned(model, granularity, 0.3, scope=scope).masks()
    if scope == "local":  # round(0.3 * 2) = 1 head, round(0.3 * 64) = 19 neurons per layer
        assert {k: int((~m).sum()) for k, m in masks.items()} == {
            "bert.encoder.layer.0.heads": 1, "bert.encoder.layer.0.neurons": 19,
            "bert.encoder.layer.1.heads": 1, "bert.encoder.layer.1.neurons": 19}
    else:
        assert set(masks) == {"bert.encoder.layer.0.neurons", "bert.encoder.layer.1.neurons"}
        assert sum(int((~m).sum()) for m in masks.values()) == round(0.3 * 128)
        assert len({int((~m).sum()) for m in masks.values()}) == 2  # one threshold, unequal layers


def test_masked_forward_zeroes_whole_heads(tiny_model_dirs):
    model = load(tiny_model_dirs("bert"))
    method = pruned(model, "head", 0.5)
    gate = method.masks()["bert.encoder.layer.0.heads"]
    query = model.bert.encoder.layer[0].attention.self.query.weight
    out = model.bert.encoder.layer[0].attention.output.dense.weight
    for h in range(2):
        rows, cols = query[16 * h: 16 * (h + 1)], out[:, 16 * h: 16 * (h + 1)]
        assert bool((rows == 0).all()) == bool((cols == 0).all()) == (not gate[h])


def test_mask_training_learns_group_gates(tiny_model_dirs):
    model = load(tiny_model_dirs("bert"))
    cfg = PruningConfig(method="mask_train", granularity="head+neuron", sparsity=0.5,
                        params={"init": "soft", "mask_lr": 0.5, "rerank_every": 1},
                        schedule={"kind": "cubic", "end": 1.0})
    method = build_method(cfg)
    method.prepare(model, 4)
    before = {k: v.clone() for k, v in method.masks().items()}
    assert all(m.all() for m in before.values())  # the cubic schedule starts dense
    optimizer = torch.optim.SGD(optimizer_groups(method, model, 0.0), lr=cfg.params.mask_lr)
    for step in range(1, 5):
        model(**batch(step), labels=torch.tensor([0, 1, 2])).loss.backward()
        assert all(g.scores.grad is not None and g.scores.grad.shape == g.scores.shape
                   for g in method._masks)
        optimizer.step()
        optimizer.zero_grad()
        method.on_step(step)
    method.freeze()
    counts = {k: int((~m).sum()) for k, m in method.masks().items()}
    assert counts == {"bert.encoder.layer.0.heads": 1, "bert.encoder.layer.0.neurons": 32,
                      "bert.encoder.layer.1.heads": 1, "bert.encoder.layer.1.neurons": 32}


def _train_l0(model, granularity: str, steps: int, scope: str = "local", **l0):
    """An l0 gate search on ``model`` (the trainer's protocol, an SGD step per batch)."""
    cfg = PruningConfig(method="l0", granularity=granularity, sparsity=0.5, scope=scope,
                        params={"mask_lr": 0.5, "lambda_": 1.0, **l0})
    method = build_method(cfg)
    method.prepare(model, steps)
    optimizer = torch.optim.SGD(optimizer_groups(method, model, 0.0), lr=cfg.params.mask_lr)
    model.train()
    for step in range(1, steps + 1):
        (model(**batch(step), labels=torch.tensor([0, 1, 2])).loss + method.penalty()).backward()
        assert all(g.log_alpha.grad is not None and g.log_alpha.grad.shape == (g.mask.numel(),)
                   for g in method._masks)
        optimizer.step()
        optimizer.zero_grad()
        method.on_step(step)
    method.freeze()
    return method


@pytest.mark.parametrize(("granularity", "scope"), [
    ("head", "local"), ("neuron", "local"), ("head+neuron", "local"), ("head+neuron", "global")])
def test_l0_gates_heads_and_neurons_and_freezes_to_the_exact_group_sparsity(tiny_model_dirs, granularity,
                                                                            scope):
    model = load(tiny_model_dirs("bert"))
    method = _train_l0(model, granularity, 3, scope)
    masks = method.masks()
    kinds = granularity.split("+")
    assert sorted(masks) == sorted(f"bert.encoder.layer.{i}.{k}s" for i in range(2) for k in kinds)
    counts = {"heads": 2, "neurons": 64}
    assert {k: tuple(m.shape) for k, m in masks.items()} == {k: (counts[k.rsplit(".", 1)[1]],) for k in masks}
    zeros = {k: int((~m).sum()) for k, m in masks.items()}
    if scope == "local":  # per layer: round(0.5 * 2) = 1 head, 32 neurons
        assert zeros == {k: counts[k.rsplit(".", 1)[1]] // 2 for k in masks}
    else:  # one ranking over all 132 heads and neurons
        assert sum(zeros.values()) == 66
    assert method.sparsity_report()["overall"] == pytest.approx(0.5)  # the fraction of heads/neurons
    ranked = [(m.log_alpha.detach(), masks[t.name])
              for t, m in zip(method.targets, method._masks, strict=True)]
    if scope == "global":
        ranked = [(torch.cat([a for a, _ in ranked]), torch.cat([k for _, k in ranked]))]
    for log_alpha, keep in ranked:
        assert log_alpha[keep].min() >= log_alpha[~keep].max()
    scores = method.scores()  # keep probabilities of whole groups, for the ticket draw
    assert {k: s.shape for k, s in scores.items()} == {k: m.shape for k, m in masks.items()}
    # eval: the frozen gates zero whole heads (rows of Q, K, V and columns of the output)
    gate = masks["bert.encoder.layer.0.heads"] if "head" in kinds else None
    if gate is not None:
        model.eval()
        query = model.bert.encoder.layer[0].attention.self.query.weight
        out = model.bert.encoder.layer[0].attention.output.dense.weight
        for h in range(2):
            rows, cols = query[16 * h: 16 * (h + 1)], out[:, 16 * h: 16 * (h + 1)]
            assert bool((rows == 0).all()) == bool((cols == 0).all()) == (not gate[h])


def test_l0_group_members_share_one_draw_per_forward(tiny_model_dirs):
    """Training draws: Q, K, V rows and output columns of a head (FFN-in row and FFN-out column of
    a neuron) get the same stochastic gate, zero or not together; every forward draws anew."""
    model = load(tiny_model_dirs("bert"))
    _train_l0(model, "head+neuron", 1, init_keep=0.3)  # low keep: many exact zeros
    seen: dict[int, list[torch.Tensor]] = {}

    def record(member, args, output):  # the member's gates, from its weight before and after
        ratio = output / args[0]
        gates = ratio[:: member.width, 0] if member.axis == 0 else ratio[0, :: member.width]
        assert torch.equal(output == 0, member.expand(gates == 0).expand_as(output))  # rows/cols together
        seen.setdefault(id(member.gate), []).append(gates)

    from srnet.sparsity import GroupMask

    for module in model.modules():
        if isinstance(module, GroupMask):
            module.register_forward_hook(record)
    model.train()
    draws = []
    for step in range(3):
        seen.clear()
        model(**batch(step))
        assert sorted(len(v) for v in seen.values()) == [2, 2, 4, 4]  # every member, once
        for gates in seen.values():
            for other in gates[1:]:
                torch.testing.assert_close(other, gates[0], rtol=1e-5, atol=1e-6)
        draws.append(torch.cat([g[0] for g in seen.values()]))
    everything = torch.cat(draws)
    assert bool((everything == 0).any()) and bool((everything > 0).any())
    assert not torch.equal(draws[0], draws[1])


def test_a_method_without_group_support_refuses_a_structured_granularity():
    from srnet.pruning.magnitude import OneShotMagnitude

    class WeightsOnly(OneShotMagnitude):
        name = "weights_only"
        groups_ok = False

    with pytest.raises(SrnetError, match="'weights_only' does not support granularity 'head'"):
        WeightsOnly(PruningConfig(method="omp", granularity="head")).prepare(torch.nn.Linear(2, 2), 1)


def test_fixed_follows_a_structured_mask_file_and_keeps_its_gates(tiny_model_dirs, tmp_path):
    model = load(tiny_model_dirs("bert"))
    masks_path = tmp_path / "masks.safetensors"
    masks = _structured_mask_file(model, masks_path)
    reference = logits(load(tiny_model_dirs("bert")).eval())
    method = build_method(PruningConfig(method="fixed", params={"mask_file": str(masks_path)}))
    method.prepare(model, 1)
    assert method.granularity == "head+neuron"
    kept = method.masks()
    assert list(kept) == list(masks) and all(torch.equal(kept[k], masks[k]) for k in masks)
    assert method.current_sparsity(0) == pytest.approx(method.sparsity_report()["overall"])
    assert not torch.equal(logits(model), reference)
    query = model.bert.encoder.layer[0].attention.self.query.weight
    assert bool((query == 0).all())  # layer 0 lost every head

    given = {"mask_file": str(masks_path)}
    build_method(PruningConfig(method="fixed", granularity="head+neuron", params=given)).prepare(
        load(tiny_model_dirs("bert")), 1)  # a matching granularity may be given
    with pytest.raises(SrnetError, match=r"^pruning\.granularity 'head' contradicts the given mask "
                                         r"\(granularity 'head\+neuron' gates\); leave it out"):
        build_method(PruningConfig(method="fixed", granularity="head", params=given)).prepare(
            load(tiny_model_dirs("bert")), 1)
    weights = pruned(load(tiny_model_dirs("bert")), "unstructured").masks()
    with pytest.raises(SrnetError, match=r"'neuron' contradicts the given mask \(per-weight masks\)"):
        FixedMaskMethod(PruningConfig(method="fixed", granularity="neuron"), masks=weights).prepare(model, 1)
    bad = {**masks, "bert.encoder.layer.0.heads": torch.ones(3, dtype=torch.bool)}
    with pytest.raises(SrnetError, match=r"mask 'bert\.encoder\.layer\.0\.heads' has shape \[3\] but the "
                                         r"model's group has shape \[2\]"):
        FixedMaskMethod(PruningConfig(method="fixed"), masks=bad).prepare(load(tiny_model_dirs("bert")), 1)


def test_old_granularity_key_reads_as_scope():
    assert PruningConfig(granularity="global").scope == "global"
    with pytest.raises(ValueError, match="contradicts scope 'local'"):
        PruningConfig(granularity="global", scope="local")


def _structured_mask_file(model, path, empty_layer: int | None = 0):
    """OMP head+neuron gates, with every head of ``empty_layer`` pruned, saved as a mask file."""
    masks = pruned(model).masks()
    if empty_layer is not None:
        name = next(k for k in masks if f".{empty_layer}.heads" in k)
        masks[name][:] = False
    meta = MaskMetadata(method="omp", base_model="tiny", granularity="head+neuron",
                        base_model_fingerprint=model_fingerprint(model, list(masks)))
    save_masks(path, masks, meta)
    return masks


@pytest.mark.parametrize("family", FAMILIES)
def test_shrunk_export_gives_the_masked_logits_through_both_reload_paths(tiny_model_dirs, tmp_path, family):
    model = load(tiny_model_dirs(family))
    masks_path = tmp_path / "masks.safetensors"
    masks = _structured_mask_file(model, masks_path)
    loaded, _ = load_masks(masks_path, model)  # group gates check against the model
    assert {k: tuple(v.shape) for k, v in loaded.items()} == {k: tuple(v.shape) for k, v in masks.items()}
    method = build_method(PruningConfig(method="fixed", params={"mask_file": str(masks_path)}))
    method.prepare(model, 1)
    masked = logits(model)
    out = api.export_masked(str(tiny_model_dirs(family)), tmp_path / "masks.safetensors", tmp_path / "out",
                            shrink=True)
    info = json.loads((out / EXPORT_INFO_FILENAME).read_text())
    assert info["shrunk"]["parameters"] < info["shrunk"]["dense_parameters"]
    config = json.loads((out / "config.json").read_text())  # states the shrunk class and what it kept
    assert config["architectures"] == [config["auto_map"]["AutoModelForSequenceClassification"].split(".")[1]]
    assert config["architectures"][0].startswith("Srnet")
    assert config["srnet_kept_units"] == {k: int(v.sum()) for k, v in sorted(masks.items())}
    ours = load_model(out)
    torch.testing.assert_close(logits(ours), masked, rtol=0, atol=1e-5)
    plain = AutoModelForSequenceClassification.from_pretrained(out, trust_remote_code=True).eval()
    torch.testing.assert_close(logits(plain), masked, rtol=0, atol=1e-5)
    assert AutoTokenizer.from_pretrained(out) is not None
    # what srnet evaluate / attack / model.name= load through (srnet reads what srnet writes)
    from srnet.models import load_classifier
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    reread = load_classifier(str(out), labels).eval()
    torch.testing.assert_close(logits(reread), masked, rtol=0, atol=1e-5)


def test_shrinking_is_exact_and_removes_rows(tiny_model_dirs):
    model = load(tiny_model_dirs("bert"))
    masks = pruned(model).masks()
    masks["bert.encoder.layer.1.heads"][:] = False
    masks["bert.encoder.layer.1.neurons"][:] = False
    shrunk = shrink_model(model, masks)
    assert shrunk.bert.encoder.layer[0].attention.self.query.weight.shape == (16, 32)
    assert shrunk.bert.encoder.layer[0].output.dense.weight.shape == (32, 32)
    assert shrunk.bert.encoder.layer[1].intermediate.dense.weight.shape == (1, 32)  # one zeroed unit
    FixedMaskMethod(PruningConfig(method="fixed"), masks=masks).prepare(model, 1)
    assert torch.equal(logits(shrunk), logits(model))


def test_unstructured_masks_are_not_shrunk(tiny_model_dirs, tmp_path, capsys):
    from srnet.cli import main

    model = load(tiny_model_dirs("bert"))
    masks = pruned(model, "unstructured").masks()
    save_masks(tmp_path / "m.safetensors", masks, MaskMetadata(
        method="omp", base_model="tiny", base_model_fingerprint=model_fingerprint(model, list(masks))))
    args = ["--model", str(tiny_model_dirs("bert")), "--masks", str(tmp_path / "m.safetensors"),
            "--out", str(tmp_path / "out"), "--shrink"]
    capsys.readouterr()
    assert main(["export", *args]) == 2
    assert re.fullmatch(r"error: cannot shrink: mask 'bert\.encoder\.\S+' is unstructured; .*\n",
                        capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_load_model_names_the_first_mismatching_tensor(tiny_model_dirs, tmp_path):
    model = load(tiny_model_dirs("bert"))
    _structured_mask_file(model, tmp_path / "masks.safetensors", empty_layer=None)
    out = api.export_masked(str(tiny_model_dirs("bert")), tmp_path / "masks.safetensors", tmp_path / "out",
                            shrink=True)
    state = load_file(out / "model.safetensors")
    key = "bert.encoder.layer.0.attention.self.key.weight"
    state[key] = torch.zeros(32, 32)
    save_file(state, out / "model.safetensors")
    with pytest.raises(SrnetError, match=r"model.safetensors: SHA-256 .* differs"):  # changed after export
        load_model(out)
    info = json.loads((out / "srnet_export.json").read_text())  # as if exported so: the digest agrees
    info["sha256"]["model.safetensors"] = file_sha256(out / "model.safetensors")
    (out / "srnet_export.json").write_text(json.dumps(info))
    with pytest.raises(SrnetError, match=rf"weight '{key}' has shape \(32, 32\) but the export's metadata"):
        load_model(out)


def test_bench_times_dense_shrunk_and_unstructured_models(tiny_model_dirs, tmp_path, capsys):
    from srnet.cli import main

    out = tmp_path / "bench.json"
    args = [str(tiny_model_dirs("bert")), "--omp", "0.5", "--batch-sizes", "1", "2", "--lengths", "8",
            "--rounds", "2", "--warmup", "1", "--out", str(out)]
    assert main(["bench", *args]) == 0
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert [r["model"] for r in rows[:4]] == [
        str(tiny_model_dirs("bert")), "omp 50% heads+neurons, shrunk", "omp 50% unstructured",
        "omp 50% unstructured, torch CSR"]
    assert [(r["batch"], r["length"]) for r in rows] == [(1, 8)] * 4 + [(2, 8)] * 4
    assert rows[0]["speedup"] == 1.0 and rows[1]["params_m"] < rows[2]["params_m"] == rows[0]["params_m"]
    assert rows[3]["params_m"] == rows[0]["params_m"]  # CSR stores the same matrices, zeros implied
    assert {"cpu", "cpu_count", "torch_threads", "packages", "cpu_int8"} <= set(result["environment"])
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    assert ("avx2" in flags) == ("avx2" in result["environment"]["cpu_int8"]["flags"])
    assert result["threads"] == torch.get_num_threads() and isinstance(result["warnings"], list)
    assert all(r["min_ms"] <= r["latency_ms"] <= r["max_ms"] for r in rows)
    assert all(r["spread"] == pytest.approx((r["max_ms"] - r["min_ms"]) / r["latency_ms"]) for r in rows)
    printed = capsys.readouterr().out
    assert "omp 50% heads+neurons, shrunk" in printed and "min_ms" in printed and "max_ms" in printed


def test_one_bench_verb_restores_the_threads_and_writes_what_it_returns(tiny_model_dirs, tmp_path):
    """``srnet bench``, ``api.bench`` and the sweep's bench stage are one function: it leaves torch's
    thread count as it found it and its JSON is the result it returns."""
    from srnet import api

    before = torch.get_num_threads()
    result = api.bench([str(tiny_model_dirs("bert"))], omp=[0.5], batch_sizes=[1], lengths=[8], rounds=1,
                       warmup=0, threads=2 if before == 1 else 1, out=tmp_path / "bench.json")
    assert torch.get_num_threads() == before
    assert result["threads"] == (2 if before == 1 else 1)
    assert json.loads((tmp_path / "bench.json").read_text()) == json.loads(json.dumps(result))
    assert len(result["rows"]) == 4  # the model and its three OMP variants


def test_bench_warns_of_a_busy_machine_and_unsteady_rounds():
    from srnet.experiments.timing import bench_warnings

    steady = {"model": "dense", "batch": 1, "length": 8, "spread": 0.05}
    shaky = {"model": "shrunk", "batch": 32, "length": 128, "spread": 0.6}
    assert bench_warnings([steady], load=1.0, cpus=2) == []
    busy = bench_warnings([steady], load=3.5, cpus=2)
    assert len(busy) == 1 and "load average 3.50 on 2 cores" in busy[0]
    unsteady = bench_warnings([steady, shaky], load=None, cpus=2)
    assert len(unsteady) == 1 and "1 of 2 cells" in unsteady[0]
    assert "shrunk, batch 32, length 128: 60%" in unsteady[0]


def test_csr_model_gives_the_unstructured_model_s_logits(tiny_model_dirs):
    from srnet.api import prune_
    from srnet.experiments.timing import CsrLinear, to_csr
    from srnet.export import bake_masks
    from srnet.models import load_classifier

    model = load_classifier(str(tiny_model_dirs("bert"))).eval()
    masks = prune_(model, {"method": "omp", "sparsity": 0.7})
    baked = bake_masks(model, masks).eval()
    csr = to_csr(copy.deepcopy(baked), masks)
    layers = [m for m in csr.modules() if isinstance(m, CsrLinear)]
    assert len(layers) == len(masks) and all(m.weight.layout == torch.sparse_csr for m in layers)
    ids = torch.randint(5, 90, (3, 7), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        expected = baked(input_ids=ids).logits
        assert torch.allclose(csr(input_ids=ids).logits, expected, atol=1e-5)


def test_an_evaluated_shrunk_export_is_labelled_from_its_own_record(tmp_path, tiny_model_dir):
    from conftest import tiny_recipe
    from srnet.reporting.runs import run_labels

    pruning = {"method": "omp", "sparsity": 0.5, "granularity": "head+neuron"}
    base = tiny_recipe(tmp_path, tiny_model_dir, "r", pruning=pruning, bias={"feature": "hypothesis_bow"})
    api.fit_bias(base, tmp_path / "bias")
    run = api.run({**base, "loss": {"name": "reweight"}, "bias_dir": str(tmp_path / "bias")})
    out = api.export_masked(None, run.run_dir / "masks.safetensors", tmp_path / "exp", shrink=True)
    evaluation = api.evaluate(str(out), tiny_recipe(tmp_path, "unused", "ev"))
    sparsity = evaluation.metrics.sparsity
    assert sparsity.measured_from == "export" and sparsity.overall == pytest.approx(0.5, abs=0.02)
    assert sparsity.export == {"method": "omp", "loss": "reweight", "granularity": "head+neuron",
                               "shrunk": True}
    labels = run_labels(yaml_recipe(evaluation.run_dir), sparsity)
    assert (labels["method"], labels["loss"], labels["sparsity"]) == ("subnetwork", "reweight", 0.5)


def yaml_recipe(run_dir) -> dict:
    import yaml

    return yaml.safe_load((run_dir / "config.yaml").read_text())
