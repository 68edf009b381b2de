"""Attack speed on a trained model: srnet's query oracle against TextAttack's default model wrapper.

For each attack (``charswap``, ``wordswap``; one whose resources are missing, e.g. WordNet, is
skipped with a note) this attacks the first ``--n`` SST-2 test sentences
(``$SRNET_DATA_DIR/sst2/test.jsonl``, default ``../shared/data``) with a trained srnet run through
srnet's oracle (``Victim``: all candidates of a search step in batches of up to 64 padded to the
batch's longest text, repeated texts cached for the whole run), logging every text asked for,
step by step.  It then replays exactly that query sequence through these loops:

a. TextAttack's default (``HuggingFaceModelWrapper`` under a ``GoalFunction``): the texts of a
   step that miss the model cache go to the wrapper in batches of 32, each padded to the
   tokenizer's ``model_max_length``, here a stock tokenizer's (the run's backbone's: 512 for BERT),
   as with a Hub checkpoint; the cache lives for one example;
a'. the same with the run's own tokenizer, when its length differs: srnet's exported model
   saves ``model_max_length`` = the run's ``max_length`` (64 for the victim), so TextAttack given
   ``RUN/model`` pads to that, and most of a's padding waste is gone;
b. one text per forward pass, padded to its own length, the same per-example cache;
c. batches of 32 padded to the batch's longest text, the same per-example cache.

All rates are texts asked for per second (cached texts count, as in TextAttack's #Query).  The
replays time only the model calls, so srnet's headline rate is timed inside its oracle too; the
whole attack loop (candidate generation; wordswap's sentence encoder and synonym lookups) is
shown beside it.  Ratios: srnet ÷ a (the headline) and srnet ÷ a'; padding = c ÷ a; batching =
c ÷ b; srnet's own = srnet ÷ c (batches of 64, the cache kept across examples, noise).  Loop a
replays only the first ``--baseline`` texts asked for: its rate is per text, so a prefix measures
it (the prefix holds the first sentences' queries, with their own cache hits).  Every loop runs the model
through ``Victim`` (``torch.inference_mode``), so the loops differ only in batching, padding and
caching; TextAttack's own Python overhead (``AttackedText`` objects, constraint checks) is not
emulated, which flatters loop a.

What loop a emulates, as read in QData/TextAttack (commit f800c2c):

- ``textattack/goal_functions/goal_function.py``: ``GoalFunction.__init__`` defaults
  ``use_cache=True``, ``model_batch_size=32``, ``model_cache_size=2**20`` (an ``lru.LRU`` keyed by
  text); ``get_results`` hands all texts of a step to ``_call_model``, which answers cached texts
  from the LRU and sends the others to ``_call_model_uncached``: the wrapper is called on slices of
  ``batch_size`` texts.  ``textattack/attack_args.py``: ``AttackArgs.model_batch_size = 32`` too
  (its ``model_cache_size`` is 2**18; no example here comes near either size).
- ``textattack/attack.py``: ``Attack._attack`` calls ``clear_cache()`` after every example, which
  empties the goal function's model cache: the cache is per example.
- ``textattack/models/wrappers/huggingface_model_wrapper.py``: ``__call__`` tokenizes with
  ``padding="max_length"``, ``truncation=True``, ``max_length=tokenizer.model_max_length`` (512
  when the tokenizer leaves it unset at ``int(1e30)``) and runs the model under ``no_grad``.
- ``textattack/search_methods/greedy_word_swap_wir.py``: the ``delete`` word ranking scores all
  leave-one-out texts in one ``get_goal_results`` call, as srnet's search does.

Run (train the victim first, about 5 minutes on CPU; ``--model`` defaults to the run it writes,
``runs/sst2_victim_cpu/sst2_victim_cpu``)::

    srnet run recipes/sst2/victim_cpu.yaml
    python benchmarks/bench_attack.py [--n 50 --baseline 200 --threads 2 --json bench_attack.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from srnet.config import Recipe, load_recipe, parse_override
from srnet.console import quiet_libraries
from srnet.errors import SrnetError
from srnet.evaluation.attacks import Victim, build_attack
from srnet.evaluation.attacks.victim import Pair
from srnet.experiments.timing import bench_environment, bench_warnings, load_average
from srnet.models import load_classifier, load_tokenizer
from srnet.reporting.render import format_table
from srnet.rundir.layout import RunDir
from srnet.tasks import get_task, load_examples
from srnet.tasks.base import Example
from srnet.tasks.readers import DATA_DIR_ENV
from srnet.tasks.spec import DataSpec, Task

REPO = Path(__file__).resolve().parents[1]
VICTIM_RECIPE = REPO / "recipes" / "sst2" / "victim_cpu.yaml"
TEXTATTACK_BATCH = 32
UNSET_LENGTH = int(1e30)
"""transformers' ``model_max_length`` of a tokenizer that sets none; TextAttack pads to 512 then."""

