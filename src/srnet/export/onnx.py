"""ONNX export of a classifier (dense, masked-and-baked or shrunk) and ONNX Runtime sessions.

The model is traced with PyTorch's TorchScript-based exporter (``torch.onnx.export(...,
dynamo=False)``): it needs only ``onnx`` (no ``onnxscript``), works offline, and traces the
shrunk models as they are (their attention reshapes with ``view(..., -1, head_size)``, so the
per-layer head counts are baked into the weights' shapes, not into the graph).  The trace uses the
model's eager attention (matmul, softmax, matmul; :func:`attention_as`), whatever the model runs
with in PyTorch: ONNX Runtime runs that graph faster than the traced ``sdpa`` one (per-channel
INT8 of the 30% MNLI student, one thread, Intel Xeon with AVX512-VNNI: 1.19x at batch 32 x 128,
1.11x at batch 1; ``benchmarks/bench_attention_export.py``).  Inputs are
``input_ids``, ``attention_mask`` and, for models with more than one token type (BERT, ELECTRA),
``token_type_ids``, all int64 ``[batch, sequence]`` with both axes dynamic; the output is
``logits`` ``[batch, num_labels]``.

The trace runs on a batch with a padded row, so the attention-mask path is in the graph; every
export is then checked: ONNX Runtime's logits on a probe batch of another batch size and length
(one padded row) must match PyTorch's within :data:`ATOL`, or the export is refused.

An export's graphs are what evaluation and bench run when the model is that export
(:func:`shipped_graphs`): each file is read once, its SHA-256 checked against the one
``srnet_export.json`` records, and that same byte string is what ONNX Runtime loads; any other
model's graph is traced in memory.  Records say which (:meth:`GraphFile.record`).  Every loader of
an export checks all its files first (:func:`verify_export`).

``onnx`` and ``onnxruntime`` are the optional ``srnet[onnx]`` extra; :func:`require_onnx` turns
their absence into one :class:`SrnetError` line.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import io
import json
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.export.bake import DIGESTS_KEY, EXPORT_INFO_FILENAME, WEIGHTS_FILENAME
from srnet.export.runtimes import QUANTIZE_MODES, get_runtime
from srnet.io import file_sha256, first_line

log = logging.getLogger(__name__)

ONNX_FILENAME = "model.onnx"
INT8_FILENAME = "model.int8.onnx"
QUANT_PROBE_SHAPE = (64, 32)  # batch, length of the INT8-vs-FP32 comparison
OPSET = 17
ATOL = 1e-4
TRACE_SHAPE = (2, 8)  # batch, length of the traced example
TRACED_ATTENTION = "eager"
"""The attention every export traces (:func:`attention_as`), whatever the model runs in PyTorch."""
PROBE_SHAPE = (3, 11)  # batch, length of the check: other sizes than the trace, so the axes are dynamic


def require_onnx() -> Any:
    """The ``onnxruntime`` module, once ``onnx`` and ``onnxruntime`` are both importable."""
    try:
        import onnx  # noqa: F401  (the TorchScript exporter serialises through it)
        import onnxruntime
    except ImportError as exc:
        raise SrnetError(
            f"ONNX export and timing need the onnx extra ({exc.name or 'onnx'} is not installed): "
            "pip install 'srnet[onnx]'"
        ) from None
    return onnxruntime


def input_names(model: nn.Module) -> list[str]:
    """``input_ids``, ``attention_mask`` and ``token_type_ids`` when the model has several types."""
    names = ["input_ids", "attention_mask"]
    accepts = "token_type_ids" in inspect.signature(model.forward).parameters
    if accepts and int(getattr(model.config, "type_vocab_size", 0) or 0) > 1:
        names.append("token_type_ids")
    return names


class _Logits(nn.Module):
    """Positional inputs in ``names`` order -> logits (what the exporter traces)."""

    def __init__(self, model: nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.names = list(names)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True))).logits


def example_inputs(model: nn.Module, batch: int, length: int, seed: int = 0,
                   pad: bool = True) -> dict[str, torch.Tensor]:
    """Random token ids (from id 1000 up, like ``srnet bench``); with ``pad``, the first row's
    second half is padding.  ``token_type_ids`` (when the model takes them) are the second half 1."""
    vocab = int(model.config.vocab_size)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(min(1000, vocab - 1), vocab, (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    if pad:
        mask[0, length // 2:] = 0
    out = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in input_names(model):
        types = torch.zeros(batch, length, dtype=torch.long)
        types[:, length // 2:] = 1
        out["token_type_ids"] = types
    return out


@contextmanager
def attention_as(model: nn.Module, implementation: str | None) -> Iterator[None]:
    """Within the block, ``model`` computes attention with ``implementation`` (``"eager"``:
    matmul, softmax, matmul); its own (``sdpa`` by default) is restored after.  None, or a model
    without a settable implementation (no ``set_attn_implementation``), is left as it is."""
    before = getattr(getattr(model, "config", None), "_attn_implementation", None)
    target = traced_attention(model, implementation)
    if target == before:
        yield
        return
    model.set_attn_implementation(target)
    try:
        yield
    finally:
        model.set_attn_implementation(before)


def traced_attention(model: nn.Module, attention: str | None = TRACED_ATTENTION) -> str | None:
    """The attention implementation :func:`onnx_bytes` traces ``model`` with (what
    ``srnet_export.json`` records as ``attention``): ``attention`` where the model can switch to
    it (:func:`attention_as`), else the model's own; None when the model names none."""
    own = getattr(getattr(model, "config", None), "_attn_implementation", None)
    switchable = attention is not None and own is not None and hasattr(model, "set_attn_implementation")
    return attention if switchable else own


