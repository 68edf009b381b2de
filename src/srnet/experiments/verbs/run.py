"""``srnet run``: run a YAML recipe."""

from __future__ import annotations

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import print_summary, run_flags


def arguments(p) -> None:
    p.add_argument("recipe", help="recipe YAML file")
    run_flags(p)


def call(args, run) -> None:
    print_summary(run(args.recipe, args.overrides, resume=args.resume, overwrite=args.overwrite))


register_verb(Verb("run", help="run a YAML recipe", api="run", arguments=arguments, call=call, stage="train"))
