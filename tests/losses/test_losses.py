"""Every loss against a hand computation, plus the registry and the extras checks."""

from __future__ import annotations

import math

import pytest
import torch

from srnet.errors import SrnetError
from srnet.losses import LOSSES, build_loss

LOGITS = [[1.0, 2.0, 0.0], [0.5, -0.5, 1.5]]
LABELS = [1, 2]
BIAS = [[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]
TEACHER = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]


def logits(values=LOGITS) -> torch.Tensor:
    return torch.tensor(values, requires_grad=True)


def labels() -> torch.Tensor:
    return torch.tensor(LABELS)


def log_bias(values=BIAS) -> torch.Tensor:
    return torch.tensor(values).log()


def softmax_row(row: list[float]) -> list[float]:
    exps = [math.exp(v) for v in row]
    return [e / sum(exps) for e in exps]


def ce_row(row: list[float], gold: int) -> float:
    return -math.log(softmax_row(row)[gold])


def test_ce_is_mean_cross_entropy():
    expected = (ce_row(LOGITS[0], 1) + ce_row(LOGITS[1], 2)) / 2
    assert build_loss("ce")(logits(), labels()).item() == pytest.approx(expected, rel=1e-6)


def test_poe_value_and_gradient():
    # example 0: e^1*.2 = .543656, e^2*.5 = 3.694528, e^0*.3 = .3  ->  -log(3.694528 / 4.538184)
    assert -math.log(math.e**2 * 0.5 / (math.e * 0.2 + math.e**2 * 0.5 + 0.3)) == pytest.approx(
        0.205674, abs=1e-6
    )
    expected = (
        sum(
            -math.log(math.exp(z[y]) * b[y] / sum(math.exp(zc) * bc for zc, bc in zip(z, b, strict=True)))
            for z, b, y in zip(LOGITS, BIAS, LABELS, strict=True)
        )
        / 2
    )
    z = logits()
    loss = build_loss("poe")(z, labels(), {"bias_log_probs": log_bias()})
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    # d/dz = (softmax(z + log p_b) - onehot) / B
    combined = torch.tensor(LOGITS) + log_bias()
    grad = (torch.softmax(combined, 1) - torch.nn.functional.one_hot(labels(), 3)) / 2
    torch.testing.assert_close(z.grad, grad)


def test_reweight_normalises_by_the_weights():
    w0, w1 = 1 - BIAS[0][1], 1 - BIAS[1][2]  # 0.5 and 0.9
    expected = (w0 * ce_row(LOGITS[0], 1) + w1 * ce_row(LOGITS[1], 2)) / (w0 + w1)
    loss = build_loss("reweight")(logits(), labels(), {"bias_log_probs": log_bias()})
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    certain = torch.tensor([[1e-12, 1.0, 1e-12], [1e-12, 1e-12, 1.0]]).log()
    certain = certain - certain.logsumexp(1, keepdim=True)
    assert build_loss("reweight")(logits(), labels(), {"bias_log_probs": certain}).item() == pytest.approx(0)


def test_conf_reg_scales_teacher_by_one_minus_bias():
    # example 0: b = .5 -> teacher ** .5 renormalised; example 1: b = .1 -> teacher ** .9
    targets = []
    for t, b, y in zip(TEACHER, BIAS, LABELS, strict=True):
        scaled = [p ** (1 - b[y]) for p in t]
        targets.append([s / sum(scaled) for s in scaled])
    assert targets[0] == pytest.approx([0.522879, 0.279491, 0.197630], abs=1e-6)
    expected = (
        -sum(
            sum(q * math.log(p) for q, p in zip(target, softmax_row(z), strict=True))
            for target, z in zip(targets, LOGITS, strict=True)
        )
        / 2
    )
    z = logits()
    extras = {"bias_log_probs": log_bias(), "teacher_probs": torch.tensor(TEACHER)}
    loss = build_loss("conf_reg")(z, labels(), extras)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    torch.testing.assert_close(z.grad, (torch.softmax(z.detach(), 1) - torch.tensor(targets)) / 2)


def test_conf_reg_with_certain_bias_distils_the_uniform_distribution():
    certain = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).clamp_min(1e-12).log()
    certain = certain - certain.logsumexp(1, keepdim=True)
    extras = {"bias_log_probs": certain, "teacher_probs": torch.tensor(TEACHER)}
    uniform = -sum(sum(math.log(p) for p in softmax_row(z)) / 3 for z in LOGITS) / 2
    assert build_loss("conf_reg")(logits(), labels(), extras).item() == pytest.approx(uniform, rel=1e-5)


def test_annealing_endpoints():
    poe = build_loss("poe", {"anneal": True, "anneal_min": 0.0})
    plain_poe = build_loss("poe")
    extras = {"bias_log_probs": log_bias()}
    at_start = poe(logits(), labels(), extras, progress=0.0)
    assert at_start.item() == pytest.approx(plain_poe(logits(), labels(), extras).item())
    # a_T = 0: the bias is flattened to uniform, which leaves plain cross-entropy
    at_end = poe(logits(), labels(), extras, progress=1.0)
    assert at_end.item() == pytest.approx(build_loss("ce")(logits(), labels()).item(), rel=1e-6)
    # half way with anneal_min = 0.5: a = 0.75 -> p_b ** 0.75 renormalised
    half = build_loss("poe", {"anneal": True, "anneal_min": 0.5})
    flat = log_bias() * 0.75
    flat = flat - flat.logsumexp(1, keepdim=True)
    expected = plain_poe(logits(), labels(), {"bias_log_probs": flat})
    assert half(logits(), labels(), extras, progress=0.5).item() == pytest.approx(expected.item(), rel=1e-6)
    conf = build_loss("conf_reg", {"anneal": True, "anneal_min": 0.0})
    extras = {"bias_log_probs": log_bias(), "teacher_probs": torch.tensor(TEACHER)}
    # uniform bias at the end: b = 1/3 for every example -> teacher ** (2/3)
    expected = (
        -sum(
            sum(q * math.log(p) for q, p in zip(_power(t, 2 / 3), softmax_row(z), strict=True))
            for t, z in zip(TEACHER, LOGITS, strict=True)
        )
        / 2
    )
    assert conf(logits(), labels(), extras, progress=1.0).item() == pytest.approx(expected, rel=1e-5)


