"""Commands that run recipes: info, run, sweep, finetune and the demo."""

from __future__ import annotations

import json
import sys

from srnet.cli.commands import register_command
from srnet.cli.common import data_flags, flag_recipe, print_summary, run_flags


@register_command("info", api="info")
def add_info(sub) -> None:
    p = sub.add_parser("info", help="versions, device and the default model path")
    p.set_defaults(func=cmd_info)


def cmd_info(args) -> int:
    from srnet.api import info

    print(json.dumps(info(), indent=2))
    return 0


@register_command("run", api="run")
def add_run(sub) -> None:
    p = sub.add_parser("run", help="run a YAML recipe")
    p.add_argument("recipe", help="recipe YAML file")
    run_flags(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    from srnet import api

    result = api.run(args.recipe, args.overrides, resume=args.resume, overwrite=args.overwrite)
    print_summary(result)
    return 0


@register_command("sweep", api="sweep")
def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="run a sweep file: stages over a grid, each unique stage once")
    p.add_argument("sweep", help="sweep YAML file (base recipe, stages, grid)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a sweep key, e.g. --set base.training.max_steps=10 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue a killed or failed sweep")
    p.add_argument("--dry-run", action="store_true", help="print the plan (done / to run) and exit")
    p.add_argument("--workers", type=int, default=1, help="stages run at once (default 1)")
    p.add_argument("--only", action="append", default=[], metavar="STAGE",
                   help="run only this stage (at every grid point) and the stages it needs; the others "
                   "wait for a later run under the same keys (repeatable)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local worker processes (default) or Ray tasks (pip install 'srnet[ray]')")
    p.add_argument("--gpus-per-stage", type=float, default=None,
                   help="Ray: GPUs each stage asks for (default: 1 where the cluster has GPUs, else 0)")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from srnet import api

    result = api.sweep(args.sweep, args.overrides, resume=args.resume, dry_run=args.dry_run,
                       workers=args.workers, executor=args.executor, gpus_per_stage=args.gpus_per_stage,
                       only=args.only)
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


@register_command("finetune", api="run")
def add_finetune(sub) -> None:
    p = sub.add_parser("finetune", help="fine-tune a backbone (dense); flags override the recipe")
    p.add_argument("recipe", nargs="?", help="optional recipe YAML file")
    data_flags(p)
    run_flags(p)
    p.set_defaults(func=cmd_finetune)


def cmd_finetune(args) -> int:
    from srnet import api

    recipe = flag_recipe(args)
    recipe["pruning"] = None
    result = api.run(recipe, args.overrides, resume=args.resume, overwrite=args.overwrite)
    print_summary(result)
    return 0


@register_command("demo", api="demo")
def add_demo(sub) -> None:
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


def cmd_demo(args) -> int:
    from srnet import api

    result = api.demo(args.data_dir, args.output_dir, args.overrides, resume=args.resume,
                      overwrite=args.overwrite, seeds=args.seeds)
    print(result.summary, end="")
    return 0
