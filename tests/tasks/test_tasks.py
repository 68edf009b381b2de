"""Task registry, label schemes, stratified subsampling and a smoke test on the real data."""

from __future__ import annotations

from collections import Counter

import pytest

from srnet.errors import SrnetError
from srnet.tasks import (
    TASKS,
    DataSpec,
    Example,
    get_task,
    label_space,
    load_examples,
    stratified_subsample,
    task_names,
)


def test_registry_lists_every_task_and_rejects_unknown_names():
    assert task_names() == ["factver", "nli", "paraphrase", "sentiment", "synthetic_nli", "text"]
    with pytest.raises(SrnetError, match=r"unknown task 'qa'; known: \['factver', 'nli', "):
        get_task("qa")


@pytest.mark.parametrize(
    ("name", "labels", "metric", "challenges", "pair"),
    [
        ("nli", ("entailment", "neutral", "contradiction"), "accuracy", ["hans"], True),
        ("paraphrase", ("not_paraphrase", "paraphrase"), "weighted_f1", ["paws"], True),
        ("factver", ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"), "accuracy", ["fever_symmetric"], True),
        ("sentiment", ("negative", "positive"), "accuracy", [], False),
        ("synthetic_nli", ("entailment", "neutral", "contradiction"), "accuracy", ["hans"], True),
        ("text", (), "mlm_dev_loss", [], False),
    ],
)
def test_task_definitions(name, labels, metric, challenges, pair):
    task = TASKS[name]
    assert (task.labels, task.primary_metric, list(task.challenge_sets), task.pair) == (
        labels, metric, challenges, pair
    )
    own = task.scheme(None)
    assert own.space.names == labels and own.space.from_model is None and own.metric == metric
    for alias, target in task.aliases.items():
        assert target in labels, alias


def test_challenge_label_spaces():
    hans = label_space("nli", DataSpec(path="h.jsonl", challenge="hans"))
    assert hans.names == ("entailment", "non-entailment")
    assert hans.from_model == {"entailment": "entailment", "neutral": "non-entailment",
                               "contradiction": "non-entailment"}
    fever = label_space("factver", DataSpec(path="f.jsonl", challenge="fever_symmetric"))
    assert fever.names == ("SUPPORTS", "REFUTES")
    assert "NOT ENOUGH INFO" not in fever.from_model
    groups = get_task("nli").scheme("hans").groups
    assert groups == {"by_heuristic": ("heuristic",), "by_subcase": ("subcase",)}
    assert get_task("nli").challenge_metric(DataSpec(path="d.jsonl")) == "accuracy"


def _examples(counts: dict[int, int]) -> list[Example]:
    labels = [label for label, count in counts.items() for _ in range(count)]
    labels = labels[::2] + labels[1::2]  # interleave so order matters
    return [Example(f"e{i}", f"text {i}", None, label) for i, label in enumerate(labels)]


def test_stratified_subsample_keeps_proportions_order_and_is_deterministic():
    examples = _examples({0: 60, 1: 30, 2: 10})
    sample = stratified_subsample(examples, 20, seed=3)
    assert Counter(e.label for e in sample) == {0: 12, 1: 6, 2: 2}
    positions = [examples.index(e) for e in sample]
    assert positions == sorted(positions)
    assert sample == stratified_subsample(examples, 20, seed=3)
    assert sample != stratified_subsample(examples, 20, seed=4)


def test_stratified_subsample_largest_remainder_and_edges():
    examples = _examples({0: 5, 1: 3, 2: 2})  # 7 of 10: exact 3.5, 2.1, 1.4
    assert Counter(e.label for e in stratified_subsample(examples, 7, 0)) == {0: 4, 1: 2, 2: 1}
    assert stratified_subsample(examples, 10, 0) == examples
    assert stratified_subsample(examples, 50, 0) == examples
    with pytest.raises(SrnetError, match="subsample size n must be positive, got 0"):
        stratified_subsample(examples, 0, 0)


def test_spec_n_subsamples_a_loaded_split(tmp_path):
    rows = [f'{{"sentence": "s{i}", "label": {i % 4 == 0:d}}}' for i in range(40)]
    (tmp_path / "sst.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    examples = load_examples("sentiment", DataSpec(path="sst.jsonl", n=8, seed=1), base_dir=tmp_path)
    assert Counter(e.label for e in examples) == {0: 6, 1: 2}
    assert all(e.text_b is None for e in examples)


def test_real_data_smoke(shared_data):
    dev = load_examples("nli", DataSpec(path="mnli/dev_matched.jsonl"), base_dir=shared_data)
    assert len(dev) == 9815
    assert (dev[0].id, dev[0].text_a, dev[0].label) == ("dev_matched-1", "The new rights are nice enough", 1)

    hans = DataSpec(path="hans/train.jsonl", challenge="hans", n=600, seed=0)
    examples = load_examples("nli", hans, base_dir=shared_data)
    assert len(examples) == 600 and Counter(e.label for e in examples) == {0: 300, 1: 300}
    assert {e.meta["heuristic"] for e in examples} == {"lexical_overlap", "subsequence", "constituent"}
    assert all(e.id.startswith("ex") and e.meta["subcase"] for e in examples)

    fever = load_examples("factver", DataSpec(path="fever_symmetric/v1.jsonl", challenge="fever_symmetric"),
                          base_dir=shared_data)
    assert len(fever) == 717
    assert fever[0].text_a == "Telemundo is a English-language television network ."
    assert fever[0].text_b.startswith("Telemundo -LRB-") and fever[0].label == 0
