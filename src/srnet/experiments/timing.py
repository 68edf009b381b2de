"""``srnet bench``: inference latency of dense, shrunk and unstructured-sparse models, side by side.

All models run in one process on the same inputs.  After a warm-up, each round times one forward
pass of every model, in an order that rotates from round to round (interleaving spreads the
noise of a shared machine over all models); a model's latency is its median over the rounds.
With ``onnx``, every model is also exported to ONNX and its ONNX Runtime session joins the same
rounds, so PyTorch and ONNX Runtime latencies come from one interleaved run.
"""

from __future__ import annotations

import copy
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.evaluation.timing_inputs import TimingInputs, fixed_inputs, recipe_inputs
from srnet.experiments.verbs.bench import BenchConfig
from srnet.machine import cpu_int8_features


@dataclass(frozen=True)
class Candidate:
    """A model to time, under a short label."""

    label: str
    model: nn.Module
    onnx: bool = True
    """Whether ``--onnx`` exports it too (sparse-CSR models cannot be exported)."""
    export: Path | None = None
    """The srnet export folder it was loaded from (its files checked against their recorded SHA-256s
    first): ``--onnx`` times the graphs it ships, not graphs built in memory."""

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def load_candidate(name: str) -> Candidate:
    """A run directory (its ``model/``), an srnet export (shrunk or not) or any classifier; an
    export's files are checked against their recorded SHA-256s before any is read, and an export
    that lost its ``srnet_export.json`` is refused (:func:`srnet.export.verify_export`)."""
    from srnet.export import EXPORT_INFO_FILENAME, load_model, verify_export
    from srnet.models.loading import load_classifier
    from srnet.rundir.layout import RunDir

    run_model = RunDir(Path(name)).model
    source = run_model if run_model.is_dir() else Path(name)
    if (source / EXPORT_INFO_FILENAME).is_file():
        return Candidate(name, load_model(source), export=source)  # load_model verifies it
    verify_export(source)
    return Candidate(name, load_classifier(name).eval())


