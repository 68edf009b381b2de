"""Commands that ship or time models: compress, export, bench and mask transfer."""

from __future__ import annotations

import sys

from srnet.cli.commands import register_command
from srnet.cli.flags import add_config_flags, config_values
from srnet.experiments.verbs.compress_config import CompressConfig
from srnet.experiments.verbs.config import BenchConfig, TransferConfig
from srnet.export.config import ExportConfig


@register_command("compress", api="compress")
def add_compress(sub) -> None:
    p = sub.add_parser("compress", help="a fine-tuned model -> a shrunk, faster model, measured, gated "
                       "and carded (exit 3 when a gate fails)")
    p.add_argument("model", metavar="MODEL_OR_RUN",
                   help="the fine-tuned model: an srnet run folder (its recipe supplies the data) or a "
                   "Hugging Face folder or id (with --recipe or data flags)")
    p.add_argument("--out", required=True, help="folder of the compressed model, its card and stages")
    p.add_argument("--recipe", help="recipe YAML that supplies the data (default: the run's own)")
    p.add_argument("--task", help="task name: {tasks}")
    p.add_argument("--train", help="training data file")
    p.add_argument("--dev", help="ID dev data file")
    p.add_argument("--challenge", action="append", help="challenge data file (repeatable)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe key, e.g. --set training.epochs=1 (repeatable)")
    add_config_flags(p, CompressConfig)
    p.add_argument("--dry-run", action="store_true", help="size the model, print the plan and the "
                   "estimated time on this machine; train nothing")
    p.add_argument("--resume", action="store_true", help="continue an interrupted compression")
    p.add_argument("--overwrite", action="store_true", help="start over (the old folder is kept until "
                   "the new result exists)")
    p.set_defaults(func=cmd_compress)


def cmd_compress(args) -> int:
    from srnet import api

    recipe = None
    if args.recipe or args.task or args.train or args.dev or args.challenge:
        base = api.as_recipe(args.recipe).model_dump(mode="json") if args.recipe else {}
        recipe = api.with_flags(base, task=args.task, train=args.train, dev=args.dev,
                                challenge=args.challenge)
    result = api.compress(args.model, out=args.out, recipe=recipe, overrides=args.overrides,
                          resume=args.resume, overwrite=args.overwrite, dry_run=args.dry_run,
                          **config_values(args, CompressConfig))
    if args.dry_run:
        return 0
    record = result.record
    print(compress_summary(record))
    for gate in record["gates"]:
        if not gate["passed"]:
            print(f"gate failed: {gate['line'].removeprefix('FAIL ')}", file=sys.stderr)
    print(f"model: {result.out / 'model'} (card: README.md); record: {result.out / 'compress.json'}")
    return record["exit_code"]


def compress_summary(record: dict) -> str:
    """The figures of every model side by side, and each gate."""
    from srnet.reporting.render import format_table

    rows = []
    for name, f in record["figures"].items():
        row = {"model": name, "runtime": f["runtime"], f"{f['id_split']}": f["id"], "hard": f.get("hard")}
        for split, scores in f["challenge"].items():
            row[split] = scores["accuracy"]
        row["charswap Aua"] = f.get("charswap_aua")
        rows.append(row)
    columns = list(dict.fromkeys(c for row in rows for c in row))
    speed = record["speed"]
    lines = [format_table(rows, columns, {c: ".4f" for c in columns[2:]}),
             f"speed: {speed['speedup']:.2f}x dense PyTorch FP32 ({speed['dense_ms']:.1f} -> "
             f"{speed['compressed_ms']:.1f} ms, batch {speed['batch']} x {speed['length']}, "
             f"{speed['threads']} thread(s), {speed['cpu']})",
             f"level {record['level']:.0%} heads+neurons; {record['elapsed_s'] / 60:.1f} min; peak memory "
             f"{record['peak_rss_mb'] / 1024:.2f} GiB",
             *[g["line"] for g in record["gates"]],
             "PASSED" if record["passed"] else "FAILED: the model is written, marked as failed"]
    return "\n".join(lines)


@register_command("export", api="export")
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
    from srnet.api import export

    out = export(args.model, args.masks, args.out, overwrite=args.overwrite, force=args.force,
                        **config_values(args, ExportConfig))
    extra = " and model.int8.onnx" if args.quantize else ""
    print(f"exported {out}" + (f" (with model.onnx{extra})" if args.onnx else ""))
    return 0


@register_command("bench", api="bench")
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


@register_command("transfer", api="transfer")
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
