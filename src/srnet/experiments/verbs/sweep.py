"""``srnet sweep``: stages over a grid, each unique stage once."""

from __future__ import annotations

import sys

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import overrides_flag


def arguments(p) -> None:
    p.add_argument("sweep", help="sweep YAML file (base recipe, stages, grid)")
    overrides_flag(p, "override a sweep key, e.g. --set base.training.max_steps=10 (repeatable)")
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


def call(args, sweep) -> int:
    result = sweep(args.sweep, args.overrides, resume=args.resume, dry_run=args.dry_run,
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


register_verb(Verb("sweep", help="run a sweep file: stages over a grid, each unique stage once", api="sweep",
                   arguments=arguments, call=call))
