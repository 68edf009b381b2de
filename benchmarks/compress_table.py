"""The 3-seed study of ``srnet compress``'s default (issue 50), answered from its committed records.

Reads ``<folder>/<stage>/<key>/{stage.json,compress.json}`` (a compress stage of the sweep, ``fast``
unless ``--stage`` names another, one per seed; or ``<folder>/<stage>/s<seed>/compress.json``,
``srnet compress`` run by hand into a folder named by the seed)
and prints, in points on the ID split (hard = the pairs the bias model gets wrong):

* each seed's level, measured speed-up (and the sizing's curve), the gates and whether it passed;
* one row per model of the pipeline (the user's dense model, the dense PoE teacher that is the
  gates' reference, the compressed student as trained, and as shipped): mean ± std over seeds;
* the compressed model against the reference, paired by seed, with the pre-registered targets
  (recipes/studies/compress_mnli_cpu.yaml): ID >= reference - 0.5, hard >= reference, >= 2x.

With ``--controls DIR`` (run records named ``<row>_s<seed>/metrics.json``, e.g. a seed's teacher
scored as INT8, or the student's recipe with no cut) it also prints each control row and the
shipped model against it, paired by seed, judged by the controls study's rule
(``controls_table.verdict``) once 3 seeds are in.

With ``--rescored DIR`` (runs named ``<row>_s<seed>``: a seed's shipped FP32 graph scored under
another runtime, no retraining) it prints each such row against the reference, the FP32 student
and the model as shipped, paired by seed, with the targets above (``--page``: the block
``<!-- compress_table S rescored -->``).

With ``--against S`` it prints the shipped model minus stage ``S``'s shipped model, paired by seed
(two arms of one study), and whether both had the same reference (its figures equal: the same
teacher computation), so an arm's difference is read against the same teacher.

Run: ``python benchmarks/compress_table.py results/compress_mnli_cpu`` (``--page P`` also replaces
the page's ``<!-- compress_table -->`` block with what is printed; ``--stage S``: its
``<!-- compress_table S -->`` block).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from pathlib import Path

from controls_table import mean_std, paste_block, verdict
from controls_table import values as run_values

MODELS = {
    "dense": "your dense model (CE)",
    "teacher": "dense PoE (the reference)",
    "student": "compressed, as trained",
    "shipped": "compressed, as shipped",
}
NO_CUT = "reference_runtime"
MODELS_LATER = {NO_CUT: "the reference in the runtime, no cut (the pipeline's control)"}
"""Rows of records written after the control joined the pipeline."""
CONTROLS = {
    "teacher_onnx-int8": "dense PoE as INT8: no cut, no more training",
    "poe_kd": "dense PoE + the student's distilled epoch, no cut (PyTorch)",
    "poe_kd_onnx-int8": "the same, as INT8: the compute-matched control",
    "poe_kd2": "dense PoE + the student's two distilled epochs, no cut (PyTorch)",
    "poe_kd2_int8pc": "the same, as per-channel INT8: the compute-matched control",
}
"""Control rows, by run-name prefix, in the order printed; other names are refused."""
RESCORED = {
    "pc": "per-channel INT8 (srnet's int8-per-channel mode)",
    "emb": "per-channel INT8 of the MatMul weights, embeddings FP32 (pilot)",
}
"""Re-scored rows, by run-name prefix, in the order printed; other names are refused."""
JUDGED = ("ID", "hard")
TARGETS = {"ID": -0.5, "hard": 0.0}
"""Pre-registered: compressed - reference >= these, in points, and the speed-up >= the target."""


def load(folder: Path, stage: str = "fast") -> dict[int, tuple[dict, Path]]:
    """Seed -> (compress.json, its stage folder) of each finished compress stage named ``stage``."""
    records = {}
    for stage_file in sorted(folder.glob(f"{stage}/*/stage.json")):
        record = stage_file.parent / "compress.json"
        if record.is_file():
            seed = json.loads(stage_file.read_text())["grid"]["seed"]
            records[seed] = (json.loads(record.read_text()), stage_file.parent)
    for record in sorted(folder.glob(f"{stage}/s*/compress.json")):
        if re.fullmatch(r"s\d+", record.parent.name) and not (record.parent / "stage.json").is_file():
            records[int(record.parent.name[1:])] = (json.loads(record.read_text()), record.parent)
    return records


def elapsed(record: dict, folder: Path) -> str:
    """Wall time of the compression: the sizing plus each stage once, from the stage's event log
    when it was kept (a record written before that rule counted only its last call)."""
    from srnet.experiments.compress.run import stage_seconds

    events = folder / "stages" / "events.jsonl"
    if not events.is_file():
        return f"{record['elapsed_s'] / 60:.0f} min"
    keys = {json.loads(line)["key"] for line in events.read_text().splitlines() if line.strip()}
    minutes = stage_seconds(folder / "stages", keys) / 60
    sizing = record["sizing"].get("elapsed_s")
    return f"{minutes + sizing / 60:.0f} min" if sizing is not None else f"{minutes:.0f} min + sizing"


def values(figures: dict) -> dict[str, float | None]:
    """One model's figures in points."""
    out = {"ID": figures["id"], "hard": figures.get("hard"), "easy": figures.get("easy")}
    for split, scores in figures["challenge"].items():
        out[split] = scores["accuracy"]
        out[f"{split} gap"] = scores.get("gap")
    out["charswap Aua"] = figures.get("charswap_aua")
    return {k: None if v is None else 100 * v for k, v in out.items()}


