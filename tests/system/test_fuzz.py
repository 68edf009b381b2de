"""Property tests: any file or override a user can hand srnet ends in a valid result or one
``SrnetError`` line naming the file/line/field/value, never in another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srnet.bias.predictions import load_bias_log_probs, write_bias_predictions
from srnet.config import load_recipe
from srnet.errors import SrnetError
from srnet.sparsity.mask_io import MaskMetadata, load_masks, save_masks
from srnet.tasks import DataSpec, load_examples

FUZZ = settings(
    max_examples=40, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VALID_JSONL = (
    b'{"premise": "A man sleeps.", "hypothesis": "A person rests.", "label": "entailment"}\n'
    b'{"premise": "Dogs run.", "hypothesis": "Cats fly.", "label": "contradiction"}\n'
    b'{"premise": "It rains.", "hypothesis": "It is wet.", "label": 1}\n'
)
VALID_TSV = b"sentence1\tsentence2\tgold_label\nA b.\tA.\tentailment\nC d.\tE.\tneutral\n"
VALID_CSV = b'premise,hypothesis,label\n"A, b.",A.,entailment\nC d.,E.,2\n'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _one_line(exc: SrnetError) -> str:
    message = str(exc)
    assert message and "\n" not in message and "Traceback" not in message
    return message


def _load(data: bytes, suffix: str, **spec):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"data{suffix}"
        path.write_bytes(data)
        try:
            examples = load_examples("nli", DataSpec(path=str(path), **spec))
        except SrnetError as exc:
            assert path.name in _one_line(exc)
            return None
    assert examples and all(0 <= ex.label < 3 for ex in examples)
    return examples


@FUZZ
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".jsonl", ".csv", ".tsv"]))
def test_readers_random_bytes(data, suffix):
    _load(data, suffix)


@FUZZ
@given(
    which=st.sampled_from([(VALID_JSONL, ".jsonl"), (VALID_TSV, ".tsv"), (VALID_CSV, ".csv")]),
    cut=st.integers(min_value=0, max_value=200),
    junk=st.binary(max_size=4),
)
def test_readers_truncated_and_corrupted_lines(which, cut, junk):
    data, suffix = which
    cut = min(cut, len(data))
    _load(data[:cut] + junk + data[cut:cut + 40], suffix)


@FUZZ
@given(premise=json_values, hypothesis=json_values, label=json_values, extra=json_values)
def test_readers_wrong_types(premise, hypothesis, label, extra):
    row = {"premise": premise, "hypothesis": hypothesis, "label": label, "pairID": extra}
    _load((json.dumps(row) + "\n").encode(), ".jsonl")


@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(size=st.sampled_from([10, 200_000, 2_000_000]), suffix=st.sampled_from([".jsonl", ".csv", ".tsv"]))
def test_readers_huge_fields(size, suffix):
    big = "w " * (size // 2)
    if suffix == ".jsonl":
        data = json.dumps({"premise": big, "hypothesis": "h", "label": "neutral"}) + "\n"
    else:
        sep = "," if suffix == ".csv" else "\t"
        data = f"premise{sep}hypothesis{sep}label\n{big}{sep}h{sep}neutral\n"
    examples = _load(data.encode(), suffix)
    assert examples is None or len(examples[0].text_a) == len(big)


@FUZZ
@given(
    label_map=st.dictionaries(st.one_of(st.integers(-2, 3), st.sampled_from(["e", "n", "c", "x"])),
                              st.sampled_from(["entailment", "neutral", "contradiction", "-", "bogus"]),
                              max_size=4),
)
def test_label_map_any_mapping(label_map):
    rows = [{"premise": "p", "hypothesis": "h", "label": lab} for lab in (0, "e", "c", 2, "neutral")]
    _load("".join(json.dumps(r) + "\n" for r in rows).encode(), ".jsonl", label_map=label_map)


KEYS = [
    "name", "seed", "task", "model.max_length", "training.lr", "training.epochs", "training.batch_size",
    "training.max_steps", "pruning.method", "pruning.sparsity", "pruning.schedule.kind", "loss.name",
    "loss.params.anneal", "data.train.n", "data.challenge.0.path", "data.train.label_map", "bias.k_folds",
    "training", "pruning.roles", "nosuch.key", "model..name", "",
]
override_values = st.one_of(
    st.sampled_from(["", "null", "1.5", "-1", "0.5", "[1, 2]", "{a: 1}", "omp", "ce", "nan", "1e400",
                     "'", "[", "{e: entailment}", "true"]),
    st.text(max_size=15),
)


@FUZZ
@given(items=st.lists(st.tuples(st.sampled_from(KEYS), override_values), min_size=1, max_size=4),
       raw=st.lists(st.text(max_size=12), max_size=2))
def test_recipe_overrides(items, raw):
    overrides = [f"{key}={value}" for key, value in items] + raw
    try:
        recipe = load_recipe(None, overrides)
    except SrnetError as exc:
        message = _one_line(exc)
        assert "(got" not in message or message.count("(got") == 1
        return
    assert recipe.fingerprint()


@pytest.fixture(scope="module")
def mask_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("masks") / "m.safetensors"
    masks = {"a.weight": torch.eye(2, dtype=torch.bool), "b": torch.ones(3, dtype=torch.bool)}
    save_masks(path, masks, MaskMetadata(method="omp", base_model="m", base_model_fingerprint="f"))
    return path.read_bytes()


@FUZZ
@given(position=st.integers(min_value=0, max_value=10_000), junk=st.binary(min_size=1, max_size=8),
       truncate=st.booleans())
def test_mask_files_corrupted(mask_bytes, position, junk, truncate):
    position = position % len(mask_bytes)
    tail = b"" if truncate else junk + mask_bytes[position + len(junk):]
    data = mask_bytes[:position] + tail
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.safetensors"
        path.write_bytes(data)
        try:
            masks, meta = load_masks(path)
        except SrnetError as exc:
            assert "m.safetensors" in _one_line(exc)
            return
    assert all(m.dtype == torch.bool for m in masks.values()) and meta.method


@FUZZ
@given(header=st.dictionaries(st.sampled_from(["srnet_masks", "method", "base_model", "per_matrix",
                                              "base_model_fingerprint", "sparsity", "target_sparsity"]),
                              st.text(max_size=12) | st.sampled_from(['{"b": 0.0}', "1", "null", "[]"]),
                              max_size=8))
def test_mask_files_bad_metadata(header):
    from safetensors.torch import save_file

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.safetensors"
        save_file({"b": torch.ones(3, dtype=torch.uint8)}, str(path), metadata=header)
        try:
            load_masks(path)
        except SrnetError as exc:
            assert "m.safetensors" in _one_line(exc)


IDS = ["a", "b", "c"]


@FUZZ
@given(rows=st.lists(st.dictionaries(st.sampled_from(["id", "log_probs", "probs", "srnet_bias", "labels"]),
                                     json_values, max_size=3), max_size=4),
       header=st.booleans())
def test_bias_prediction_jsonl(rows, header):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bias.jsonl"
        write_bias_predictions(path, IDS, np.log(np.full((3, 3), 1 / 3)), labels=["e", "n", "c"],
                               feature="overlap", split="train")
        lines = path.read_text().splitlines()[: 1 if header else 0]
        path.write_text("\n".join([*lines, *(json.dumps(r) for r in rows)]) + "\n")
        _check_bias(path)


@FUZZ
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".jsonl", ".json", ".npy"]))
def test_bias_prediction_random_bytes(data, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"bias{suffix}"
        path.write_bytes(data)
        _check_bias(path)


@FUZZ
@given(values=st.lists(st.lists(st.floats(width=32), max_size=4), max_size=4))
def test_bias_prediction_npy_and_json_values(values):
    with tempfile.TemporaryDirectory() as folder:
        json_path = Path(folder) / "bias.json"
        json_path.write_text(json.dumps(dict(zip(IDS, values, strict=False))))
        _check_bias(json_path)
        if values and len({len(v) for v in values}) == 1:
            npy_path = Path(folder) / "bias.npy"
            np.save(npy_path, np.array(values, dtype=np.float32))
            _check_bias(npy_path)


def _check_bias(path: Path) -> None:
    try:
        out = load_bias_log_probs(path, IDS, 3, labels=["e", "n", "c"])
    except SrnetError as exc:
        assert path.name in _one_line(exc)
        return
    assert out.shape == (3, 3) and np.isfinite(out).all()
