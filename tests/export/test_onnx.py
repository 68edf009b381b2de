"""ONNX export (``srnet export --onnx``) and ONNX Runtime timing (``srnet bench --onnx``).

Tests that run ONNX Runtime skip when the ``srnet[onnx]`` extra is not installed; the
missing-extra error is tested either way.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
from importlib.util import find_spec

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification

from srnet import api
from srnet.cli import main
from srnet.export import EXPORT_INFO_FILENAME
from srnet.pruning import FixedMaskMethod, PruningConfig, build_method
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import MaskMetadata, save_masks

needs_onnx = pytest.mark.skipif(find_spec("onnxruntime") is None or find_spec("onnx") is None,
                                reason="the srnet[onnx] extra (onnx, onnxruntime) is not installed")
FAMILIES = ["bert", "roberta", "distilbert"]


@pytest.fixture(scope="module")
def tiny_dirs(tiny_model_dirs) -> dict[str, object]:
    """The shared tiny models of each family, and a RoBERTa with one token type (like real RoBERTa
    checkpoints: no token_type_ids input)."""
    dirs = {f: tiny_model_dirs(f) for f in FAMILIES}
    return dirs | {"roberta-1type": tiny_model_dirs("roberta", type_vocab_size=1)}


def load(path) -> torch.nn.Module:
    return AutoModelForSequenceClassification.from_pretrained(path).eval()


def mask_file(model, path, granularity="head+neuron", empty: tuple[str, ...] = ()) -> dict:
    """OMP masks at 50% saved as a mask file; every unit of the ``empty`` groups pruned."""
    method = build_method(PruningConfig(method="omp", granularity=granularity, sparsity=0.5))
    method.prepare(model, 1)
    masks = method.masks()
    for name in empty:
        masks[name][:] = False
    save_masks(path, masks, MaskMetadata(method="omp", base_model="tiny", granularity=granularity,
                                         base_model_fingerprint=model_fingerprint(model, list(masks))))
    return masks


def input_names(model) -> list[str]:
    """The ONNX inputs: token_type_ids for models with several token types (not DistilBERT)."""
    types = model.config.model_type != "distilbert" and model.config.type_vocab_size > 1
    return ["input_ids", "attention_mask", *(["token_type_ids"] if types else [])]


def batch(model, size: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {"input_ids": torch.randint(1000, 2000, (size, length), generator=g),
           "attention_mask": torch.ones(size, length, dtype=torch.long)}
    out["attention_mask"][-1, length // 3:] = 0
    if "token_type_ids" in input_names(model):
        out["token_type_ids"] = (torch.arange(length) >= length // 2).long().expand(size, length)
    return out


def ort_logits(graph, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    """ONNX Runtime's logits of ``graph`` (a file path, or the graph's bytes)."""
    import onnxruntime as ort

    source = graph if isinstance(graph, bytes) else str(graph)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(["logits"], {k: v.numpy() for k, v in inputs.items()})[0]


@needs_onnx
@pytest.mark.parametrize("family", [*FAMILIES, "roberta-1type"])
def test_shrunk_onnx_export_gives_the_masked_logits(tiny_dirs, tmp_path, family):
    model = load(tiny_dirs[family])
    prefix = {"bert": "bert.encoder.layer", "distilbert": "distilbert.transformer.layer"}.get(
        family, "roberta.encoder.layer")
    # layer 0 loses every head, layer 1 every FFN neuron: both keep one all-zero unit when shrunk
    masks = mask_file(model, tmp_path / "m.safetensors", empty=(f"{prefix}.0.heads", f"{prefix}.1.neurons"))
    FixedMaskMethod(PruningConfig(method="fixed"), masks=masks).prepare(model, 1)
    out = api.export_masked(str(tiny_dirs[family]), tmp_path / "m.safetensors", tmp_path / "out",
                            shrink=True, onnx=True)
    info = json.loads((out / EXPORT_INFO_FILENAME).read_text())["onnx"]
    assert info["file"] == "model.onnx" and info["outputs"] == ["logits"] and info["attention"] == "eager"
    assert info["inputs"] == input_names(model) == (
        ["input_ids", "attention_mask"] if family in ("distilbert", "roberta-1type") else
        ["input_ids", "attention_mask", "token_type_ids"])
    assert info["check"]["max_abs_diff"] <= 1e-4
    for size, length in [(1, 5), (4, 17)]:  # dynamic batch and sequence axes
        inputs = batch(model, size, length, seed=length)
        with torch.no_grad():
            masked = model(**inputs).logits.numpy()
        np.testing.assert_allclose(ort_logits(out / "model.onnx", inputs), masked, rtol=0, atol=1e-4)


@needs_onnx
def test_cli_exports_onnx_for_a_plain_masked_model(tiny_dirs, tmp_path, capsys):
    model = load(tiny_dirs["bert"])
    masks = mask_file(model, tmp_path / "m.safetensors", granularity="unstructured")
    args = ["--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
            "--out", str(tmp_path / "out"), "--onnx"]
    assert main(["export", *args]) == 0
    assert "with model.onnx" in capsys.readouterr().out
    FixedMaskMethod(PruningConfig(method="fixed"), masks=masks).prepare(model, 1)
    inputs = batch(model, 2, 12)
    with torch.no_grad():
        masked = model(**inputs).logits.numpy()
    np.testing.assert_allclose(ort_logits(tmp_path / "out" / "model.onnx", inputs), masked, rtol=0, atol=1e-4)


@needs_onnx
def test_an_onnx_graph_that_disagrees_with_pytorch_is_refused(tiny_dirs, tmp_path, capsys, monkeypatch):
    from srnet.export import onnx as onnx_export

    model = load(tiny_dirs["bert"])
    mask_file(model, tmp_path / "m.safetensors")
    traced = onnx_export._Logits.forward
    monkeypatch.setattr(onnx_export._Logits, "forward", lambda self, *x: traced(self, *x) + 0.01)
    args = ["--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
            "--out", str(tmp_path / "out"), "--shrink", "--onnx"]
    capsys.readouterr()
    assert main(["export", *args]) == 2
    assert re.fullmatch(r"error: ONNX Runtime's logits differ from PyTorch's by 0\.01 \(tolerance 0\.0001\) "
                        r"on a 3 x 11 probe batch; the ONNX export is refused\n", capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["export", "bench"])
def test_missing_onnx_extra_is_one_line_naming_the_extra(tiny_dirs, tmp_path, capsys, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    if command == "export":
        args = ["export", "--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
                "--out", str(tmp_path / "out"), "--onnx"]
    else:
        args = ["bench", str(tiny_dirs["bert"]), "--onnx", "--out", str(tmp_path / "b.json")]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(r"error: ONNX export and timing need the onnx extra \(\w+ is not installed\): "
                        r"pip install 'srnet\[onnx\]'\n", err), err
    assert not (tmp_path / "out").exists() and not (tmp_path / "b.json").exists()


@needs_onnx
def test_bench_times_onnx_runtime_beside_pytorch(tiny_dirs, tmp_path, capsys):
    import onnxruntime

    out = tmp_path / "bench.json"
    args = [str(tiny_dirs["bert"]), "--omp", "0.5", "--batch-sizes", "1", "2", "--lengths", "8",
            "--rounds", "2", "--warmup", "1", "--onnx", "--out", str(out)]
    assert main(["bench", *args]) == 0
    result = json.loads(out.read_text())
    labels = [str(tiny_dirs["bert"]), "omp 50% heads+neurons, shrunk", "omp 50% unstructured"]
    rows = result["rows"]
    assert [(r["model"], r["runtime"]) for r in rows[:7]] == [
        (label, runtime) for label in labels for runtime in ("torch", "onnxruntime")] + [
        ("omp 50% unstructured, torch CSR", "torch")]  # sparse CSR: no ONNX export
    assert [(r["batch"], r["length"]) for r in rows] == [(1, 8)] * 7 + [(2, 8)] * 7
    for group in (rows[:7], rows[7:]):
        dense = group[0]["latency_ms"]
        assert group[0]["speedup"] == 1.0
        assert all(r["speedup"] == pytest.approx(dense / r["latency_ms"]) for r in group)
    assert result["environment"]["packages"]["onnxruntime"] == onnxruntime.__version__
    assert result["onnxruntime"]["intra_op_threads"] == result["environment"]["torch_threads"]
    assert result["onnxruntime"]["graph_optimization"] == "ORT_ENABLE_ALL"
    printed = capsys.readouterr().out
    assert f"onnxruntime {onnxruntime.__version__}" in printed
    assert printed.splitlines()[4].split()[:2] == [str(tiny_dirs["bert"]), "onnxruntime"]


def weight_scales(graph) -> list[int]:
    """The number of elements of each weight-scale initializer of a quantized ONNX graph file."""
    return weight_scales_of(graph.read_bytes())


def weight_scales_of(data: bytes) -> list[int]:
    """:func:`weight_scales` of a graph's bytes."""
    import onnx

    initializers = onnx.load_from_string(data).graph.initializer
    return [int(np.prod(t.dims)) for t in initializers if t.name.endswith("_scale")]