Controls = dict[str, dict[int, dict[str, float]]]
"""Control row -> seed -> its figures in points."""


def load_controls(folder: Path, names: dict[str, str] = CONTROLS) -> Controls:
    """Row -> seed -> its figures in points (ID, hard, easy, hans), from ``<row>_s<seed>`` (a row
    of ``names``)."""
    rows: Controls = {}
    for metrics_file in sorted(folder.glob("*/metrics.json")):
        match = re.fullmatch(r"(.+)_s(\d+)", metrics_file.parent.name)
        if match is None or match.group(1) not in names:
            raise SystemExit(
                f"{metrics_file.parent}: not a run of this table (<row>_s<seed>, row one of "
                f"{', '.join(names)})"
            )
        v = run_values(json.loads(metrics_file.read_text()))
        figures = {"ID": v["MNLI-m"], "hard": v["hard"], "easy": v["easy"], "hans": v["HANS"]}
        rows.setdefault(match.group(1), {})[int(match.group(2))] = figures
    return {name: rows[name] for name in names if name in rows}


def print_rescored(found: dict[int, tuple[dict, Path]], rescored: Controls) -> None:
    """Each re-scored row minus the reference, the FP32 student and the shipped model, paired by
    seed, with the pre-registered targets against the reference."""
    models = {
        name: {seed: values(record["figures"][name]) for seed, (record, _) in found.items()}
        for name in ("teacher", "student", "shipped")
    }
    print("\n| re-scored | − | measure | per seed | mean ± std | target | met on every seed |")
    print("|---|---|---|---|---|---|---|")
    for name, by_seed in rescored.items():
        seeds = sorted(set(by_seed) & set(found))
        for against, label in (("teacher", "reference"), ("student", "FP32 student"), ("shipped", "shipped")):
            for key in JUDGED:
                diffs = [by_seed[s][key] - models[against][s][key] for s in seeds]
                target = TARGETS[key] if against == "teacher" else None
                met = "" if target is None else ("yes" if all(d >= target for d in diffs) else "no")
                print(
                    f"| {RESCORED[name]} ({', '.join(map(str, seeds))}) | {label} | {key} | "
                    f"{', '.join(f'{d:+.2f}' for d in diffs)} | {mean_std(diffs, 2)} | "
                    f"{'' if target is None else f'>= {target:+.1f}'} | {met} |"
                )


