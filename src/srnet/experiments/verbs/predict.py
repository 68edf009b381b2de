"""``srnet predict``: a finished run's predictions on one of its splits."""

from __future__ import annotations

from pydantic import Field

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import plugins_flag
from srnet.experiments.verbs.flags import config_values
from srnet.settings import VerbConfig


class PredictConfig(VerbConfig):
    """``srnet predict``: a finished run's predictions on one split."""

    split: str = Field("train", description="train, dev, or the name of an eval/challenge split")


def arguments(p) -> None:
    p.add_argument("run_dir")
    p.add_argument("--output", help="file to write (default RUN/predictions/<split>.jsonl); an "
                   "existing file needs --overwrite, and a run's own record is never replaced")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing predictions file (atomically)")
    plugins_flag(p)


def call(args, predict) -> None:
    path = predict(args.run_dir, output=args.output, overwrite=args.overwrite, plugins=args.plugins,
                   **config_values(args, PredictConfig))
    print(f"wrote {path}")


register_verb(Verb("predict", help="write a finished run's predictions on one of its splits", api="predict",
                   arguments=arguments, call=call, config=PredictConfig, stage="predict"))