@needs_onnx
@pytest.mark.parametrize(("shrink", "quantize", "scale"), [
    (False, "int8", "per tensor"), (True, "int8", "per tensor"),
    (True, "int8-per-channel", "per output channel")])
def test_int8_export_beside_the_fp32_graph_compared_and_on_the_card(
        tiny_dirs, tmp_path, capsys, shrink, quantize, scale):
    """``--onnx --quantize int8`` adds ``model.int8.onnx`` (ONNX Runtime's dynamic INT8, one weight
    scale per tensor; ``int8-per-channel``: one per output channel), compared with the FP32 graph on
    a probe batch; the mode and the comparison are recorded and stated on the model card, and the
    INT8 graph runs with the same inputs."""
    model = load(tiny_dirs["bert"])
    mask_file(model, tmp_path / "m.safetensors", granularity="head+neuron" if shrink else "unstructured")
    args = ["--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
            "--out", str(tmp_path / "out"), "--onnx", "--quantize", quantize,
            *(["--shrink"] if shrink else [])]
    assert main(["export", *args]) == 0
    assert "with model.onnx and model.int8.onnx" in capsys.readouterr().out
    info = json.loads((tmp_path / "out" / EXPORT_INFO_FILENAME).read_text())["onnx"]["int8"]
    assert info["file"] == "model.int8.onnx" and info["vs_fp32"]["probe"] == [64, 32]
    assert info["quantize"] == quantize and info["mode"] == f"dynamic (QInt8 weights, one scale {scale})"
    assert 0.9 <= info["vs_fp32"]["agreement"] <= 1.0 and 0 < info["vs_fp32"]["max_abs_diff"] < 0.1
    fp32, int8 = tmp_path / "out" / "model.onnx", tmp_path / "out" / "model.int8.onnx"
    assert int8.stat().st_size < fp32.stat().st_size / 2  # int8 weights
    scales = weight_scales(int8)
    assert scales and (max(scales) > 1) == (quantize == "int8-per-channel"), scales
    inputs = batch(model, 4, 9)
    assert np.abs(ort_logits(int8, inputs) - ort_logits(fp32, inputs)).max() < 0.1
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"`model.int8.onnx`: ONNX Runtime dynamic INT8, one weight scale {scale};" in card
    assert "argmax agreement" in card


