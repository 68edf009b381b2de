"""From a :class:`DataSpec` to examples: column mapping, label indexing, subsampling.

Labels are indexed in the task's labels, or in the challenge set's label names when
``spec.challenge`` is set.  Default columns come from the task, then the challenge set, then
the named file format (:data:`~srnet.tasks.formats.FORMATS`), then ``spec.columns``; each
default lists the column names to try in order.  ``text_a``, ``label`` and (for pair tasks)
``text_b`` are required, as is every column the recipe names; other defaults (``id``, meta
such as HANS ``heuristic``) are read when present.  Ids come from the id column, else
``"{split name}-{line}"``.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from srnet.errors import SrnetError
from srnet.tasks.base import Example, LabelSpace
from srnet.tasks.readers import NO_GOLD, RawSplit, open_split, resolve_path
from srnet.tasks.registry import get_task
from srnet.tasks.spec import ColumnMap, DataSpec, LabelScheme, Task
from srnet.tasks.synthetic import generate_synthetic, synthetic_labels

log = logging.getLogger(__name__)

_CORE_FIELDS = ("text_a", "text_b", "label", "id")
_SKIP = -1
"""Label index of rows without a gold label (``-``, or mapped to it by ``label_map``)."""


@dataclass(frozen=True)
class LoadedSplit:
    """A loaded split: its display name, examples, label scheme and skipped no-gold rows."""

    name: str
    examples: list[Example]
    scheme: LabelScheme
    skipped: int = 0
    """Rows whose label was the no-gold-label marker ``-``."""


def load_split(task: Task | str, spec: DataSpec, *, base_dir: str | Path | None = None) -> LoadedSplit:
    """Read (or generate) the split ``spec`` names, then subsample it if ``spec.n`` is set."""
    task = get_task(task) if isinstance(task, str) else task
    scheme = task.scheme(spec.challenge)
    name = split_name(spec)
    if spec.synthetic is not None:
        examples, skipped, source = _synthetic(task, scheme, spec), 0, name
    else:
        raw = open_split(spec, base_dir)
        examples, skipped = _examples(task, scheme, spec, raw, name)
        source = raw.source
    if not examples:
        extra = f" ({skipped} rows without a gold label)" if skipped else ""
        raise SrnetError(f"{source}: no examples{extra}")
    if skipped:
        log.info("%s: skipped %d rows without a gold label", source, skipped)
    if spec.ids_file is not None:
        examples = _keep_listed(examples, resolve_path(spec.ids_file, base_dir), source)
    if spec.n is not None:
        examples = stratified_subsample(examples, spec.n, spec.seed, strata=_strata(scheme, examples))
    return LoadedSplit(name, examples, scheme, skipped)


def load_examples(task: Task | str, spec: DataSpec, *, base_dir: str | Path | None = None) -> list[Example]:
    """The examples of the split ``spec`` names (see :func:`load_split`)."""
    return load_split(task, spec, base_dir=base_dir).examples


def label_space(task: Task | str, spec: DataSpec) -> LabelSpace:
    """The label space the split's labels index: the challenge set's, or the task's."""
    task = get_task(task) if isinstance(task, str) else task
    return task.scheme(spec.challenge).space


def split_name(spec: DataSpec) -> str:
    """The split's display name (``spec.name`` or one derived from its source)."""
    return spec.display_name


def stratified_subsample(
    examples: Sequence[Example], n: int, seed: int = 0, strata: Sequence[str] = ()
) -> list[Example]:
    """``n`` examples keeping the proportions of each label x ``strata`` meta cell, in order.

    Quotas are proportional with largest remainders (a 3,000-pair HANS subsample stratified by
    ``heuristic`` has 500 pairs in each heuristic x label cell).  Deterministic in ``seed``;
    asking for at least as many examples as there are returns all.
    """
    if n <= 0:
        raise SrnetError(f"subsample size n must be positive, got {n}")
    if n >= len(examples):
        if n > len(examples):
            log.warning("asked for %d examples, the split has %d: keeping all", n, len(examples))
        return list(examples)
    by_label: dict[tuple, list[int]] = {}
    for index, example in enumerate(examples):
        cell = (example.label, *(example.meta.get(key, "") for key in strata))
        by_label.setdefault(cell, []).append(index)
    labels = sorted(by_label)
    exact = {label: n * len(by_label[label]) / len(examples) for label in labels}
    quota = {label: int(exact[label]) for label in labels}
    by_remainder = sorted(labels, key=lambda label: (quota[label] - exact[label], label))
    for label in by_remainder[: n - sum(quota.values())]:
        quota[label] += 1
    rng = random.Random(f"srnet.subsample:{seed}")
    chosen = [i for label in labels for i in rng.sample(by_label[label], quota[label])]
    return [examples[i] for i in sorted(chosen)]


def _strata(scheme: LabelScheme, examples: Sequence[Example]) -> tuple[str, ...]:
    """Meta keys of the scheme's first breakdown (e.g. HANS ``heuristic``) that every example has."""
    keys = next(iter(scheme.groups.values()), ())
    return tuple(k for k in keys if all(k in ex.meta for ex in examples))


