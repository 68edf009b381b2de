"""``docs/cli.md``, written from the command registry: every built-in ``srnet`` command with its
help, the Python function behind it, its settings model and each argument's default and help, as
the parsers built from :data:`srnet.experiments.verbs.base.VERBS` hold them.

``python -m srnet.cli_docs > docs/cli.md`` rewrites the page; ``tests/project/test_docs_registries.py``
fails when it is stale.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from pydantic_core import PydanticUndefined

INTRO = """# CLI

[README](../README.md) · [documentation index](README.md)

Every `srnet` command, generated from the command registry and the parsers it builds
(`python -m srnet.cli_docs > docs/cli.md`; a test fails when this page is stale). `srnet COMMAND
--help` prints the same arguments. Each command is one `srnet.api` function; a verb's settings
(its *settings model*) are at once its flags, the keywords of its `api` call and the `with:` of
its sweep stage, each with one name and one default.
"""

OUTRO = """## Data paths, runs and errors

Data paths in recipes are relative to `$SRNET_DATA_DIR` (or `data.base_dir`, or the working
directory); a relative path that is not found says where it was looked for and names
`SRNET_DATA_DIR`. A typical session on the real data:

```bash
export SRNET_DATA_DIR=../shared/data
srnet run recipes/mnli/finetune.yaml                                   # dense CE -> runs/mnli_ft
srnet bias fit recipes/mnli/finetune.yaml --out runs/bias/mnli_overlap # bias model, out-of-fold
srnet run recipes/mnli/finetune.yaml --set name=mnli_ft_poe --set loss.name=poe \\
    --set bias_dir=runs/bias/mnli_overlap                              # product-of-experts
srnet run recipes/mnli/mask_train.yaml --set pruning.sparsity=0.7 --set name=mnli_mask_train_70
srnet report runs                                                      # -> runs/report/report.md + figures
```

A run never loses earlier work: the run name must be a plain folder name (not empty, `.`, `..`
or a path); the whole recipe is checked and every input resolved (loss and its parameters, bias
predictions for every training id with the right classes and no NaN, teacher, difficulty,
method config, mask file against the model, `init_from`/`dense_reference` runs) before the run
folder is created; and `--overwrite` writes the new run into a hidden sibling
(`.<name>.overwrite/`) and swaps it in only when it has *completed*, so a failed or killed new run
leaves the old one intact. `srnet report` skips hidden folders.

Two runs never share a folder: a run holds `<output_dir>/.<name>.lock` (pid, host, start time)
from before its model loads until it ends, and a second `srnet run` of that folder (plain,
`--resume` or `--overwrite`) is refused in one line naming the holder. A killed run's lock (a dead
pid on this host, or older than 24 h from another host) is taken over with a one-line note.

Reading a run folder never imports or runs anything from it. The `plugins:` a run's
`config.yaml` records are not imported by `srnet predict`, `attack`, `report` or `--resume`:
give them with `--plugins` (a module name or a `.py` path, repeatable; or install them as
`srnet.plugins` entry points).

Every error from bad input is one line naming the file, line, field or value, with exit status 2,
and nothing half-written: e.g. `error: data/train.jsonl:2: invalid JSON`,
`error: model 'runs/nonexistent_run' not found: no such folder`, `error: recipe: training.lrr:
unknown key`, `error: recipe: pruning.sparsity: sparsity must be in [0, 1), got 1.5`.
"""


def built_in(verb: Any) -> bool:
    """A command srnet itself declares (a plug-in's verb is left out of the page)."""
    module, _, _ = verb.api.rpartition(":")
    return not module or module.startswith("srnet.")


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser by its words ("bias fit"), from ``srnet``'s own parser."""
    from srnet.cli import build_parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    words = f"{prefix} {name}".strip()
                    found[words] = child
                    walk(child, words)

    walk(build_parser(), "")
    return found


def one_line(text: str) -> str:
    """Help text as one Markdown table cell."""
    return re.sub(r"\s+", " ", text).replace("%%", "%").replace("|", "\\|").strip()


def positional_metavar(action: argparse.Action) -> str:
    """A positional argument's name as shown: its metavar, else its name in capitals."""
    return action.metavar if isinstance(action.metavar, str) else action.dest.upper().replace("_", "-")


def argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    """``| argument | default | what it does |`` for each argument but ``--help``."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            metavar = formatter._get_default_metavar_for_optional(action)
            shown = ", ".join(action.option_strings)
            if action.nargs != 0:
                shown += " " + formatter._format_args(action, metavar)
            if action.required:
                default = "required"
            elif action.nargs == 0 or action.default in (None, argparse.SUPPRESS, PydanticUndefined):
                default = ""
            elif isinstance(action.default, list | tuple):
                default = " ".join(str(value) for value in action.default)
            else:
                default = str(action.default)
        else:
            shown = formatter._format_args(action, positional_metavar(action))
            default = "required" if action.nargs not in ("?", "*") else ""
        text = formatter._expand_help(action) if action.help else ""
        text = re.sub(r"\s*\(default: [^()]*\)$", "", text)  # the default has its own column
        rows.append(f"| `{shown}` | {one_line(default)} | {one_line(text)} |")
    return rows


def usage(words: str, parser: argparse.ArgumentParser) -> str:
    """``srnet WORDS POSITIONAL --required R [options]``."""
    parts = [f"srnet {words}"]
    formatter = parser._get_formatter()
    optional = False
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:
            parts.append(formatter._format_args(action, positional_metavar(action)))
        elif action.required:
            metavar = formatter._get_default_metavar_for_optional(action)
            parts.append(f"{action.option_strings[0]} {formatter._format_args(action, metavar)}")
        else:
            optional = True
    return " ".join(parts) + (" [options]" if optional else "")


def cli_markdown() -> str:
    """The whole page."""
    from srnet.experiments.verbs.base import VERBS

    found = parsers()
    verbs = [verb for verb in VERBS.values() if built_in(verb)]
    rows = ["| command | what it does | Python |", "| --- | --- | --- |"]
    sections = []
    for verb in verbs:
        module, _, function = verb.api.rpartition(":")
        python = f"{module or 'srnet.api'}.{function}"
        anchor = re.sub(r"[^a-z0-9 -]", "", f"srnet {verb.words}".lower()).replace(" ", "-")
        rows.append(f"| [`srnet {verb.words}`](#{anchor}) | {one_line(verb.help)} | `{python}` |")
        parser = found[verb.words]
        said = one_line(verb.help)
        lines = [f"### `srnet {verb.words}`", "", f"{said[:1].upper()}{said[1:]}.",
                 "", f"`{usage(verb.words, parser)}`; Python: `{python}`"]
        if verb.config is not None:
            lines[-1] += f"; settings model: `{verb.config.__module__}.{verb.config.__qualname__}`"
        if verb.stage:
            lines[-1] += f"; sweep stage kind: `{verb.stage}`"
        lines[-1] += "."
        arguments = argument_rows(parser)
        if arguments:
            lines += ["", "| argument | default | what it does |", "| --- | --- | --- |", *arguments]
        sections.append("\n".join(lines) + "\n")
    table = f"## Commands ({len(verbs)})\n\n" + "\n".join(rows) + "\n"
    return "\n".join([INTRO, table, "## Each command\n", *sections, OUTRO])


if __name__ == "__main__":
    print(cli_markdown(), end="")
