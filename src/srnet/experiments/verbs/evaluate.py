"""``srnet evaluate``: a model or run directory on a recipe's ID and OOD splits."""

from __future__ import annotations

from pathlib import Path

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import data_flags, flag_recipe, overrides_flag, print_summary


def arguments(p) -> None:
    p.add_argument("model", help="srnet run directory, hub id, local path or 'default'")
    p.add_argument("--recipe", help="recipe whose data section names the splits")
    data_flags(p, model=False, train=False)
    overrides_flag(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")


def call(args, evaluate) -> None:
    recipe = flag_recipe(args)
    if not args.name:
        recipe["name"] = f"eval_{Path(args.model).name}"
    result = evaluate(args.model, recipe, args.overrides, overwrite=args.overwrite)
    print_summary(result)
    print(f"scored by: {result.metrics.evaluated_by}")


register_verb(Verb("evaluate", help="evaluate a model or run directory on ID and OOD splits", api="evaluate",
                   arguments=arguments, call=call, stage="evaluate"))
