"""Readers: turn a data file or hub dataset into raw rows (column -> string) with line numbers.

Readers know file layouts, not tasks: :func:`open_split` reads a
:class:`~srnet.tasks.spec.DataSpec` with the layout its format declares (JSON Lines, CSV, TSV,
plain text or the hub; :mod:`srnet.tasks.formats`, which also says where the named public
formats keep their fields).  Turning rows into :class:`~srnet.tasks.base.Example` objects is
:mod:`srnet.tasks.loading`'s job.

TSV files are read without quote processing (as GLUE, HANS and PAWS are written); CSV files
use standard quoting.  Line numbers are 1-based and count the header line.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from srnet.errors import SrnetError
from srnet.tasks.spec import DataSpec, HubSpec

NO_GOLD = "-"
"""Label of SNLI/MNLI rows without annotator agreement: such rows are skipped and counted."""

TEXT_COLUMN = "text"
"""The one column of a plain-text file's rows."""

DATA_DIR_ENV = "SRNET_DATA_DIR"
"""Environment variable naming the folder that relative data paths are read from."""


class RawRow(NamedTuple):
    """One record: its 1-based line number (for error messages) and its fields as strings."""

    line: int
    fields: dict[str, str]


@dataclass(frozen=True)
class RawSplit:
    """The rows of one source; ``header`` is known up front for tabular files and hub datasets."""

    source: str
    header: tuple[str, ...] | None
    rows: Iterator[RawRow]


def data_dir(base_dir: str | Path | None = None) -> Path | None:
    """The folder relative data paths are read from: ``base_dir``, else ``$SRNET_DATA_DIR``, else
    None (the cwd)."""
    base = base_dir or os.environ.get(DATA_DIR_ENV)
    return Path(base) if base else None


def expand(path: str) -> Path:
    """``path`` with ``$VARS`` and ``~`` expanded."""
    return Path(os.path.expanduser(os.path.expandvars(path)))


def resolve_path(path: str, base_dir: str | Path | None = None) -> Path:
    """Expand ``$VARS`` and ``~``; resolve a relative path against :func:`data_dir`."""
    resolved = expand(path)
    folder = data_dir(base_dir)
    if not resolved.is_absolute() and folder is not None:
        resolved = folder / resolved
    return resolved


def open_split(spec: DataSpec, base_dir: str | Path | None = None) -> RawSplit:
    """The raw rows of a file or hub split named by ``spec`` (not the synthetic generator)."""
    fmt = spec.data_format
    if fmt.layout == "hub":
        assert spec.hub is not None  # guaranteed by DataSpec validation
        return read_hub(spec.hub)
    if fmt.layout == "synthetic":
        raise SrnetError("synthetic splits are generated, not read; use srnet.tasks.load_examples")
    path = resolve_path(spec.path or "", base_dir)
    if not path.is_file():
        raise SrnetError(f"{path}: data file not found{_where_looked(spec.path or '', base_dir)}")
    layout = fmt.layout_of(path)
    if layout == "jsonl":
        return read_jsonl(path)
    if layout in ("txt", "txt_paragraphs"):
        return read_text(path, paragraphs=layout == "txt_paragraphs")
    return read_delimited(path, "," if layout == "csv" else "\t")


def _where_looked(given: str, base_dir: str | Path | None) -> str:
    """For a relative path: the folder it was resolved against and how to change it."""
    if expand(given).is_absolute():
        return ""
    folder = data_dir(base_dir) or Path.cwd()
    return (
        f" (relative path '{given}' looked for in {folder.resolve()}; set SRNET_DATA_DIR or "
        f"data.base_dir to the data folder)"
    )


def read_jsonl(path: Path) -> RawSplit:
    """One JSON object per line; blank lines are skipped; ``null`` values count as absent."""
    return RawSplit(str(path), None, _jsonl_rows(path))


def _jsonl_rows(path: Path) -> Iterator[RawRow]:
    for line, text in _lines(path):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # JSONDecodeError, over-long ints, deep nesting
            raise SrnetError(f"{path}:{line}: invalid JSON") from None
        if not isinstance(record, dict):
            raise SrnetError(f"{path}:{line}: invalid JSON (expected an object per line)")
        yield RawRow(line, {k: _as_text(v) for k, v in record.items() if v is not None})


