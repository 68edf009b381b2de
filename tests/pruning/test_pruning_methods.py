"""Every pruning method through the training-loop interface, on tiny random encoders."""

from __future__ import annotations

import copy
import re
from functools import partial

import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import save_file

from conftest import tiny_classifier
from srnet.errors import SrnetError
from srnet.losses import build_loss
from srnet.models import find_prunable
from srnet.pruning import (
    FixedMaskMethod,
    MethodParams,
    OneShotMethod,
    PruningConfig,
    PruningMethod,
    available_methods,
    build_method,
    get_method,
)
from srnet.sparsity import original_weight
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import MaskMetadata, save_masks
from srnet.training.loop import optimizer_groups
from srnet.training.objectives import build_objective, train_step

VOCAB = 50
STEPS = 6
METHODS = [m for m in available_methods() if m != "dense"]  # the ones that mask, from the registry
TRAINED = [m for m in METHODS if not issubclass(get_method(m), OneShotMethod)]
"""The methods whose mask comes out of training steps (not decided once)."""
PARAMS = {"imp": {"prune_fraction": 0.25, "every": 0.3},
          "mask_train": {"mask_lr": 0.05}, "l0": {"mask_lr": 0.05}}
"""Method params for these short runs (a method not named here runs on its defaults)."""
STANDARD, CE = build_objective("standard"), build_loss("ce")
tiny_model = partial(tiny_classifier, vocab_size=VOCAB, max_position_embeddings=40)
"""The shared tiny classifier on a 50-word vocabulary: ``tiny_model("roberta")``."""


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from threads, and lose a lot on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_batch(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "input_ids": torch.randint(3, VOCAB, (8, 10), generator=g),
        "attention_mask": torch.ones(8, 10, dtype=torch.long),
        "labels": torch.randint(0, 3, (8,), generator=g),
    }


def omp_masks(sparsity: float = 0.5) -> dict[str, torch.Tensor]:
    method = build_method(PruningConfig(method="omp", sparsity=sparsity))
    method.prepare(tiny_model(), STEPS)
    return method.masks()


def make_method(name: str, seed: int = 0, params: dict | None = None, **fields) -> PruningMethod:
    """``name`` with :data:`PARAMS` updated by ``params``, and the shared ``fields``."""
    cfg = PruningConfig(method=name, **{"sparsity": 0.5, **fields},
                        params={**PARAMS.get(name, {}), **(params or {})})
    if name == "fixed":
        return FixedMaskMethod(cfg, seed, masks=omp_masks(cfg.sparsity))
    return build_method(cfg, seed)


def group_names(groups: list[dict]) -> list[str]:
    """The optimizer groups' names in order, each once (weights come as decay and no-decay groups)."""
    return list(dict.fromkeys(g["name"] for g in groups))


def train(model, method: PruningMethod, steps: int = STEPS, lr: float = 1e-3) -> list[bool]:
    """The training-loop protocol (the trainer's train_step); returns what on_step answered."""
    model.train()
    optimizer = torch.optim.AdamW(optimizer_groups(method, model, lr))
    rewound = []
    for step in range(1, steps + 1):
        train_step(model, make_batch(step), STANDARD, CE, optimizer, penalty=method.penalty)
        rewound.append(method.on_step(step))
        if rewound[-1]:
            optimizer = torch.optim.AdamW(optimizer_groups(method, model, lr))
    return rewound


def run(name: str, seed: int = 0, model_type: str = "bert", **overrides):
    model = tiny_model(model_type)
    method = make_method(name, seed, **overrides)
    method.prepare(model, STEPS)
    train(model, method)
    method.freeze()
    model.eval()
    return model, method


def fuses(name: str) -> bool:
    """Whether the method's training forward is fused (one straight-through op for all matrices)."""
    method = make_method(name)
    method.prepare(tiny_model(), STEPS)
    return method.fused is not None


def masked_copy(model, masks: dict[str, torch.Tensor], model_type: str = "bert"):
    """A plain (unparametrized) model whose weights are the originals times ``masks``."""
    suffix = ".parametrizations.weight.original"
    state = {}
    for key, value in model.state_dict().items():
        if key.endswith(suffix):
            name = key[: -len(suffix)]
            state[f"{name}.weight"] = value * masks[name]
        elif ".parametrizations." not in key:
            state[key] = value
    plain = tiny_model(model_type)
    plain.load_state_dict(state)
    return plain.eval()


