"""``srnet bias``: fit a bias model, and RMC sample difficulty."""

from __future__ import annotations

from srnet.cli.commands import register_command
from srnet.cli.flags import add_config_flags, config_values
from srnet.experiments.verbs.config import DifficultyConfig


@register_command("bias", api={"bias fit": "bias_fit", "bias difficulty": "bias_difficulty"})
def add_bias(sub) -> None:
    """``srnet bias ACTION``."""
    group = sub.add_parser("bias", help="bias models and sample difficulty")
    actions = group.add_subparsers(metavar="ACTION")
    for add in (add_fit, add_difficulty):
        add(actions)


def add_fit(actions) -> None:
    p = actions.add_parser("fit", help="fit the recipe's bias model; write bias predictions per split")
    p.add_argument("recipe")
    p.add_argument("--out", required=True, help="folder for <split>.jsonl and bias_metrics.json")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--overwrite", action="store_true", help="replace bias predictions already in --out")
    p.set_defaults(func=cmd_bias_fit)


def cmd_bias_fit(args) -> int:
    from srnet.api import bias_fit
    from srnet.reporting.render import format_table

    report = bias_fit(args.recipe, args.out, args.overrides, overwrite=args.overwrite)
    rows = [{"split": name, "kind": kind, "accuracy": block["accuracy"]}
            for kind in ("id", "ood") for name, block in report[kind].items()]
    rows.insert(0, {"split": "train (out-of-fold)", "kind": "id", "accuracy": report["train_oof_accuracy"]})
    print(format_table(rows, ["split", "kind", "accuracy"]))
    print(f"\nwrote bias predictions to {args.out}")
    return 0


def add_difficulty(actions) -> None:
    p = actions.add_parser("difficulty", help="RMC difficulty from several runs' training predictions")
    p.add_argument("recipe", help="recipe naming the training split")
    p.add_argument("--predictions", nargs="+", required=True,
                   help="predictions/train.jsonl files (or run dirs) of models at several sparsities")
    add_config_flags(p, DifficultyConfig)
    p.add_argument("--out", required=True, help="difficulty JSON Lines file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(func=cmd_bias_difficulty)


def cmd_bias_difficulty(args) -> int:
    from srnet.api import bias_difficulty

    path = bias_difficulty(args.recipe, args.predictions, args.out, overrides=args.overrides,
                           overwrite=args.overwrite, **config_values(args, DifficultyConfig))
    print(f"wrote {path}")
    return 0
