"""Metrics against hand-computed numbers: label-space collapse, F1, breakdowns, gaps, F_bias."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from srnet.errors import SrnetError
from srnet.evaluation.challenge import group_accuracy, shortcut_gap
from srnet.evaluation.metrics import (
    COLLAPSE_RULES,
    accuracy,
    confusion,
    evaluate_split,
    f_bias,
    hans_prediction_file,
    macro_f1,
    per_class,
    predict,
    rules_differ,
    weighted_f1,
)
from srnet.tasks import Example, LabelScheme, LabelSpace, get_task
from srnet.tasks.spec import Shortcut

NLI = ("entailment", "neutral", "contradiction")
HANS_SCHEME = get_task("nli").scheme("hans")
HANS = HANS_SCHEME.space
FEVER_SYM = get_task("factver").scheme("fever_symmetric").space
OVERLAP = HANS_SCHEME.shortcut
GOLD = [0, 0, 0, 1, 1, 2]
PRED = [0, 0, 1, 1, 2, 2]


def logits_of(probs) -> np.ndarray:
    return np.log(np.asarray(probs, dtype=np.float64))


def test_hans_collapse_rules_disagree():
    # row 0: argmax of the 3 classes is entailment, but neutral + contradiction outweigh it
    probs = [[0.40, 0.35, 0.25], [0.70, 0.20, 0.10], [0.20, 0.30, 0.50], [0.45, 0.50, 0.05]]
    # (they can only disagree that way: a largest non-entailment class implies p(E) < 0.5)
    assert predict(logits_of(probs), NLI, HANS).tolist() == [1, 0, 1, 1]
    assert predict(logits_of(probs), NLI, HANS, "sum").tolist() == [1, 0, 1, 1]
    assert predict(logits_of(probs), NLI, HANS, "argmax").tolist() == [0, 0, 1, 1]
    with pytest.raises(SrnetError, match=r"unknown collapse rule 'max'; known: \['sum', 'argmax'\]"):
        predict(logits_of(probs), NLI, HANS, "max")


def test_fever_symmetric_excludes_not_enough_info_under_both_rules():
    probs = [[0.30, 0.10, 0.60], [0.05, 0.15, 0.80]]
    labels = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
    for rule in COLLAPSE_RULES:
        assert predict(logits_of(probs), labels, FEVER_SYM, rule).tolist() == [0, 1]
    assert not rules_differ(FEVER_SYM) and not rules_differ(LabelSpace(NLI)) and rules_differ(HANS)


def test_identity_space_maps_by_name_not_position():
    space = LabelSpace(("contradiction", "entailment", "neutral"))
    probs = [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]
    assert predict(torch.tensor(logits_of(probs)), NLI, space).tolist() == [1, 0]


def test_predict_errors():
    with pytest.raises(SrnetError, match=r"logits of shape \(2, 2\) do not match 3 model classes"):
        predict(np.zeros((2, 2)), NLI, HANS)
    with pytest.raises(SrnetError, match=r"model classes \['a', 'b'\] differ from the split's labels"):
        predict(np.zeros((1, 2)), ("a", "b"), LabelSpace(("a", "c")))
    with pytest.raises(SrnetError, match="label space maps model class 'neutral', not one of"):
        predict(np.zeros((1, 2)), ("entailment", "contradiction"), HANS)
    with pytest.raises(SrnetError, match="label space maps 'a' to 'z', not one of"):
        predict(np.zeros((1, 1)), ("a",), LabelSpace(("b",), {"a": "z"}))


def test_scores_against_hand_computed_values():
    # per class: P = 1, 1/2, 1/2; R = 2/3, 1/2, 1; F1 = 0.8, 0.5, 2/3; support 3, 2, 1
    assert accuracy(PRED, GOLD) == pytest.approx(4 / 6)
    assert macro_f1(PRED, GOLD) == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert weighted_f1(PRED, GOLD) == pytest.approx((0.8 * 3 + 0.5 * 2 + 2 / 3) / 6)
    classes = per_class(PRED, GOLD, NLI)
    assert classes["entailment"] == pytest.approx(
        {"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3}
    )
    assert classes["contradiction"] == pytest.approx(
        {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1}
    )
    assert confusion(PRED, GOLD, 3) == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]


def hans_examples() -> list[Example]:
    rows = [  # (heuristic, subcase, gold)
        ("lexical_overlap", "le_a", 0), ("lexical_overlap", "le_a", 0), ("lexical_overlap", "ln_b", 1),
        ("lexical_overlap", "ln_b", 1), ("subsequence", "se_c", 0), ("subsequence", "sn_d", 1),
    ]
    return [Example(f"ex{i}", "p", "h", gold, {"heuristic": h, "subcase": s})
            for i, (h, s, gold) in enumerate(rows)]


def test_group_accuracy_by_heuristic_and_label():
    examples = hans_examples()
    pred = [0, 0, 0, 1, 0, 0]
    gold = [e.label for e in examples]
    by_heuristic = group_accuracy(pred, gold, examples, names=HANS.names)
    assert by_heuristic == {
        "lexical_overlap": {"entailment": 1.0, "non-entailment": 0.5},
        "subsequence": {"entailment": 1.0, "non-entailment": 0.0},
    }
    assert list(by_heuristic) == ["lexical_overlap", "subsequence"]
    assert group_accuracy(pred, gold, examples, ("heuristic", "subcase"))["lexical_overlap"] == {
        "le_a": {"0": 1.0}, "ln_b": {"1": 0.5},
    }
    assert shortcut_gap(by_heuristic, OVERLAP) == pytest.approx(1.0 - 0.25)


def test_shortcut_gap_uses_only_the_overlap_heuristics():
    table = {"lexical_overlap": {"entailment": 0.9, "non-entailment": 0.1},
             "constituent": {"entailment": 1.0, "non-entailment": 0.4},
             "synonym": {"entailment": 0.0, "non-entailment": 1.0}}
    assert shortcut_gap(table, OVERLAP) == pytest.approx((0.9 + 1.0) / 2 - (0.1 + 0.4) / 2)
    assert shortcut_gap({"synonym": table["synonym"]}, OVERLAP) is None
    synonym = Shortcut(("synonym",), follows="entailment", against="non-entailment")
    assert shortcut_gap(table, synonym) == pytest.approx(-1.0)


def test_evaluate_split_block_for_hans():
    examples = hans_examples()
    # model predicts (E, E, E, C, E, N) over the 3 NLI classes -> (0, 0, 0, 1, 0, 1) in HANS labels
    probs = np.full((6, 3), 0.1)
    probs[np.arange(6), [0, 0, 0, 2, 0, 1]] = 0.8
    block = evaluate_split(logits_of(probs), examples, HANS_SCHEME, NLI)
    assert block["n"] == 6
    assert block["accuracy"] == block["primary"] == pytest.approx(5 / 6)
    assert block["by_heuristic"]["subsequence"] == {"entailment": 1.0, "non-entailment": 1.0}
    assert block["by_subcase"]["ln_b"] == {"non-entailment": 0.5}
    assert block["shortcut_gap"] == pytest.approx(1.0 - 0.75)
    assert block["confusion"] == [[3, 0], [1, 2]]
    assert set(block["per_class"]) == {"entailment", "non-entailment"}
    assert block["collapse"] == "sum" and block["rule_disagreement"] == 0
    no_groups = LabelScheme(HANS, shortcut=OVERLAP)
    plain = evaluate_split(logits_of(probs), examples, no_groups, NLI)
    assert "by_heuristic" not in plain and plain["shortcut_gap"] == block["shortcut_gap"]


def test_evaluate_split_records_both_collapse_rules():
    examples = hans_examples()  # gold: E E N N | E N
    # p(E) just under 0.5 but the largest class: sum says N, argmax says E
    near = [0.45, 0.30, 0.25]
    probs = [near, near, near, near, [0.9, 0.05, 0.05], [0.1, 0.1, 0.8]]
    block = evaluate_split(logits_of(probs), examples, HANS_SCHEME, NLI, collapse="argmax")
    sums, argmax = block["by_rule"]["sum"], block["by_rule"]["argmax"]
    # sum: N N N N | E N -> 4/6 right; lexical_overlap E 0.0, N 1.0; subsequence E 1.0, N 1.0
    assert sums["accuracy"] == pytest.approx(4 / 6)
    assert sums["by_heuristic"]["lexical_overlap"] == {"entailment": 0.0, "non-entailment": 1.0}
    assert sums["shortcut_gap"] == pytest.approx(((0.0 - 1.0) + (1.0 - 1.0)) / 2)
    # argmax: E E E E | E N -> 4/6 right; lexical_overlap E 1.0, N 0.0
    assert argmax["accuracy"] == pytest.approx(4 / 6)
    assert argmax["shortcut_gap"] == pytest.approx(((1.0 - 0.0) + (1.0 - 1.0)) / 2)
    assert argmax["by_subcase"] == {"le_a": {"entailment": 1.0}, "ln_b": {"non-entailment": 0.0},
                                    "se_c": {"entailment": 1.0}, "sn_d": {"non-entailment": 1.0}}
    assert block["collapse"] == "argmax" and block["rule_disagreement"] == 4
    assert block["shortcut_gap"] == argmax["shortcut_gap"] and block["primary"] == argmax["accuracy"]
    assert block["confusion"] == argmax["confusion"] == [[3, 0], [2, 1]]
    assert sums["confusion"] == [[1, 2], [0, 3]]
    with pytest.raises(SrnetError, match="unknown collapse rule 'mean'"):
        evaluate_split(logits_of(probs), examples, HANS_SCHEME, NLI, collapse="mean")


def test_evaluate_split_primary_metric_and_errors():
    examples = [Example(str(i), "t", None, g) for i, g in enumerate(GOLD)]
    logits = np.eye(3)[PRED] * 5
    block = evaluate_split(logits, examples, LabelScheme(LabelSpace(NLI), "macro_f1"), NLI)
    assert block["primary"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert not {"by_heuristic", "shortcut_gap", "collapse", "by_rule"} & set(block)
    known = r"\['accuracy', 'macro_f1', 'weighted_f1'\]"
    with pytest.raises(SrnetError, match=rf"unknown metric 'f2'; known: {known}"):
        evaluate_split(logits, examples, LabelScheme(LabelSpace(NLI), "f2"), NLI)
    with pytest.raises(SrnetError, match="5 rows of logits for 6 examples"):
        evaluate_split(logits[:5], examples, LabelScheme(LabelSpace(NLI)), NLI)


def test_f_bias():
    # model drops 0.8 -> 0.6 (25 %), dense drops 0.9 -> 0.72 (20 %)
    assert f_bias(0.8, 0.6, 0.9, 0.72) == pytest.approx(1.25)
    assert math.isclose(f_bias(0.9, 0.72, 0.9, 0.72), 1.0)
    with pytest.raises(SrnetError, match=r"dense model has no dev-OOD gap \(dev 0.7 = OOD 0.7\)"):
        f_bias(0.8, 0.6, 0.7, 0.7)
    with pytest.raises(SrnetError, match="undefined for a dev score of 0"):
        f_bias(0.0, 0.0, 0.9, 0.5)


def test_hans_prediction_file():
    examples = hans_examples()[:3]
    assert hans_prediction_file(examples, [0, 1, 1], HANS) == (
        "pairID,gold_label\nex0,entailment\nex1,non-entailment\nex2,non-entailment\n"
    )
    with pytest.raises(SrnetError, match="3 examples but 2 predictions"):
        hans_prediction_file(examples, [0, 1], HANS)


def test_group_tables_have_one_row_order_whatever_the_example_order():
    from srnet.evaluation.challenge import group_accuracy
    from srnet.tasks.base import Example

    examples = [Example(id=str(i), text_a="a", text_b="b", label=i % 2,
                        meta={"heuristic": h}) for i, h in enumerate(["subsequence", "lexical_overlap",
                                                                       "constituent", "lexical_overlap"])]
    pred = [0, 1, 0, 0]
    forward = group_accuracy(pred, [e.label for e in examples], examples)
    backward = group_accuracy(pred[::-1], [e.label for e in examples[::-1]], examples[::-1])
    assert list(forward) == list(backward) == ["constituent", "lexical_overlap", "subsequence"]
    assert forward == backward