Log = list[list[list[Pair]]]
"""Texts asked for: per example, per search step."""


@dataclass(frozen=True)
class Loop:
    """A way to run queries: texts per forward pass, and the padded length (None: the batch's longest)."""

    key: str
    label: str
    batch_size: int
    pad_to: int | None
    limited: bool = False
    """Replays only the first ``--baseline`` texts asked for (the slow loop)."""


@dataclass(frozen=True)
class Timing:
    """Texts asked for, texts the model ran on, and the seconds it took."""

    asked: int
    ran: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.asked / self.seconds


class LoggingVictim(Victim):
    """srnet's oracle, logging every step's texts (``log``; call :meth:`next_example` before each
    example) and the seconds spent answering."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: Log = []
        self.seconds = 0.0

    def next_example(self) -> None:
        self.log.append([])

    def probs(self, pairs):
        self.log[-1].append(list(pairs))
        start = time.perf_counter()
        out = super().probs(pairs)
        self.seconds += time.perf_counter() - start
        return out


def default_run() -> Path:
    """The run directory ``srnet run recipes/sst2/victim_cpu.yaml`` writes."""
    recipe = load_recipe(VICTIM_RECIPE)
    return REPO / recipe.output_dir / recipe.name


def load_run(path: Path) -> tuple[Recipe, Task, torch.nn.Module, Any]:
    """The recipe, task, model and tokenizer of a finished srnet run; exits when it is not one."""
    run = RunDir(path)
    if not run.model.is_dir():
        raise SystemExit(f"no trained srnet run at {path}: train the victim first with "
                         f"`srnet run {VICTIM_RECIPE.relative_to(REPO)}` (about 5 minutes on CPU)")
    recipe = load_recipe(run.config)
    task = get_task(recipe.task)
    return recipe, task, load_classifier(str(run.model), task.labels).eval(), load_tokenizer(str(run.model))


def sst2_sentences(task: Task, n: int) -> list[Example]:
    """The first ``n`` SST-2 test sentences under ``$SRNET_DATA_DIR`` (default ``../shared/data``)."""
    base = Path(os.environ.get(DATA_DIR_ENV, REPO.parent / "shared" / "data"))
    path = base / "sst2" / "test.jsonl"
    if not path.is_file():
        raise SystemExit(f"no SST-2 test file at {path}: set ${DATA_DIR_ENV} to the data folder")
    return load_examples(task, DataSpec(path=str(path)))[:n]


def textattack_length(tokenizer) -> int:
    """The length TextAttack's HuggingFace wrapper pads every text to with ``tokenizer``."""
    return 512 if tokenizer.model_max_length == UNSET_LENGTH else tokenizer.model_max_length


def make_loops(stock_length: int, run_length: int) -> list[Loop]:
    """The replays: TextAttack's default with a stock tokenizer (and with the run's own, when its
    length differs), then the two that separate padding from batching."""
    batch = TEXTATTACK_BATCH
    loops = [Loop("a", f"a: TextAttack default, batches of {batch}, pad to {stock_length} (stock tokenizer)",
                  batch, stock_length, limited=True)]
    if run_length != stock_length:
        loops.append(Loop("a_run", f"a': the same, pad to {run_length} (the run's tokenizer)",
                          batch, run_length))
    return [*loops, Loop("b", "b: one text per pass, pad to its length", 1, None),
            Loop("c", f"c: batches of {batch}, pad to the longest", batch, None)]