def print_controls(found: dict[int, tuple[dict, Path]], controls: Controls) -> None:
    """Each control row, and the shipped model minus it on the judged measures, paired by seed."""
    shipped = {seed: values(record["figures"]["shipped"]) for seed, (record, _) in found.items()}
    print("\n| control | seeds | ID | hard | easy | hans |\n|---|---|---|---|---|---|")
    for name, by_seed in controls.items():
        cells = [mean_std([f[k] for f in by_seed.values()]) for k in ("ID", "hard", "easy", "hans")]
        print(f"| {CONTROLS[name]} | {', '.join(map(str, sorted(by_seed)))} | " + " | ".join(cells) + " |")
    print("\n| shipped − control | measure | per seed | mean ± std | verdict |\n|---|---|---|---|---|")
    for name, by_seed in controls.items():
        seeds = sorted(set(by_seed) & set(shipped))
        if not seeds:
            continue
        for key in JUDGED:
            diffs = [shipped[s][key] - by_seed[s][key] for s in seeds]
            judged = verdict(diffs) if len(seeds) >= 3 else "pending (fewer than 3 seeds)"
            print(
                f"| {CONTROLS[name]} | {key} | {', '.join(f'{d:+.2f}' for d in diffs)} | "
                f"{mean_std(diffs, 2)} | {judged} |"
            )


def print_no_cut(rows: dict[str, list[dict]], measures: list[str]) -> None:
    """The shipped model minus the pipeline's own no-cut control, paired by seed."""
    print("\n| compressed (shipped) − the reference in the runtime, no cut | per seed | mean ± std |")
    print("|---|---|---|")
    for key in measures:
        diffs = [
            s[key] - c[key]
            for s, c in zip(rows["shipped"], rows[NO_CUT], strict=True)
            if s.get(key) is not None and c.get(key) is not None
        ]
        if diffs:
            print(f"| {key} | {', '.join(f'{d:+.1f}' for d in diffs)} | {mean_std(diffs)} |")


Found = dict[int, tuple[dict, Path]]
"""Seed -> (compress.json, its stage folder), as :func:`load` returns them."""


def print_against(found: Found, other: Found, stage: str) -> None:
    """This stage's shipped model minus ``stage``'s, per seed both finished, and whether their
    references scored the same (the same teacher, so the difference is the arms' alone)."""
    seeds = sorted(set(found) & set(other))
    if not seeds:
        raise SystemExit(f"--against {stage}: no seed finished in both stages")
    mine = {s: values(found[s][0]["figures"]["shipped"]) for s in seeds}
    theirs = {s: values(other[s][0]["figures"]["shipped"]) for s in seeds}
    teacher = {s: (values(found[s][0]["figures"]["teacher"]), values(other[s][0]["figures"]["teacher"]))
               for s in seeds}  # the figures, not the record's fields (its run folder differs by arm)
    same = [mine_ == theirs_ for mine_, theirs_ in teacher.values()]
    print(f"\n| shipped − {stage}'s shipped (seeds {', '.join(map(str, seeds))}) | per seed | mean ± std |")
    print("|---|---|---|")
    for key in mine[seeds[0]]:
        diffs = [mine[s][key] - theirs[s][key] for s in seeds
                 if mine[s].get(key) is not None and theirs[s].get(key) is not None]
        if diffs:
            print(f"| {key} | {', '.join(f'{d:+.2f}' for d in diffs)} | {mean_std(diffs, 2)} |")
    print(f"| the same reference's figures | {', '.join('yes' if x else 'no' for x in same)} | |")


