"""Commands on finished runs' results: evaluate, predict, attack and report."""

from __future__ import annotations

from pathlib import Path

from srnet.cli.commands import register_command
from srnet.cli.common import data_flags, flag_recipe, plugins_flag, print_summary
from srnet.cli.flags import add_config_flags, config_values
from srnet.experiments.verbs.config import AttackConfig, PredictConfig, ReportConfig


@register_command("evaluate", api="evaluate")
def add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate a model or run directory on ID and OOD splits")
    p.add_argument("model", help="srnet run directory, hub id, local path or 'default'")
    p.add_argument("--recipe", help="recipe whose data section names the splits")
    data_flags(p, train=False)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    p.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args) -> int:
    from srnet import api

    recipe = flag_recipe(args)
    if not args.name:
        recipe["name"] = f"eval_{Path(args.model).name}"
    result = api.evaluate(args.model, recipe, args.overrides, overwrite=args.overwrite)
    print_summary(result)
    print(f"scored by: {result.metrics.evaluated_by}")
    return 0


@register_command("predict", api="predict")
def add_predict(sub) -> None:
    p = sub.add_parser("predict", help="write a finished run's predictions on one of its splits")
    p.add_argument("run_dir")
    add_config_flags(p, PredictConfig)
    p.add_argument("--output", help="file to write (default RUN/predictions/<split>.jsonl); an "
                   "existing file needs --overwrite, and a run's own record is never replaced")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    plugins_flag(p)
    p.set_defaults(func=cmd_predict)


def cmd_predict(args) -> int:
    from srnet.api import predict

    settings = config_values(args, PredictConfig)
    path = predict(args.run_dir, output=args.output, overwrite=args.overwrite, plugins=args.plugins,
                   **settings)
    print(f"wrote {path}")
    return 0


@register_command("attack", api="attack")
def add_attack(sub) -> None:
    p = sub.add_parser("attack", help="attack a run's or model's predictions with a registered attack")
    p.add_argument("model", help="srnet run directory, or a model with --recipe and --out")
    p.add_argument("--recipe", help="recipe naming the task and data (default: the run's config.yaml)")
    add_config_flags(p, AttackConfig)
    p.add_argument("--out", help="results folder (default RUN/attack)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the earlier results of this attack in the results folder")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    plugins_flag(p)
    p.set_defaults(func=cmd_attack)


def cmd_attack(args) -> int:
    from srnet import api
    from srnet.reporting.render import format_table

    report = api.attack(args.model, recipe=args.recipe, overrides=args.overrides, out=args.out,
                        overwrite=args.overwrite, plugins=args.plugins, **config_values(args, AttackConfig))
    s = report.summary
    row = {k: s[k] for k in ("total", "skipped", "successful", "failed", "clean", "aua", "success_rate",
                             "avg_queries")}
    print(format_table([row], list(row)))
    written = [report.summary_path, report.examples_path, report.review_path]
    print(f"\nwrote {', '.join(str(p) for p in written if p)}")
    return 0


@register_command("report", api="report")
def add_report(sub) -> None:
    p = sub.add_parser("report", help="report.md + figures: runs averaged over seeds, against sparsity")
    p.add_argument("runs", nargs="+", metavar="PATH",
                   help="run directories and/or folders searched recursively for complete runs")
    p.add_argument("--out", help="report folder (default PATH/report for one PATH, else ./report); an "
                   "earlier srnet report there is rewritten")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a report.md in --out that srnet did not write")
    add_config_flags(p, ReportConfig)
    plugins_flag(p)
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from srnet.api import report as write_report

    report = write_report(args.runs, out=args.out, plugins=args.plugins, overwrite=args.overwrite,
                          **config_values(args, ReportConfig))
    print("\n".join(report.tables))
    print(f"wrote {report.path} and {len(report.figures)} figures")
    return 0
