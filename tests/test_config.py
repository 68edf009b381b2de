"""Recipes: YAML loading, dotted overrides and one-line errors."""

from __future__ import annotations

import pytest

from srnet.config import apply_overrides, dump_recipe, load_recipe
from srnet.errors import SrnetError


def write(tmp_path, text: str):
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def test_defaults_and_overrides(tmp_path):
    path = write(tmp_path, "name: x\ntraining:\n  lr: 1.0e-4\n")
    recipe = load_recipe(path, ["training.epochs=2", "model.max_length=64", "loss.name=poe"])
    assert recipe.name == "x"
    assert recipe.training.lr == pytest.approx(1e-4)
    assert recipe.training.epochs == 2
    assert recipe.model.max_length == 64
    assert recipe.loss.name == "poe"
    assert recipe.pruning.method == "dense" and recipe.objective.name == "standard"
    plain = load_recipe(write(tmp_path, "name: x\n"))
    legacy = load_recipe(write(tmp_path, "name: x\npruning: null\n"))  # old recipes and run dirs
    assert legacy.pruning == plain.pruning and legacy.fingerprint() == plain.fingerprint()


def test_override_creates_nested_section():
    data = apply_overrides({}, ["pruning.method=omp", "pruning.sparsity=0.5"])
    assert data == {"pruning": {"method": "omp", "sparsity": 0.5}}


def test_resolved_recipe_round_trips(tmp_path):
    recipe = load_recipe(None, ["pruning.method=mask_train", "pruning.sparsity=0.7"])
    again = load_recipe(write(tmp_path, dump_recipe(recipe)))
    assert again == recipe
    assert again.fingerprint() == recipe.fingerprint()


@pytest.mark.parametrize(
    ("text", "overrides", "message"),
    [
        ("training:\n  lrr: 1\n", [], "training.lrr: unknown key"),
        ("training:\n  lr: fast\n", [], "training.lr"),
        ("", ["training.batch_size=-3"], "training.batch_size"),
        ("", ["pruning.method=omp", "pruning.sparsity=1.0"], "1.0"),
        ("", ["oops"], "not of the form key.sub=value"),
        ("name: [unclosed\n", [], "invalid YAML"),
        ("- a\n- b\n", [], "must be a mapping"),
    ],
)
def test_bad_recipes_give_one_line_errors(tmp_path, text, overrides, message):
    path = write(tmp_path, text)
    with pytest.raises(SrnetError) as info:
        load_recipe(path, overrides)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_recipe_file(tmp_path):
    with pytest.raises(SrnetError, match="recipe file not found"):
        load_recipe(tmp_path / "nope.yaml")


def test_keys_added_later_keep_older_fingerprints():
    from srnet.config import recipe_from_dict

    plain = recipe_from_dict({"data": {"train": {"path": "t.jsonl"}, "challenge": [{"path": "c.jsonl"}]}})
    assert "ids_file" not in plain.semantic_dict()["data"]["train"]
    assert "easy_hard" not in plain.semantic_dict()["evaluation"]  # an early check, not a result
    strict = recipe_from_dict({"data": {"train": {"path": "t.jsonl"}, "challenge": [{"path": "c.jsonl"}]},
                               "evaluation": {"easy_hard": True}})
    assert strict.fingerprint() == plain.fingerprint()
    subset = recipe_from_dict({"data": {"train": {"path": "t.jsonl"},
                                        "challenge": [{"path": "c.jsonl", "ids_file": "hard.jsonl"}]}})
    assert subset.semantic_dict()["data"]["challenge"][0]["ids_file"] == "hard.jsonl"
    assert subset.fingerprint() != plain.fingerprint()
