"""The code keeps the shape the architecture notes promise: short functions, no branch on a
runtime's name outside the runtime table, and no import cycle between srnet's modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "srnet"
MAX_LINES = 60


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_function_is_over_sixty_lines():
    long = [
        f"{path.relative_to(SRC)}:{node.name} ({node.end_lineno - node.lineno + 1})"
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_LINES
    ]
    assert not long, long


def test_no_code_branches_on_a_runtimes_name():
    """A runtime is asked what it needs (``get_runtime(name).needs_onnx``), never compared by name."""
    branch = re.compile(
        r"""runtime\w*["')\]]*\s*[!=]=\s*["']|["'](torch|onnx[\w-]*)["']\s*[!=]=\s*\w*runtime"""
    )
    found = [
        f"{path.relative_to(SRC)}:{number}"
        for path in modules()
        if path.name != "runtimes.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if branch.search(line)
    ]
    assert not found, found


def _imports(path: Path) -> set[str]:
    """The srnet modules ``path`` imports (at any depth: a lazy import is an arrow too)."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.startswith("srnet")
        ):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("srnet"))
    return out - {package}


def test_the_compress_package_imports_nothing_from_other_verbs_bodies_or_the_demo():
    lateral = {
        f"{path.name}: {name}"
        for path in (SRC / "experiments" / "compress").glob("*.py")
        for name in _imports(path)
        if name.startswith(("srnet.experiments.demo", "srnet.experiments.verbs.compress"))
    }
    assert not lateral, lateral
