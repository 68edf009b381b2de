"""Section ``attacks``: one table per attack the set's runs were attacked with.

Reads ``RUN/attack/<name>.json`` (``srnet attack``) and ``RUN/attack/<stage key>/<name>.json`` (a
sweep's ``attack`` stage): Clean%, Aua%, Suc% and #Query, mean ± std over the attacked runs of each
configuration.
"""

from __future__ import annotations

from srnet.reporting.study.base import (
    Part,
    RunSet,
    SetSection,
    Study,
    register_section,
    stats_table,
)
from srnet.rundir.layout import ATTACK_COLUMNS, UNION


@register_section("attacks")
class AttackTables(SetSection):
    """Clean%, Aua%, Suc% and #Query of every attack, mean ± std over the attacked runs."""

    order = 20

    def applies(self, study: Study, runs: RunSet) -> bool:
        return any(run.attacks for run in runs.cohort.runs)

    def render(self, study: Study, runs: RunSet) -> Part:
        part = Part()
        names = {name for run in runs.cohort.runs for name in run.attacks}
        for name in sorted(names, key=lambda n: (n.startswith(UNION), n)):  # unions last
            summaries = [run.attacks[name] for run in runs.cohort.runs if name in run.attacks]
            splits = ", ".join(sorted({str(s.get("split")) for s in summaries}))
            totals = ", ".join(str(t) for t in sorted({s.get("total") for s in summaries}, key=str))
            columns = {f"{name} {c}": c for c in ATTACK_COLUMNS}
            attacked = [g for g in runs.groups if any(c in g.stats for c in columns)]
            table = stats_table(attacked, list(columns), headers=columns, digits=1)
            part.tables.append(table)
            if name.startswith(UNION):
                members = name.removeprefix(UNION).split("+")
                part.lines += [
                    "", f"### All attacks (union of {', '.join(members)})", "",
                    f"A sentence survives only if it survives every attack ({', '.join(members)}) on "
                    f"{splits}, {totals} examples per run: Aua% = survivors/total, Suc% = 1 − "
                    "survivors/attacked, #Query = the attacks' #Query summed; mean ± std over runs.", "",
                    table]
                continue
            part.lines += [
                "", f"### Attack `{name}`", "",
                f"`srnet attack` results (`attack/{name}.json`) on {splits}, {totals} examples per run. "
                "Clean% = (successful + failed)/total, Aua% = failed/total (accuracy under attack), "
                "Suc% = successful/(successful + failed), #Query = model queries per attacked example; "
                "mean ± std over runs, n = runs attacked.", "", table]
        return part
