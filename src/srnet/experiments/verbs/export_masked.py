"""The export verb: a model with a mask file baked in, saved as a plain Hugging Face checkpoint
(``srnet export``, :func:`srnet.api.export` and the sweep's ``export`` stage all run it)."""

from __future__ import annotations

from pathlib import Path

from srnet.errors import SrnetError
from srnet.export.config import ExportConfig
from srnet.io import read_yaml
from srnet.rundir.layout import RunDir, load_attacks
from srnet.rundir.record import read_metrics


def export_run(
    model: str | None, masks: str | Path, out: str | Path, config: ExportConfig, *, overwrite: bool,
    force: bool = False,
) -> Path:
    """Check ``masks`` (file and output folder first, then their fit and their weights on
    ``model``: a run directory, hub id or path; None = the run that holds them, refused unless
    ``force`` when they belong to other trained weights), bake them into the model and write
    ``out`` (``config.shrink``: pruned heads and neurons removed; ``config.onnx``: with
    ``model.onnx``; ``config.quantize="int8"``: and ``model.int8.onnx``) with a
    model card that carries the run's figures when ``model`` is a finished run."""
    from srnet.export import bake_masks, export_model
    from srnet.export.checkpoint import check_export_folder
    from srnet.export.onnx import require_onnx
    from srnet.models.loading import load_classifier, load_tokenizer
    from srnet.sparsity.fingerprint import weights_digest
    from srnet.sparsity.mask_io import check_fit, load_masks

    check_export_folder(out, overwrite)  # what can be checked without the model, before it loads
    target = Path(out).resolve()
    for source in (masks, model):
        if source is not None and Path(source).exists() and target in [Path(source).resolve(),
                                                                        *Path(source).resolve().parents]:
            raise SrnetError(f"export folder {out} holds this export's own input {source}; give another "
                             "folder")
    if config.onnx:
        require_onnx()
    loaded, meta = load_masks(masks)
    owner = _mask_run(masks)
    if model is None:
        if owner is None:
            raise SrnetError(f"{masks} is not in a finished srnet run: name the model it belongs to "
                             "(--model)")
        model = str(owner)
    run_model = RunDir(Path(model)).model
    source = str(run_model) if run_model.is_dir() else model
    tokenizer = load_tokenizer(source)
    net = load_classifier(source)
    check_fit(net, loaded, meta, masks)
    baked = bake_masks(net, loaded)
    foreign = meta.trained_digest is not None and weights_digest(baked) != meta.trained_digest
    if foreign and not force:
        belongs = (f"--model {owner}" if owner is not None
                   else f"the model its run trained ({meta.base_model})")
        raise SrnetError(
            f"{masks}: these masks belong to their run's trained weights, and {model} has other weights "
            f"(the backbone before fine-tuning, or another fine-tuned model): pass {belongs}, or --force "
            "to bake them into this model anyway"
        )
    card = _card_context(Path(model)) if RunDir(Path(model)).complete else {}
    return export_model(net, loaded, tokenizer, out, metadata=meta, overwrite=overwrite, config=config,
                        baked=baked, **card)


def export_dense_run(run: str | Path, out: str | Path, config: ExportConfig, *, overwrite: bool) -> Path:
    """A finished dense run (no masks) written as an export: its weights as trained, the tokenizer,
    the graphs ``config`` asks for and ``srnet_export.json`` with every file's digest (``srnet
    compress`` ships it when no cut is needed)."""
    from srnet.export import export_model
    from srnet.export.checkpoint import check_export_folder
    from srnet.export.onnx import require_onnx
    from srnet.models.loading import load_classifier, load_tokenizer

    if config.shrink:
        raise SrnetError(f"{run}: a dense run has no pruned heads or neurons to remove (shrink)")
    check_export_folder(out, overwrite)
    if config.onnx:
        require_onnx()
    source = str(RunDir(Path(run)).model)
    net, tokenizer = load_classifier(source), load_tokenizer(source)
    return export_model(net, {}, tokenizer, out, metadata=None, overwrite=overwrite, config=config,
                        **_card_context(Path(run)))


def _card_context(folder: Path) -> dict:
    """What a finished run tells its export's model card: metrics, attack summaries, recipe."""
    run = RunDir(folder)
    config = run.config
    recipe = read_yaml(config) if config.is_file() else None
    return {"metrics": read_metrics(folder).as_json(), "attacks": load_attacks(folder), "recipe": recipe}


def _mask_run(masks: str | Path) -> Path | None:
    """The finished run a mask file (or run directory) belongs to, if any."""
    path = Path(masks)
    folder = path if path.is_dir() else path.parent
    return folder if RunDir(folder).model.is_dir() else None
