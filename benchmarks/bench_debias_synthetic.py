"""PoE vs cross-entropy on the synthetic controlled-bias NLI task, default backbone, 3 seeds.

For each seed: fit a bias model that knows only the overlap shortcut (``overlap_shortcut``:
hypothesis contained in / a contiguous run of the premise; out-of-fold on the training split), then
fine-tune the default backbone with CE and with product-of-experts on the same data, and
evaluate on the ID dev split and on the challenge split where the overlap shortcut is broken.
Prints mean ± std over seeds, side by side.

    python benchmarks/bench_debias_synthetic.py [--seeds 1 2 3] [--bias-strength 0.8]
        [--bias-feature overlap_shortcut] [--out runs/bench_debias]

Defaults: 2,000 training pairs in which P(entailment | high overlap) = 0.8, 500 dev pairs with
the same bias, 1,000 challenge pairs where the shortcut is broken. (At strength 0.9 there are
only ~70 high-overlap non-entailment training pairs for PoE to learn from; with the full
``overlap`` feature set the bias model solves 86% of the task itself and PoE collapses. Both
settings can be rerun with the flags.)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from srnet import api
from srnet.console import quiet_libraries
from srnet.experiments.demo import demo_sweep
from srnet.experiments.verbs.bias_fit import fit_bias
from srnet.reporting.render import format_table


def main() -> None:
    quiet_libraries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--out", default="runs/bench_debias")
    parser.add_argument("--model", default="default")
    parser.add_argument("--bias-strength", type=float, default=0.8)
    parser.add_argument("--bias-feature", default="overlap_shortcut")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()

    out = Path(args.out)
    results: dict[str, list[dict]] = {"ce": [], "poe": []}
    for seed in args.seeds:
        base = {**demo_sweep()["base"], "output_dir": str(out)}  # the demo's task and schedule
        overrides = [f"seed={seed}", f"model.name={args.model}", f"bias.feature={args.bias_feature}",
                     f"data.train.synthetic.bias_strength={args.bias_strength}",
                     f"data.dev.synthetic.bias_strength={args.bias_strength}", *args.overrides]
        bias_dir = out / f"bias_seed{seed}"
        fit_bias(api.as_recipe(base, overrides), bias_dir, overwrite=True)
        for loss in results:
            recipe = api.as_recipe(base, [*overrides, f"name={loss}_seed{seed}", f"loss.name={loss}",
                                          f"bias_dir={bias_dir}"])
            metrics = api.run(recipe, overwrite=True).metrics
            results[loss].append({
                "id": metrics.id["synthetic_dev"]["accuracy"],
                "ood": metrics.ood["synthetic_challenge"]["accuracy"],
                "gap": metrics.ood["synthetic_challenge"]["shortcut_gap"],
            })
    rows = []
    for loss, runs in results.items():
        row = {"loss": loss}
        for key in ("id", "ood", "gap"):
            values = [r[key] for r in runs]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            row[key] = f"{statistics.mean(values):.4f} ± {spread:.4f}"
        rows.append(row)
    print(f"\nsynthetic controlled-bias NLI (bias strength {args.bias_strength}, bias feature "
          f"{args.bias_feature}), seeds {args.seeds}: accuracy mean ± std")
    print(format_table(rows, ["loss", "id", "ood", "gap"]))
    (out / "summary.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