def _power(probs: list[float], exponent: float) -> list[float]:
    scaled = [p**exponent for p in probs]
    return [s / sum(scaled) for s in scaled]


def _kl(q: list[float], logits_row: list[float], t: float) -> float:
    p = softmax_row([z / t for z in logits_row])
    return sum(qc * (math.log(qc) - math.log(pc)) for qc, pc in zip(q, p, strict=True))


@pytest.mark.parametrize(("difficulty", "lam", "t"), [([1.0, 1.0], 0.5, 1.0), ([0.5, 0.0], 0.3, 2.0)])
def test_rmc_mixes_ce_with_kl_to_the_difficulty_scaled_teacher(difficulty, lam, t):
    ce = (ce_row(LOGITS[0], 1) + ce_row(LOGITS[1], 2)) / 2
    kl = (
        sum(
            _kl(_power(teacher, d / t), z, t)
            for teacher, d, z in zip(TEACHER, difficulty, LOGITS, strict=True)
        )
        / 2
    )
    loss = build_loss("rmc", {"distill_weight": lam, "temperature": t})
    extras = {"teacher_probs": torch.tensor(TEACHER), "difficulty": torch.tensor(difficulty)}
    expected = (1 - lam) * ce + lam * t * t * kl
    assert loss(logits(), labels(), extras).item() == pytest.approx(expected, rel=1e-5)


def test_rmc_defaults_and_zero_difficulty_gives_uniform_teacher():
    loss = build_loss("rmc")
    assert loss.params.distill_weight == 0.5 and loss.params.temperature == 1.0
    extras = {"teacher_probs": torch.tensor(TEACHER), "difficulty": torch.zeros(2)}
    kl = sum(_kl([1 / 3] * 3, z, 1.0) for z in LOGITS) / 2
    ce = (ce_row(LOGITS[0], 1) + ce_row(LOGITS[1], 2)) / 2
    assert loss(logits(), labels(), extras).item() == pytest.approx(0.5 * ce + 0.5 * kl, rel=1e-5)


# --- registry -----------------------------------------------------------------------------------


def test_registry_and_introspection():
    needs = {name: set(build_loss(name).requires) for name in LOSSES}  # a new loss says here what it needs
    assert needs == {
        "ce": set(),
        "poe": {"bias_log_probs"},
        "reweight": {"bias_log_probs"},
        "conf_reg": {"bias_log_probs", "teacher_probs"},
        "rmc": {"teacher_probs", "difficulty"},
    }


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("focal", {}, r"unknown loss 'focal'; known: \[.*'poe'"),
        ("poe", {"strength": 2}, r"loss 'poe': unknown parameter 'strength' \(known: anneal, anneal_min\)"),
        (
            "rmc",
            {"distill_weight": 2},
            "loss 'rmc': parameter 'distill_weight' = 2: .*less than or equal to 1",
        ),
        ("ce", {"anneal": True}, "loss 'ce': unknown parameter 'anneal' \\(known: none\\)"),
    ],
)
def test_build_loss_errors(name, params, message):
    with pytest.raises(SrnetError, match=message):
        build_loss(name, params)


# --- extras checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extras", "progress", "message"),
    [
        ("poe", {}, 0.0, "loss 'poe' needs the batch extra 'bias_log_probs'"),
        ("poe", {"bias_log_probs": torch.zeros(2, 2)}, 0.0, r"shape \[2, 2\]; expected \[2, 3\]"),
        (
            "poe",
            {"bias_log_probs": torch.tensor(BIAS)},
            0.0,
            "row 0 has logsumexp 1.44; expected natural-log",
        ),
        ("poe", {"bias_log_probs": log_bias()}, 1.5, "progress 1.5"),
        ("conf_reg", {"bias_log_probs": log_bias(), "teacher_probs": log_bias()}, 0.0, "teacher_probs row 0"),
        (
            "rmc",
            {"teacher_probs": torch.tensor(TEACHER), "difficulty": torch.ones(3)},
            0.0,
            r"\[3\]; expected \[2\]",
        ),
        (
            "rmc",
            {"teacher_probs": torch.tensor(TEACHER), "difficulty": torch.tensor([0.5, 2.0])},
            0.0,
            "row 1",
        ),
    ],
)
def test_bad_extras_are_rejected(name, extras, progress, message):
    with pytest.raises(SrnetError, match=message):
        build_loss(name)(logits(), labels(), extras, progress=progress)


def test_a_loss_typo_in_a_late_sweep_stage_is_refused_when_the_sweep_is_planned(tmp_path):
    from srnet.experiments.sweep.plan import plan_sweep

    base = {"task": "nli", "data": {"train": {"path": "x.jsonl"}}}
    sweep = {"name": "s", "output_dir": str(tmp_path / "out"), "base": base,
             "stages": {"ft": {"kind": "train"},
                        "late": {"kind": "train", "set": {"model.init_from": "@ft", "loss.name": "poe",
                                                          "loss.params": {"tempreature": 2}}}}}
    with pytest.raises(SrnetError, match=r"stage 'late'.*loss 'poe': unknown parameter 'tempreature'"):
        plan_sweep(sweep, "s.yaml")
    assert not (tmp_path / "out").exists()
