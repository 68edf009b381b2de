"""Adding a pruning method is one module: tests/toy_method.py, imported (which registers it) for
this module's tests only, runs through the same cells and checks as every registered method in
tests/project/test_matrix.py: exact sparsity, masks that round-trip, an export that reloads with plain
``transformers`` and gives the masked model's logits, and a shrunk structured export."""

from __future__ import annotations

import importlib
import sys

import pytest
import test_matrix as matrix
from test_matrix import SPARSITY, check_cell, check_structured_cell, granularity_cells, matrix_cells, recipe

from srnet import api
from srnet.pruning import METHODS, PruningConfig, available_methods, get_method
from srnet.sparsity.mask_io import load_masks

TOY = "toy"
"""The name tests/toy_method.py registers."""

input_files, fixed_mask_file = matrix.input_files, matrix.fixed_mask_file  # the matrix's inputs
structured_mask_files = matrix.structured_mask_files


@pytest.fixture(scope="module", autouse=True)
def toy_module():
    """Import the toy module (that is the whole registration) for this module's tests; the
    registry holds exactly the built-in methods again afterwards."""
    assert TOY not in available_methods()
    with METHODS.scoped():
        sys.modules.pop("toy_method", None)
        module = importlib.import_module("toy_method")
        assert get_method(TOY) is module.ToyMethod
        yield module
    sys.modules.pop("toy_method", None)
    assert TOY not in available_methods()


def test_the_toy_method_is_a_recipe_away(toy_module):
    cfg = PruningConfig(method=TOY, params={"keep": "largest"})
    assert isinstance(cfg.params, toy_module.ToyParams) and cfg.params.keep == "largest"
    with pytest.raises(ValueError, match=r"not a parameter of method 'toy' \(a parameter of mask_train\); "
                                         r"its parameters: freeze_weights, keep"):
        PruningConfig(method=TOY, params={"rerank_every": 3})


@pytest.mark.parametrize(("method", "loss", "objective"), matrix_cells([TOY]))
def test_toy_method_loss_matrix(method, loss, objective, tmp_path, tiny_model_dir, input_files,
                                fixed_mask_file, monkeypatch):
    check_cell(method, loss, objective, "unstructured", tmp_path, tiny_model_dir, input_files,
               fixed_mask_file, monkeypatch)


@pytest.mark.parametrize(("method", "loss", "granularity"), granularity_cells([TOY]))
def test_toy_granularity_axis(method, loss, granularity, tmp_path, tiny_model_dir, input_files,
                              structured_mask_files, monkeypatch):
    check_structured_cell(method, loss, granularity, tmp_path, tiny_model_dir, input_files,
                          structured_mask_files, monkeypatch)


def test_toy_params_change_the_mask(tmp_path, tiny_model_dir, input_files, fixed_mask_file):
    """The toy's own parameter reaches the method: keeping the largest weights is OMP's mask."""
    spec = recipe(tmp_path / "largest", tiny_model_dir, TOY, "ce", input_files, fixed_mask_file)
    spec["pruning"]["params"] = {"keep": "largest"}
    largest, _ = load_masks(api.run(spec).run_dir / "masks.safetensors")
    smallest, _ = load_masks(api.run(recipe(tmp_path / "smallest", tiny_model_dir, TOY, "ce", input_files,
                                            fixed_mask_file)).run_dir / "masks.safetensors")
    omp, _ = load_masks(fixed_mask_file)  # one-shot magnitude masks of the same model
    assert all((largest[k] == omp[k]).all() for k in omp)
    assert all(not (largest[k] & smallest[k]).any() for k in omp)  # at sparsity 0.5: complements
    assert SPARSITY == 0.5