def onnx_bytes(model: nn.Module, attention: str | None = TRACED_ATTENTION) -> bytes:
    """``model`` (a sequence classifier) as an ONNX graph, traced in eval mode with its
    ``attention`` implementation (:func:`attention_as`; None: the one it runs with)."""
    require_onnx()
    names = input_names(model)
    was_training = model.training
    wrapper = _Logits(model, names).eval()
    trace = example_inputs(model, *TRACE_SHAPE, seed=1)
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings(), torch.no_grad(), attention_as(model, attention):
            warnings.simplefilter("ignore")  # the exporter's deprecation and tracer notes
            torch.onnx.export(
                wrapper, tuple(trace[n] for n in names), buffer, input_names=names,
                output_names=["logits"], dynamic_axes={**axes, "logits": {0: "batch"}},
                opset_version=OPSET, do_constant_folding=True, dynamo=False,
            )
    except Exception as exc:  # the exporter's own errors: an op without ONNX form, a trace failure
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SrnetError(f"ONNX export of the {type(model).__name__} failed: {first}") from exc
    finally:
        model.train(was_training)
    return buffer.getvalue()


def ort_session(model: bytes | str | Path, threads: int | None = None):
    """An ONNX Runtime CPU session: ``threads`` intra-op threads (default: torch's), one
    inter-op thread, all graph optimisations, no spin-waiting (idle ORT threads would otherwise
    take cores from the PyTorch model timed next)."""
    ort = require_onnx()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def ort_feeds(session, inputs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """``inputs`` as the session's int64 arrays; a ``token_type_ids`` input it needs but
    ``inputs`` lacks is all zeros (what the PyTorch model assumes)."""
    feeds = {}
    for arg in session.get_inputs():
        if arg.name in inputs:
            feeds[arg.name] = inputs[arg.name].cpu().numpy().astype(np.int64)
        elif arg.name == "token_type_ids":
            feeds[arg.name] = np.zeros(tuple(inputs["input_ids"].shape), dtype=np.int64)
        else:
            raise SrnetError(f"the ONNX model needs input '{arg.name}', which srnet does not provide")
    return feeds


def check_onnx(model: nn.Module, session, atol: float = ATOL, shipped: Path | None = None) -> float:
    """Largest |ORT - PyTorch| logit on a probe batch; :class:`SrnetError` above ``atol`` (naming
    the ``shipped`` graph file, when the session runs one)."""
    probe = example_inputs(model, *PROBE_SHAPE, seed=2)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            expected = model(**probe).logits.float().cpu().numpy()
    finally:
        model.train(was_training)
    got = session.run(["logits"], ort_feeds(session, probe))[0]
    diff = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")
    if not diff <= atol:
        where = f"{shipped}: " if shipped is not None else ""
        weights = f" (the export's {WEIGHTS_FILENAME})" if shipped is not None else ""
        verdict = "the shipped graph is refused" if shipped is not None else "the ONNX export is refused"
        raise SrnetError(
            f"{where}ONNX Runtime's logits differ from PyTorch's{weights} by {diff:.3g} (tolerance "
            f"{atol:g}) on a {PROBE_SHAPE[0]} x {PROBE_SHAPE[1]} probe batch; {verdict}"
        )
    return diff


def check_quantize(quantize: str | None, onnx: bool) -> None:
    """One line for a quantization that cannot be made: an unknown mode, or no ONNX graph."""
    if quantize is None:
        return
    if quantize not in QUANTIZE_MODES:
        raise SrnetError(f"--quantize must be one of {list(QUANTIZE_MODES)}, got '{quantize}'")
    if not onnx:
        raise SrnetError(f"--quantize {quantize} quantizes the ONNX graph: add --onnx")


def quantize_onnx(graph: bytes, mode: str = "int8", op_types: list[str] | None = None) -> bytes:
    """``graph`` with ONNX Runtime's dynamic INT8 quantization (``mode``: :data:`QUANTIZE_MODES`:
    one weight scale per tensor, or per output channel), of every op type it supports or only
    ``op_types`` (e.g. ``["MatMul"]``: the embedding tables stay FP32)."""
    import logging
    import tempfile

    check_quantize(mode, onnx=True)
    require_onnx()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "fp32.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(graph)
        quiet = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process, on the root logger
        try:
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                             per_channel=mode == "int8-per-channel", op_types_to_quantize=op_types)
        finally:
            logging.getLogger().setLevel(quiet)
        return target.read_bytes()