def attack_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name`` or ``name:key=value,key=value`` (values YAML-parsed) -> the attack and its params."""
    name, _, settings = spec.partition(":")
    params = {}
    for item in filter(None, settings.split(",")):
        try:
            key, value = parse_override(item, f"--attacks {spec!r}")
        except SrnetError:
            raise SystemExit(f"--attacks {spec!r}: expected name or name:key=value[,key=value]") from None
        params[key] = value
    return name, params


def attack_with_srnet(spec: str, model, tokenizer, max_length: int,
                      examples: list[Example]) -> tuple[Log, Timing, Timing, int]:
    """Attack ``examples`` through a :class:`LoggingVictim` with the attack ``spec`` names (see
    :func:`attack_spec`): its log, the oracle's and the whole loop's :class:`Timing`, and the
    number of successes."""
    attack = build_attack(*attack_spec(spec))
    attack.ready(get_task("sentiment"), Path(os.environ.get(DATA_DIR_ENV, REPO.parent / "shared" / "data")))
    attack.prepare(model, tokenizer)
    victim = LoggingVictim(model, tokenizer, max_length)
    wins = 0
    start = time.perf_counter()
    for i, ex in enumerate(examples):
        victim.next_example()
        outcome = attack.attack(victim, (ex.text_a, ex.text_b), ex.label, np.random.default_rng([0, i]))
        wins += outcome.result == "successful"
    seconds = time.perf_counter() - start
    oracle = Timing(victim.queries, victim.evaluated, victim.seconds)
    return victim.log, oracle, Timing(victim.queries, victim.evaluated, seconds), wins


def prefix(log: Log, limit: int | None) -> Log:
    """The first ``limit`` texts asked for in ``log``, example and step boundaries kept (all when None)."""
    if limit is None:
        return log
    out: Log = []
    left = limit
    for steps in log:
        if left <= 0:
            break
        out.append([])
        for step in steps:
            if left <= 0:
                break
            out[-1].append(step[:left])
            left -= len(out[-1][-1])
    return out


def replay(loop: Loop, model, tokenizer, max_length: int, log: Log) -> Timing:
    """Run the logged steps as ``loop`` does, with TextAttack's model cache (emptied per example)."""
    victim = Victim(model, tokenizer, max_length, batch_size=loop.batch_size, cache=False, pad_to=loop.pad_to)
    asked = 0
    start = time.perf_counter()
    for steps in log:
        seen: set[Pair] = set()
        for step in steps:
            new = [pair for pair in dict.fromkeys(step) if pair not in seen]
            if new:
                victim.probs(new)
            seen.update(new)
            asked += len(step)
    return Timing(asked, victim.evaluated, time.perf_counter() - start)


def ratios(timings: dict[str, Timing]) -> dict[str, float]:
    """srnet ÷ a (the headline; also the whole loop's, and srnet ÷ a' when there is an a'), padding
    c ÷ a, batching c ÷ b, srnet's own srnet ÷ c."""
    def ratio(x: str, y: str) -> float:
        return timings[x].rate / timings[y].rate

    pairs = {"srnet/a": ("srnet", "a"), "srnet_loop/a": ("srnet_loop", "a"),
             "srnet/a_run": ("srnet", "a_run"), "padding c/a": ("c", "a"), "batching c/b": ("c", "b"),
             "srnet/c": ("srnet", "c")}
    return {name: ratio(x, y) for name, (x, y) in pairs.items() if y in timings}


def bench_attack(name: str, model, tokenizer, max_length: int, examples: list[Example], loops: list[Loop],
                 baseline: int | None) -> dict:
    """srnet's run and the replays of one attack: timings by loop, ratios, successes."""
    log, oracle, whole, wins = attack_with_srnet(name, model, tokenizer, max_length, examples)
    replays = {}
    for loop in sorted(loops, key=lambda loop: loop.limited):  # the slow loop last
        queries = prefix(log, baseline if loop.limited else None)
        replays[loop.key] = replay(loop, model, tokenizer, max_length, queries)
    timings = {"srnet": oracle, "srnet_loop": whole, **{loop.key: replays[loop.key] for loop in loops}}
    return {"successful": wins, "timings": timings, "ratios": ratios(timings)}


