"""``srnet demo``: the main job on the embedded defaults (:mod:`srnet.experiments.demo`)."""

from __future__ import annotations

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import overrides_flag


def arguments(p) -> None:
    p.add_argument("--data-dir", help="use the real MNLI sample and HANS from this folder")
    p.add_argument("--output-dir", default="runs")
    overrides_flag(p)
    p.add_argument("--resume", action="store_true", help="continue an interrupted demo")
    p.add_argument("--overwrite", action="store_true", help="start over (a finished demo is shown again)")
    p.add_argument("--seeds", type=int, default=1,
                   help="run each stage with N seeds (42, 1, 2, ...) into <name>_seeds<N>: mean ± std")


def call(args, demo) -> None:
    result = demo(args.data_dir, args.output_dir, args.overrides, resume=args.resume,
                  overwrite=args.overwrite, seeds=args.seeds)
    print(result.summary, end="")


register_verb(Verb("demo", help="the main job: dense CE vs a CE mask and the PoE SRNet at 50%% sparsity, "
                   "and a report", api="demo", arguments=arguments, call=call))
