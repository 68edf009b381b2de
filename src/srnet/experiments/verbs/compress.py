"""``srnet compress``: a fine-tuned model -> a shrunk, faster model, measured, gated and carded (the
pipeline: :mod:`.compress_pipeline`; its settings: :mod:`.compress_config`)."""

from __future__ import annotations

import sys

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import data_flags, overrides_flag, with_flags
from srnet.experiments.verbs.compress_config import CompressConfig
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
    p.add_argument("--overwrite", action="store_true", help="start over (the old folder is kept until "
                   "the new result exists)")


def call(args, compress) -> int:
    from srnet.config import as_recipe

    recipe = None
    if args.recipe or args.task or args.train or args.dev or args.challenge:
        base = as_recipe(args.recipe).model_dump(mode="json") if args.recipe else {}
        recipe = with_flags(base, task=args.task, train=args.train, dev=args.dev, challenge=args.challenge)
    result = compress(args.model, out=args.out, recipe=recipe, overrides=args.overrides,
                      resume=args.resume, overwrite=args.overwrite, dry_run=args.dry_run,
                      **config_values(args, CompressConfig))
    if args.dry_run:
        return 0
    record = result.record
    print(compress_summary(record))
    for gate in record["gates"]:
        if not gate["passed"]:
            print(f"gate failed: {gate['line'].removeprefix('FAIL ')}", file=sys.stderr)
    print(f"model: {result.out / 'model'} (card: README.md); record: {result.out / 'compress.json'}")
    return record["exit_code"]


def compress_summary(record: dict) -> str:
    """The figures of every model side by side, and each gate."""
    from srnet.reporting.render import format_table

    rows = []
    for name, f in record["figures"].items():
        row = {"model": name, "runtime": f["runtime"], f"{f['id_split']}": f["id"], "hard": f.get("hard")}
        for split, scores in f["challenge"].items():
            row[split] = scores["accuracy"]
        row["charswap Aua"] = f.get("charswap_aua")
        rows.append(row)
    columns = list(dict.fromkeys(c for row in rows for c in row))
    speed = record["speed"]
    lines = [format_table(rows, columns, {c: ".4f" for c in columns[2:]}),
             f"speed: {speed['speedup']:.2f}x dense PyTorch FP32 ({speed['dense_ms']:.1f} -> "
             f"{speed['compressed_ms']:.1f} ms, batch {speed['batch']} x {speed['length']}, "
             f"{speed['threads']} thread(s), {speed['cpu']})",
             f"level {record['level']:.0%} heads+neurons; {record['elapsed_s'] / 60:.1f} min; peak memory "
             f"{record['peak_rss_mb'] / 1024:.2f} GiB",
             *[g["line"] for g in record["gates"]],
             "PASSED" if record["passed"] else "FAILED: the model is written, marked as failed"]
    return "\n".join(lines)


register_verb(Verb("compress", help="a fine-tuned model -> a shrunk, faster model, measured, gated and "
                   "carded (exit 3 when a gate fails)", api="compress", arguments=arguments, call=call,
                   config=CompressConfig, stage="compress"))
