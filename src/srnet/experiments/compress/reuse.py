"""``--reuse DIR``: the finished stages of an earlier compression of the same model that this one
would run again (the bias fit, the dense scores, the teacher and its predictions, the no-cut
control: everything the cut does not change), copied into ``<out>/stages`` instead of retrained.

A stage is taken only when its key is this plan's (the same kind, recipe, parameters and inputs,
so the same computation) and its folder is complete; the earlier folder is read, never written.
Both compressions must record the same SHA-256 of the model's files, so a model retrained in place
is never paired with a teacher trained from the old one."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from srnet.errors import SrnetError
from srnet.experiments.compress.config import ARTIFACT_STAGES, SIZING_FILE


def reuse_folder(reuse: Path, out: Path, source_sha256: str) -> Path:
    """The compression folder ``reuse`` names (its ``--out``, or the model folder in it), checked:
    a compression of the same model, not ``out`` itself; one line naming the flag otherwise."""
    from pydantic import ValidationError

    from srnet.experiments.compress.sizing import Sizing

    folder = reuse.parent if reuse.name == "model" and (reuse.parent / SIZING_FILE).is_file() else reuse
    if not (folder / SIZING_FILE).is_file():
        raise SrnetError(f"--reuse {reuse}: not a compression folder (no {SIZING_FILE})")
    if folder.resolve() == out.resolve():
        raise SrnetError(f"--reuse {reuse}: is --out itself; --resume continues a compression")
    try:
        recorded = Sizing.model_validate_json((folder / SIZING_FILE).read_bytes()).source_sha256
    except (ValidationError, ValueError):
        raise SrnetError(f"--reuse {reuse}: {folder / SIZING_FILE} is not a sizing record") from None
    if recorded is None:
        raise SrnetError(
            f"--reuse {reuse}: records no digest of the model it compressed (an older srnet wrote it), "
            "so its stages cannot be matched to this model"
        )
    if recorded != source_sha256:
        raise SrnetError(
            f"--reuse {reuse}: compressed another model (SHA-256 {recorded[:12]}…, this one "
            f"{source_sha256[:12]}…)"
        )
    return folder


def reusable(jobs: list, folder: Path) -> dict[str, Path]:
    """Stage name -> the complete folder in ``folder``'s stages with the same key, for each job
    not already run here; one line when none matches (the model path, recipe or teacher settings
    differ), so ``--reuse`` never silently does nothing, or when a match records no manifest of its
    files to check the copy against (an older srnet finished it)."""
    from srnet.rundir.layout import COMPLETE

    found = {}
    for job in [job for job in jobs if job.name not in ARTIFACT_STAGES]:
        earlier = folder / "stages" / job.folder.parent.name / job.key
        if (earlier / COMPLETE).is_file() and not (job.folder / COMPLETE).is_file():
            manifest(earlier)  # refused here, before anything is copied
            found[job.name] = earlier
    if not found and not any((job.folder / COMPLETE).is_file() for job in jobs):
        raise SrnetError(
            f"--reuse {folder}: none of its finished stages is one this compression runs (the "
            "model path, the recipe and the teacher's settings must be the same)"
        )
    return found


def manifest(earlier: Path) -> dict[str, str]:
    """The files a finished stage wrote (relative name -> SHA-256, from its ``stage.json``)."""
    import json

    from srnet.rundir.layout import COMPLETE

    record = earlier / COMPLETE
    try:
        files = json.loads(record.read_text(encoding="utf-8")).get("files")
    except (ValueError, AttributeError):
        raise SrnetError(f"--reuse: {record} is not a stage record") from None
    if not isinstance(files, dict):
        raise SrnetError(
            f"--reuse: {record} records no digests of the stage's files (an older srnet "
            "finished it), so a copy could not be checked; run the stage again"
        )
    for name, digest in files.items():
        parts = Path(name).parts
        if Path(name).is_absolute() or not parts or ".." in parts or not isinstance(digest, str):
            raise SrnetError(f"--reuse: {record} lists '{name}', not a file inside its stage folder")
    return files


def adopt(jobs: list, found: dict[str, Path], stages: Path, progress: Callable[[str], None]) -> None:
    """Copy each found stage into place, whole or not at all (an unfinished folder of this
    compression's own is replaced): the files its manifest lists, each checked against its recorded
    SHA-256 (files a later stage of that compression added, and locks, stay behind), and log a
    ``reused`` event."""
    from srnet.experiments.sweep.execute import log_event
    from srnet.io import atomic_folder

    for job in [job for job in jobs if job.name in found]:
        earlier = found[job.name]
        job.folder.parent.mkdir(parents=True, exist_ok=True)
        atomic_folder(job.folder, lambda tmp, earlier=earlier: _checked_copy(earlier, tmp))
        log_event(stages, "reused", job, source=str(earlier))
        progress(f"reuse: {job.name} ({job.key}) copied from {earlier}")


def _checked_copy(earlier: Path, tmp: Path) -> None:
    """The manifest's files and the stage marker copied into ``tmp``; one line naming the first file
    missing or changed since the stage finished."""
    from srnet.io import file_sha256
    from srnet.rundir.layout import COMPLETE

    for name, digest in manifest(earlier).items():
        source, target = earlier / name, tmp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not source.is_file():
            raise SrnetError(f"--reuse: {source} is gone since its stage finished; run the stage again")
        shutil.copy2(source, target)
        if file_sha256(target) != digest:
            raise SrnetError(f"--reuse: {source} changed since its stage finished (its SHA-256 is not the "
                             "recorded one); run the stage again")
    shutil.copy2(earlier / COMPLETE, tmp / COMPLETE)


def reused_stages(stages: Path, jobs: list) -> dict[str, str]:
    """Stage name -> the folder it was copied from, for the plan's stages a ``--reuse`` supplied
    (from the event log, so a later ``--resume`` still knows)."""
    from srnet.experiments.sweep.execute import read_events

    names = {job.key: job.name for job in jobs}
    return {names[e["key"]]: e.get("source", "") for e in read_events(stages)
            if e["event"] == "reused" and e["key"] in names}
