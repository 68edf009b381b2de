"""Readers and loading on fixture files in every supported layout, and every bad-input message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from srnet.errors import SrnetError
from srnet.tasks import DataSpec, HubSpec, get_task, label_space, load_examples, load_split, split_name
from srnet.tasks.readers import open_split, resolve_path

MNLI_HEADER = [
    "index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
    "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "label2", "label3",
    "label4", "label5", "gold_label",
]
HANS_HEADER = [
    "gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
    "sentence2_parse", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template",
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def tsv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    return write(path, ["\t".join(header), *("\t".join(row) for row in rows)])


def jsonl(path: Path, rows: list[dict]) -> Path:
    return write(path, [json.dumps(row) for row in rows])


def mnli_row(i: int, genre: str, s1: str, s2: str, gold: str) -> list[str]:
    return [str(i), f"{i}1", f"{i}n", genre, "( x )", "( y )", "(ROOT x)", "(ROOT y)", s1, s2,
            gold, gold, gold, gold, gold, gold]


def load(task: str, tmp_path: Path, **spec) -> list:
    return load_examples(task, DataSpec(**spec), base_dir=tmp_path)


def test_glue_mnli_tsv_maps_columns_and_skips_no_gold_rows(tmp_path):
    tsv(tmp_path / "dev_matched.tsv", MNLI_HEADER, [
        mnli_row(0, "fiction", 'He said "hi" .', "He spoke .", "entailment"),
        mnli_row(1, "travel", "A dog ran .", "A cat sat .", "-"),
        mnli_row(2, "slate", "It rained .", "It was dry .", "contradiction"),
    ])
    split = load_split("nli", DataSpec(path="dev_matched.tsv", format="glue_mnli"), base_dir=tmp_path)
    assert split.name == "dev_matched"
    assert split.skipped == 1
    first, second = split.examples
    assert (first.id, first.text_a, first.text_b, first.label) == ("0n", 'He said "hi" .', "He spoke .", 0)
    assert first.meta == {"genre": "fiction"}
    assert (second.id, second.label, second.meta["genre"]) == ("2n", 2, "slate")


def test_glue_qqp_tsv(tmp_path):
    tsv(tmp_path / "qqp.tsv", ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"], [
        ["7", "1", "2", "How do I cook?", "How to cook?", "1"],
        ["8", "3", "4", "Why is the sky blue?", "What is rain?", "0"],
    ])
    examples = load("paraphrase", tmp_path, path="qqp.tsv", format="glue_qqp")
    assert [(e.id, e.text_a, e.label) for e in examples] == [("7", "How do I cook?", 1),
                                                             ("8", "Why is the sky blue?", 0)]


def test_hans_heuristics_txt_is_detected_and_uses_the_hans_label_space(tmp_path):
    tsv(tmp_path / "heuristics_evaluation_set.txt", HANS_HEADER, [
        ["non-entailment", "(x)", "(y)", "(X)", "(Y)", "The doctor saw the actor .",
         "The actor saw the doctor .", "ex0", "lexical_overlap", "ln_subject/object_swap", "temp1"],
        ["entailment", "(x)", "(y)", "(X)", "(Y)", "The doctor near the actor ran .", "The doctor ran .",
         "ex1", "subsequence", "se_PP_on_obj", "temp2"],
    ])
    spec = DataSpec(path="heuristics_evaluation_set.txt")
    assert (spec.resolved_format, spec.challenge, split_name(spec)) == ("hans", "hans", "hans")
    examples = load_examples("nli", spec, base_dir=tmp_path)
    assert [e.label for e in examples] == [1, 0]
    assert examples[0].id == "ex0"
    assert examples[0].meta == {"heuristic": "lexical_overlap", "subcase": "ln_subject/object_swap",
                                "template": "temp1"}
    assert label_space("nli", spec).names == ("entailment", "non-entailment")


def test_hans_jsonl_as_a_challenge_of_nli(tmp_path):
    jsonl(tmp_path / "hans.jsonl", [
        {"pairID": "ex9", "premise": "A b .", "hypothesis": "B a .", "label": "non-entailment",
         "heuristic": "lexical_overlap", "subcase": "ln_passive"},
    ])
    (example,) = load("nli", tmp_path, path="hans.jsonl", challenge="hans")
    assert (example.id, example.label, example.meta["subcase"]) == ("ex9", 1, "ln_passive")
    assert load("nli", tmp_path, path="hans.jsonl", format="hans")[0] == example


def test_a_registered_format_declares_its_layout_columns_and_label_scheme(tmp_path):
    """A challenge format is data, not a branch: a two-way CSV format registered here is read with
    its own columns and scored with the challenge set it names, and ``auto`` finds it by name."""
    import re

    from srnet.tasks.formats import FORMATS, DataFormat, register_format

    with FORMATS.scoped():
        register_format(DataFormat("toy_challenge", "csv", columns={
            "text_a": ("p",), "text_b": ("h",), "label": ("gold",), "heuristic": ("kind",),
        }, challenge="hans", file_pattern=re.compile(r"toy_.*\.csv")))
        write(tmp_path / "toy_eval.csv", ["gold,p,h,kind", "non-entailment,A b .,B a .,swap"])
        spec = DataSpec(path="toy_eval.csv")
        assert (spec.resolved_format, spec.challenge) == ("toy_challenge", "hans")
        (example,) = load_examples("nli", spec, base_dir=tmp_path)
        assert (example.text_a, example.label, example.meta) == ("A b .", 1, {"heuristic": "swap"})
        assert label_space("nli", spec).names == ("entailment", "non-entailment")
    assert "toy_challenge" not in FORMATS
    with pytest.raises(ValidationError, match=r"unknown data format 'toy_challenge'; known: \['auto', "):
        DataSpec(path="toy_eval.csv", format="toy_challenge")


def test_paws_tsv_keeps_quotes(tmp_path):
    tsv(tmp_path / "paws_dev.tsv", ["id", "sentence1", "sentence2", "label"], [
        ["1", 'The "old" house .', "The house is old .", "1"],
        ["2", "A b c .", "C b a .", "0"],
    ])
    spec = DataSpec(path="paws_dev.tsv", format="paws", challenge="paws")
    examples = load_examples("paraphrase", spec, base_dir=tmp_path)
    assert [(e.text_a, e.label) for e in examples] == [('The "old" house .', 1), ("A b c .", 0)]
    assert get_task("paraphrase").challenge_metric(spec) == "weighted_f1"


def test_fever_jsonl_alternative_columns_and_symmetric_challenge(tmp_path):
    jsonl(tmp_path / "fever.jsonl", [
        {"id": 3, "claim": "Paris is in France .", "sentence2": "Paris is the capital of France .",
         "gold_label": "SUPPORTS"},
        {"claim": "Rome is in Peru .", "evidence": "Rome is in Italy .", "label": "refutes"},
        {"claim": "X is Y .", "evidence": "Z .", "label": "NOT ENOUGH INFO"},
    ])
    examples = load("factver", tmp_path, path="fever.jsonl", format="fever")
    assert [(e.id, e.text_b, e.label) for e in examples] == [
        ("3", "Paris is the capital of France .", 0),
        ("fever-2", "Rome is in Italy .", 1),
        ("fever-3", "Z .", 2),
    ]
    message = (r"fever\.jsonl:3: unknown label 'NOT ENOUGH INFO' for task factver "
               r"\(challenge fever_symmetric\); expected one of \['SUPPORTS', 'REFUTES'\]")
    with pytest.raises(SrnetError, match=message):
        load("factver", tmp_path, path="fever.jsonl", challenge="fever_symmetric")


def test_csv_with_column_mapping(tmp_path):
    write(tmp_path / "reviews.csv", ["review_id,body,stars", 'r1,"Great, really great",pos', "r2,Awful,neg"])
    examples = load("sentiment", tmp_path, path="reviews.csv",
                    columns={"text_a": "body", "label": "stars", "id": "review_id"})
    assert [(e.id, e.text_a, e.text_b, e.label) for e in examples] == [
        ("r1", "Great, really great", None, 1), ("r2", "Awful", None, 0),
    ]


def test_jsonl_integer_labels_use_the_glue_order_and_null_is_absent(tmp_path):
    jsonl(tmp_path / "mnli.jsonl", [
        {"premise": "a", "hypothesis": "b", "label": 0, "genre": None},
        {"premise": "c", "hypothesis": "d", "label": 2},
    ])
    examples = load("nli", tmp_path, path="mnli.jsonl")
    assert [(e.id, e.label, e.meta) for e in examples] == [("mnli-1", 0, {}), ("mnli-2", 2, {})]


@pytest.mark.parametrize(
    ("name", "lines", "spec", "message"),
    [
        ("a.jsonl", ['{"premise": "a", "hypothesis": "b", "label": "entailment"}', "{oops"], {},
         r"a\.jsonl:2: invalid JSON$"),
        ("a.jsonl", ["[1, 2]"], {}, r"a\.jsonl:1: invalid JSON \(expected an object per line\)"),
        ("a.jsonl", ['{"premise": "a", "hypothesis": "b", "label": "foo"}'], {},
         r"a\.jsonl:1: unknown label 'foo' for task nli; expected one of "
         r"\['entailment', 'neutral', 'contradiction', '0', '1', '2'\]"),
        ("a.jsonl", ['{"premise": "a", "label": "entailment"}'], {},
         r"a\.jsonl:1: column 'hypothesis' or 'sentence2' not found; columns are \['premise', 'label'\]"),
        ("a.csv", ["premise,hypothesis,label", "a,b,entailment"], {"columns": {"text_a": "sent"}},
         r"a\.csv: column 'sent' not found; columns are \['premise', 'hypothesis', 'label'\]"),
        ("a.tsv", ["premise\thypothesis\tlabel", "a\tb"], {}, r"a\.tsv:2: expected 3 fields, found 2"),
        ("a.jsonl", [], {}, r"a\.jsonl: no examples$"),
        ("a.csv", [], {}, r"a\.csv: no examples$"),
        ("a.jsonl", ['{"premise": "a", "hypothesis": "b", "label": "-"}'], {},
         r"a\.jsonl: no examples \(1 rows without a gold label\)"),
        ("a.jsonl", ['{"premise": "a", "hypothesis": "b", "label": 0, "id": "x"}'] * 2, {},
         r"a\.jsonl:2: duplicate id 'x' \(first on line 1\)"),
        ("a.jsonl", ['{"premise": "a", "hypothesis": "b", "label": 0}'], {"challenge": "paws"},
         r"task nli has no challenge set 'paws'; known: \['hans'\]"),
    ],
)
def test_bad_inputs_give_one_line_errors(tmp_path, name, lines, spec, message):
    write(tmp_path / name, lines)
    with pytest.raises(SrnetError, match=message) as info:
        load("nli", tmp_path, path=name, **spec)
    assert "\n" not in str(info.value)


def test_missing_file_and_bad_utf8(tmp_path):
    with pytest.raises(SrnetError, match=r"nowhere\.jsonl: data file not found"):
        load("nli", tmp_path, path="nowhere.jsonl")
    (tmp_path / "bad.jsonl").write_bytes(b'{"premise": "a", "hypothesis": "b", "label": 0}\n\xff\xfe\n')
    with pytest.raises(SrnetError, match=r"bad\.jsonl:2: not valid UTF-8 text"):
        load("nli", tmp_path, path="bad.jsonl")


def test_spec_validation():
    with pytest.raises(ValidationError, match="exactly one of path, hub or synthetic"):
        DataSpec()
    with pytest.raises(ValidationError, match="exactly one of path, hub or synthetic"):
        DataSpec(path="a.jsonl", hub=HubSpec(name="glue", split="train"))
    with pytest.raises(ValidationError, match="format 'hub' needs 'hub', got 'path'"):
        DataSpec(path="a.jsonl", format="hub")
    with pytest.raises(ValidationError, match=r"cannot tell the format of 'data\.parquet'"):
        DataSpec(path="data.parquet")
    with pytest.raises(ValidationError, match="extra"):
        DataSpec(path="a.jsonl", colums={})


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ({"path": "mnli/dev_matched.jsonl"}, "dev_matched"),
        ({"path": "hans/train.jsonl"}, "hans_train"),
        ({"path": "fever_symmetric/v1.jsonl"}, "fever_symmetric_v1"),
        ({"path": "hans/heuristics_train_set.txt"}, "hans_train"),
        ({"path": "x/dev.tsv", "name": "mine"}, "mine"),
        ({"hub": {"name": "nyu-mll/glue", "config": "mnli", "split": "validation_matched"}},
         "glue_mnli_validation_matched"),
        ({"synthetic": {"split": "dev"}}, "synthetic_dev"),
    ],
)
def test_display_names(spec, name):
    assert split_name(DataSpec(**spec)) == name


def test_paths_resolve_against_base_dir_and_expand_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("SRNET_TEST_DIR", str(tmp_path))
    assert resolve_path("$SRNET_TEST_DIR/a.jsonl") == tmp_path / "a.jsonl"
    assert resolve_path("a.jsonl", tmp_path) == tmp_path / "a.jsonl"
    assert resolve_path(str(tmp_path / "b.csv"), "/elsewhere") == tmp_path / "b.csv"


def test_hub_reads_class_labels_by_name(monkeypatch):
    import datasets

    features = datasets.Features({
        "premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"]),
        "idx": datasets.Value("int32"),
    })
    table = datasets.Dataset.from_dict(
        {"premise": ["a", "b", "c"], "hypothesis": ["x", "y", "z"], "label": [2, -1, 1], "idx": [0, 1, 2]},
        features=features,
    )
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: calls.append((a, k)) or table)
    spec = DataSpec(hub=HubSpec(name="nyu-mll/glue", config="mnli", split="validation_matched"))
    split = load_split("nli", spec)
    assert calls == [(("nyu-mll/glue", "mnli"), {"split": "validation_matched"})]
    assert [(e.id, e.label) for e in split.examples] == [("0", 2), ("2", 1)]
    assert split.skipped == 1


def test_unreachable_hub_is_one_clear_error(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach the Hub\nsecond line")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    spec = DataSpec(hub=HubSpec(name="someone/nothing", split="train"))
    with pytest.raises(SrnetError) as info:
        open_split(spec)
    assert str(info.value) == (
        "hub:someone/nothing:train: could not load the dataset (ConnectionError: Couldn't reach the Hub)"
    )


def test_hub_loader_runs_for_real_on_a_local_dataset_folder(tmp_path, monkeypatch):
    """``datasets.load_dataset`` itself (no stub), offline, on a folder laid out like a hub repo."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    repo = tmp_path / "my_nli"
    repo.mkdir()
    rows = [{"premise": "a cat sat", "hypothesis": "a cat", "label": "entailment"},
            {"premise": "a dog ran", "hypothesis": "no dog ran", "label": "contradiction"}]
    (repo / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    split = load_split("nli", DataSpec(hub=HubSpec(name=str(repo), split="train")))
    assert [(e.text_a, e.text_b, e.label) for e in split.examples] == [
        ("a cat sat", "a cat", 0), ("a dog ran", "no dog ran", 2)]


def test_a_folder_of_one_saved_dataset_reads_and_a_recorded_split_must_match(tmp_path, monkeypatch):
    """``Dataset.save_to_disk`` (one split, which ``load_dataset`` refuses) reads like a
    ``DatasetDict``'s folder; a dataset saved as another split is refused in one line."""
    from datasets import Dataset, DatasetDict, Split

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    rows = {"premise": ["a cat sat", "a dog ran"], "hypothesis": ["a cat", "no dog ran"],
            "label": ["entailment", "contradiction"]}
    Dataset.from_dict(rows).save_to_disk(str(tmp_path / "single"))
    DatasetDict({"train": Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "dict"))
    for folder in ("single", "dict"):
        split = load_split("nli", DataSpec(hub=HubSpec(name=str(tmp_path / folder), split="train")))
        assert [(e.text_a, e.label) for e in split.examples] == [("a cat sat", 0), ("a dog ran", 2)]
    Dataset.from_dict(rows, split=Split.VALIDATION).save_to_disk(str(tmp_path / "validation"))
    with pytest.raises(SrnetError, match=r"validation: a saved dataset of split 'validation', not 'train'"):
        load_split("nli", DataSpec(hub=HubSpec(name=str(tmp_path / "validation"), split="train")))