@needs_onnx
def test_quantizing_only_matmul_leaves_the_embedding_tables_fp32(tiny_dirs, tmp_path):
    """``quantize_onnx(..., op_types=["MatMul"])`` quantizes the weight matrices and leaves the
    embedding lookups' tables FP32: those are the float initializers the full quantization removes."""
    import onnx

    from srnet.export.onnx import quantize_onnx

    model = load(tiny_dirs["bert"])
    mask_file(model, tmp_path / "m.safetensors")
    assert main(["export", "--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
                 "--out", str(tmp_path / "out"), "--onnx"]) == 0
    graph = (tmp_path / "out" / "model.onnx").read_bytes()

    def float_tables(data: bytes) -> set[str]:
        loaded = onnx.load_from_string(data).graph
        gathered = {n.input[0] for n in loaded.node if n.op_type == "Gather"}
        return {t.name for t in loaded.initializer
                if t.name in gathered and t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2}

    tables = float_tables(graph)
    assert len(tables) >= 2  # words and positions (and token types)
    everything = quantize_onnx(graph, "int8-per-channel")
    matmul = quantize_onnx(graph, "int8-per-channel", op_types=["MatMul"])
    assert float_tables(everything) == set() and float_tables(matmul) == tables
    assert max(weight_scales_of(matmul)) > 1  # the matrices, per output channel