def print_tables(found: dict[int, tuple[dict, Path]]) -> None:
    """The seeds, the models and the paired differences, as printed by :func:`main`."""
    records = {seed: record for seed, (record, _) in found.items()}
    seeds = sorted(records)
    print("| seed | level | speed-up | sizing curve (level: speed-up) | elapsed | peak memory | gates |")
    print("|---|---|---|---|---|---|---|")
    for seed in seeds:
        r = records[seed]
        curve = ", ".join(f"{p['level']:.0%}: {p['speedup']:.2f}" for p in r["sizing"]["curve"])
        gates = "; ".join(g["line"] for g in r["gates"])
        dropped = r.get("dropped_layers") or []
        level = f"{r['level']:.0%}" + (f" (layers {', '.join(map(str, dropped))} removed)" if dropped else "")
        print(
            f"| {seed} | {level} | {r['speed']['speedup']:.2f}x | {curve} | "
            f"{elapsed(r, found[seed][1])} | {r['peak_rss_mb'] / 1024:.2f} GiB | {gates} |"
        )
    models = {
        **MODELS,
        **({NO_CUT: MODELS_LATER[NO_CUT]} if all(NO_CUT in records[s]["figures"] for s in seeds) else {}),
    }
    rows = {name: [values(records[s]["figures"][name]) for s in seeds] for name in models}
    measures = list(dict.fromkeys(k for per_seed in rows.values() for v in per_seed for k in v))
    print(f"\n| model | n | {' | '.join(measures)} |\n|---|---|" + "---|" * len(measures))
    for name, label in models.items():
        cells = [
            mean_std([v[k] for v in rows[name] if v.get(k) is not None] or [float("nan")]) for k in measures
        ]
        print(f"| {label} | {len(rows[name])} | " + " | ".join(cells) + " |")
    print("\n| compressed (shipped) − reference | per seed | mean ± std | target | met on every seed |")
    print("|---|---|---|---|---|")
    for key in measures:
        diffs = [
            s[key] - t[key]
            for s, t in zip(rows["shipped"], rows["teacher"], strict=True)
            if s.get(key) is not None and t.get(key) is not None
        ]
        if not diffs:
            continue
        target = TARGETS.get(key)
        met = "" if target is None else ("yes" if all(d >= target for d in diffs) else "no")
        shown = "" if target is None else f">= {target:+.1f}"
        print(f"| {key} | {', '.join(f'{d:+.1f}' for d in diffs)} | {mean_std(diffs)} | {shown} | {met} |")
    speedups = [records[s]["speed"]["speedup"] for s in seeds]
    target = records[seeds[0]]["config"]["speedup"] if seeds else None
    met = "yes" if target and all(x >= target for x in speedups) else "no"
    print(
        f"| speed-up | {', '.join(f'{x:.2f}x' for x in speedups)} | {mean_std(speedups, 2)}x | "
        f">= {target}x | {met} |"
    )
    if NO_CUT in rows:
        print_no_cut(rows, measures)
    passed = sum(records[s]["passed"] for s in seeds)
    print(
        f"\n{passed} of {len(seeds)} seed(s) passed every gate"
        + (" (fewer than 3 seeds: not judged)" if len(seeds) < 3 else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--page", type=Path, help="a page whose compress_table block gets the output")
    parser.add_argument("--stage", default="fast", help="the sweep's compress stage (default: fast)")
    parser.add_argument("--controls", type=Path, help="control runs, <row>_s<seed>/metrics.json")
    parser.add_argument(
        "--rescored",
        type=Path,
        nargs="+",
        default=[],
        help="folders of re-scored runs, <row>_s<seed>/metrics.json (rows: pc, emb)",
    )
    parser.add_argument("--against", help="another compress stage: the shipped models' differences, per seed")
    args = parser.parse_args()
    records = load(args.folder, args.stage)
    if not records:
        raise SystemExit(f"{args.folder}: no finished compress stage ({args.stage}/<key>/compress.json)")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_tables(records)
        if args.controls:
            print_controls(records, load_controls(args.controls))
        if args.rescored:
            rescored = {
                name: rows
                for folder in args.rescored
                for name, rows in load_controls(folder, RESCORED).items()
            }
            print_rescored(records, {name: rescored[name] for name in RESCORED if name in rescored})
        if args.against:
            print_against(records, load(args.folder, args.against), args.against)
    print(printed.getvalue(), end="")
    if args.page:
        block = "compress_table" if args.stage == "fast" else f"compress_table {args.stage}"
        block += " rescored" if args.rescored else ""
        block += f" against {args.against}" if args.against else ""
        paste_block(args.page, block, printed.getvalue().rstrip())


if __name__ == "__main__":
    main()