def read_text(path: Path, paragraphs: bool = False) -> RawSplit:
    """Plain text: one document per non-blank line, or (``paragraphs``) per run of non-blank
    lines separated by blank lines.  Each row is ``{"text": document}`` at its first line."""
    return RawSplit(str(path), (TEXT_COLUMN,), _text_rows(path, paragraphs))


def _text_rows(path: Path, paragraphs: bool) -> Iterator[RawRow]:
    start, lines = 0, []
    for line, text in _lines(path):
        text = text.rstrip("\r\n")
        if text.strip():
            start = start or line
            lines.append(text)
            if paragraphs:
                continue
        if lines:
            yield RawRow(start, {TEXT_COLUMN: " ".join(lines) if paragraphs else lines[0]})
            start, lines = 0, []
    if lines:
        yield RawRow(start, {TEXT_COLUMN: " ".join(lines)})


def read_delimited(path: Path, delimiter: str) -> RawSplit:
    """A CSV (``,``) or TSV (``\\t``) file whose first line names the columns."""
    rows = _records(path, delimiter)
    with closing(rows):
        first = next(rows, None)
    if first is None:
        raise SrnetError(f"{path}: no examples")
    header = tuple(first[1])
    return RawSplit(str(path), header, _delimited_rows(path, delimiter, header))


def _delimited_rows(path: Path, delimiter: str, header: tuple[str, ...]) -> Iterator[RawRow]:
    records = _records(path, delimiter)
    next(records, None)  # the header
    for line, values in records:
        if len(values) != len(header):
            raise SrnetError(f"{path}:{line}: expected {len(header)} fields, found {len(values)}")
        yield RawRow(line, dict(zip(header, values, strict=True)))


def _records(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """Non-blank records with their (last) line number; CSV errors name the line."""
    lines = _lines(path)
    texts = (text for _, text in lines)
    if delimiter == "\t":
        reader = csv.reader(texts, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(texts, delimiter=delimiter)
    with closing(lines):
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise SrnetError(
                    f"{path}:{reader.line_num}: unreadable {_kind(delimiter)} record ({exc})"
                ) from None
            if values and values != [""]:
                yield reader.line_num, values


def _kind(delimiter: str) -> str:
    return "TSV" if delimiter == "\t" else "CSV"


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` of a UTF-8 file (a BOM is dropped); a bad byte names its line."""
    with open(path, "rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                yield line, raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise SrnetError(
                    f"{path}:{line}: not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1}; save the file as UTF-8)"
                ) from None


def read_hub(hub: HubSpec) -> RawSplit:
    """A hub split via ``datasets.load_dataset`` (or ``load_from_disk`` for a folder one
    ``Dataset.save_to_disk`` wrote); ClassLabel ints become names (-1 -> ``-``)."""
    source = f"hub:{hub.name}" + (f"/{hub.config}" if hub.config else "") + f":{hub.split}"
    try:
        from datasets import ClassLabel

        dataset = _load_dataset(hub)
    except SrnetError:
        raise
    except Exception as exc:  # network, missing dataset/config/split: all one user-facing error
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise SrnetError(
            f"{source}: could not load the dataset ({type(exc).__name__}: {reason})"
        ) from None
    class_names = {
        col: feature.names for col, feature in dataset.features.items() if isinstance(feature, ClassLabel)
    }

    def rows() -> Iterator[RawRow]:
        for index, record in enumerate(dataset, start=1):
            fields = {}
            for key, value in record.items():
                if key in class_names and isinstance(value, int):
                    fields[key] = class_names[key][value] if value >= 0 else NO_GOLD
                elif value is not None:
                    fields[key] = _as_text(value)
            yield RawRow(index, fields)

    return RawSplit(source, tuple(dataset.column_names), rows())


def _load_dataset(hub: HubSpec) -> Any:
    """The split named by ``hub``.  A folder holding one saved ``Dataset`` (its ``state.json``
    at the top; ``load_dataset`` refuses those) is read whole, and must not record another split."""
    from datasets import load_dataset, load_from_disk

    folder = Path(os.path.expanduser(hub.name))
    if not (folder / "state.json").is_file():
        return load_dataset(hub.name, hub.config, split=hub.split)
    dataset = load_from_disk(str(folder))
    recorded = None if dataset.split is None else str(dataset.split)
    if recorded not in (None, hub.split):
        raise SrnetError(f"{folder}: a saved dataset of split '{recorded}', not '{hub.split}' "
                         f"(set hub.split: {recorded})")
    return dataset


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bool | list | dict):
        return json.dumps(value)
    return str(value)