@pytest.mark.parametrize(("flags", "message"), [
    (["--quantize", "int8"], "--quantize int8 quantizes the ONNX graph: add --onnx"),
    (["--onnx", "--quantize", "int4"], "--quantize must be one of ['int8', 'int8-per-channel'], got 'int4'"),
])
@pytest.mark.parametrize("command", ["export", "bench"])
def test_a_quantization_that_cannot_be_made_is_one_line_before_any_model_loads(
        tiny_dirs, tmp_path, capsys, monkeypatch, command, flags, message):
    from srnet.models import loading

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded before the quantization flags were checked")

    monkeypatch.setattr(loading, "load_classifier", no_model)
    monkeypatch.setattr(loading, "load_tokenizer", no_model)
    if command == "export":
        args = ["export", "--model", str(tiny_dirs["bert"]), "--masks", str(tmp_path / "m.safetensors"),
                "--out", str(tmp_path / "out"), *flags]
    else:
        args = ["bench", str(tiny_dirs["bert"]), "--out", str(tmp_path / "b.json"), *flags]
    capsys.readouterr()
    assert main(args) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "b.json").exists()


@needs_onnx
def test_bench_times_the_int8_graph_beside_fp32(tiny_dirs, tmp_path):
    out = tmp_path / "bench.json"
    args = [str(tiny_dirs["bert"]), "--batch-sizes", "2", "--lengths", "8", "--rounds", "1", "--warmup", "0",
            "--onnx", "--quantize", "int8", "--out", str(out)]
    assert main(["bench", *args]) == 0
    result = json.loads(out.read_text())
    assert [r["runtime"] for r in result["rows"]] == ["torch", "onnxruntime", "onnxruntime-int8"]
    assert result["onnxruntime"]["quantize"] == "int8"


@needs_onnx
def test_bench_times_only_the_runtimes_asked_for_beside_the_baseline(tiny_dirs, tmp_path):
    """``--runtimes onnx-int8``: the first model under torch (every ratio's baseline) and each model's
    INT8 graph; no FP32 graph and no other model under torch is timed."""
    out = tmp_path / "bench.json"
    args = [str(tiny_dirs["bert"]), "--omp", "0.5", "--batch-sizes", "2", "--lengths", "8", "--rounds", "1",
            "--warmup", "0", "--onnx", "--quantize", "int8", "--runtimes", "onnx-int8", "--out", str(out)]
    assert main(["bench", *args]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["runtime"] for r in rows] == ["torch", *["onnxruntime-int8"] * 3]  # the CSR variant: torch only
    assert [r["model"] for r in rows[2:]] == ["omp 50% heads+neurons, shrunk", "omp 50% unstructured"]
    assert rows[0]["model"] == rows[1]["model"] and rows[0]["speedup"] == 1.0


@needs_onnx
def test_a_run_evaluates_its_final_model_under_onnx_runtime_fp32_and_int8(tiny_dirs, tmp_path):
    """``evaluation.runtime``: the same run scored by PyTorch, by its ONNX graph (checked against
    PyTorch's logits) and by the dynamic INT8 graph (compared with FP32), each recorded in
    metrics.json; FP32 ONNX gives PyTorch's accuracies; the fingerprint changes only when set."""
    from conftest import tiny_recipe
    from srnet.config import recipe_from_dict

    base = tiny_recipe(tmp_path, tiny_dirs["bert"], "x", data={"train": None},
                       pruning={"method": "omp", "sparsity": 0.5})
    scores = {}
    for runtime in ("torch", "onnx", "onnx-int8", "onnx-int8-per-channel"):
        recipe = {**base, "name": runtime, "evaluation": {"runtime": runtime}}
        scores[runtime] = api.run(recipe).metrics
    assert scores["torch"].runtime is None
    assert scores["onnx"].runtime["check"]["max_abs_diff"] <= 1e-4
    int8 = scores["onnx-int8"].runtime["int8"]["vs_fp32"]
    assert int8["probe"] == [64, 32] and 0.9 <= int8["agreement"] <= 1.0
    assert [scores[r].runtime["int8"]["quantize"] for r in ("onnx-int8", "onnx-int8-per-channel")] == [
        "int8", "int8-per-channel"]
    accuracy = {r: scores[r].id["synthetic_dev"]["accuracy"] for r in scores}
    assert accuracy["onnx"] == accuracy["torch"]
    assert all(abs(accuracy[r] - accuracy["torch"]) < 0.1 for r in ("onnx-int8", "onnx-int8-per-channel"))
    fingerprints = {r: recipe_from_dict({**base, "evaluation": {"runtime": r}}).fingerprint()
                    for r in ("torch", "onnx")}
    assert recipe_from_dict(base).fingerprint() == fingerprints["torch"] != fingerprints["onnx"]


