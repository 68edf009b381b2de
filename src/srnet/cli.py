"""The ``srnet`` command. Thin: it parses arguments and calls :mod:`srnet.api` and friends."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from srnet.console import end_progress_bars, quiet_libraries
from srnet.errors import SrnetError
from srnet.io import load_yaml


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet_libraries()
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        check_input_files(args)
        return args.func(args) or 0
    except SrnetError as exc:
        from srnet.io import short

        end_progress_bars()
        print(f"error: {short(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write the library did not wrap: read-only folder, full disk...
        from srnet.io import describe_os_error

        end_progress_bars()
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        end_progress_bars()
        print("interrupted: rerun the same command with --resume to continue", file=sys.stderr)
        return 130


def check_input_files(args) -> None:
    """A recipe or sweep file that is not there is named in one line before anything heavy (torch,
    transformers) is imported."""
    for attr, what in (("recipe", "recipe file"), ("sweep", "sweep file")):
        value = getattr(args, attr, None)
        if isinstance(value, str):
            path = Path(value)
            if path.is_dir():
                raise SrnetError(f"{path}: is a folder, not a {what} (give the YAML file inside it)")
            if not path.is_file():
                raise SrnetError(f"{path}: {what} not found")


def _attack_names() -> str:
    from srnet.evaluation.attacks import available_attacks

    return ", ".join(available_attacks())


def _task_names() -> str:
    from srnet.tasks.registry import TASKS

    return TASKS.listing()


REGISTRY_NAMES = {"{attacks}": _attack_names, "{tasks}": _task_names}
"""Placeholders of help texts -> the registry names they stand for (filled in when help is shown)."""


class _HelpFormatter(argparse.HelpFormatter):
    """Fills the names of a registry into a help text (``{attacks}``, ``{tasks}``) only when that
    help is shown, so building the parser imports no plug-in module (the attacks import torch)."""

    def _expand_help(self, action: argparse.Action) -> str:
        text = super()._expand_help(action)
        for placeholder, names in REGISTRY_NAMES.items():
            if placeholder in text:
                text = text.replace(placeholder, names())
        return text


class _Parser(argparse.ArgumentParser):
    """An argument parser (and its sub-command parsers) with :class:`_HelpFormatter`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="srnet",
        description="Find sparse and robust subnetworks inside pre-trained transformer encoders.",
        epilog="Recipes: docs/recipes.md; the metrics.json schema: docs/run-directory.md; "
        "examples: README.md.",
    )
    sub = parser.add_subparsers(metavar="COMMAND")

    p = sub.add_parser("info", help="versions, device and the default model path")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", help="run a YAML recipe")
    p.add_argument("recipe", help="recipe YAML file")
    _run_flags(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("sweep", help="run a sweep file: stages over a grid, each unique stage once")
    p.add_argument("sweep", help="sweep YAML file (base recipe, stages, grid)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a sweep key, e.g. --set base.training.max_steps=10 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue a killed or failed sweep")
    p.add_argument("--dry-run", action="store_true", help="print the plan (done / to run) and exit")
    p.add_argument("--workers", type=int, default=1, help="stages run at once (default 1)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local worker processes (default) or Ray tasks (pip install 'srnet[ray]')")
    p.add_argument("--gpus-per-stage", type=float, default=None,
                   help="Ray: GPUs each stage asks for (default: 1 where the cluster has GPUs, else 0)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("finetune", help="fine-tune a backbone (dense); flags override the recipe")
    p.add_argument("recipe", nargs="?", help="optional recipe YAML file")
    _data_flags(p)
    _run_flags(p)
    p.set_defaults(func=cmd_finetune)

    p = sub.add_parser("evaluate", help="evaluate a model or run directory on ID and OOD splits")
    p.add_argument("model", help="srnet run directory, hub id, local path or 'default'")
    p.add_argument("--recipe", help="recipe whose data section names the splits")
    _data_flags(p, train=False)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("predict", help="write a finished run's predictions on one of its splits")
    p.add_argument("run_dir")
    p.add_argument("--split", default="train", help="train, dev, or the name of an eval/challenge split")
    p.add_argument("--output", help="file to write (default RUN/predictions/<split>.jsonl)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("attack", help="attack a run's or model's predictions with a registered attack")
    p.add_argument("model", help="srnet run directory, or a model with --recipe and --out")
    p.add_argument("--recipe", help="recipe naming the task and data (default: the run's config.yaml)")
    p.add_argument("--attack", required=True, help="attack name: {attacks}")
    p.add_argument("--n", type=int, help="examples to attack, drawn with --seed (default: the whole split)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="dev", help="dev, or the name of an eval/challenge split")
    p.add_argument("--out", help="results folder (default RUN/attack)")
    p.add_argument("--examples", type=int, default=0, metavar="N",
                   help="also write <out>/<attack>_examples.md: the first N successes, changed words marked")
    p.add_argument("--param", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help="attack setting, e.g. --param max_fraction=0.2 (repeatable)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(func=cmd_attack)

    p = sub.add_parser("demo", help="the main job: dense CE vs a CE mask and the PoE SRNet at 50%% sparsity, "
                       "and a report")
    p.add_argument("--data-dir", help="use the real MNLI sample and HANS from this folder")
    p.add_argument("--output-dir", default="runs")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--resume", action="store_true", help="continue an interrupted demo")
    p.add_argument("--overwrite", action="store_true", help="start over (a finished demo is shown again)")
    p.add_argument("--seeds", type=int, default=1,
                   help="run each stage with N seeds (42, 1, 2, ...) into <name>_seeds<N>: mean ± std")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("export", help="bake a mask file into a model and save a plain HF checkpoint")
    p.add_argument("--masks", required=True, help="masks.safetensors file (or a run directory)")
    p.add_argument("--model", help="the trained model the masks belong to: a run dir, hub id or path "
                   "(default: the run holding --masks); a model with other weights is refused")
    p.add_argument("--force", action="store_true",
                   help="bake the masks into --model even though their run trained other weights")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--shrink", action="store_true",
                   help="remove pruned heads and neurons (head/neuron masks); reload with "
                        "srnet.load_model or trust_remote_code=True")
    p.add_argument("--onnx", action="store_true",
                   help="also write model.onnx (dynamic batch and length), checked against PyTorch's "
                        "logits with ONNX Runtime; needs pip install 'srnet[onnx]'")
    p.add_argument("--quantize", metavar="MODE",
                   help="with --onnx: also write model.int8.onnx (int8: ONNX Runtime's dynamic INT8), "
                        "compared with the FP32 graph in srnet_export.json and the model card")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("bench", help="latency of dense vs shrunk (and unstructured-sparse) models")
    p.add_argument("models", nargs="+", metavar="MODEL_OR_RUN",
                   help="models, srnet exports or run dirs; speedups are relative to the first")
    p.add_argument("--omp", nargs="+", type=float, default=[], metavar="SPARSITY",
                   help="also time OMP of the first model at these sparsities: head+neuron masks "
                        "shrunk, and unstructured masks in dense weights")
    p.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 32])
    p.add_argument("--lengths", nargs="+", type=int, default=[64, 128])
    p.add_argument("--rounds", type=int, default=10, help="timed rounds (median reported)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, help="torch (and ONNX Runtime) threads (default: torch's)")
    p.add_argument("--onnx", action="store_true",
                   help="also time every model under ONNX Runtime (CPU, same threads, graph "
                        "optimisations on), interleaved; needs pip install 'srnet[onnx]'")
    p.add_argument("--quantize", metavar="MODE",
                   help="with --onnx: also time each model's dynamic INT8 ONNX graph (int8)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--out", help="also write the results and the environment as JSON here")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("transfer", help="fine-tune one mask (e.g. from TAMT) on several tasks, mask fixed")
    p.add_argument("mask", help="masks.safetensors file or the run directory that holds it")
    p.add_argument("--tasks", nargs="+", required=True, metavar="RECIPE",
                   help="task recipes (YAML), each fine-tuned on the masked pre-trained backbone")
    p.add_argument("--output-dir", default="runs/transfer", help="folder of the task runs and transfer.json")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override applied to every task recipe")
    p.add_argument("--overwrite", action="store_true", help="replace existing task runs")
    p.set_defaults(func=cmd_transfer)

    p = sub.add_parser("report", help="report.md + figures: runs averaged over seeds, against sparsity")
    p.add_argument("runs", nargs="+", metavar="PATH",
                   help="run directories and/or folders searched recursively for complete runs")
    p.add_argument("--out", help="report folder (default PATH/report for one PATH, else ./report)")
    p.add_argument("--no-figures", action="store_true", help="write report.md with tables only")
    p.set_defaults(func=cmd_report)

    bias = sub.add_parser("bias", help="bias models and sample difficulty").add_subparsers(metavar="ACTION")
    p = bias.add_parser("fit", help="fit the recipe's bias model; write bias predictions per split")
    p.add_argument("recipe")
    p.add_argument("--out", required=True, help="folder for <split>.jsonl and bias_metrics.json")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--overwrite", action="store_true", help="replace bias predictions already in --out")
    p.set_defaults(func=cmd_bias_fit)
    p = bias.add_parser("difficulty", help="RMC difficulty from several runs' training predictions")
    p.add_argument("recipe", help="recipe naming the training split")
    p.add_argument("--predictions", nargs="+", required=True,
                   help="predictions/train.jsonl files (or run dirs) of models at several sparsities")
    p.add_argument("--alpha", type=float, default=0.2, help="lowest difficulty (default 0.2)")
    p.add_argument("--out", required=True, help="difficulty JSON Lines file to write")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(func=cmd_bias_difficulty)

    masks = sub.add_parser("masks", help="inspect and compare mask files").add_subparsers(metavar="ACTION")
    p = masks.add_parser("show", help="sparsity per layer and matrix (and a heatmap with --plot)")
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--plot", help="write a layer x role sparsity heatmap (.png/.pdf/.svg)")
    p.set_defaults(func=cmd_masks_show)
    p = masks.add_parser("compare", help="Jaccard similarity and distance of two masks")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_masks_compare)
    p = masks.add_parser("draw", help="draw a ticket: the globally top-(1-s) learned scores (l0, mask_train)")
    p.add_argument("source", help="run directory or mask_scores.safetensors")
    p.add_argument("--sparsity", type=float, required=True, help="fraction of zeros over all masked weights")
    p.add_argument("--out", required=True, help="masks.safetensors to write (for method 'fixed')")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_masks_draw)
    p = masks.add_parser("random-like", help="a random mask with another mask's per-matrix sparsity")
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--out", required=True, help="masks.safetensors file to write")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_masks_random_like)
    return parser


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe key, e.g. --set training.lr=3e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def _data_flags(p: argparse.ArgumentParser, train: bool = True) -> None:
    p.add_argument("--task", help="task name: {tasks}")
    if train:
        p.add_argument("--model", help="'default', a hub id or a local path")
        p.add_argument("--train", help="training data file")
    p.add_argument("--dev", help="ID dev data file")
    p.add_argument("--challenge", action="append", help="challenge data file (repeatable)")
    p.add_argument("--name", help="run name (run directory is OUTPUT_DIR/NAME)")
    p.add_argument("--output-dir", help="folder of run directories (default runs)")


def _flag_recipe(args) -> dict:
    from srnet.api import as_recipe, with_flags

    recipe = getattr(args, "recipe", None)
    base = as_recipe(recipe).model_dump(mode="json") if recipe else {}
    return with_flags(
        base, task=args.task, model=getattr(args, "model", None), train=getattr(args, "train", None),
        dev=args.dev, challenge=args.challenge, name=args.name, output_dir=args.output_dir,
    )


def cmd_info(args) -> int:
    from srnet.api import info

    print(json.dumps(info(), indent=2))
    return 0


def cmd_run(args) -> int:
    from srnet import api

    result = api.run(args.recipe, args.overrides, resume=args.resume, overwrite=args.overwrite)
    _print_summary(result)
    return 0


def cmd_sweep(args) -> int:
    from srnet import api

    result = api.sweep(args.sweep, args.overrides, resume=args.resume, dry_run=args.dry_run,
                       workers=args.workers, executor=args.executor, gpus_per_stage=args.gpus_per_stage)
    if args.dry_run:
        return 0
    names = {job.key: job.label for job in result.jobs}
    for key, message in result.failed.items():
        print(f"failed: {names[key]}: {message}", file=sys.stderr)
    if result.skipped:
        print(f"skipped {len(result.skipped)} stages that needed a failed one", file=sys.stderr)
    print(f"{len(result.jobs)} stages: {len(result.ran)} ran, {len(result.failed)} failed, "
          f"{len(result.skipped)} skipped; output in {result.output_dir}")
    return 0 if result.ok else 1


def cmd_finetune(args) -> int:
    from srnet import api

    recipe = _flag_recipe(args)
    recipe["pruning"] = None
    result = api.run(recipe, args.overrides, resume=args.resume, overwrite=args.overwrite)
    _print_summary(result)
    return 0


def cmd_evaluate(args) -> int:
    from srnet import api

    recipe = _flag_recipe(args)
    if not args.name:
        recipe["name"] = f"eval_{Path(args.model).name}"
    result = api.evaluate(args.model, recipe, args.overrides, overwrite=args.overwrite)
    _print_summary(result)
    return 0


def cmd_predict(args) -> int:
    from srnet.api import predict

    path = predict(args.run_dir, args.split, args.output)
    print(f"wrote {path}")
    return 0


def cmd_attack(args) -> int:

    from srnet import api
    from srnet.report import format_table

    params = {}
    for item in args.params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SrnetError(f"--param {item!r}: expected KEY=VALUE")
        params[key] = load_yaml(value, f"--with {key}")
    report = api.attack(args.model, args.recipe, args.overrides, attack=args.attack, n=args.n, seed=args.seed,
                        split=args.split, out=args.out, params=params, examples=args.examples)
    s = report.summary
    row = {k: s[k] for k in ("total", "skipped", "successful", "failed", "clean", "aua", "success_rate",
                             "avg_queries")}
    print(format_table([row], list(row)))
    written = [report.summary_path, report.examples_path, report.review_path]
    print(f"\nwrote {', '.join(str(p) for p in written if p)}")
    return 0


def cmd_demo(args) -> int:
    from srnet import api

    result = api.demo(args.data_dir, args.output_dir, args.overrides, resume=args.resume,
                      overwrite=args.overwrite, seeds=args.seeds)
    print(result.summary, end="")
    return 0


def cmd_report(args) -> int:
    from srnet.api import report as write_report

    report = write_report(args.runs, args.out, figures=not args.no_figures)
    print("\n".join(report.tables))
    print(f"wrote {report.path} and {len(report.figures)} figures")
    return 0


def cmd_bias_fit(args) -> int:
    from srnet.api import fit_bias
    from srnet.report import format_table

    report = fit_bias(args.recipe, args.out, args.overrides, overwrite=args.overwrite)
    rows = [{"split": name, "kind": kind, "accuracy": block["accuracy"]}
            for kind in ("id", "ood") for name, block in report[kind].items()]
    rows.insert(0, {"split": "train (out-of-fold)", "kind": "id", "accuracy": report["train_oof_accuracy"]})
    print(format_table(rows, ["split", "kind", "accuracy"]))
    print(f"\nwrote bias predictions to {args.out}")
    return 0


def cmd_bias_difficulty(args) -> int:
    from srnet.api import difficulty

    path = difficulty(args.recipe, args.predictions, args.out, args.overrides, alpha=args.alpha)
    print(f"wrote {path}")
    return 0


def cmd_export(args) -> int:
    from srnet.api import export_masked

    out = export_masked(args.model, args.masks, args.out, overwrite=args.overwrite, shrink=args.shrink,
                        onnx=args.onnx, quantize=args.quantize, force=args.force)
    extra = " and model.int8.onnx" if args.quantize else ""
    print(f"exported {out}" + (f" (with model.onnx{extra})" if args.onnx else ""))
    return 0


def cmd_bench(args) -> int:
    from srnet import api
    from srnet.report import format_table

    result = api.bench(args.models, omp=args.omp, batch_sizes=args.batch_sizes, lengths=args.lengths,
                       rounds=args.rounds, warmup=args.warmup, threads=args.threads, onnx=args.onnx,
                       quantize=args.quantize, out=args.out)
    env = result["environment"]
    ort = f", onnxruntime {env['packages'].get('onnxruntime')}" if args.onnx else ""
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


def cmd_transfer(args) -> int:
    from srnet import api

    result = api.transfer(args.mask, args.tasks, args.overrides, out_dir=args.output_dir,
                          overwrite=args.overwrite)
    summary = result.summary
    pre = summary["pretraining"] or {}
    losses = ", ".join(f"{k} {v:.4f}" for k, v in pre.items()) or "no pre-training losses recorded"
    print(f"mask {summary['mask']} ({summary['method']}, sparsity {summary['sparsity']:.3f}): {losses}")
    for name, row in summary["tasks"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in row.items() if isinstance(v, float))
        print(f"  {name}: {scores}")
    print(f"summary: {result.out_dir / 'transfer.json'}")
    return 0


def cmd_masks_show(args) -> int:
    from srnet.api import mask_sparsity
    from srnet.report import format_table, plot_sparsity_heatmap

    table, meta = mask_sparsity(args.masks)
    print(f"method={meta.method} base_model={meta.base_model} overall sparsity={table.overall:.4f}")
    print(format_table(table.rows(), list(table.rows()[0])))
    if args.plot:
        plot_sparsity_heatmap(table, args.plot)
        print(f"wrote {args.plot}")
    return 0


def cmd_masks_compare(args) -> int:
    from srnet.api import compare_masks
    from srnet.report import format_table

    comparison = compare_masks(args.a, args.b)
    print(format_table(comparison.rows(), ["name", "jaccard", "distance"]))
    return 0


def cmd_masks_draw(args) -> int:
    from srnet.api import draw_ticket

    meta = draw_ticket(args.source, args.sparsity, args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")
    return 0


def cmd_masks_random_like(args) -> int:
    from srnet.api import random_like

    meta = random_like(args.masks, args.out, args.seed, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")
    return 0


def _print_summary(result) -> None:
    from srnet.report import collapse_warnings, summary_table

    metrics = result.metrics
    if "pretraining" in metrics:  # a text (TAMT) run: dev-block losses, no splits
        losses = ", ".join(f"{k} {v:.4f}" for k, v in metrics["pretraining"].items())
        sparsity = metrics.get("sparsity", {}).get("overall")
        print(f"{metrics['method']} + {metrics['objective']}: {losses}"
              + (f" at sparsity {sparsity:.3f}" if sparsity is not None else ""))
    else:
        print(summary_table(metrics))
    print(f"\nrun directory: {result.run_dir}")
    for warning in collapse_warnings(metrics):
        print(warning)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
