"""The Robust Tickets pipeline as a sweep on a tiny model: the ``ticket``, ``random_like`` and
``attack`` stage kinds chained with an L0 gate search under FreeLB and ticket retraining, then
``srnet report``."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import synthetic_split as synthetic
from srnet import api
from srnet.errors import SrnetError
from srnet.reporting.study import write_report
from srnet.rundir.layout import stage_attack_dir
from srnet.sparsity.mask_io import load_masks
from srnet.sparsity.tickets import load_scores

L0 = {"method": "l0", "sparsity": 0.3, "scope": "global",
      "params": {"mask_lr": 0.1, "lambda_start": 0.1, "lambda_warmup": 0.3}}
FIXED = {"method": "fixed", "sparsity": 0.3}
STAGES = {
    "ft": {"kind": "train"},
    "gates": {"kind": "train", "set": {"model.init_from": "@ft", "pruning": L0,
                                       "objective": {"name": "freelb", "params": {"steps": 2}}}},
    "mask": {"kind": "ticket", "with": {"scores": "@gates", "sparsity": 0.3}},
    "ticket": {"kind": "train", "set": {"pruning": {**FIXED, "params": {"mask_file": "@mask"}},
                                        "tags.method": "robust_ticket"}},
    "rand": {"kind": "random_like", "with": {"masks": "@mask"}},
    "rticket": {"kind": "train", "set": {"pruning": {**FIXED, "params": {"mask_file": "@rand"}},
                                         "tags.method": "random_ticket"}},
    "attacks": {"kind": "attack", "with": {"runs": ["@ft", "@ticket", "@rticket"], "attacks": ["charswap"],
                                           "n": 4}},
}


def write_sweep(tmp_path, model, stages: dict) -> str:
    data = {"name": "rt", "output_dir": str(tmp_path / "out"),
            "base": {"task": "synthetic_nli", "model": {"name": str(model), "max_length": 48},
                     "data": {"train": synthetic("train", 24), "dev": synthetic("dev", 8)},
                     "training": {"max_steps": 2, "batch_size": 8, "lr": 1e-3}},
            "stages": stages}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_robust_ticket_pipeline_on_a_tiny_model(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    path = write_sweep(tmp_path, tiny_model_dir, STAGES)
    result = api.sweep(path, progress=lambda _: None)
    assert result.ok
    job = {j.name: j for j in result.jobs}

    scores, _ = load_scores(job["gates"].folder)
    ticket, meta = load_masks(job["mask"].folder / "masks.safetensors")
    total = sum(m.numel() for m in ticket.values())
    assert sum(int((m == 0).sum()) for m in ticket.values()) == round(0.3 * total)  # exact, global
    kept = min(float(scores[n][m].min()) for n, m in ticket.items() if m.any())
    dropped = max(float(scores[n][~m].max()) for n, m in ticket.items() if (~m).any())
    assert kept >= dropped and meta.method == "ticket:l0"
    random, _ = load_masks(job["rand"].folder / "masks.safetensors")
    def zeros(masks: dict) -> dict:
        return {n: int((m == 0).sum()) for n, m in masks.items()}

    assert zeros(random) == zeros(ticket)
    assert any(not (random[n] == ticket[n]).all() for n in ticket)

    config = yaml.safe_load((job["ticket"].folder / "config.yaml").read_text())
    assert config["model"]["init_from"] is None  # retrained from the pre-trained weights
    assert config["pruning"]["params"]["mask_file"] == str(job["mask"].folder / "masks.safetensors")
    metrics = json.loads((job["ticket"].folder / "metrics.json").read_text())
    assert metrics["sparsity"]["overall"] == pytest.approx(0.3, abs=1e-3)

    attacked = [stage_attack_dir(job[n].folder, job["attacks"].folder) / "charswap.json"
                for n in ("ft", "ticket", "rticket")]  # in the attack stage's own sub-folder of each run
    assert [json.loads(p.read_text())["total"] for p in attacked] == [4, 4, 4]
    markers = sorted(p.name for p in job["attacks"].folder.glob("*.done"))
    assert markers == ["0_charswap.done", "1_charswap.done", "2_charswap.done"]

    # a killed attack stage resumes at its first unfinished pair and repeats nothing
    stamps = [p.stat().st_mtime_ns for p in attacked]
    (job["attacks"].folder / "stage.json").unlink()
    (job["attacks"].folder / "2_charswap.done").unlink()
    assert api.sweep(path, resume=True, progress=lambda _: None).ok
    after = [p.stat().st_mtime_ns for p in attacked]
    assert after[:2] == stamps[:2] and after[2] != stamps[2]

    text = write_report([tmp_path / "out"], tmp_path / "report", figures=False).path.read_text()
    start = text.index("### Attack `charswap`")
    table = text[start:text.index("\n#", start + 1)]  # up to the next heading
    assert "| robust_ticket" in table and "| random_ticket" in table and "| dense" in table
    assert "| l0" not in table  # the gate search was not attacked


@pytest.mark.parametrize(("stage", "message"), [
    ({"kind": "ticket", "with": {"scores": "@ft", "sparsity": 1.5}}, "with: sparsity"),
    ({"kind": "attack", "with": {"runs": ["@ft"], "attacks": ["nope"]}}, "unknown attack 'nope'"),
    ({"kind": "attack", "with": {"runs": ["@ft"], "attacks": ["charswap"], "params": {"wordswap": {}}}},
     "'wordswap' is not among attacks"),
    ({"kind": "attack", "with": {"runs": ["@ft"], "attacks": ["charswap"],
                                 "params": {"charswap": {"max_fraction": 2}}}}, "max_fraction"),
])
def test_bad_stage_parameters_are_one_line_errors(tmp_path, tiny_model_dir, stage, message):
    path = write_sweep(tmp_path, tiny_model_dir, {"ft": {"kind": "train"}, "bad": stage})
    with pytest.raises(SrnetError, match=message):
        api.sweep(path, dry_run=True, progress=lambda _: None)