def test_every_method_owns_a_strict_documented_params_model():
    assert "dense" in available_methods() and {"omp", "imp", "mask_train", "l0", "fixed"} <= set(METHODS)
    for name in available_methods():
        model = get_method(name).params_model
        assert issubclass(model, MethodParams), name
        assert all(field.description for field in model.model_fields.values()), name
        assert isinstance(PruningConfig(method=name).params, model)  # the defaults validate
        with pytest.raises(ValidationError, match=f"not a parameter of method '{name}'; its parameters: "):
            PruningConfig(method=name, params={"no_such_setting": 1})


def test_dense_masks_nothing_and_trains_every_weight():
    model, method = run("dense")
    assert method.masks() == {} and method.sparsity_report()["overall"] == 0.0
    assert all(p.requires_grad for p in model.parameters())
    assert group_names(optimizer_groups(method, model, 1e-3)) == ["weights"]
    assert tiny_model().state_dict().keys() == model.state_dict().keys()  # no parametrization
    assert not torch.equal(tiny_model().classifier.weight, model.classifier.weight)  # it trained
    with pytest.raises(SrnetError, match=r"unknown pruning method 'snip'; known: .*omp"):
        get_method("snip")
    with pytest.raises(ValidationError, match="unknown method 'snip'"):
        PruningConfig(method="snip")


@pytest.mark.parametrize("scope", ["local", "global"])
@pytest.mark.parametrize("name", METHODS)
def test_target_sparsity_is_exact(name, scope):
    model, method = run(name, scope=scope, sparsity=0.5)
    masks = method.masks()
    zeros = {n: int((~m).sum()) for n, m in masks.items()}
    report = method.sparsity_report()
    assert set(masks) == {t.name for t in find_prunable(model)}
    if scope == "local" or name == "fixed":  # fixed: masks come from a local OMP
        assert all(zeros[n] == round(0.5 * m.numel()) for n, m in masks.items())
    total = sum(m.numel() for m in masks.values())
    if scope == "global":
        assert sum(zeros.values()) == round(0.5 * total)
    assert report["overall"] == pytest.approx(sum(zeros.values()) / total)
    assert report["target"] == pytest.approx(0.5)
    assert report["per_matrix"] == {n: zeros[n] / masks[n].numel() for n in masks}


@pytest.mark.parametrize("name", METHODS)
def test_frozen_logits_equal_masked_copy(name):
    model, method = run(name)
    plain = masked_copy(model, method.masks())
    batch = make_batch(99)
    assert torch.equal(model(**batch).logits, plain(**batch).logits)


@pytest.mark.parametrize("name", METHODS)
def test_same_seed_same_masks(name):
    first = run(name, seed=3)[1].masks()
    second = run(name, seed=3)[1].masks()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_random_masks_depend_on_seed():
    first = run("random", seed=1)[1].masks()
    second = run("random", seed=2)[1].masks()
    assert any(not torch.equal(first[k], second[k]) for k in first)


def test_mask_training_keeps_weights_and_changes_masks():
    model = tiny_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    method = make_method("mask_train", params={"init": "soft", "rerank_every": 2})
    method.prepare(model, STEPS)
    initial_masks = method.masks()
    groups = optimizer_groups(method, model, 1e-3)
    assert [g["name"] for g in groups] == ["mask"]
    assert groups[0]["lr"] == 0.05 and groups[0]["weight_decay"] == 0.0
    train(model, method)
    method.freeze()
    for t in method.targets:
        assert torch.equal(original_weight(t.module), before[f"{t.name}.weight"])
    for name, param in model.named_parameters():
        if "parametrizations" not in name:
            assert torch.equal(param, before[name]), name
    changed = method.masks()
    assert any(not torch.equal(initial_masks[k], changed[k]) for k in changed)


def test_mask_training_gradients_reach_scores():
    model = tiny_model()
    method = make_method("mask_train")
    method.prepare(model, STEPS)
    model(**make_batch()).loss.backward()
    for mask in method._masks:
        assert mask.scores.grad is not None and mask.scores.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.parameters() if not p.requires_grad)


