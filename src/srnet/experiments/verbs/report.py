"""``srnet report``: report.md and figures of finished runs, averaged over seeds."""

from __future__ import annotations

from pydantic import Field

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import plugins_flag
from srnet.experiments.verbs.flags import config_values
from srnet.settings import VerbConfig


class ReportConfig(VerbConfig):
    """``srnet report``: what the report draws."""

    figures: bool = Field(True, description="figures beside report.md (--no-figures: "
                          "report.md with tables only)")


def arguments(p) -> None:
    p.add_argument("runs", nargs="+", metavar="PATH",
                   help="run directories and/or folders searched recursively for complete runs")
    p.add_argument("--out", help="report folder (default PATH/report for one PATH, else ./report); an "
                   "earlier srnet report there is rewritten")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a report.md in --out that srnet did not write")
    plugins_flag(p)


def call(args, report) -> None:
    written = report(args.runs, out=args.out, plugins=args.plugins, overwrite=args.overwrite,
                     **config_values(args, ReportConfig))
    print("\n".join(written.tables))
    print(f"wrote {written.path} and {len(written.figures)} figures")


register_verb(Verb("report", help="report.md + figures: runs averaged over seeds, against sparsity",
                   api="report", arguments=arguments, call=call, config=ReportConfig))