def compare_sessions(model: nn.Module, reference, candidate) -> dict[str, Any]:
    """``candidate``'s logits against ``reference``'s (two ONNX Runtime sessions of ``model``) on a
    seeded probe batch of random tokens (one padded row): the largest difference and the share of
    rows whose argmax agrees."""
    probe = example_inputs(model, *QUANT_PROBE_SHAPE, seed=3)
    expected = reference.run(["logits"], ort_feeds(reference, probe))[0]
    got = candidate.run(["logits"], ort_feeds(candidate, probe))[0]
    return {"probe": list(QUANT_PROBE_SHAPE), "max_abs_diff": float(np.abs(got - expected).max()),
            "agreement": float((got.argmax(-1) == expected.argmax(-1)).mean())}


@dataclass(frozen=True)
class GraphFile:
    """An ONNX graph's bytes and where they come from: a file an srnet export ships (``path``, its
    SHA-256, whether ``srnet_export.json`` recorded that digest) or, without ``path``, a graph
    srnet built in memory from the PyTorch model."""

    data: bytes
    path: Path | None = None
    sha256: str | None = None
    checked: bool = False

    def record(self) -> dict[str, Any]:
        """What srnet records of the graph that scored or was timed."""
        if self.path is None:
            return {"source": "built in memory (the model is not an export shipping this graph)"}
        return {"source": "shipped", "file": str(self.path), "sha256": self.sha256,
                "sha256_checked": self.checked}


