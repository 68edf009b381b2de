"""``srnet compress``: a fine-tuned model -> a faster model, measured, gated and carded (the
package: :mod:`srnet.experiments.compress`)."""

from __future__ import annotations

import sys

from srnet.experiments.compress.config import CompressConfig
from srnet.experiments.compress.summary import compress_summary
from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import data_flags, overrides_flag, with_flags
from srnet.experiments.verbs.flags import config_values


def arguments(p) -> None:
    p.add_argument("model", metavar="MODEL_OR_RUN",
                   help="the fine-tuned model: an srnet run folder (its recipe supplies the data) or a "
                   "Hugging Face folder or id (with --recipe or data flags)")
    p.add_argument("--out", required=True, help="folder of the compressed model, its card and stages")
    p.add_argument("--recipe", help="recipe YAML that supplies the data (default: the run's own)")
    data_flags(p, model=False, run=False)
    overrides_flag(p, "override a recipe key, e.g. --set training.epochs=1 (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="size the model, print the plan and the "
                   "estimated time on this machine; train nothing")
    p.add_argument("--resume", action="store_true", help="continue an interrupted compression")
    p.add_argument("--reuse", metavar="DIR", help="an earlier compression of the same model (its --out): "
                   "its finished stages that this one would run again (the teacher, its predictions, the "
                   "dense scores) are copied instead of retrained")
    p.add_argument("--overwrite", action="store_true", help="start over (the old folder is kept until "
                   "the new result exists)")


def call(args, compress) -> int:
    from srnet.config import as_recipe

    recipe = None
    if args.recipe or args.task or args.train or args.dev or args.challenge:
        base = as_recipe(args.recipe).model_dump(mode="json") if args.recipe else {}
        recipe = with_flags(base, task=args.task, train=args.train, dev=args.dev, challenge=args.challenge)
    result = compress(args.model, out=args.out, recipe=recipe, overrides=args.overrides,
                      resume=args.resume, overwrite=args.overwrite, dry_run=args.dry_run, reuse=args.reuse,
                      **config_values(args, CompressConfig))
    if args.dry_run:
        return 0
    record = result.record
    print(compress_summary(record))
    for gate in record.gates:
        if not gate.passed:
            print(f"gate failed: {gate.line.removeprefix('FAIL ')}", file=sys.stderr)
    print(f"model: {result.out / 'model'} (card: README.md); record: {result.out / 'compress.json'}")
    return record.exit_code


register_verb(Verb("compress", help="a fine-tuned model -> a faster model, measured, gated and carded "
                   "(exit 3 when a gate fails)", api="compress", arguments=arguments, call=call,
                   config=CompressConfig, stage="compress"))
