"""Export: baked masks survive save_pretrained and reload with plain transformers, bit for bit."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from conftest import save_tiny_model
from srnet import api
from srnet.errors import SrnetError
from srnet.export import EXPORT_INFO_FILENAME, bake_masks, export_model
from srnet.models import find_prunable
from srnet.sparsity.counting import pooled_sparsity, zero_counts
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import MaskMetadata


class _TimesMask(nn.Module):
    """A fixed-mask parametrization standing in for srnet's own."""

    def __init__(self, mask: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask.float())

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight * self.mask


def _masks_for(model: nn.Module, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        w.name: torch.rand(w.module.weight.shape, generator=gen) > 0.5 for w in find_prunable(model)
    }


def _parametrize(model: nn.Module, masks: dict[str, torch.Tensor]) -> None:
    for name, mask in masks.items():
        parametrize.register_parametrization(model.get_submodule(name), "weight", _TimesMask(mask))


def _metadata(model: nn.Module, masks: dict[str, torch.Tensor]) -> MaskMetadata:
    return MaskMetadata(
        method="test", base_model="tiny", base_model_fingerprint=model_fingerprint(model, masks)
    )


def _logits(model: nn.Module, tokenizer) -> torch.Tensor:
    batch = tokenizer(
        ["a man is playing a guitar", "nobody sleeps"], ["someone plays music", "a cat sleeps"],
        return_tensors="pt", padding=True,
    )
    with torch.no_grad():
        return model(**batch).logits


