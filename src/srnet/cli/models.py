"""Commands that ship or time models: export, bench and mask transfer."""

from __future__ import annotations

import sys

from srnet.cli.flags import add_config_flags, config_values
from srnet.experiments.verbs.config import BenchConfig, ExportConfig, TransferConfig


def add_export(sub) -> None:
    p = sub.add_parser("export", help="bake a mask file into a model and save a plain HF checkpoint")
    p.add_argument("--masks", required=True, help="masks.safetensors file (or a run directory)")
    p.add_argument("--model", help="the trained model the masks belong to: a run dir, hub id or path "
                   "(default: the run holding --masks); a model with other weights is refused")
    p.add_argument("--force", action="store_true",
                   help="bake the masks into --model even though their run trained other weights")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--overwrite", action="store_true")
    add_config_flags(p, ExportConfig)
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from srnet.api import export_masked

    out = export_masked(args.model, args.masks, args.out, overwrite=args.overwrite, force=args.force,
                        **config_values(args, ExportConfig))
    extra = " and model.int8.onnx" if args.quantize else ""
    print(f"exported {out}" + (f" (with model.onnx{extra})" if args.onnx else ""))
    return 0


def add_bench(sub) -> None:
    p = sub.add_parser("bench", help="latency of dense vs shrunk (and unstructured-sparse) models")
    p.add_argument("models", nargs="+", metavar="MODEL_OR_RUN",
                   help="models, srnet exports or run dirs; speedups are relative to the first")
    add_config_flags(p, BenchConfig)
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--out", help="also write the results and the environment as JSON here (checked "
                   "before the bench)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    from srnet import api
    from srnet.reporting.render import format_table

    settings = config_values(args, BenchConfig)
    result = api.bench(args.models, out=args.out, overwrite=args.overwrite, **settings)
    env = result["environment"]
    ort = f", onnxruntime {env['packages'].get('onnxruntime')}" if args.onnx else ""
    if args.quantize:
        print(f"int8 on this CPU: {env['cpu_int8']['best']}")
    print(f"{env['cpu']} ({env['cpu_count']} cpus), {env['torch_threads']} threads, "
          f"torch {env['packages'].get('torch')}, transformers {env['packages'].get('transformers')}{ort}; "
          f"{args.rounds} interleaved rounds (min / median / max ms); speedup of medians vs the first "
          f"model under torch")
    columns = ["model", *(["runtime"] if args.onnx else []), "params_m", "batch", "length", "min_ms",
               "latency_ms", "max_ms", "seq_per_s", "speedup"]
    print(format_table(result["rows"], columns, {"params_m": ".1f", "min_ms": ".1f", "latency_ms": ".1f",
                                                 "max_ms": ".1f", "seq_per_s": ".1f", "speedup": ".2f"},
                       markdown=args.markdown))
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def add_transfer(sub) -> None:
    p = sub.add_parser("transfer", help="fine-tune one mask (e.g. from TAMT) on several tasks, mask fixed")
    p.add_argument("mask", help="masks.safetensors file or the run directory that holds it")
    p.add_argument("--tasks", nargs="+", required=True, metavar="RECIPE",
                   help="task recipes (YAML), each fine-tuned on the masked pre-trained backbone")
    add_config_flags(p, TransferConfig)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override applied to every task recipe")
    p.add_argument("--overwrite", action="store_true", help="replace existing task runs")
    p.set_defaults(func=cmd_transfer)


def cmd_transfer(args) -> int:
    from srnet import api

    result = api.transfer(args.mask, args.tasks, overrides=args.overrides, overwrite=args.overwrite,
                          **config_values(args, TransferConfig))
    summary = result.summary
    pre = summary["pretraining"] or {}
    losses = ", ".join(f"{k} {v:.4f}" for k, v in pre.items()) or "no pre-training losses recorded"
    print(f"mask {summary['mask']} ({summary['method']}, sparsity {summary['sparsity']:.3f}): {losses}")
    for name, row in summary["tasks"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in row.items() if isinstance(v, float))
        print(f"  {name}: {scores}")
    print(f"summary: {result.out_dir / 'transfer.json'}")
    return 0