def shipped_graphs(model: str | Path | None, quantize: str | None = None) -> dict[str, GraphFile]:
    """The graphs the srnet export folder ``model`` ships (``model.onnx`` and, with ``quantize``,
    ``model.int8.onnx`` when it was quantized that way: else the caller quantizes the shipped
    ``model.onnx`` in memory, after one warning), by file name, each read once and checked against
    the SHA-256 that its
    ``srnet_export.json`` records: a listed file that is missing or differs is one
    :class:`SrnetError` line naming it; an export written before srnet recorded digests is read
    unchecked, with one warning.  Empty when ``model`` is not an export (a hub id, ``default``, a
    run directory) or ships no graph: the caller builds one in memory.  A folder holding a graph
    that no ``srnet_export.json`` lists (the record deleted, or ``"onnx": null``) is one line: its
    graph cannot be checked, and a graph built in memory would not be the file that ships."""
    folder = Path(model).expanduser() if model is not None else None
    if folder is None or not folder.is_dir():
        return {}
    graphs = [name for name in (ONNX_FILENAME, INT8_FILENAME) if (folder / name).is_file()]
    if not (folder / EXPORT_INFO_FILENAME).is_file():
        if graphs:
            raise SrnetError(f"{folder / graphs[0]}: shipped without the {EXPORT_INFO_FILENAME} that records "
                             "its SHA-256, so it cannot be checked; re-export the model")
        return {}
    info = _export_info(folder)
    onnx = info.get("onnx")
    if onnx is not None and not isinstance(onnx, dict):
        raise SrnetError(f"{folder / EXPORT_INFO_FILENAME}: 'onnx' must be an object or null, got "
                         f"{onnx!r}; re-export the model")
    listed = [ONNX_FILENAME] if onnx else []
    int8 = onnx.get("int8") if listed and quantize is not None else None
    if int8 and _int8_mode_matches(folder, int8, quantize):
        listed.append(INT8_FILENAME)
    unlisted = [name for name in graphs if name not in listed and not (name == INT8_FILENAME and onnx
                                                                       and onnx.get("int8"))]
    if unlisted:
        raise SrnetError(f"{folder / unlisted[0]}: not listed in {EXPORT_INFO_FILENAME}, so it cannot be "
                         "checked; re-export the model")
    return {name: _read_shipped(folder, name, info) for name in listed}


def _int8_mode_matches(folder: Path, int8: Any, quantize: str) -> bool:
    """Whether the shipped INT8 graph was quantized as ``quantize`` asks (an export older than the
    per-channel mode records no mode: it is ``int8``, one scale per tensor).  When it was not, one
    warning: the checked ``model.onnx`` is quantized in memory instead, and recorded as such."""
    shipped = int8.get("quantize", "int8") if isinstance(int8, dict) else None
    if shipped == quantize:
        return True
    log.warning("%s: quantized as %r, not the %r asked for; quantizing the shipped %s in memory instead "
                "(re-export with --quantize %s to ship that graph)", folder / INT8_FILENAME, shipped,
                quantize, ONNX_FILENAME, quantize)
    return False


def _export_info(folder: Path) -> dict[str, Any]:
    """``folder``'s ``srnet_export.json``, or one line naming it when it is not a JSON object."""
    path = folder / EXPORT_INFO_FILENAME
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SrnetError(f"{path}: unreadable ({first_line(exc)})") from None
    if not isinstance(info, dict):
        raise SrnetError(f"{path}: not a JSON object")
    return info


def _read_shipped(folder: Path, name: str, info: Mapping[str, Any]) -> GraphFile:
    """``folder/name``, its bytes checked against ``info``'s SHA-256 of it (see :func:`shipped_graphs`)."""
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError:
        raise SrnetError(_missing(path)) from None
    digest = hashlib.sha256(data).hexdigest()
    if DIGESTS_KEY not in info:
        log.warning("%s: %s records no SHA-256 (an export older than srnet's checksums); using the "
                    "file unchecked (re-export to record one)", path, EXPORT_INFO_FILENAME)
        return GraphFile(data, path, digest)
    expected = recorded_digests(info, folder).get(name)
    if digest != expected:
        raise SrnetError(_changed(path, digest, str(expected)))
    return GraphFile(data, path, digest, checked=True)


def _missing(path: Path) -> str:
    """The line for a file the record lists that is not there."""
    return f"{path}: missing, though {EXPORT_INFO_FILENAME} lists it; re-export the model"


def _changed(path: Path, digest: str, expected: str) -> str:
    """The line for a file whose SHA-256 is not the recorded one."""
    return (f"{path}: SHA-256 {digest[:16]}... differs from the {expected[:16]}... that "
            f"{EXPORT_INFO_FILENAME} records (changed after export); re-export the model")


