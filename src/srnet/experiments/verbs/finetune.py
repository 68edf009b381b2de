"""``srnet finetune``: fine-tune a backbone (dense), the recipe built from flags."""

from __future__ import annotations

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import data_flags, flag_recipe, print_summary, run_flags


def arguments(p) -> None:
    p.add_argument("recipe", nargs="?", help="optional recipe YAML file")
    data_flags(p)
    run_flags(p)


def call(args, run) -> None:
    recipe = flag_recipe(args)
    recipe["pruning"] = None
    print_summary(run(recipe, args.overrides, resume=args.resume, overwrite=args.overwrite))


register_verb(Verb("finetune", help="fine-tune a backbone (dense); flags override the recipe", api="run",
                   arguments=arguments, call=call))
