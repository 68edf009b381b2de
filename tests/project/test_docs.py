"""The README is the front door: short, and every link in it and in docs/ resolves.

Checks README.md and every docs/**/*.md: each relative Markdown link or image target exists,
each `#anchor` into a Markdown file names one of its headings (GitHub's slugs), README.md stays
short, and every page under docs/ is reachable from README.md by following links.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 199

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).+?\1")
# [text](target) and ![alt](target "title"); link text may hold `code` and one level of [brackets]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose_lines(path: Path):
    """(line number, text) of the lines outside fenced code blocks, inline code blanked out."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), line)


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link and image in the file's prose."""
    return [(n, m.group(1)) for n, line in prose_lines(path) for m in LINK.finditer(line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, markup dropped, punctuation but '-' and '_'
    dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.replace("`", "").lower()
    kept = []
    for ch in text:
        if ch in " -_" or unicodedata.category(ch)[0] in "LMN":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated slug gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def resolve(page: Path, target: str) -> tuple[Path, str] | None:
    """The file a relative target names, and its anchor; None for external links."""
    if EXTERNAL.match(target):
        return None
    path, _, fragment = target.partition("#")
    file = page if not path else (page.parent / unquote(path)).resolve()
    return file, unquote(fragment)


def unclosed_fence(path: Path) -> int | None:
    """The line of a code fence that is never closed (it would swallow the rest of the page)."""
    opened = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            opened = None if opened else number
    return opened


def problems(page: Path) -> list[str]:
    out = []
    rel = page.relative_to(ROOT)
    if (line := unclosed_fence(page)) is not None:
        out.append(f"{rel}:{line}: code fence never closed")
    for number, target in links(page):
        resolved = resolve(page, target)
        if resolved is None:
            continue
        file, fragment = resolved
        where = f"{rel}:{number}: ({target})"
        if target.startswith("/"):
            out.append(f"{where} is an absolute path; use one relative to the page")
        elif not file.exists():
            out.append(f"{where} -> {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"
                       " does not exist")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            out.append(f"{where}: no heading with anchor #{fragment} in {file.relative_to(ROOT)}")
    return out


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, (
        f"README.md has {n} lines (at most {MAX_README_LINES}): move the detail to a page under docs/")


def test_readme_names_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "## Two commands" in text
    assert "make demo" in text and "make test" in text


def test_every_relative_link_and_image_resolves():
    broken = [p for page in pages() for p in problems(page)]
    assert not broken, f"{len(broken)} broken link(s) in README.md / docs/:\n" + "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for _, target in links(page):
            resolved = resolve(page, target)
            if resolved is None:
                continue
            file = resolved[0]
            if file.suffix == ".md" and file.is_file() and file not in seen:
                seen.add(file)
                todo.append(file)
    orphans = [str(p.relative_to(ROOT)) for p in sorted(DOCS.rglob("*.md")) if p.resolve() not in seen]
    assert not orphans, ("pages under docs/ that no link chain from README.md reaches (link them from "
                         "docs/README.md):\n" + "\n".join(orphans))


def test_slug_follows_github():
    assert slug("RMC's easy/hard protocol on the MNLI sample (§7; CPU; in progress)") == (
        "rmcs-easyhard-protocol-on-the-mnli-sample-7-cpu-in-progress")
    assert slug("Run directory and `metrics.json`") == "run-directory-and-metricsjson"
    assert slug("TAMT: step cost and memory (part 9)") == "tamt-step-cost-and-memory-part-9"
    assert slug("Speed: mask-training and IMP steps vs dense_fine-tuning") == (
        "speed-mask-training-and-imp-steps-vs-dense_fine-tuning")


def test_the_link_finder_skips_code_and_finds_images():
    import textwrap

    found = [t for _, line in prose_lines_of(textwrap.dedent("""\
        See [a](a.md#x) and ![fig](../results/f.png "title") and [`code`](b.md).
        `[not](a link)` here
        ```python
        x = d["k"](y)  [also](not.md)
        ```
        """)) for t in [m.group(1) for m in LINK.finditer(line)]]
    assert found == ["a.md#x", "../results/f.png", "b.md"]


def prose_lines_of(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "page.md"
        path.write_text(text, encoding="utf-8")
        return list(prose_lines(path))


def test_the_tests_page_maps_every_test_folder():
    """docs/tests.md names each folder of tests/ (a new room's tests get a row) and no folder that is gone."""
    page = (ROOT / "docs" / "tests.md").read_text()
    rows = set(re.findall(r"^\| `(\w+)/` \|", page, flags=re.M))
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert rows == folders