def recorded_digests(info: Mapping[str, Any], folder: Path) -> dict[str, str]:
    """The file -> SHA-256 map an ``srnet_export.json`` records (plain names of files beside it);
    one line when it is malformed."""
    digests = info.get(DIGESTS_KEY) or {}
    if not isinstance(digests, dict) or not all(isinstance(v, str) and Path(k).name == k
                                                for k, v in digests.items()):
        raise SrnetError(f"{folder / EXPORT_INFO_FILENAME}: '{DIGESTS_KEY}' must map file names to "
                         "SHA-256 strings; re-export the model")
    return digests


def verify_export(folder: str | Path) -> None:
    """Check the srnet export ``folder`` before anything reads it: each file its
    ``srnet_export.json`` lists must be there with the SHA-256 recorded (else one line naming it);
    a file the record does not list (an export older than that digest) is not checked.  An srnet
    export that lost its record is refused (:func:`export_marker`); a plain Hugging Face folder, a
    hub id or ``default`` has nothing to check."""
    folder = Path(folder).expanduser()
    if not (folder / EXPORT_INFO_FILENAME).is_file():
        marker = export_marker(folder)
        if marker is not None:
            raise SrnetError(f"{folder}: an srnet export ({marker}) without its {EXPORT_INFO_FILENAME} "
                             "(its digests); re-export it or restore the file")
        return
    for name, expected in recorded_digests(_export_info(folder), folder).items():
        path = folder / name
        if not path.is_file():
            raise SrnetError(_missing(path))
        digest = file_sha256(path)
        if digest != expected:
            raise SrnetError(_changed(path, digest, expected))


def export_marker(folder: Path) -> str | None:
    """What marks ``folder``, a model folder without ``srnet_export.json``, as an srnet export, or
    None: srnet's modeling file or INT8 graph beside its ``config.json``, or a ``config.json`` that
    only srnet's shrinking writes (per-layer shapes, an ``auto_map`` naming ``modeling_srnet``)."""
    from srnet.export.shrink import MODELING_FILENAME, SHAPES_KEY

    config = folder / "config.json"
    if not config.is_file():
        return None
    for name in (MODELING_FILENAME, INT8_FILENAME):
        if (folder / name).is_file():
            return f"it ships {name}"
    try:
        fields = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # not srnet's to judge: transformers reports an unreadable config
    if not isinstance(fields, dict):
        return None
    if SHAPES_KEY in fields:
        return f"its config.json has {SHAPES_KEY}"
    if Path(MODELING_FILENAME).stem in str(fields.get("auto_map", "")):
        return f"its config.json's auto_map names {Path(MODELING_FILENAME).stem}"
    return None


def graph_session(graph: GraphFile, threads: int | None = None):
    """An ONNX Runtime session of ``graph``; a shipped file ONNX Runtime cannot load is one line."""
    try:
        return ort_session(graph.data, threads)
    except Exception as exc:  # onnxruntime's own errors (InvalidProtobuf, Fail): no common base
        if graph.path is None:
            raise
        raise SrnetError(f"{graph.path}: ONNX Runtime cannot load it ({first_line(exc, 200)})") from exc


@dataclass
class CheckedGraph:
    """A model's ONNX graph with its session, checked against PyTorch, and optionally its INT8 graph."""

    graph: GraphFile
    session: Any
    check: dict[str, Any]
    """What srnet records of the check: probe shape, largest logit difference, tolerance."""
    int8: GraphFile | None = None
    int8_session: Any = None
    quantize: str | None = None
    """The INT8 graph's :data:`QUANTIZE_MODES` entry."""

    def int8_record(self, model: nn.Module) -> dict[str, Any]:
        """What srnet records of the INT8 graph: its mode and its logits against the FP32 graph's."""
        return {"quantize": self.quantize, "mode": QUANTIZE_MODES[self.quantize],
                "vs_fp32": compare_sessions(model, self.session, self.int8_session)}