class CsrLinear(nn.Module):
    """A linear layer whose (pruned) weight is stored and multiplied as a torch sparse-CSR matrix."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight, bias = linear.weight.detach(), linear.bias
        self.weight = nn.Parameter(weight.to_sparse_csr(), requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # W @ x^T as sparse x dense (F.linear with a CSR weight fails under inference_mode)
        out = torch.sparse.mm(self.weight, x.reshape(-1, x.shape[-1]).T).T
        out = out if self.bias is None else out + self.bias
        return out.reshape(*x.shape[:-1], out.shape[-1])


def to_csr(model: nn.Module, masks: Sequence[str] | dict[str, Any]) -> nn.Module:
    """``model`` with every masked linear layer (the keys of ``masks``) as a :class:`CsrLinear`."""
    for name in masks:
        parent, _, child = name.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        setattr(owner, child, CsrLinear(getattr(owner, child)))
    return model


def omp_variants(base: Candidate, sparsities: Sequence[float],
                 granularities: Sequence[str] = ("head+neuron", "unstructured")) -> list[Candidate]:
    """OMP of ``base`` at each sparsity and granularity: head+neuron masks shrunk, and unstructured
    masks baked into dense weights (which dense kernels run at full cost) and, the same weights,
    multiplied as torch sparse-CSR matrices (PyTorch's sparse kernels; no ONNX export)."""
    from srnet.export import bake_masks, shrink_model
    from srnet.pruning import build_method
    from srnet.pruning.config import PruningConfig
    from srnet.pruning.lifecycle import prune

    out = []
    for sparsity in sparsities:
        for granularity in granularities:
            model = copy.deepcopy(base.model)
            # one-shot OMP through the pruning lifecycle's verb (the API's prune_ sits above)
            method = build_method(PruningConfig(method="omp", granularity=granularity, sparsity=sparsity), 0)
            masks = prune(method, model)
            if granularity == "unstructured":
                baked = bake_masks(model, masks).eval()
                out.append(Candidate(f"omp {sparsity:.0%} unstructured", baked))
                out.append(Candidate(f"omp {sparsity:.0%} unstructured, torch CSR",
                                     to_csr(copy.deepcopy(baked), masks), onnx=False))
            else:
                out.append(Candidate(f"omp {sparsity:.0%} heads+neurons, shrunk",
                                     shrink_model(model, masks).eval()))
    return out


def time_calls(calls: Sequence[Callable[[], object]], rounds: int, warmup: int) -> list[list[float]]:
    """Seconds of every timed round of each zero-argument callable, interleaved after ``warmup``
    calls each; the call order rotates from round to round."""
    times: list[list[float]] = [[] for _ in calls]
    with torch.inference_mode():
        for call in calls:
            for _ in range(warmup):
                call()
        for r in range(rounds):
            for i in [(r + k) % len(calls) for k in range(len(calls))]:
                start = time.perf_counter()
                calls[i]()
                times[i].append(time.perf_counter() - start)
    return times


SPREAD_WARNING = 0.25
"""A cell whose rounds differ by more than this fraction of its median is reported as unsteady."""


def bench_warnings(rows: Sequence[dict[str, Any]], load: float | None, cpus: int) -> list[str]:
    """One line for a machine busier than its cores (load average), one for unsteady cells."""
    warnings = []
    if load is not None and load > cpus:
        warnings.append(f"the machine is busy (load average {load:.2f} on {cpus} cores): timings are "
                        "unreliable; rerun on idle cores")
    unsteady = [r for r in rows if r["spread"] > SPREAD_WARNING]
    if unsteady:
        worst = max(unsteady, key=lambda r: r["spread"])
        warnings.append(f"{len(unsteady)} of {len(rows)} cells vary by more than {SPREAD_WARNING:.0%} "
                        f"across rounds (worst: {worst['model']}, batch {worst['batch']}, length "
                        f"{worst['length']}: {worst['spread']:.0%}); add rounds or idle the machine")
    return warnings


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def onnx_sessions(candidates: Sequence[Candidate],
                  quantize: str | None = None) -> list[list[tuple[str, Any, dict[str, Any]]]]:
    """Per candidate, its (runtime, ONNX Runtime session, graph record) triples at torch's thread
    count: the FP32 graph, checked against the PyTorch model's logits
    (:func:`srnet.export.onnx.check_onnx`), and with ``quantize`` its INT8 graph
    (``onnxruntime-int8``) -- the files an export candidate ships (SHA-256 checked:
    :func:`srnet.export.onnx.shipped_graphs`), else built in memory; none for a candidate that
    cannot be exported (``Candidate.onnx`` false)."""
    from srnet.export.onnx import checked_graph, shipped_graphs

    shipped = [shipped_graphs(c.export, quantize) if c.onnx else {} for c in candidates]  # all checked first
    sessions: list[list[tuple[str, Any, dict[str, Any]]]] = []
    for c, graphs in zip(candidates, shipped, strict=True):
        if not c.onnx:
            sessions.append([])
            continue
        checked = checked_graph(c.model, quantize, torch.get_num_threads(), graphs)
        triples = [("onnxruntime", checked.session, checked.graph.record())]
        if checked.int8 is not None:
            triples.append((f"onnxruntime-{quantize}", checked.int8_session, checked.int8.record()))
        sessions.append(triples)
    return sessions


def bench(
    models: Sequence[str], config: BenchConfig, *, out: str | Path | None = None, overwrite: bool,
    recipe: Any = None,
) -> dict[str, Any]:
    """The bench verb (``srnet bench``, :func:`srnet.api.bench`, the sweep's ``bench`` stage):
    load ``models`` (the first is the baseline), add OMP variants of the first at ``config.omp``
    sparsities, time them all under :func:`run_bench` with ``config.threads`` torch threads
    (restored afterwards: a sweep worker runs further stages) and write the result to ``out`` when
    given (checked first: an existing file is replaced only with ``overwrite``).  With
    ``config.data_split``, the inputs are batches of that split (:func:`data_inputs`) of
    ``config.recipe``, else of ``recipe`` (a sweep stage's own), else of the first model's run."""
    from srnet.export.onnx import require_onnx
    from srnet.io import atomic_write_json, check_new_file

    if not models:
        raise SrnetError("bench needs at least one model")
    if out is not None:
        check_new_file(out, overwrite, "--out")
    if config.onnx:
        require_onnx()  # before any model is loaded
    inputs = data_inputs(models[0], config, recipe) if config.data_split is not None else None
    before = torch.get_num_threads()
    try:
        if config.threads:
            torch.set_num_threads(config.threads)
        candidates = [load_candidate(name) for name in models]
        result = run_bench([*candidates, *omp_variants(candidates[0], config.omp)], config, inputs)
    finally:
        torch.set_num_threads(before)
    if out is not None:
        atomic_write_json(out, result)
    return result


def run_bench(candidates: Sequence[Candidate], config: BenchConfig,
              inputs: Sequence[TimingInputs] | None = None) -> dict[str, Any]:
    """Time every candidate on each of ``inputs`` (default: random token ids at every batch size x
    sequence length of ``config``); ratios are to the first one.

    A cell is one :class:`~srnet.evaluation.timing_inputs.TimingInputs`: each round runs every
    model over all its batches, and a row's times are per batch (the round's time over its number of
    batches; data batches from :func:`~srnet.evaluation.timing_inputs.recipe_inputs`, row ``length``
    their mean padded length).  The record's ``inputs`` describes each cell, in row order.  A length
    past a model's positions is refused before anything is timed.

    With ``config.onnx``, each candidate is also exported to ONNX and timed under ONNX Runtime in the
    same interleaved rounds, on the same batches (its row follows the PyTorch row; ``speedup`` is
    still relative to the first candidate under PyTorch); with ``quantize`` its INT8 graph too.  Rows
    carry ``runtime`` ``torch``, ``onnxruntime`` or ``onnxruntime-int8``; with ``config.runtimes``,
    only those runtimes are timed (and the first candidate under PyTorch).
    """
    cells = list(inputs) if inputs is not None else grid_inputs(candidates[0], config)
    check_lengths(candidates, cells)
    sessions = onnx_sessions(candidates, config.quantize) if config.onnx else None
    rows = [row for cell in cells for row in time_cell(candidates, sessions, config, cell)]
    load = load_average()
    result = {"environment": bench_environment(), "threads": torch.get_num_threads(), "rounds": config.rounds,
              "warmup": config.warmup, "load_average": load,
              "warnings": bench_warnings(rows, load, os.cpu_count() or 1),
              "inputs": [cell.record() for cell in cells], "rows": rows}
    if sessions is not None:
        from srnet.export.onnx import ATOL, OPSET

        result["onnxruntime"] = {
            "providers": ["CPUExecutionProvider"], "intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": 1, "graph_optimization": "ORT_ENABLE_ALL", "spinning": False,
            "opset": OPSET, "exporter": "torch.onnx.export(dynamo=False)", "check_atol": ATOL,
            "quantize": config.quantize,
            "graphs": [{"model": c.label, "runtime": runtime, **record} for c, triples
                       in zip(candidates, sessions, strict=True) for runtime, _, record in triples],
        }
    return result


def grid_inputs(first: Candidate, config: BenchConfig) -> list[TimingInputs]:
    """Random token ids at every batch size x length of ``config`` (seed 0, in that order)."""
    vocab = int(first.model.config.vocab_size)
    generator = torch.Generator().manual_seed(0)
    return [fixed_inputs(vocab, batch, length, generator)
            for batch in config.batch_sizes for length in config.lengths]


def data_inputs(first: str, config: BenchConfig, stage_recipe: Any = None) -> list[TimingInputs]:
    """``config.data_split`` batches per batch size, from ``config.recipe`` (default: a sweep
    stage's recipe, else the recipe of the run folder ``first``), tokenized by ``first``'s tokenizer."""
    from srnet.config import load_run_recipe
    from srnet.rundir.layout import RunDir

    run = RunDir(Path(first))
    recipe: Any = config.recipe if config.recipe is not None else stage_recipe
    if recipe is None:
        if not run.config.is_file():
            raise SrnetError(f"--data-split {config.data_split}: {first} is no run folder with a recipe; "
                             "give --recipe")
        recipe = load_run_recipe(run.config)
    model = run.model if run.model.is_dir() else Path(first)
    return recipe_inputs(recipe, model, config.batch_sizes, split=str(config.data_split),
                         n_batches=config.n_batches)


def check_lengths(candidates: Sequence[Candidate], cells: Sequence[TimingInputs]) -> None:
    """One line when the longest cell is longer than a candidate's position embeddings."""
    from srnet.models.families import family_of

    cell = max(cells, key=lambda cell: cell.longest)
    for c in candidates:
        config = c.model.config
        family = family_of(config.model_type)
        positions = getattr(config, "max_position_embeddings", None)
        if family is None or family.positions == "relative" or positions is None:
            continue
        if family.positions == "after_padding":
            positions -= (getattr(config, "pad_token_id", 0) or 0) + 1
        if cell.longest > positions:
            what = (f"--lengths {cell.longest}: longer" if cell.kind == "fixed" else
                    f"--data-split {cell.split}: batches of {cell.longest} tokens (lower model.max_length),")
            raise SrnetError(f"{what} than the {positions} positions of {c.label}")


def time_cell(candidates: Sequence[Candidate], sessions: list[list[tuple[str, Any, dict[str, Any]]]] | None,
              config: BenchConfig, cell: TimingInputs) -> list[dict[str, Any]]:
    """The rows of one cell: every timed (candidate, runtime) over the cell's batches, interleaved."""
    runs: list[tuple[Candidate, str, Callable[[], object]]] = []
    for i, c in enumerate(candidates):
        if config.timed(i, "torch"):
            runs.append((c, "torch", torch_call(c.model, cell.batches)))
        for runtime, session, _ in sessions[i] if sessions is not None else []:
            if config.timed(i, runtime):
                runs.append((c, runtime, session_call(session, cell.batches)))
    n = len(cell.batches)
    timed = [[t / n for t in times] for times in time_calls([call for _, _, call in runs], config.rounds,
                                                             config.warmup)]
    medians = [statistics.median(t) for t in timed]
    return [{"model": c.label, "runtime": runtime, "params_m": c.parameters / 1e6, "batch": cell.batch,
             "length": cell.length, "latency_ms": s * 1e3, "min_ms": min(t) * 1e3, "max_ms": max(t) * 1e3,
             "spread": (max(t) - min(t)) / s, "seq_per_s": cell.batch / s, "speedup": medians[0] / s}
            for (c, runtime, _), t, s in zip(runs, timed, medians, strict=True)]


def torch_call(model: nn.Module, batches: Sequence[dict[str, torch.Tensor]]) -> Callable[[], None]:
    """One forward pass of ``model`` over each batch (the inputs its ``forward`` takes)."""
    from srnet.training.data import model_inputs

    feeds = [model_inputs(model, b) for b in batches]

    def run() -> None:
        for feed in feeds:
            model(**feed)
    return run


def session_call(session: Any, batches: Sequence[dict[str, torch.Tensor]]) -> Callable[[], None]:
    """One ONNX Runtime run of ``session`` over each batch (as the session's int64 feeds)."""
    from srnet.export.onnx import ort_feeds

    feeds = [ort_feeds(session, b) for b in batches]

    def run() -> None:
        for feed in feeds:
            session.run(["logits"], feed)
    return run


def bench_environment() -> dict[str, Any]:
    """The machine (CPU model and count), threads and library versions."""
    from srnet.rundir.layout import environment

    env = environment()
    env.pop("argv", None)
    env["machine"] = platform.machine()
    env["cpu_count"] = os.cpu_count()
    env["cpu_int8"] = cpu_int8_features()
    for name in ("onnxruntime", "onnx"):
        try:
            env["packages"][name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            env["packages"][name] = None
    return env