def warm_up(model, tokenizer, max_length: int, loops: list[Loop], pair: Pair) -> None:
    """One untimed pass of every loop and of srnet's oracle, so no timing pays first-call costs."""
    for loop in [Loop("srnet", "", 64, None), *loops]:
        replay(loop, model, tokenizer, max_length, [[[pair]]])


def print_result(name: str, result: dict, loops: list[Loop], baseline: int | None) -> None:
    """The table of one attack and its ratios."""
    labels = {"srnet": "srnet oracle: batches <= 64, pad to the longest, cache for the run",
              "srnet_loop": "srnet whole attack loop (+ candidates, similarity)",
              **{loop.key: loop.label for loop in loops}}
    rows = [{"loop": labels[key], "asked": t.asked, "ran": t.ran, "seconds": t.seconds, "asked/s": t.rate}
            for key, t in result["timings"].items()]
    print(f"\n{name}: {result['successful']} successful; loop a replays the first "
          f"{result['timings']['a'].asked} texts asked (--baseline {baseline}), the others all; every "
          "replay caches per example")
    print(format_table(rows, list(rows[0]), {"seconds": ".1f", "asked/s": ".1f"}))
    ratios_ = ", ".join(f"{k} {v:.2f}x" for k, v in result["ratios"].items())
    print(f"ratios of texts asked per second: {ratios_}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a trained srnet run (default: the victim_cpu recipe's)")
    parser.add_argument("--n", type=int, default=50, help="SST-2 test sentences attacked")
    parser.add_argument("--baseline", type=int, default=200,
                        help="texts asked for that loop a (TextAttack's default, slow) replays; 0: all")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--attacks", nargs="+", default=["charswap", "wordswap"],
                        help="attacks, each 'name' or 'name:key=value[,key=value]' (its params), e.g. "
                        "textfooler textfooler:similarity_precision=bfloat16")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    return parser.parse_args(argv)


def print_header(report: dict) -> None:
    """The run, the sentences, the threads and the load average (with a warning on a busy machine)."""
    print(f"{report['model']}: task {report['task']}, max_length {report['max_length']}; TextAttack pads to "
          f"{report['stock_length']} with the backbone's stock tokenizer, to {report['run_length']} with the "
          f"run's own; {report['n']} SST-2 test sentences; torch threads {report['threads']}; load average "
          f"{report['load_average_before']} before the run")
    for line in bench_warnings([], report["load_average_before"], os.cpu_count() or 1):
        print(f"warning: {line}")


def as_json(result: dict) -> dict:
    """One attack's result with every :class:`Timing` as a dict (and its rate)."""
    timings = {key: {**asdict(t), "rate": t.rate} for key, t in result["timings"].items()}
    return {**result, "timings": timings}


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark, print a table per attack, and return (``--json``: also write) every number."""
    args = parse_args(argv)
    quiet_libraries()
    torch.set_num_threads(args.threads)
    path = args.model or default_run()
    recipe, task, model, tokenizer = load_run(path)
    max_length, baseline = recipe.model.max_length, args.baseline or None
    examples = sst2_sentences(task, args.n)
    stock_length = textattack_length(load_tokenizer(recipe.model.name))
    loops = make_loops(stock_length, textattack_length(tokenizer))
    report = {"model": str(path), "task": task.name, "max_length": max_length, "stock_length": stock_length,
              "run_length": textattack_length(tokenizer), "n": len(examples), "baseline": baseline,
              "threads": torch.get_num_threads(), "load_average_before": load_average(),
              "loops": {loop.key: asdict(loop) for loop in loops}}
    print_header(report)
    warm_up(model, tokenizer, max_length, loops, (examples[0].text_a, examples[0].text_b))
    report["attacks"], report["skipped"] = {}, {}
    for name in args.attacks:
        try:
            result = bench_attack(name, model, tokenizer, max_length, examples, loops, baseline)
        except SrnetError as exc:
            report["skipped"][name] = str(exc)
            print(f"\n{name} skipped: {exc}")
            continue
        print_result(name, result, loops, baseline)
        report["attacks"][name] = as_json(result)
    report |= {"load_average_after": load_average(), "environment": bench_environment()}
    print(f"\nload average after the run: {report['load_average_after']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return report


if __name__ == "__main__":
    main()