def _synthetic(task: Task, scheme: LabelScheme, spec: DataSpec) -> list[Example]:
    params = spec.synthetic
    assert params is not None
    names = synthetic_labels(params.split)
    if scheme.space.names != names:
        raise SrnetError(
            f"synthetic {params.split} split has labels {list(names)}, but task {task.name}"
            f"{_challenge_note(spec)} expects {list(scheme.space.names)}"
        )
    return generate_synthetic(params.split, params.n, params.bias_strength, params.seed)


def _examples(
    task: Task, scheme: LabelScheme, spec: DataSpec, raw: RawSplit, name: str
) -> tuple[list[Example], int]:
    columns = {**task.columns, **scheme.columns, **spec.data_format.columns}
    columns.update({key: (column,) for key, column in spec.columns.items()})
    required = {"text_a", "label", *spec.columns} | ({"text_b"} if "text_b" in columns else set())
    lookup = _label_lookup(scheme, spec, raw.source)
    expected = list(dict.fromkeys([*spec.label_map, *scheme.space.names, *scheme.aliases]))
    resolved: dict[frozenset[str], dict[str, str]] = {}
    if raw.header is not None:
        resolved[frozenset(raw.header)] = _resolve(columns, required, raw.header, raw.source)
    examples: list[Example] = []
    skipped = 0
    first_line: dict[str, int] = {}
    for row in raw.rows:
        keys = frozenset(row.fields)
        if keys not in resolved:
            resolved[keys] = _resolve(columns, required, row.fields, f"{raw.source}:{row.line}")
        mapping = resolved[keys]
        label_text = row.fields[mapping["label"]].strip()
        label = lookup.get(label_text, lookup.get(label_text.lower()))
        if label is None:
            hint = "add it to the split's label_map" if spec.label_map else "map it with label_map"
            raise SrnetError(
                f"{raw.source}:{row.line}: unknown label '{label_text}' for task {task.name}"
                f"{_challenge_note(spec)}; expected one of {expected} ({hint})"
            )
        if label == _SKIP:
            skipped += 1
            continue
        given_id = row.fields[mapping["id"]].strip() if "id" in mapping else ""
        example_id = given_id or f"{name}-{row.line}"
        if example_id in first_line:
            raise SrnetError(
                f"{raw.source}:{row.line}: duplicate id '{example_id}' (first on line "
                f"{first_line[example_id]}); map 'id' to a unique column"
            )
        first_line[example_id] = row.line
        meta = {key: row.fields[col] for key, col in mapping.items() if key not in _CORE_FIELDS}
        text_b = row.fields[mapping["text_b"]] if "text_b" in mapping else None
        examples.append(Example(example_id, row.fields[mapping["text_a"]], text_b, label, meta))
    return examples, skipped


def _resolve(
    columns: ColumnMap, required: set[str], available: Iterable[str], where: str
) -> dict[str, str]:
    """field -> the first of its candidate columns that exists; missing required ones are errors."""
    mapping = {}
    for key, candidates in columns.items():
        found = next((c for c in candidates if c in available), None)
        if found is not None:
            mapping[key] = found
        elif key in required:
            names = " or ".join(f"'{c}'" for c in candidates)
            raise SrnetError(f"{where}: column {names} not found; columns are {list(available)}")
    return mapping


def _label_lookup(scheme: LabelScheme, spec: DataSpec, source: str) -> dict[str, int]:
    """File spelling -> label index (or :data:`_SKIP`): the split's ``label_map`` (exact), then
    the names and aliases (lower-cased).  A ``label_map`` value must be a label name or ``-``."""
    lookup = {name.lower(): i for i, name in enumerate(scheme.space.names)}
    for alias, name in scheme.aliases.items():
        lookup.setdefault(alias.lower(), scheme.space.index(name))
    lookup[NO_GOLD] = _SKIP
    mapped = {}
    for given, name in spec.label_map.items():
        target = lookup.get(name.lower()) if name in (NO_GOLD, *scheme.space.names) else None
        if target is None:
            raise SrnetError(
                f"{source}: label_map: '{given}' -> '{name}': '{name}' is not a label of this "
                f"split; expected one of {[*scheme.space.names, NO_GOLD]}"
            )
        mapped[given] = target
    return {**lookup, **mapped}


def _challenge_note(spec: DataSpec) -> str:
    return f" (challenge {spec.challenge})" if spec.challenge else ""


def _keep_listed(examples: list[Example], ids_file: Path, source: str) -> list[Example]:
    """The examples whose id is listed in ``ids_file`` (JSON Lines with 'pairID' or 'id')."""
    wanted: set[str] = set()
    try:
        lines = ids_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SrnetError(f"{ids_file}: cannot read the ids file ({type(exc).__name__})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise SrnetError(f"{ids_file}:{number}: not a JSON object") from None
        key = row.get("pairID", row.get("id")) if isinstance(row, dict) else None
        if key is None:
            raise SrnetError(f"{ids_file}:{number}: no 'pairID' or 'id' field")
        wanted.add(str(key))
    kept = [ex for ex in examples if ex.id in wanted]
    if not kept:
        raise SrnetError(f"{ids_file}: none of its {len(wanted)} ids matches an example of {source}")
    return kept