def test_mask_training_hard_init_starts_from_magnitudes():
    model = tiny_model()
    expected = omp_masks(0.5)
    method = make_method("mask_train", params={"init": "hard"})
    method.prepare(model, STEPS)
    masks = method.masks()
    assert all(torch.equal(masks[k], expected[k]) for k in expected)
    scores = method._masks[0].scores.detach()
    kept = masks[method.targets[0].name].bool()
    assert scores[kept].min() >= 0.02 and scores[kept].max() <= 0.02 * (1 + 1e-3) + 1e-9
    assert scores[~kept].min() >= 0.0 and scores[~kept].max() <= 0.02 * 1e-3 + 1e-9  # the tie-break
    weight = original_weight(method.targets[0].module).abs()
    assert torch.equal(scores.flatten().argsort(stable=True)[-5:], weight.flatten().argsort(stable=True)[-5:])
    assert float(method._masks[0].threshold) == pytest.approx(0.01, rel=0.01)


def test_mask_training_can_train_the_classifier():
    model = tiny_model()
    method = make_method("mask_train", params={"train_classifier": True})
    method.prepare(model, STEPS)
    groups = optimizer_groups(method, model, 1e-3)
    weights = [p for g in groups if g["name"] == "weights" for p in g["params"]]
    head = find_prunable(model, ("classifier",))[0].module
    assert {id(p) for p in weights} == {id(original_weight(head)), id(head.bias)}


def test_mask_training_follows_cubic_schedule():
    model = tiny_model()
    schedule = {"kind": "cubic", "initial": 0.0, "start": 0.0, "end": 1.0}
    method = make_method("mask_train", schedule=schedule, sparsity=0.8, params={"rerank_every": 3})
    method.prepare(model, STEPS)
    assert method.sparsity_report()["overall"] == 0.0
    train(model, method, steps=3)  # re-rank at step 3: 0.8 - 0.8 * 0.5**3 = 0.7
    report = method.sparsity_report()
    assert report["target"] == pytest.approx(0.7)
    masks = method.masks()
    assert all(int((~m).sum()) == round(0.7 * m.numel()) for m in masks.values())


