"""``srnet bench``: latency of models side by side in one process (the timing harness, shared with
``srnet compress``: :mod:`srnet.experiments.timing`)."""

from __future__ import annotations

import sys
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.flags import config_values
from srnet.export.config import quantize_checked
from srnet.export.runtimes import TORCH, bench_runtime, get_runtime, known_runtime
from srnet.settings import VerbConfig


class BenchConfig(VerbConfig):
    """``srnet bench``: what is timed, and how."""

    omp: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=list, json_schema_extra={"metavar": "SPARSITY"},
        description="also time OMP of the first model at these sparsities: head+neuron masks shrunk, "
        "and unstructured masks in dense weights")
    batch_sizes: list[Annotated[int, Field(ge=1)]] = Field([1, 32], min_length=1, description="batch sizes")
    lengths: list[Annotated[int, Field(ge=2)]] = Field([64, 128], min_length=1,
                                                       description="sequence lengths (tokens)")
    data_split: str | None = Field(None, json_schema_extra={"metavar": "SPLIT"},
                                   description="time on batches drawn from this split of the recipe's data "
                                   "(train, dev or an eval/challenge split's name), tokenized as evaluation "
                                   "tokenizes it, instead of random tokens at --lengths; each batch size "
                                   "gets its own batches (1: single examples)")
    recipe: str | None = Field(None, description="with --data-split: the recipe YAML whose data and "
                               "model.max_length are used (default: the first model's run folder's)")
    n_batches: int = Field(8, ge=1, description="with --data-split: batches drawn per batch size; a round "
                           "times each model on all of them, and latency is the mean per batch")
    rounds: int = Field(10, ge=1, description="timed rounds (median reported)")
    warmup: int = Field(2, ge=0, description="untimed rounds first")
    threads: int | None = Field(None, ge=1, description="torch (and ONNX Runtime) threads (default: "
                                "torch's)")
    onnx: bool = Field(False, description="also time every model under ONNX Runtime (CPU, same threads, "
                       "graph optimisations on), interleaved; needs pip install 'srnet[onnx]'")
    quantize: str | None = Field(None, json_schema_extra={"metavar": "MODE"},
                                 description="with --onnx: also time each model's dynamic INT8 ONNX "
                                 "graph (int8: one weight scale per tensor; int8-per-channel)")

    runtimes: list[str] | None = Field(None, json_schema_extra={"metavar": "RUNTIME"},
                                       description="time only these runtimes (torch, onnx, onnx-int8, "
                                       "onnx-int8-per-channel); the first model under torch, the baseline "
                                       "of every speed-up, is always timed (default: every one set up)")

    added_later: ClassVar[dict[str, Any]] = {"quantize": None, "omp": [], "runtimes": None,
                                             "data_split": None, "recipe": None, "n_batches": 8}
    _quantize = model_validator(mode="after")(quantize_checked)

    @model_validator(mode="after")
    def _runtimes_set_up(self) -> BenchConfig:
        """Each of ``runtimes`` is a known runtime that ``onnx`` / ``quantize`` set up."""
        for runtime in self.runtimes or []:
            row = get_runtime(known_runtime(runtime, "--runtimes"))
            quantize = row.quantize
            if row.needs_onnx and not (self.onnx and (quantize is None or quantize == self.quantize)):
                flags = "--onnx" + (f" --quantize {quantize}" if quantize else "")
                raise ValueError(f"--runtimes {runtime} needs {flags}")
        return self

    @model_validator(mode="after")
    def _data_flags(self) -> BenchConfig:
        """--recipe and --n-batches go with --data-split, which replaces --lengths."""
        fields = type(self).model_fields
        if self.data_split is None:
            if self.recipe is not None:
                raise ValueError(f"--recipe {self.recipe} needs --data-split")
            if self.n_batches != fields["n_batches"].default:
                raise ValueError(f"--n-batches {self.n_batches} needs --data-split")
        elif self.lengths != fields["lengths"].default:
            raise ValueError(f"--lengths {' '.join(map(str, self.lengths))}: --data-split {self.data_split} "
                             "times the data's own lengths")
        return self

    def timed(self, index: int, runtime: str) -> bool:
        """Whether the bench times candidate ``index`` under ``runtime`` (a bench row name:
        ``torch``, ``onnxruntime``, ``onnxruntime-<mode>``)."""
        if self.runtimes is None or (index == 0 and runtime == TORCH.bench_label):
            return True
        return runtime in {bench_runtime(r) for r in self.runtimes}


def arguments(p) -> None:
    p.add_argument("models", nargs="+", metavar="MODEL_OR_RUN",
                   help="models, srnet exports or run dirs; speedups are relative to the first")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--out", help="also write the results and the environment as JSON here (checked "
                   "before the bench)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")


def call(args, bench) -> None:
    from srnet.reporting.render import format_table

    result = bench(args.models, out=args.out, overwrite=args.overwrite, **config_values(args, BenchConfig))
    env = result["environment"]
    ort = f", onnxruntime {env['packages'].get('onnxruntime')}" if args.onnx else ""
    if args.quantize:
        print(f"int8 on this CPU: {env['cpu_int8']['best']}")
    print(f"{env['cpu']} ({env['cpu_count']} cpus), {env['torch_threads']} threads, "
          f"torch {env['packages'].get('torch')}, transformers {env['packages'].get('transformers')}{ort}; "
          f"{args.rounds} interleaved rounds (min / median / max ms); speedup of medians vs the first "
          f"model under torch")
    for line in data_lines(result["inputs"]):
        print(line)
    columns = ["model", *(["runtime"] if args.onnx else []), "params_m", "batch", "length", "min_ms",
               "latency_ms", "max_ms", "seq_per_s", "speedup"]
    formats = {"params_m": ".1f", "min_ms": ".1f", "latency_ms": ".1f", "max_ms": ".1f", "seq_per_s": ".1f",
               "speedup": ".2f", **({"length": ".1f"} if args.data_split else {})}
    print(format_table(result["rows"], columns, formats, markdown=args.markdown))
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)


def data_lines(inputs: list[dict[str, Any]]) -> list[str]:
    """One line per batch size timed on data: its split and token counts (``length``: the mean
    padded length)."""
    return [f"{i['split']}: {i['n_batches']} batches of {i['batch']}, median {n['median']:g} tokens (p95 "
            f"{n['p95']:g}, max {n['max']:g}), padded to {n['padded_mean']:.1f} on average; ms per batch"
            for i in inputs if i["kind"] == "data" for n in [i["lengths"]]]


register_verb(Verb("bench", help="latency of dense vs shrunk (and unstructured-sparse) models", api="bench",
                   arguments=arguments, call=call, config=BenchConfig, stage="bench"))
