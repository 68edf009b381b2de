"""The registered names the docs list by hand (methods, losses, loss inputs, objectives, attacks,
stage kinds) are exactly the built-in plug-ins the registries hold (issue 41).

Each listing is the text between two markers on a page, read with its lines joined (an indented
line, or a ``# |`` comment line, goes on from the one above: the listings sit in YAML and file
trees); notes in parentheses are dropped and the names split at ``|`` and ``,``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import srnet.evaluation.attacks  # noqa: F401  (registers the attacks)
from srnet.evaluation.attacks.base import ATTACKS
from srnet.experiments.sweep.stages import STAGES
from srnet.loss_inputs import LOSS_INPUTS
from srnet.losses import LOSSES
from srnet.pruning.registry import METHODS
from srnet.registry import Registry
from srnet.training.objectives import OBJECTIVES

DOCS = Path(__file__).resolve().parents[1] / "docs"

LISTINGS = [
    ("recipes.md", "name: ce # ", " params:", LOSSES),
    ("recipes.md", "name: standard # ", " params:", OBJECTIVES),
    ("recipes.md", "method: mask_train # ", " sparsity:", METHODS),
    ("api.md", "import build_loss # ", "\n", LOSSES),
    ("api.md", "import LOSS_INPUTS, register_input # ", "\n", LOSS_INPUTS),
    ("api.md", "import build_method, PruningConfig # ", "\n", METHODS),
    ("api.md", "import build_attack # ", "\n", ATTACKS),
    ("architecture.md", "stage-kind registry (classes *Stage): ", " execute.py", STAGES),
    ("architecture.md", "greedy search, registry: ", ";", ATTACKS),
    ("architecture.md", "objectives/ base (Objective, registry, train_step); registry: ", " data.py",
     OBJECTIVES),
    ("architecture.md", "losses.py loss registry: ", " loss_inputs/", LOSSES),
    ("architecture.md", "one module per input (", ")", LOSS_INPUTS),
]


def joined(path: Path) -> str:
    """The page with continuation lines joined onto the line above and runs of spaces single."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\n[ \t]*#[ \t]*(?=\|)", " ", text)  # a YAML comment that goes on: "# | kd ..."
    text = re.sub(r"\n[ \t]+(?=\S)", " ", text)  # an indented line of a tree or a wrapped comment
    return re.sub(r"[ \t]+", " ", text)


def listed(path: Path, start: str, end: str) -> set[str]:
    """The names listed on the page ``path`` between ``start`` and the first ``end`` after it."""
    text = joined(path)
    at = text.find(start)
    assert at >= 0, f"{path}: no listing starts with {start!r}"
    body = text[at + len(start):text.index(end, at + len(start))]
    body = re.sub(r"\([^()]*\)", "", body)  # notes: "freelb (adversarial)"
    return {name.strip().strip("`") for name in re.split(r"[|,]", body) if name.strip()}


def built_in(registry: Registry) -> set[str]:
    """The names srnet itself registers (plug-ins a test loaded left out)."""
    return {name for name, item in registry.items() if item.__module__.startswith("srnet.")}


@pytest.mark.parametrize(("page", "start", "end", "registry"), LISTINGS,
                         ids=[f"{page}:{registry.kind}" for page, _, _, registry in LISTINGS])
def test_a_listing_in_the_docs_names_every_registered_plugin(page, start, end, registry):
    assert listed(DOCS / page, start, end) == built_in(registry)


def test_the_listing_reader_joins_lines_and_drops_notes(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("  name: a # a (first) | b\n  # | c (x, y)\n  next: 1\n  tree:  d, e,\n    f\nother\n")
    assert listed(page, "name: a # ", " next:") == {"a", "b", "c"}
    assert listed(page, "tree: ", "\n") == {"d", "e", "f"}