def test_imp_prunes_on_schedule_and_rewinds():
    model = tiny_model()
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    imp = {"prune_fraction": 0.25, "every": 0.2, "rewind": True}
    method = build_method(PruningConfig(method="imp", sparsity=0.6, params=imp))
    method.prepare(model, 10)  # events every 2 steps: 0.25, 0.5, 0.6 at steps 2, 4, 6
    assert group_names(optimizer_groups(method, model, 1e-3)) == ["weights"]
    optimizer = torch.optim.AdamW(optimizer_groups(method, model, 1e-2))
    levels, rewound = [], []
    for step in range(1, 11):
        model(**make_batch(step)).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        rewound.append(method.on_step(step))
        if rewound[-1]:
            optimizer = torch.optim.AdamW(optimizer_groups(method, model, 1e-2))
            for t in method.targets:  # survivors are back at their initial values
                assert torch.equal(original_weight(t.module), initial[f"{t.name}.weight"])
            head = find_prunable(model, ("classifier",))[0].module
            assert torch.equal(head.bias, initial["classifier.bias"])
        levels.append(method.sparsity_report()["overall"])
    assert rewound == [False, True, False, True, False, True, False, False, False, False]
    total = sum(m.numel() for m in method.masks().values())
    expected = [0, 0.25, 0.25, 0.5, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
    per_matrix = [sum(round(s * m.numel()) for m in method.masks().values()) / total for s in expected]
    assert levels == pytest.approx(per_matrix)


def test_imp_pruned_weights_stay_pruned():
    model = tiny_model()
    method = make_method("imp", sparsity=0.5, params={"prune_fraction": 0.25, "every": 0.2})
    method.prepare(model, 10)
    method.on_step(2)
    first = method.masks()
    with torch.no_grad():  # make the pruned weights the largest: they must stay pruned
        for t in method.targets:
            original_weight(t.module).masked_fill_(~first[t.name], 100.0)
    method.on_step(4)
    second = method.masks()
    assert all(not (second[k] & ~first[k]).any() for k in first)
    assert method.sparsity_report()["target"] == 0.5


def test_imp_unreachable_target_names_the_numbers():
    method = make_method("imp", sparsity=0.9, params={"prune_fraction": 0.1, "every": 0.2})
    with pytest.raises(SrnetError, match=r"sparsity 0.9 in 10 steps: 9 events of 0.1 every 2"):
        method.prepare(tiny_model(), 10)


def test_l0_penalty_decreases_and_frozen_mask_is_exact():
    model = tiny_model()
    method = make_method("l0", sparsity=0.3, params={"lambda_": 5.0})
    method.prepare(model, 20)
    start = method.penalty().item()
    assert start == pytest.approx(5.0 * method._masks[0].keep_probability()[0, 0].item())
    train(model, method, steps=20)
    assert method.penalty().item() < start - 0.01
    method.freeze()
    masks = method.masks()
    assert all(int((~m).sum()) == round(0.3 * m.numel()) for m in masks.values())
    log_alpha = method._masks[0].log_alpha
    kept = log_alpha[masks[method.targets[0].name]]
    dropped = log_alpha[~masks[method.targets[0].name]]
    assert kept.min() >= dropped.max()


def test_l0_lambda_warmup():
    method = make_method("l0", params={"lambda_": 2.0, "lambda_warmup": 0.5})
    method.prepare(tiny_model(), 10)
    assert [method.lambda_at(s) for s in (0, 1, 5, 9)] == pytest.approx([0.0, 0.4, 2.0, 2.0])


def test_l0_can_train_weights():
    model = tiny_model()
    method = make_method("l0", params={"train_weights": True})
    method.prepare(model, STEPS)
    assert group_names(optimizer_groups(method, model, 1e-3)) == ["mask", "weights"]


def test_fixed_mask_file_round_trip(tmp_path):
    masks = omp_masks(0.4)
    path = tmp_path / "masks.safetensors"
    model = tiny_model()
    fingerprint = model_fingerprint(model, masks)
    meta = MaskMetadata(method="omp", base_model="tiny", base_model_fingerprint=fingerprint)
    save_masks(path, masks, meta)
    method = fixed(path)
    method.prepare(model, STEPS)
    loaded = method.masks()
    assert all(torch.equal(loaded[k], masks[k]) for k in masks)
    assert method.current_sparsity(0) == pytest.approx(method.sparsity_report()["overall"])


FIXED = PruningConfig(method="fixed")


def fixed(path) -> PruningMethod:
    return build_method(PruningConfig(method="fixed", params={"mask_file": str(path)}))


def test_fixed_mask_mismatches(tmp_path):
    masks = omp_masks()
    name = "bert.encoder.layer.0.attention.self.query"
    bad_shape = {**masks, name: torch.ones(4, 4)}
    with pytest.raises(SrnetError, match=rf"mask '{name}' has shape \[4, 4\] .* \[32, 32\]"):
        FixedMaskMethod(FIXED, masks=bad_shape).prepare(tiny_model(), STEPS)
    with pytest.raises(SrnetError, match=r"mask key 'encoder\.nope' names no weight in this bert model"):
        FixedMaskMethod(FIXED, masks={"encoder.nope": torch.ones(2)}).prepare(tiny_model(), STEPS)
    with pytest.raises(SrnetError, match="values other than 0 and 1"):
        FixedMaskMethod(FIXED, masks={name: torch.full((32, 32), 0.5)}).prepare(tiny_model(), STEPS)
    with pytest.raises(SrnetError, match=r"needs pruning\.params\.mask_file"):
        build_method(PruningConfig(method="fixed"))
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(SrnetError, match=r"nope\.safetensors"):
        fixed(missing).prepare(tiny_model(), STEPS)
    unmarked = tmp_path / "plain.safetensors"
    save_file({k: v.to(torch.uint8) for k, v in masks.items()}, str(unmarked))
    with pytest.raises(SrnetError, match="not an srnet mask file"):
        fixed(unmarked).prepare(tiny_model(), STEPS)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a safetensors file")
    with pytest.raises(SrnetError, match="not a readable safetensors file"):
        fixed(garbage).prepare(tiny_model(), STEPS)


@pytest.mark.parametrize("bad", [1.0, -0.1])
def test_config_rejects_bad_sparsity(bad):
    with pytest.raises(ValidationError, match=rf"sparsity must be in \[0, 1\), got {bad}"):
        PruningConfig(sparsity=bad)


def test_config_rejects_bad_fields():
    with pytest.raises(ValidationError, match="roles"):
        PruningConfig(roles=["query", "heads"])
    with pytest.raises(ValidationError, match="not a valid regex"):
        PruningConfig(pattern="(")
    with pytest.raises(ValidationError, match="extra"):
        PruningConfig(sparsty=0.5)


def test_selection_of_nothing_is_an_error():
    method = make_method("omp", pattern=r"layer\.7\.")
    with pytest.raises(SrnetError, match=re.escape(r"pattern 'layer\.7\.' select no weight")):
        method.prepare(tiny_model(), STEPS)
    method = make_method("mask_train", roles=["embeddings"], pattern="nothing")
    with pytest.raises(SrnetError, match="select no weight"):
        method.prepare(tiny_model(), STEPS)


def test_prepare_twice_and_bad_total_steps():
    model = tiny_model()
    method = make_method("omp")
    with pytest.raises(SrnetError, match="total_steps must be >= 1, got 0"):
        method.prepare(model, 0)
    method.prepare(model, STEPS)
    with pytest.raises(SrnetError, match="already prepared"):
        method.prepare(model, STEPS)


@pytest.mark.parametrize("name", TRAINED)
def test_resume_from_state_dicts(name):
    rewind = {"params": {"rewind": True}} if "rewind" in get_method(name).params_model.model_fields else {}
    model = tiny_model()
    method = make_method(name, **rewind)
    method.prepare(model, STEPS)
    train(model, method, steps=4)
    model_state = copy.deepcopy(model.state_dict())
    method_state = copy.deepcopy(method.state_dict())

    resumed_model = tiny_model()
    resumed = make_method(name, **rewind)
    resumed.prepare(resumed_model, STEPS)
    resumed_model.load_state_dict(model_state)
    resumed.load_state_dict(method_state)
    assert resumed.step == 4

    torch.manual_seed(7)
    train_from(model, method, 5)
    torch.manual_seed(7)
    train_from(resumed_model, resumed, 5)
    assert all(
        torch.equal(a, b) for a, b in zip(method.masks().values(), resumed.masks().values(), strict=True)
    )
    batch = make_batch(42)
    model.eval()
    resumed_model.eval()
    assert torch.equal(model(**batch).logits, resumed_model(**batch).logits)
    with pytest.raises(SrnetError, match="not 'omp'"):
        make_method("omp").load_state_dict(method_state)


def train_from(model, method: PruningMethod, step: int) -> None:
    """One more step with a fresh optimizer (its state is not part of this test)."""
    optimizer = torch.optim.AdamW(optimizer_groups(method, model, 1e-3))
    model.train()
    train_step(model, make_batch(step), STANDARD, CE, optimizer, penalty=method.penalty)
    method.on_step(step)
    method.freeze()


@pytest.mark.parametrize("model_type", ["roberta", "distilbert", "electra"])
@pytest.mark.parametrize("name", TRAINED)
def test_other_families(model_type, name):
    model, method = run(name, model_type=model_type, sparsity=0.4)
    masks = method.masks()
    assert len(masks) == len(find_prunable(model))
    assert all(int((~m).sum()) == round(0.4 * m.numel()) for m in masks.values())
    plain = masked_copy(model, masks, model_type)
    batch = make_batch(5)
    assert torch.equal(model(**batch).logits, plain(**batch).logits)


@pytest.mark.parametrize("name", [m for m in METHODS if fuses(m)])
def test_fused_mask_step_is_bit_identical_to_the_parametrized_path(name):
    """The fused training forward (one straight-through op for all matrices) changes nothing:
    the same masks, weights, scores and optimizer state as the per-matrix parametrize path."""
    fused_model, fused = tiny_model(), make_method(name)
    fused.prepare(fused_model, STEPS)
    plain_model, plain = tiny_model(), make_method(name)
    plain.prepare(plain_model, STEPS)
    assert fused.fused is not None and plain.fused is not None
    plain.fused.remove()
    calls = []
    fused_model.register_forward_pre_hook(lambda *a: calls.append(bool(torch.nn.utils.parametrize._cache)))
    torch.manual_seed(3)
    train(fused_model, fused)
    torch.manual_seed(3)
    train(plain_model, plain)
    assert calls and all(calls)  # the fused path served the weights of every training forward
    a, b = fused_model.state_dict(), plain_model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert all(torch.equal(x, y) for x, y in zip(fused.masks().values(), plain.masks().values(), strict=True))
    assert not torch.nn.utils.parametrize._cache  # the cache is closed after each forward