def checked_graph(model: nn.Module, quantize: str | None = None, threads: int | None = None,
                  shipped: Mapping[str, GraphFile] | None = None) -> CheckedGraph:
    """``model`` (in eval mode, on the CPU) as an ONNX graph and an ONNX Runtime session whose
    logits match PyTorch's (:func:`check_onnx`), with its ``quantize`` graph and session when asked:
    what export, evaluation and bench all start from.  A graph in ``shipped`` (by file name:
    :func:`shipped_graphs`) is used as it is; any other is built from ``model``."""
    shipped = shipped or {}
    fp32 = shipped.get(ONNX_FILENAME) or GraphFile(onnx_bytes(model))
    session = graph_session(fp32, threads)
    check = {"probe": list(PROBE_SHAPE), "max_abs_diff": check_onnx(model, session, shipped=fp32.path),
             "atol": ATOL}
    checked = CheckedGraph(fp32, session, check)
    if quantize is not None:
        checked.int8 = shipped.get(INT8_FILENAME) or GraphFile(quantize_onnx(fp32.data, quantize))
        checked.int8_session = graph_session(checked.int8, threads)
        checked.quantize = quantize
    return checked


def export_onnx(model: nn.Module, path: str | Path, quantize: str | None = None) -> dict[str, Any]:
    """Write ``model`` to ``path`` as ONNX after checking ONNX Runtime's logits against
    PyTorch's, and with ``quantize``, its INT8 graph beside it (:data:`INT8_FILENAME`, compared with
    the FP32 graph: :func:`compare_sessions`); returns what ``srnet_export.json`` records."""
    ort = require_onnx()
    checked = checked_graph(model, quantize)
    Path(path).write_bytes(checked.graph.data)
    info = {"file": Path(path).name, "opset": OPSET, "inputs": input_names(model), "outputs": ["logits"],
            "dynamic_axes": ["batch", "sequence"], "attention": traced_attention(model),
            "onnxruntime": ort.__version__, "check": checked.check}
    if checked.int8 is not None:
        target = Path(path).with_name(INT8_FILENAME)
        target.write_bytes(checked.int8.data)
        info["int8"] = {"file": target.name, **checked.int8_record(model)}
    return info


class OnnxClassifier(nn.Module):
    """A classifier's ONNX Runtime session behind the call srnet's prediction code makes
    (``model(**inputs).logits``): CPU, inference only."""

    def __init__(self, session, config) -> None:
        super().__init__()
        self.session = session
        self.config = config
        self.anchor = nn.Parameter(torch.zeros(0), requires_grad=False)  # the device inputs go to

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None):
        from transformers.modeling_outputs import SequenceClassifierOutput

        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        logits = self.session.run(["logits"], ort_feeds(self.session, inputs))[0]
        return SequenceClassifierOutput(logits=torch.from_numpy(logits))


def runtime_graphs(model: str | Path, runtime: str) -> dict[str, GraphFile]:
    """The graphs ``evaluation.runtime`` scores that the export ``model`` ships (checked:
    :func:`shipped_graphs`); none for ``torch``, or a model that is not such an export."""
    row = get_runtime(runtime)
    return shipped_graphs(model, row.quantize) if row.needs_onnx else {}


def runtime_model(model: nn.Module, runtime: str,
                  shipped: Mapping[str, GraphFile] | None = None) -> tuple[nn.Module, dict[str, Any] | None]:
    """``model`` as ``evaluation.runtime`` runs it (``torch``; ``onnx``: its ONNX graph under ONNX
    Runtime; ``onnx-int8``, ``onnx-int8-per-channel``: that graph with dynamic INT8), and what
    metrics.json records of it: the ONNX graph's check against PyTorch, the ``graph`` that scored
    (a ``shipped`` file and its SHA-256, or built in memory) and, for the INT8 runtimes, the INT8
    graph against the FP32 one."""
    row = get_runtime(runtime)
    if not row.needs_onnx:
        return model, None
    ort = require_onnx()
    model = copy.deepcopy(model).cpu().eval()  # the run's own model stays where it is
    checked = checked_graph(model, row.quantize, shipped=shipped)
    info: dict[str, Any] = {"runtime": runtime, "onnxruntime": ort.__version__, "opset": OPSET,
                            "check": checked.check, "graph": checked.graph.record()}
    if checked.int8 is None:
        return OnnxClassifier(checked.session, model.config), info
    info["int8"] = {**checked.int8_record(model), "fp32_graph": info["graph"]}
    info["graph"] = checked.int8.record()
    return OnnxClassifier(checked.int8_session, model.config), info
