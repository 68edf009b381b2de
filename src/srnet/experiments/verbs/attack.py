"""``srnet attack``: one registered attack of a run's (or a model's) predictions on one split."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import overrides_flag, plugins_flag
from srnet.experiments.verbs.flags import config_values
from srnet.settings import VerbConfig


class AttackSettings(VerbConfig):
    """What every attack of ``srnet attack`` and of the sweep's ``attack`` stage shares."""

    split: str = Field("dev", description="dev, or the name of an eval/challenge split")
    n: int | None = Field(None, ge=1, strict=True, description="examples to attack, drawn with --seed "
                          "(default: the whole split)")
    seed: int = Field(0, ge=0, strict=True,
                      description="seed of the subset and of the attacks' random choices")
    examples: int = Field(0, ge=0, json_schema_extra={"metavar": "N"},
                          description="also write <out>/<attack>_examples.md: the first N successes, "
                          "changed words marked")

    non_semantic: ClassVar[tuple[str, ...]] = ("examples",)  # a review file: not in the stage key


class AttackConfig(AttackSettings):
    """``srnet attack``: one attack of one model on one split."""

    attack: str = Field(description="attack name: {attacks}")
    params: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"flag": "--param",
                                   "metavar": "KEY=VALUE"},
                                   description="attack setting, e.g. --param max_fraction=0.2 (repeatable)")


def arguments(p) -> None:
    p.add_argument("model", help="srnet run directory, or a model with --recipe and --out")
    p.add_argument("--recipe", help="recipe naming the task and data (default: the run's config.yaml)")
    p.add_argument("--out", help="results folder (default RUN/attack)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the earlier results of this attack in the results folder")
    overrides_flag(p)
    plugins_flag(p)


def call(args, attack) -> None:
    from srnet.reporting.render import format_table

    report = attack(args.model, recipe=args.recipe, overrides=args.overrides, out=args.out,
                    overwrite=args.overwrite, plugins=args.plugins, **config_values(args, AttackConfig))
    s = report.summary
    row = {k: s[k] for k in ("total", "skipped", "successful", "failed", "clean", "aua", "success_rate",
                             "avg_queries")}
    print(format_table([row], list(row)))
    written = [report.summary_path, report.examples_path, report.review_path]
    print(f"\nwrote {', '.join(str(p) for p in written if p)}")


register_verb(Verb("attack", help="attack a run's or model's predictions with a registered attack",
                   api="attack", arguments=arguments, call=call, config=AttackConfig, stage="attack"))