@needs_onnx
def test_an_attack_runs_against_the_onnx_and_int8_graphs_of_a_model(tmp_path, monkeypatch):
    """``evaluation.runtime`` also picks the graph ``srnet attack`` queries (ONNX Runtime answers
    the queries): FP32 ONNX gives PyTorch's outcomes, INT8 runs and is recorded in the summary."""
    from conftest import save_borderline_classifier
    from srnet.export.onnx import OnnxClassifier

    queried = []
    forward = OnnxClassifier.forward

    @functools.wraps(forward)  # srnet reads the signature to pick the inputs
    def counted(self, *args, **kwargs):
        queried.append(args[0].shape[0] if args else kwargs["input_ids"].shape[0])
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(OnnxClassifier, "forward", counted)

    sentences = [f"the {a} film was {b} and {c}" for a, b, c in zip(
        ["new", "old", "long", "short", "odd", "dull", "warm", "cold", "fine", "slow", "grand", "plain"],
        ["good", "bad", "fun", "sad", "rich", "thin", "bold", "calm", "dark", "wise", "kind", "cruel"],
        ["moving", "boring", "sharp", "messy", "clever", "flat", "tender", "loud", "lucid", "vague", "brave",
         "tired"], strict=True)]
    model = save_borderline_classifier(tmp_path / "victim", sentences)
    data = tmp_path / "dev.jsonl"
    rows = [json.dumps({"sentence": s, "label": i % 2}) for i, s in enumerate(sentences)]
    data.write_text("\n".join(rows) + "\n")
    recipe = {"task": "sentiment", "data": {"dev": {"path": str(data)}}}
    reports = {runtime: api.attack(str(model), recipe={**recipe, "evaluation": {"runtime": runtime}},
                                   attack="charswap", out=tmp_path / runtime)
               for runtime in ("torch", "onnx", "onnx-int8")}
    assert "runtime" not in reports["torch"].summary
    asked = sum(reports[r].summary["model_evaluations"] for r in ("onnx", "onnx-int8"))
    assert sum(queried) >= asked > 0  # the graphs answered the attacks' queries
    assert reports["onnx"].summary["runtime"]["check"]["max_abs_diff"] <= 1e-4
    assert reports["onnx-int8"].summary["runtime"]["int8"]["vs_fp32"]["agreement"] >= 0.5

    def outcomes(runtime: str) -> list[tuple]:
        rows = (tmp_path / runtime / "charswap.jsonl").read_text().splitlines()
        return [(r["result"], r["perturbed"]) for r in map(json.loads, rows)]

    assert outcomes("onnx") == outcomes("torch")
    assert reports["torch"].summary["successful"] > 0  # the attack did something to compare


@pytest.fixture(scope="module")
def shipped_export(tiny_dirs, tmp_path_factory):
    """A one-shot OMP run of the tiny BERT on synthetic NLI and its ``--onnx --quantize int8``
    export (labels as the task's, so the export is scored as it is), with the recipe to evaluate it."""
    from conftest import tiny_recipe

    root = tmp_path_factory.mktemp("shipped")
    recipe = tiny_recipe(root, tiny_dirs["bert"], "omp", data={"train": None},
                         pruning={"method": "omp", "sparsity": 0.5})
    api.run(recipe)
    export = root / "export"
    assert main(["export", "--masks", str(root / "omp" / "masks.safetensors"), "--out", str(export),
                 "--onnx", "--quantize", "int8"]) == 0
    evaluate = {**recipe, "pruning": {"method": "dense"}, "output_dir": str(root / "evals")}
    (root / "recipe.yaml").write_text(json.dumps(evaluate))
    return {"root": root, "export": export, "run": root / "omp", "recipe": evaluate}


def shipped_copy(shipped_export, tmp_path):
    """A copy of the shipped export to tamper with."""
    import shutil

    return shutil.copytree(shipped_export["export"], tmp_path / "export")


