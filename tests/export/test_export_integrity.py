"""Everything a user loads from an srnet export is hashed at export and checked by every loader:
``load_model``, ``evaluate``, ``bench``'s candidates and ``attack``."""

from __future__ import annotations

import json
import re
import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from conftest import tiny_recipe
from srnet import api
from srnet.errors import SrnetError
from srnet.experiments.timing import load_candidate, onnx_sessions
from srnet.export import EXPORT_INFO_FILENAME, ExportConfig, export_model, load_model, verify_export
from srnet.io import file_sha256

needs_onnx = pytest.mark.skipif(find_spec("onnxruntime") is None or find_spec("onnx") is None,
                                reason="the srnet[onnx] extra (onnx, onnxruntime) is not installed")
CHANGED = (r": SHA-256 [0-9a-f]{16}\.\.\. differs from the [0-9a-f]{16}\.\.\. that srnet_export\.json "
           r"records \(changed after export\); re-export the model")
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json"}


def _gates(model) -> dict[str, torch.Tensor]:
    """Head and neuron gates of the tiny BERT: one head of two and half the FFN neurons kept per layer."""
    gates = {}
    for layer in range(model.config.num_hidden_layers):
        gates[f"bert.encoder.layer.{layer}.heads"] = torch.tensor([True, False])
        gates[f"bert.encoder.layer.{layer}.neurons"] = torch.arange(64) % 2 == 0
    return gates


@pytest.fixture(scope="module")
def exports(tiny_model_dir, tmp_path_factory) -> dict[str, Path]:
    """A masked export and a shrunk one of the tiny BERT, written once; tests tamper with copies."""
    root = tmp_path_factory.mktemp("integrity")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir).eval()
    gates = _gates(model)
    return {"masked": export_model(model, gates, tokenizer, root / "masked", metadata=None),
            "shrunk": export_model(model, gates, tokenizer, root / "shrunk", metadata=None,
                                   config=ExportConfig(shrink=True))}


