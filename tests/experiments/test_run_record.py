"""The run record (``metrics.json``) as a typed model: every committed record loads and round-trips,
older and newer folders are tolerated, a broken record is refused in one line before anything is
written, and docs/run-directory.md names every field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from srnet.errors import SrnetError
from srnet.rundir.record import (
    EasyHard,
    MaskMovement,
    RunMetrics,
    Selection,
    SparsityRecord,
    SplitScores,
    read_metrics,
    write_metrics,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDS = sorted((ROOT / "results").rglob("metrics.json"))


def test_every_committed_record_loads_and_round_trips():
    assert len(RECORDS) > 100  # the studies under results/
    for path in RECORDS:
        raw = json.loads(path.read_text())
        record = read_metrics(path)
        assert json.dumps(record.as_json(), sort_keys=True) == json.dumps(raw, sort_keys=True), path
        if raw.get("id"):
            split, block = next(iter(raw["id"].items()))
            assert record.id[split]["primary"] == block["primary"]


def test_typed_fields_and_unknown_keys_kept(tmp_path):
    record = RunMetrics.model_validate({
        "run": "r", "seed": 3, "id": {"dev": {"n": 10, "primary": 0.7, "per_class": {"a": {"support": 5}}}},
        "sparsity": {"overall": 0.5, "by_layer_role": {"0.query": 0.4}},
        "mask_movement": {"flipped": 0.01, "jaccard": 0.98, "moved": True},
        "from_a_newer_srnet": {"x": 1}})
    assert record.sparsity.overall == 0.5 and record.mask_movement.moved is True
    assert record.id["dev"]["per_class"]["a"]["support"] == 5  # an int stays an int
    assert record.ood == {} and record.pretraining is None and not record.is_text_run
    written = write_metrics(tmp_path, record)
    assert json.loads((tmp_path / "metrics.json").read_text()) == written.as_json()
    assert written.as_json()["from_a_newer_srnet"] == {"x": 1}
    assert list(written.as_json()) == ["run", "seed", "id", "sparsity", "mask_movement", "from_a_newer_srnet"]


def test_a_broken_record_is_refused_before_it_is_written(tmp_path):
    with pytest.raises(ValueError, match="id"):
        write_metrics(tmp_path, {"run": "r", "id": [1, 2]})
    assert not (tmp_path / "metrics.json").exists()
    with pytest.raises(SrnetError, match=r"metrics.json: not found \(is '.*' a finished srnet run\?\)"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.json").write_text('{"sparsity": {"overall": "half"}}')
    with pytest.raises(SrnetError, match=r"not a run record \(sparsity.overall: "):
        read_metrics(tmp_path)


def _documented_block() -> str:
    text = (ROOT / "docs" / "run-directory.md").read_text()
    return re.search(r"`metrics.json`:\n\n```text\n(.*?)```", text, re.S).group(1)


MODELS = [RunMetrics, Selection, MaskMovement, SparsityRecord, SplitScores, EasyHard]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_run_directory_page_names_every_field(model):
    words = set(re.findall(r"\w+", _documented_block()))
    fields = model.model_fields if hasattr(model, "model_fields") else model.__annotations__
    missing = [name for name in fields if name not in words]
    assert not missing, f"docs/run-directory.md's metrics.json block does not name {missing}"


def test_every_top_level_key_of_the_page_is_a_field():
    documented = {line.split(":")[0].split(".")[0].strip()
                  for line in _documented_block().splitlines() if re.match(r"^[a-z_.<>]+\s*:", line)}
    fields = set(RunMetrics.model_fields)
    assert documented and documented <= fields, documented - fields


def test_the_api_reads_a_finished_runs_record():
    from srnet import api

    run = RECORDS[0].parent
    assert api.metrics(run) == read_metrics(run / "metrics.json")
    with pytest.raises(SrnetError, match="not found"):
        api.metrics(run / "no_such_run")