@needs_onnx
def test_an_export_records_the_sha256_of_each_file_it_ships(shipped_export):
    from srnet.io import file_sha256

    export = shipped_export["export"]
    digests = json.loads((export / EXPORT_INFO_FILENAME).read_text())["sha256"]
    shipped = {p.name for p in export.iterdir()} - {EXPORT_INFO_FILENAME, "README.md"}
    assert {"model.safetensors", "model.onnx", "model.int8.onnx", "config.json"} <= shipped
    assert digests == {name: file_sha256(export / name) for name in shipped}


def _delete(path):
    path.unlink()


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _edit_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


CHANGED = (r": SHA-256 [0-9a-f]{16}\.\.\. differs from the [0-9a-f]{16}\.\.\. that srnet_export\.json "
           r"records \(changed after export\); re-export the model")


@needs_onnx
@pytest.mark.parametrize(("fault", "name", "message"), [
    (_delete, "model.onnx", r": missing, though srnet_export\.json lists it; re-export the model"),
    (_truncate, "model.int8.onnx", CHANGED),
    (_edit_a_byte, "model.onnx", CHANGED),
], ids=["deleted", "truncated", "byte-edited"])
@pytest.mark.parametrize("command", ["evaluate", "attack", "bench"])
def test_a_shipped_graph_that_is_missing_or_changed_is_one_line_naming_it(
        shipped_export, tmp_path, capsys, fault, name, message, command):
    """``evaluate``, ``attack`` and ``bench`` run the graphs an export ships: one that was deleted,
    truncated or edited after export (its SHA-256 differs from srnet_export.json's) is refused
    in one line naming the file, before anything is scored or timed."""
    export = shipped_copy(shipped_export, tmp_path)
    fault(export / name)
    recipe = str(shipped_export["root"] / "recipe.yaml")
    args = {
        "evaluate": ["evaluate", str(export), "--recipe", recipe, "--output-dir", str(tmp_path / "runs"),
                     "--set", "evaluation.runtime=onnx-int8"],
        "attack": ["attack", str(export), "--recipe", recipe, "--attack", "charswap", "--n", "2",
                   "--out", str(tmp_path / "attack"), "--set", "evaluation.runtime=onnx-int8"],
        "bench": ["bench", str(export), "--onnx", "--quantize", "int8", "--batch-sizes", "1",
                  "--lengths", "8", "--rounds", "1", "--warmup", "0", "--out", str(tmp_path / "bench.json")],
    }[command]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(f"error: {re.escape(str(export / name))}{message}\n", err), err
    assert not any((tmp_path / out).exists() for out in ("runs/eval_export", "attack", "bench.json"))


@needs_onnx
def test_an_intact_export_is_scored_and_timed_by_its_shipped_graphs(shipped_export, tmp_path):
    """The evaluation of an intact export scores its shipped ``model.int8.onnx`` (recorded with its
    SHA-256) and gives the logits of the graph built in memory from its weights -- what a run
    directory, which ships no graph, is scored by and says so; ``bench --onnx`` times the shipped files."""
    from srnet.export import load_model
    from srnet.export.onnx import runtime_graphs, runtime_model
    from srnet.io import file_sha256

    export, recipe = shipped_export["export"], shipped_export["recipe"]
    setting = {"evaluation": {"runtime": "onnx-int8"}, "output_dir": str(tmp_path)}
    shipped = api.evaluate(str(export), {**recipe, **setting, "name": "export"}).metrics.runtime
    built = api.evaluate(str(shipped_export["run"]), {**recipe, **setting, "name": "run"}).metrics.runtime
    int8 = export / "model.int8.onnx"
    assert shipped["graph"] == {"source": "shipped", "file": str(int8), "sha256": file_sha256(int8),
                                "sha256_checked": True}
    assert shipped["int8"]["fp32_graph"]["file"] == str(export / "model.onnx")
    assert built["graph"]["source"].startswith("built in memory")
    scored = [(tmp_path / name / "predictions" / "synthetic_dev.jsonl").read_text()
              for name in ("export", "run")]
    assert scored[0] == scored[1]

    model = load_model(export)
    inputs = batch(model, 4, 9)
    for runtime in ("onnx", "onnx-int8"):
        from_file, _ = runtime_model(model, runtime, runtime_graphs(export, runtime))
        in_memory, _ = runtime_model(model, runtime)
        np.testing.assert_allclose(from_file(**inputs).logits.numpy(), in_memory(**inputs).logits.numpy(),
                                   rtol=0, atol=1e-6)

    timed = api.bench([str(export)], batch_sizes=[1], lengths=[8], rounds=1, warmup=0, onnx=True,
                      quantize="int8")["onnxruntime"]["graphs"]
    assert [(g["runtime"], g["file"], g["sha256"]) for g in timed] == [
        ("onnxruntime", str(export / "model.onnx"), file_sha256(export / "model.onnx")),
        ("onnxruntime-int8", str(int8), file_sha256(int8))]


