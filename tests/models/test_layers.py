"""Whole-layer removal (``model.drop_layers``): every family that allows it gives the logits of the
full model with those blocks passed through, saves as a plain shallower checkpoint, and composes
its record of the original indices; the others refuse in one line."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from conftest import FAMILY_MODELS, tiny_classifier
from srnet.errors import SrnetError
from srnet.models.families import family_of
from srnet.models.layers import DROPPED_KEY, drop_layers, layer_count, top_layers
from srnet.models.structure import encoder_blocks

DROPPABLE = sorted(f for f, (t, _) in FAMILY_MODELS.items() if family_of(t).depth_key)


def _ids() -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    ids = torch.randint(1000, 2000, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def _passed_through(model: torch.nn.Module, indices: list[int]) -> torch.Tensor:
    """Logits of ``model`` with the blocks at ``indices`` returning their input unchanged."""
    handles = []
    for i, (_, block) in enumerate(encoder_blocks(model)):
        if i in indices:
            def identity(module, args, kwargs, output):
                hidden = args[0] if args else next(iter(kwargs.values()))
                return (hidden, *output[1:]) if isinstance(output, tuple) else hidden
            handles.append(block.register_forward_hook(identity, with_kwargs=True))
    try:
        with torch.no_grad():
            return model(**_ids()).logits
    finally:
        for handle in handles:
            handle.remove()


@pytest.mark.parametrize("family", DROPPABLE)
def test_dropping_a_layer_passes_its_input_on_and_saves_a_plain_shallower_model(family, tmp_path):
    model_type, config = FAMILY_MODELS[family]
    model = tiny_classifier(model_type, layers=3, **config).eval()
    expected = _passed_through(model, [1])
    drop_layers(model, [1])
    assert layer_count(model) == 2
    assert getattr(model.config, DROPPED_KEY) == [1]
    with torch.no_grad():
        assert torch.allclose(model(**_ids()).logits, expected, atol=1e-5)
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert layer_count(reloaded) == 2
    with torch.no_grad():
        assert torch.allclose(reloaded(**_ids()).logits, expected, atol=1e-5)


def test_a_second_drop_records_the_original_indices_and_says_so(caplog):
    model = tiny_classifier("bert", layers=4)
    drop_layers(model, [0])
    assert not caplog.records
    drop_layers(model, [1, 2])  # of what is left: originals 2 and 3
    assert "already lacks layers [0] of its original; removing [1, 2] of the 3 it has" in caplog.text
    assert getattr(model.config, DROPPED_KEY) == [0, 2, 3]
    assert model.config.num_hidden_layers == 1
    assert top_layers(4, 2) == [2, 3]


@pytest.mark.parametrize("family", sorted(set(FAMILY_MODELS) - set(DROPPABLE)))
def test_families_whose_layers_depend_on_their_index_refuse(family):
    model_type, config = FAMILY_MODELS[family]
    with pytest.raises(SrnetError, match=r"model.drop_layers \[0\]: a .* model's layers cannot be removed"):
        drop_layers(tiny_classifier(model_type, **config), [0])


@pytest.mark.parametrize(("indices", "reason"),
                         [([2], "2 is not a layer"), ([0, 1], "no layer would be left")])
def test_an_index_out_of_range_or_dropping_all_is_one_line(indices, reason):
    with pytest.raises(SrnetError, match=reason):
        drop_layers(tiny_classifier("bert"), indices)


def test_a_run_that_drops_a_layer_trains_cuts_and_ships_the_shallower_model(tmp_path, tiny_model_dirs):
    """The recipe key end to end: a 3-layer model loses its top layer, is cut and trained; its
    shrunk export has 2 layers, records the drop, and scores what the run scored."""
    import json

    from conftest import tiny_recipe
    from srnet import api

    pruning = {"method": "omp", "sparsity": 0.5, "granularity": "head+neuron"}
    recipe = tiny_recipe(tmp_path, tiny_model_dirs(layers=3), "r", pruning=pruning)
    recipe["model"]["drop_layers"] = [2]
    run = api.run(recipe)
    saved = json.loads((run.run_dir / "model" / "config.json").read_text())
    assert (saved["num_hidden_layers"], saved[DROPPED_KEY]) == (2, [2])
    out = api.export_masked(None, run.run_dir / "masks.safetensors", tmp_path / "exp", shrink=True)
    shipped = json.loads((out / "config.json").read_text())
    assert (shipped["num_hidden_layers"], shipped[DROPPED_KEY]) == (2, [2])
    assert sorted(shipped["srnet_kept_units"]) == [f"bert.encoder.layer.{i}.{kind}"
                                                   for i in (0, 1) for kind in ("heads", "neurons")]
    evaluation = api.evaluate(str(out), tiny_recipe(tmp_path, "unused", "ev"))
    for kind in ("id", "ood"):
        ours, theirs = getattr(run.metrics, kind), getattr(evaluation.metrics, kind)
        accuracy = {k: v["accuracy"] for k, v in ours.items()}
        assert accuracy and accuracy == {k: v["accuracy"] for k, v in theirs.items()}


def test_a_masked_lm_loses_layers_too():
    """TAMT's models (an MLM head on the encoder) take ``model.drop_layers`` the same way."""
    from conftest import tiny_mlm

    model = tiny_mlm("bert", layers=3).eval()
    drop_layers(model, [0])
    assert layer_count(model) == 2 and model.config.num_hidden_layers == 2
    with torch.no_grad():
        assert model(**_ids()).logits.shape[:2] == (3, 9)