@pytest.mark.parametrize("model_type", ["bert", "roberta", "distilbert", "electra"])
def test_export_reloads_with_plain_transformers(tmp_path, model_type):
    src = save_tiny_model(tmp_path / "src", model_type)
    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForSequenceClassification.from_pretrained(src).eval()
    masks = _masks_for(model)
    _parametrize(model, masks)
    expected = _logits(model, tokenizer)

    out = export_model(model, masks, tokenizer, tmp_path / "export", metadata=_metadata(model, masks))

    reloaded, info = AutoModelForSequenceClassification.from_pretrained(
        out, output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert not info["mismatched_keys"]
    reloaded.eval()
    torch.testing.assert_close(_logits(reloaded, tokenizer), expected, rtol=0, atol=1e-6)
    baked_state = bake_masks(model, masks).state_dict()
    reloaded_state = reloaded.state_dict()
    assert set(reloaded_state) == set(baked_state)
    for key, tensor in baked_state.items():
        assert torch.equal(reloaded_state[key], tensor), key
    for name, mask in masks.items():
        weight = reloaded.get_submodule(name).weight
        assert torch.all(weight[~mask] == 0), name
        assert torch.all(weight[mask] != 0), name
    assert parametrize.is_parametrized(model.get_submodule(next(iter(masks))))  # untouched
    assert torch.equal(_logits(model, tokenizer), expected)

    exported = json.loads((out / EXPORT_INFO_FILENAME).read_text())
    assert exported["masks"]["method"] == "test"
    assert exported["sparsity"] == pytest.approx(pooled_sparsity(zero_counts(masks).values()))
    assert set(exported["per_matrix"]) == set(masks)
    assert AutoTokenizer.from_pretrained(out)("hello world")["input_ids"] == tokenizer(
        "hello world"
    )["input_ids"]


def test_bake_without_parametrizations_multiplies_weights():
    model = nn.Sequential(nn.Linear(3, 2, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    mask = torch.tensor([[True, False, True], [False, False, True]])
    baked = bake_masks(model, {"0": mask})
    assert baked[0].weight.tolist() == [[1.0, 0.0, 3.0], [0.0, 0.0, 6.0]]
    assert model[0].weight.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_bake_restores_the_original_weight_under_a_parametrization():
    model = nn.Sequential(nn.Linear(2, 1, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[2.0, 3.0]]))
    # A parametrization that does more than masking: bake must start from the original weight.
    parametrize.register_parametrization(model[0], "weight", _TimesMask(torch.tensor([[10, 10]])))
    baked = bake_masks(model, {"0": torch.tensor([[False, True]])})
    assert not parametrize.is_parametrized(baked[0])
    assert baked[0].weight.tolist() == [[0.0, 3.0]]
    assert set(baked.state_dict()) == {"0.weight"}
    # deepcopy shares the parametrized class: removing it on the copy must not break the original.
    assert parametrize.is_parametrized(model[0])
    assert model[0].weight.tolist() == [[20.0, 30.0]]


def test_bake_errors_name_the_fault():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    with pytest.raises(SrnetError, match="mask key '5' names no weight"):
        bake_masks(model, {"5": torch.ones(2, 2, dtype=torch.bool)})
    with pytest.raises(SrnetError, match=r"mask '0' has shape \(3, 2\) but the weight has shape \(2, 2\)"):
        bake_masks(model, {"0": torch.ones(3, 2, dtype=torch.bool)})
    parametrize.register_parametrization(model[1], "weight", _TimesMask(torch.ones(2, 2)))
    with pytest.raises(SrnetError, match="module '1' is parametrized but has no mask"):
        bake_masks(model, {"0": torch.ones(2, 2, dtype=torch.bool)})


def test_export_is_all_or_nothing(tiny_model_dir, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    masks = _masks_for(model)
    meta = _metadata(model, masks)
    out = tmp_path / "export"

    class Broken:
        def save_pretrained(self, path):
            raise OSError("disk full")

    with pytest.raises(SrnetError, match=r"cannot write .*export: disk full"):
        export_model(model, masks, Broken(), out, metadata=meta)
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a temp sibling

    export_model(model, masks, tokenizer, out, metadata=meta)
    with pytest.raises(SrnetError, match="is not empty"):
        export_model(model, masks, tokenizer, out, metadata=meta)
    (out / "stale.txt").write_text("old")
    export_model(model, masks, tokenizer, out, metadata=meta, overwrite=True)
    assert not (out / "stale.txt").exists()
    assert (out / EXPORT_INFO_FILENAME).is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["export"]


def test_dense_export_without_masks(tiny_model_dir, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir).eval()
    out = export_model(model, {}, tokenizer, tmp_path / "dense", metadata=None)
    info = json.loads((out / EXPORT_INFO_FILENAME).read_text())
    assert info["masks"] is None
    assert info["sparsity"] == 0.0
    reloaded = AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert torch.equal(_logits(reloaded, tokenizer), _logits(model, tokenizer))


def test_an_already_baked_model_is_exported_without_baking_again(tmp_path, monkeypatch):
    src = save_tiny_model(tmp_path / "src", "bert")
    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForSequenceClassification.from_pretrained(src).eval()
    masks = _masks_for(model)
    _parametrize(model, masks)
    meta = _metadata(model, masks)
    reference = export_model(model, masks, tokenizer, tmp_path / "reference", metadata=meta)
    baked = bake_masks(model, masks)

    def no_second_bake(*args, **kwargs):
        raise AssertionError("baked twice")

    monkeypatch.setattr("srnet.export.checkpoint.bake_masks", no_second_bake)
    out = export_model(model, masks, tokenizer, tmp_path / "once", metadata=meta, baked=baked)
    assert (out / EXPORT_INFO_FILENAME).read_text() == (reference / EXPORT_INFO_FILENAME).read_text()
    assert (out / "model.safetensors").read_bytes() == (reference / "model.safetensors").read_bytes()

    with pytest.raises(SrnetError, match="still has a mask on"):
        export_model(model, masks, tokenizer, tmp_path / "masked", metadata=meta, baked=model)
    unmasked = AutoModelForSequenceClassification.from_pretrained(src)
    with pytest.raises(SrnetError, match="is not zero where its mask prunes"):
        export_model(model, masks, tokenizer, tmp_path / "unbaked", metadata=meta, baked=unmasked)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["once", "reference", "src"]


def test_export_package_imports_point_downward():
    """runtimes <- bake <- shrink <- onnx <- config, card <- checkpoint: no module imports one after it."""
    import ast
    from pathlib import Path

    import srnet.export

    order = ["runtimes", "bake", "shrink", "onnx", "config", "card", "checkpoint"]
    folder = Path(srnet.export.__file__).parent
    for position, name in enumerate(order):
        for node in ast.walk(ast.parse((folder / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("srnet.export"):
                targets = [node.module.removeprefix("srnet.export.")] if node.module != "srnet.export" \
                    else [alias.name for alias in node.names]
                for target in targets:
                    assert order.index(target) < position, f"{name} imports {target}"


def test_export_refuses_masks_on_a_model_with_other_weights(tmp_path, tiny_model_dir, capsys):
    """A run's masks belong to its trained weights: the backbone before fine-tuning and another
    fine-tuned model are refused (one line naming the run to pass); --force overrides."""
    from conftest import tiny_recipe
    from srnet import api
    from srnet.cli import main

    imp = {"method": "imp", "sparsity": 0.5, "params": {"prune_fraction": 0.25, "every": 0.25}}
    run = api.run(tiny_recipe(tmp_path / "runs", tiny_model_dir, "imp", pruning=imp)).run_dir
    other = api.run(tiny_recipe(tmp_path / "runs", tiny_model_dir, "ft2", seed=3)).run_dir
    masks = str(run / "masks.safetensors")
    capsys.readouterr()  # the runs' progress bars
    for wrong in (str(tiny_model_dir), str(other)):  # the base model, another fine-tuned model
        out = tmp_path / "refused"
        assert main(["export", "--model", wrong, "--masks", masks, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"pass --model {run}, or --force" in err
        assert not out.exists()
    assert main(["export", "--masks", masks, "--out", str(tmp_path / "own")]) == 0  # default: its run
    own = AutoModelForSequenceClassification.from_pretrained(tmp_path / "own")
    shipped = AutoModelForSequenceClassification.from_pretrained(run / "model")
    assert all(torch.equal(a, b) for a, b in zip(own.state_dict().values(), shipped.state_dict().values(),
                                                 strict=True))
    forced = ["export", "--model", str(tiny_model_dir), "--masks", masks, "--out", str(tmp_path / "forced")]
    assert main([*forced, "--force"]) == 0


def test_a_run_export_carries_a_model_card(tmp_path, tiny_model_dir):
    """README.md: Hugging Face front matter (library, tags) and the run's pruning, results and recipe."""
    from huggingface_hub import ModelCard

    from conftest import tiny_recipe
    from srnet import api

    omp = {"method": "omp", "sparsity": 0.3}
    run = api.run(tiny_recipe(tmp_path / "runs", tiny_model_dir, "omp", pruning=omp)).run_dir
    card = ModelCard.load(run / "model" / "README.md")
    assert card.data.library_name == "transformers"
    assert {"pruning", "sparsity", "srnet-omp"} <= set(card.data.tags)
    assert card.data.base_model is None  # a local path is not a hub id
    assert "method `omp`" in card.text and "target sparsity 0.3" in card.text
    assert "| synthetic_dev | ID |" in card.text and "| synthetic_challenge | challenge |" in card.text
    assert "## Recipe" in card.text and "name: omp" in card.text


def test_a_shrunk_export_reloads_in_a_process_without_srnet(tmp_path, tiny_model_dir):
    """The shrunk checkpoint, loaded by plain transformers in a fresh process that never imports
    srnet, gives the masked model's logits; its card says how much it kept and how to load it."""

    from huggingface_hub import ModelCard

    from conftest import assert_reloads_without_srnet, tiny_recipe
    from srnet import api

    pruning = {"method": "omp", "sparsity": 0.5, "granularity": "head+neuron"}
    run = api.run(tiny_recipe(tmp_path / "runs", tiny_model_dir, "heads", pruning=pruning)).run_dir
    out = api.export_masked(None, run / "masks.safetensors", tmp_path / "shrunk", shrink=True)
    assert_reloads_without_srnet(out, run / "model", tmp_path)
    card = ModelCard.load(out / "README.md")
    assert "structured-pruning" in card.data.tags and "trust_remote_code=True" in card.text
    assert "| bert.encoder.layer.0.heads |" in card.text


def test_export_checks_its_folder_and_mask_file_before_any_model_loads(tmp_path, tiny_model_dir, capsys,
                                                                        monkeypatch):
    """A non-empty --out without --overwrite, and a file that is not an srnet mask file, are one line
    each before the model or tokenizer is read, and nothing is written."""
    from srnet.cli import main
    from srnet.models import loading

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the cheap checks")

    monkeypatch.setattr(loading, "load_classifier", no_model)
    monkeypatch.setattr(loading, "load_tokenizer", no_model)
    model = save_tiny_model(tmp_path / "m", "bert", 3)
    masks = tmp_path / "masks.safetensors"
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2, dtype=torch.uint8)}, str(masks))  # no srnet header
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    args = ["export", "--model", str(model), "--masks", str(masks)]
    assert main([*args, "--out", str(full)]) == 2
    assert "export folder" in capsys.readouterr().err and (full / "keep.txt").read_text() == "mine"
    assert main([*args, "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an srnet mask file" in err
    assert not (tmp_path / "new").exists()


def test_export_never_replaces_a_run_or_its_own_input(tmp_path, tiny_model_dir):
    from conftest import tiny_recipe

    run = api.run(tiny_recipe(tmp_path, tiny_model_dir, "r", pruning={"method": "omp", "sparsity": 0.5}))
    other = api.run(tiny_recipe(tmp_path, tiny_model_dir, "other"))
    masks = run.run_dir / "masks.safetensors"
    for out, message in ((run.run_dir, "is an srnet run folder"), (other.run_dir, "is an srnet run folder"),
                         ("", "give a folder name")):
        with pytest.raises(SrnetError, match=message):
            api.export_masked(None, masks, out, overwrite=True)
    with pytest.raises(SrnetError, match="holds this export's own input"):
        api.export_masked(str(other.run_dir), masks, tmp_path, overwrite=True)
    assert (run.run_dir / "metrics.json").is_file() and (other.run_dir / "metrics.json").is_file()


def test_a_changed_weights_file_is_refused_before_torch_reads_it(tmp_path, tiny_model_dir):
    from conftest import tiny_recipe
    from srnet import load_model

    run = api.run(tiny_recipe(tmp_path, tiny_model_dir, "r", pruning={"method": "omp", "sparsity": 0.5}))
    out = api.export_masked(None, run.run_dir / "masks.safetensors", tmp_path / "exp")
    load_model(out)  # untouched: loads
    weights = out / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    for load in (lambda: load_model(out),
                 lambda: api.evaluate(str(out), tiny_recipe(tmp_path, "unused", "ev"))):
        with pytest.raises(SrnetError, match=r"model.safetensors: SHA-256 .* differs"):
            load()
    info = json.loads((out / "srnet_export.json").read_text())
    info["sha256"] = ["not", "a", "mapping"]
    (out / "srnet_export.json").write_text(json.dumps(info))
    with pytest.raises(SrnetError, match="'sha256' must map file names to SHA-256 strings"):
        load_model(out)