@needs_onnx
def test_an_export_older_than_its_checksums_is_scored_with_one_warning(shipped_export, tmp_path, caplog):
    """An export written before srnet recorded SHA-256s: its shipped graph is scored unchecked, with
    one warning naming the file, and the record says the digest was not checked."""
    export = shipped_copy(shipped_export, tmp_path)
    info = json.loads((export / EXPORT_INFO_FILENAME).read_text())
    del info["sha256"]
    (export / EXPORT_INFO_FILENAME).write_text(json.dumps(info))
    recipe = {**shipped_export["recipe"], "name": "old", "evaluation": {"runtime": "onnx"},
              "output_dir": str(tmp_path / "runs")}
    with caplog.at_level("WARNING", logger="srnet"):
        runtime = api.evaluate(str(export), recipe).metrics.runtime
    assert runtime["graph"]["file"] == str(export / "model.onnx") and not runtime["graph"]["sha256_checked"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [f"{export / 'model.onnx'}: srnet_export.json records no SHA-256 (an export older than "
                      "srnet's checksums); using the file unchecked (re-export to record one)"]


@needs_onnx
def test_an_unloadable_graph_of_an_export_without_checksums_is_one_line(shipped_export, tmp_path, capsys):
    """With no SHA-256 to check (an older export), a truncated shipped graph still fails in one
    line naming it: ONNX Runtime cannot load it."""
    export = shipped_copy(shipped_export, tmp_path)
    info = json.loads((export / EXPORT_INFO_FILENAME).read_text())
    del info["sha256"]
    (export / EXPORT_INFO_FILENAME).write_text(json.dumps(info))
    _truncate(export / "model.onnx")
    capsys.readouterr()
    assert main(["bench", str(export), "--onnx", "--batch-sizes", "1", "--lengths", "8"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("using the file unchecked (re-export to record one)")
    assert len(err) == 2, err
    assert err[1].startswith(f"error: {export / 'model.onnx'}: ONNX Runtime cannot load it (")


def _drop_record(export):
    (export / EXPORT_INFO_FILENAME).unlink()


def _onnx_null(export):
    info = json.loads((export / EXPORT_INFO_FILENAME).read_text())
    (export / EXPORT_INFO_FILENAME).write_text(json.dumps({**info, "onnx": None}))


def _onnx_text(export):
    info = json.loads((export / EXPORT_INFO_FILENAME).read_text())
    (export / EXPORT_INFO_FILENAME).write_text(json.dumps({**info, "onnx": "yes"}))


@needs_onnx
@pytest.mark.parametrize(("fault", "message"), [
    (_drop_record, r"/model\.onnx: shipped without the srnet_export\.json that records its SHA-256, so it "
                   r"cannot be checked; re-export the model"),
    (_onnx_null, r"/model\.onnx: not listed in srnet_export\.json, so it cannot be checked; re-export the "
                 r"model"),
    (_onnx_text, r"/srnet_export\.json: 'onnx' must be an object or null, got 'yes'; re-export the model"),
], ids=["record-deleted", "onnx-null", "onnx-text"])
def test_a_shipped_graph_without_a_record_to_check_it_is_one_line_never_a_rebuild(
        shipped_export, tmp_path, capsys, fault, message):
    """``evaluation.runtime=onnx`` on an export whose graphs its srnet_export.json does not list
    (deleted, ``"onnx": null``) or lists wrongly (``"onnx": "yes"``) is refused in one line; it
    never builds a graph in memory and ignores the (maybe tampered) shipped file."""
    export = shipped_copy(shipped_export, tmp_path)
    fault(export)
    recipe = str(shipped_export["root"] / "recipe.yaml")
    capsys.readouterr()
    assert main(["evaluate", str(export), "--recipe", recipe, "--output-dir", str(tmp_path / "runs"),
                 "--set", "evaluation.runtime=onnx-int8"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(f"error: .*{message}\n", err), err
    assert not (tmp_path / "runs" / "eval_export").exists()


@needs_onnx
def test_an_export_scored_per_channel_quantizes_its_shipped_fp32_graph_with_one_warning(
        shipped_export, tmp_path, caplog):
    """``onnx-int8-per-channel`` on an export that ships a per-tensor ``model.int8.onnx``: the
    shipped file is not what was asked for, so the checked ``model.onnx`` is quantized per channel
    in memory (one warning naming the file, recorded as built in memory) -- the graph a per-channel
    re-export ships, scored the same; ``bench`` times that graph under its own row name."""
    from srnet.export import load_model
    from srnet.export.onnx import runtime_graphs, runtime_model
    from srnet.io import file_sha256

    export, recipe = shipped_export["export"], shipped_export["recipe"]
    setting = {"evaluation": {"runtime": "onnx-int8-per-channel"}, "output_dir": str(tmp_path), "name": "pc"}
    with caplog.at_level(logging.WARNING, logger="srnet.export.onnx"):
        runtime = api.evaluate(str(export), {**recipe, **setting}).metrics.runtime
    assert [r.getMessage() for r in caplog.records] == [
        f"{export / 'model.int8.onnx'}: quantized as 'int8', not the 'int8-per-channel' asked for; "
        "quantizing the shipped model.onnx in memory instead (re-export with --quantize int8-per-channel "
        "to ship that graph)"]
    assert runtime["runtime"] == "onnx-int8-per-channel"
    assert runtime["graph"]["source"].startswith("built in memory")
    assert runtime["int8"]["quantize"] == "int8-per-channel"
    assert runtime["int8"]["fp32_graph"]["sha256"] == file_sha256(export / "model.onnx")

    resaved = tmp_path / "resaved"
    assert main(["export", "--masks", str(shipped_export["run"] / "masks.safetensors"), "--out", str(resaved),
                 "--onnx", "--quantize", "int8-per-channel"]) == 0
    model = load_model(export)
    inputs = batch(model, 4, 9)
    per_channel = "onnx-int8-per-channel"
    in_memory, _ = runtime_model(model, per_channel, runtime_graphs(export, per_channel))
    shipped, record = runtime_model(model, per_channel, runtime_graphs(resaved, per_channel))
    assert record["graph"]["file"] == str(resaved / "model.int8.onnx") and record["graph"]["sha256_checked"]
    np.testing.assert_allclose(shipped(**inputs).logits.numpy(), in_memory(**inputs).logits.numpy(),
                               rtol=0, atol=1e-6)
    per_tensor, _ = runtime_model(model, "onnx-int8", runtime_graphs(export, "onnx-int8"))
    assert not np.allclose(per_tensor(**inputs).logits.numpy(), in_memory(**inputs).logits.numpy(),
                           rtol=0, atol=1e-6)

    rows = api.bench([str(resaved)], batch_sizes=[1], lengths=[8], rounds=1, warmup=0, onnx=True,
                     quantize="int8-per-channel")["rows"]
    assert [r["runtime"] for r in rows] == ["torch", "onnxruntime", "onnxruntime-int8-per-channel"]


@needs_onnx
@pytest.mark.parametrize("family", FAMILIES)
def test_the_graph_is_traced_with_eager_attention_and_the_model_keeps_its_own(family, tiny_dirs):
    """``onnx_bytes`` traces eager attention (ONNX Runtime runs it faster than the sdpa trace):
    another graph than the model's own attention gives, as exact, and the model runs sdpa after."""
    from srnet.export.onnx import check_onnx, onnx_bytes, ort_session, traced_attention

    model = load(tiny_dirs[family])
    assert model.config._attn_implementation == "sdpa"
    eager, own = onnx_bytes(model), onnx_bytes(model, attention=None)
    assert eager != own
    assert (traced_attention(model), traced_attention(model, None)) == ("eager", "sdpa")
    assert model.config._attn_implementation == "sdpa"
    assert check_onnx(model, ort_session(eager)) < 1e-4
    assert check_onnx(model, ort_session(own)) < 1e-4
    inputs = batch(model, 4, 12)
    with torch.no_grad():
        want = model(**inputs).logits.numpy()
    np.testing.assert_allclose(ort_logits(eager, inputs), want, atol=1e-4)