def _copy(exports: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    return shutil.copytree(exports[kind], tmp_path / kind)


def _evaluate(folder: Path, tmp_path: Path):
    return api.evaluate(str(folder), tiny_recipe(tmp_path / "runs", "unused", "ev"))


def _attack(folder: Path, tmp_path: Path):
    recipe = tiny_recipe(tmp_path / "runs", "unused", "at")
    return api.attack(str(folder), attack="charswap", n=2, recipe=recipe, out=tmp_path / "attack")


LOADERS = {
    "load_model": lambda folder, tmp_path: load_model(folder),
    "evaluate": _evaluate,
    "bench": lambda folder, tmp_path: load_candidate(str(folder)),
    "attack": _attack,
}


def _refused(load, folder: Path, tmp_path: Path, message: str) -> None:
    """``load`` fails with the one line ``message`` (a regular expression) and writes no result."""
    with pytest.raises(SrnetError) as caught:
        load(folder, tmp_path)
    assert re.fullmatch(message, str(caught.value)), str(caught.value)
    assert not (tmp_path / "runs" / "ev").exists() and not (tmp_path / "attack" / "charswap.json").exists()


@pytest.mark.parametrize("kind", ["masked", "shrunk"])
def test_the_record_lists_the_sha256_of_every_file_the_export_ships(exports, kind):
    """Weights, config.json (with its auto_map), the tokenizer's files and modeling_srnet.py: all
    but the record and the model card, each digest that of the final file."""
    folder = exports[kind]
    digests = json.loads((folder / EXPORT_INFO_FILENAME).read_text())["sha256"]
    shipped = {p.name for p in folder.iterdir()} - {EXPORT_INFO_FILENAME, "README.md"}
    assert set(digests) == shipped
    assert {"model.safetensors", "config.json", *TOKENIZER_FILES} <= shipped
    assert ("modeling_srnet.py" in shipped) == (kind == "shrunk")
    assert digests == {name: file_sha256(folder / name) for name in shipped}
    if kind == "shrunk":
        assert "modeling_srnet" in json.dumps(json.loads((folder / "config.json").read_text())["auto_map"])


def _swap_labels(folder: Path) -> Path:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    names = config["id2label"]
    names["0"], names["1"] = names["1"], names["0"]
    config["label2id"] = {name: int(i) for i, name in names.items()}
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.mark.parametrize("loader", LOADERS)
def test_a_changed_config_is_refused_by_every_loader(exports, tmp_path, loader):
    """A config.json edited after export (its labels swapped) is one line naming it, before the
    model loads or anything is scored."""
    folder = _copy(exports, "masked", tmp_path)
    changed = _swap_labels(folder)
    _refused(LOADERS[loader], folder, tmp_path, re.escape(str(changed)) + CHANGED)


@pytest.mark.parametrize("loader", ["load_model", "bench"])
@pytest.mark.parametrize("name", ["modeling_srnet.py", "tokenizer.json"])
def test_a_changed_modeling_or_tokenizer_file_is_refused(exports, tmp_path, loader, name):
    folder = _copy(exports, "shrunk", tmp_path)
    with (folder / name).open("a", encoding="utf-8") as file:
        file.write("\n")
    _refused(LOADERS[loader], folder, tmp_path, re.escape(str(folder / name)) + CHANGED)


@pytest.mark.parametrize("loader", LOADERS)
def test_a_shrunk_export_without_its_record_is_refused_by_every_loader(exports, tmp_path, loader):
    folder = _copy(exports, "shrunk", tmp_path)
    (folder / EXPORT_INFO_FILENAME).unlink()
    _refused(LOADERS[loader], folder, tmp_path,
             re.escape(f"{folder}: an srnet export (it ships modeling_srnet.py) without its "
                       "srnet_export.json (its digests); re-export it or restore the file"))


def _config_only(folder: Path) -> None:
    (folder / "modeling_srnet.py").unlink()


def _auto_map_only(folder: Path) -> None:
    _config_only(folder)
    config = json.loads((folder / "config.json").read_text())
    del config["srnet_linear_shapes"]
    (folder / "config.json").write_text(json.dumps(config))


def _int8_graph(folder: Path) -> None:
    _auto_map_only(folder)
    config = json.loads((folder / "config.json").read_text())
    del config["auto_map"]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.int8.onnx").write_bytes(b"graph")


@pytest.mark.parametrize(("strip", "marker"), [
    (_config_only, "its config.json has srnet_linear_shapes"),
    (_auto_map_only, "its config.json's auto_map names modeling_srnet"),
    (_int8_graph, "it ships model.int8.onnx"),
], ids=["shapes", "auto-map", "int8-graph"])
def test_each_mark_of_an_export_without_its_record_is_named(exports, tmp_path, strip, marker):
    folder = _copy(exports, "shrunk", tmp_path)
    (folder / EXPORT_INFO_FILENAME).unlink()
    strip(folder)
    with pytest.raises(SrnetError, match=f"^{re.escape(f'{folder}: an srnet export ({marker}) without')}"):
        verify_export(folder)


def test_a_plain_hugging_face_folder_still_loads(tiny_model_dir, tmp_path):
    """No record and no srnet mark (a graph of its own is no mark): nothing to check, it loads as
    before; load_model still says it is no srnet export."""
    folder = shutil.copytree(tiny_model_dir, tmp_path / "plain")
    (folder / "model.onnx").write_bytes(b"someone else's graph")
    verify_export(folder)
    candidate = load_candidate(str(folder))
    assert candidate.export is None and candidate.model.config.num_labels == 3
    with pytest.raises(SrnetError, match=f"^{re.escape(str(folder))}: not an srnet export"):
        load_model(folder)
    assert _evaluate(folder, tmp_path).metrics.model == str(folder)


def test_an_older_record_is_checked_on_the_files_it_lists_only(exports, tmp_path):
    """A record that lists only the weights (an export older than these digests) loads with its
    config.json rewritten; a change to the weights it lists is still refused."""
    folder = _copy(exports, "masked", tmp_path)
    info = json.loads((folder / EXPORT_INFO_FILENAME).read_text())
    info["sha256"] = {"model.safetensors": info["sha256"]["model.safetensors"]}
    (folder / EXPORT_INFO_FILENAME).write_text(json.dumps(info))
    config = folder / "config.json"
    config.write_text(json.dumps(json.loads(config.read_text()), indent=4))  # same fields, other bytes
    assert load_model(folder).config.num_labels == 3
    assert load_candidate(str(folder)).export == folder
    assert _evaluate(folder, tmp_path / "old").metrics.model == str(folder)
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    _refused(LOADERS["load_model"], folder, tmp_path, re.escape(str(weights)) + CHANGED)


@needs_onnx
def test_bench_times_the_shipped_graphs_and_refuses_one_changed_after_loading(tiny_model_dir, tmp_path):
    """``bench --onnx --quantize int8`` on an export times its model.onnx and model.int8.onnx (their
    digests recorded); a graph changed once the candidate loaded is refused when its session is made."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir).eval()
    folder = export_model(model, _gates(model), tokenizer, tmp_path / "onnx", metadata=None,
                          config=ExportConfig(shrink=True, onnx=True, quantize="int8"))
    candidate = load_candidate(str(folder))
    records = [record for _, _, record in onnx_sessions([candidate], "int8")[0]]
    assert [(r["source"], r["file"], r["sha256"], r["sha256_checked"]) for r in records] == [
        ("shipped", str(folder / name), file_sha256(folder / name), True)
        for name in ("model.onnx", "model.int8.onnx")]
    graph = folder / "model.int8.onnx"
    graph.write_bytes(graph.read_bytes()[:-1])
    with pytest.raises(SrnetError) as caught:
        onnx_sessions([candidate], "int8")
    assert re.fullmatch(re.escape(str(graph)) + CHANGED, str(caught.value)), str(caught.value)
