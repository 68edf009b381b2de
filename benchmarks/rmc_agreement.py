"""RMC's variance proxy vs the hypothesis-only easy/hard split, on the training sample and on
MNLI dev-matched.

For every difficulty stage of a sweep folder (a stage folder whose name starts with
``difficulty``), at every grid point:

* **train**: its difficulty file (the min-max normalised variance of the gold-label loss across
  its member models) against the bias stage's out-of-fold training predictions
  (``<bias stage>/train.jsonl``: easy = the hypothesis-only model predicts the gold label);
* **dev** (``--dev``): the same variance taken over the member runs' own dev-matched predictions
  (``<run>/predictions/<split>.jsonl``, found through the stage records: difficulty -> predict
  stages -> runs) against the bias model's dev-matched split, as the RMC paper measures it.

Several sweep folders may be given: a difficulty stage that names members of another sweep by path
(its ``sweep.yaml`` record lists them) finds their runs through that sweep's stage records.

It prints the agreement rate of the two splits (RMC paper section 4.1: 82.8% on MNLI; chance is
about 50% for these split sizes). Run:
``python benchmarks/rmc_agreement.py runs/rmc_repaired_cpu [runs/rmc_repaired_cpu_s3r] --bias
runs/rmc_repaired_cpu/bias_hyp/<key> --train ../shared/data/mnli/train.jsonl --dev
../shared/data/mnli/dev_matched.jsonl``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import yaml

from srnet.bias import compute_difficulty, load_bias_log_probs
from srnet.bias.difficulty import load_difficulty, proxy_agreement
from srnet.rundir.layout import COMPLETE
from srnet.tasks import get_task, load_examples
from srnet.tasks.spec import DataSpec

NLI = get_task("nli")
ALPHA = 0.5
"""Any alpha gives the same ranking (min-max maps the variance monotonically); the studies' value."""


def gold_and_bias_easy(data: Path, bias_file: Path, name: str | None = None
                       ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The split's ids (``name`` as the recipe names it) and gold labels as the runs read them, and
    which pairs the bias model gets right."""
    examples = load_examples(NLI, DataSpec(path=str(data.resolve()), name=name))
    gold = np.array([ex.label for ex in examples])
    ids = [ex.id for ex in examples]
    log_probs = load_bias_log_probs(bias_file, ids, len(NLI.labels), labels=NLI.labels)
    return ids, gold, log_probs.argmax(axis=1) == gold


def stage_records(sweep: Path) -> dict[str, tuple[Path, dict]]:
    """Every finished stage folder of the sweep by its key, with its ``stage.json``."""
    return {record["key"]: (folder, record) for folder in sweep.glob("*/*/")
            if (folder / COMPLETE).is_file()
            for record in [json.loads((folder / COMPLETE).read_text())]}


def sweep_record(folder: Path) -> dict:
    """The ``sweep.yaml`` record of the sweep holding the stage ``folder`` (empty stages if none)."""
    path = folder.parent.parent / "sweep.yaml"
    return yaml.safe_load(path.read_text()) if path.is_file() else {"stages": {}, "base": {}}


def member_runs(folder: Path, record: dict, records: dict[str, tuple[Path, dict]]) -> list[Path]:
    """The run folders whose predictions the difficulty stage in ``folder`` took, through its predict
    stages: those it depends on, and those its sweep's ``sweep.yaml`` names by path."""
    spec = sweep_record(folder)["stages"].get(record["stage"], {})
    named = spec.get("with", {}).get("runs", [])
    by_path = [json.loads((Path(entry).parent / COMPLETE).read_text())["key"]
               for entry in named if not entry.startswith("@")]
    runs = []
    for dep in [*by_path, *record["deps"]]:
        _, predict = records[dep]
        runs.extend(records[key][0] for key in predict["deps"] if records[key][1]["kind"] == "train")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", type=Path, nargs="+", help="sweep folders")
    parser.add_argument("--bias", type=Path, required=True, help="the bias_fit stage folder")
    parser.add_argument("--train", type=Path, required=True, help="the training file (gold labels)")
    parser.add_argument("--dev", type=Path, help="the dev-matched file: also measure on it")
    parser.add_argument("--dev-split", default="mnli_dev_matched", help="its evaluation name in the runs")
    args = parser.parse_args()
    train_ids, _, train_easy = gold_and_bias_easy(args.train, args.bias / "train.jsonl")
    dev = None
    if args.dev:
        dev = gold_and_bias_easy(args.dev, args.bias / f"{args.dev_split}.jsonl", args.dev_split)
    records = {key: found for sweep in args.sweeps for key, found in stage_records(sweep).items()}
    rows = sorted(((record["stage"], record["grid"].get("seed", sweep_record(folder)["base"].get("seed")),
                    folder, record)
                   for folder, record in records.values() if record["stage"].startswith("difficulty")),
                  key=lambda row: (row[0], str(row[1])))
    for stage, seed, folder, record in rows:
        files = list(folder.glob("*.jsonl"))
        if len(files) != 1:
            continue
        result = proxy_agreement(load_difficulty(files[0], train_ids), train_easy)
        line = (f"{stage} seed {seed}: train agreement {result['agreement']:.3f} over {result['n']} "
                f"({result['n_easy']} easy)")
        if dev is not None:
            ids, gold, easy = dev
            runs = member_runs(folder, record, records)
            members = [run / "predictions" / f"{args.dev_split}.jsonl" for run in runs]
            variance = compute_difficulty(members, ids, gold, ALPHA)
            on_dev = proxy_agreement(variance, easy)
            line += f"; dev agreement {on_dev['agreement']:.3f} over {on_dev['n']} ({on_dev['n_easy']} easy)"
        print(line)


if __name__ == "__main__":
    main()
