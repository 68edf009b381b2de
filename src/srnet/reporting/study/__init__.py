"""``srnet report``: one Markdown report with figures for a folder (or list) of finished runs,
assembled from registered sections (:mod:`.base`), each one module, in this order:

================ ========= ===============================================================
section          scope     what it shows (when it applies)
================ ========= ===============================================================
tables           each set  mean ± std over seeds of every split's metric, gap, F_bias under
                           the set's collapse rule (and the other rule); metrics against
                           sparsity; accuracy by heuristic x label (runs with eval splits)
attacks          each set  Clean%, Aua%, Suc%, #Query of every attack (``attack/*.json``)
easy_hard        each set  the RMC paper's Table 6 layout and Figure 1 (an easy/hard split)
winwin           each set  Win-win's layout: rows by paradigm and sparsity, ID / hard / easy /
                           gap / other splits / mask movement; ID and hard accuracy against
                           sparsity and against the search's start (an easy/hard split and
                           several paradigms)
jaccard          each set  Jaccard of the masks of different configurations (kept masks)
layers           each set  per-layer sparsity heatmaps of the pruned configurations
learning_curves  each set  the dev metric against the training step (``log.jsonl``)
structured       report    speedup vs accuracy and gap of the models a ``bench.json`` timed
tamt             report    TAMT masks: dev losses vs transfer accuracy, correlations, mask
                           similarity (raw-text mask searches and their transfers)
================ ========= ===============================================================

A *set* is a group of comparable runs (same task, same evaluation splits and sizes).  Adding a
section is one module with a ``@register_section("name")`` class (and its import below).
"""

from srnet.reporting.study import (  # noqa: F401  (registration imports)
    attacks,
    easy_hard,
    jaccard,
    layers,
    learning_curves,
    structured,
    tables,
    tamt,
    winwin,
)
from srnet.reporting.study.base import (
    SECTIONS,
    Part,
    ReportSection,
    RunSet,
    SetSection,
    Study,
    StudySection,
    register_section,
)
from srnet.reporting.study.tables import RULE_TEXT
from srnet.reporting.study.writer import Report, write_report

__all__ = [
    "RULE_TEXT",
    "SECTIONS",
    "Part",
    "Report",
    "ReportSection",
    "RunSet",
    "SetSection",
    "Study",
    "StudySection",
    "register_section",
    "write_report",
]
