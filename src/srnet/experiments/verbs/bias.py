"""``srnet bias``: fit a bias model, and RMC sample difficulty (the bodies: :mod:`.bias_fit`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from srnet.experiments.verbs.base import Verb, register_group, register_verb
from srnet.experiments.verbs.common import overrides_flag
from srnet.experiments.verbs.flags import config_values
from srnet.settings import VerbConfig


class DifficultyConfig(VerbConfig):
    """``srnet bias difficulty``: RMC sample difficulty from several runs' training predictions."""

    alpha: float = Field(0.2, ge=0, le=1, description="lowest difficulty")
    allow_collapsed: bool = Field(False, description="use a member whose training predictions collapsed "
                                  "(one class or near chance; refused by default: its losses dominate "
                                  "the variance)")

    added_later: ClassVar[dict[str, Any]] = {"allow_collapsed": False}


def fit_arguments(p) -> None:
    p.add_argument("recipe")
    p.add_argument("--out", required=True, help="folder for <split>.jsonl and bias_metrics.json")
    overrides_flag(p)
    p.add_argument("--overwrite", action="store_true", help="replace bias predictions already in --out")


def fit_call(args, bias_fit) -> None:
    from srnet.reporting.render import format_table

    report = bias_fit(args.recipe, args.out, args.overrides, overwrite=args.overwrite)
    rows = [{"split": name, "kind": kind, "accuracy": block["accuracy"]}
            for kind in ("id", "ood") for name, block in report[kind].items()]
    rows.insert(0, {"split": "train (out-of-fold)", "kind": "id", "accuracy": report["train_oof_accuracy"]})
    print(format_table(rows, ["split", "kind", "accuracy"]))
    print(f"\nwrote bias predictions to {args.out}")


def difficulty_arguments(p) -> None:
    p.add_argument("recipe", help="recipe naming the training split")
    p.add_argument("--predictions", nargs="+", required=True,
                   help="predictions/train.jsonl files (or run dirs) of models at several sparsities")
    p.add_argument("--out", required=True, help="difficulty JSON Lines file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    overrides_flag(p)


def difficulty_call(args, bias_difficulty) -> None:
    path = bias_difficulty(args.recipe, args.predictions, args.out, overrides=args.overrides,
                           overwrite=args.overwrite, **config_values(args, DifficultyConfig))
    print(f"wrote {path}")


register_group("bias", "bias models and sample difficulty")
register_verb(Verb("bias fit", help="fit the recipe's bias model; write bias predictions per split",
                   api="bias_fit", arguments=fit_arguments, call=fit_call, stage="bias_fit"))
register_verb(Verb("bias difficulty", help="RMC difficulty from several runs' training predictions",
                   api="bias_difficulty", arguments=difficulty_arguments, call=difficulty_call,
                   config=DifficultyConfig, stage="difficulty"))
