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


# --- loss and objective params: typed, checked at load, recorded as given -------------------------

KD_TYPO = "objective:\n  name: kd\n  params: {pred_wieght: 0}\n"
POE_TYPO = "loss:\n  name: poe\n  params: {anneal_mn: 0.5}\n"


@pytest.mark.parametrize(("text", "message"), [
    (KD_TYPO, "objective.params: objective 'kd': unknown parameter 'pred_wieght' (known: task_weight, "
              "pred_weight, temperature, through_bias, hidden_weight, attention_weight, layers, distance)"),
    (POE_TYPO, "loss.params: loss 'poe': unknown parameter 'anneal_mn' (known: anneal, anneal_min)"),
    ("loss:\n  params: {anneal: true}\n", "loss.params: loss 'ce': unknown parameter 'anneal' (known: none)"),
    ("objective:\n  name: freelb\n  params: 3\n", "objective.params: params of objective 'freelb' must be a "
                                                   "mapping, got 3"),
    ("loss:\n  name: focal\n", "loss.name: unknown loss 'focal'; known: ['ce', "),
])
def test_a_params_typo_is_one_line_naming_the_plugin_and_its_parameters(tmp_path, text, message):
    with pytest.raises(SrnetError) as info:
        load_recipe(write(tmp_path, text))
    assert f"recipe.yaml: {message}" in str(info.value) and "\n" not in str(info.value)
    assert "(got" not in str(info.value)  # the value is named once


@pytest.mark.parametrize("text", [KD_TYPO, POE_TYPO])
def test_srnet_run_refuses_a_params_typo_before_any_run_folder_exists(tmp_path, capsys, text):
    from srnet.cli import main

    runs = tmp_path / "runs"
    assert main(["run", str(write(tmp_path, f"output_dir: {runs}\n{text}"))]) == 2
    assert "unknown parameter" in capsys.readouterr().err and not runs.exists()


def test_params_are_typed_but_recorded_and_fingerprinted_as_given(tmp_path):
    from srnet.losses import AnnealParams, build_loss
    from srnet.training.objectives.kd import KDParams

    given = {"loss": {"name": "poe", "params": {"anneal": True, "anneal_min": 1}},
             "objective": {"name": "kd", "params": {"temperature": 3, "pred_weight": 0}}}
    recipe = load_recipe(write(tmp_path, dump_recipe(load_recipe(None, []))), [
        "loss.name=poe", "loss.params.anneal=true", "loss.params.anneal_min=1",
        "objective.name=kd", "objective.params.temperature=3", "objective.params.pred_weight=0"])
    assert isinstance(recipe.loss.params, AnnealParams) and recipe.loss.params.anneal_min == 1.0
    assert isinstance(recipe.objective.params, KDParams) and recipe.objective.params.task_weight == 1.0
    assert build_loss("poe", recipe.loss.params).params is recipe.loss.params  # validated once
    dumped = recipe.model_dump(mode="json")
    assert {k: dumped[k]["params"] for k in given} == {k: v["params"] for k, v in given.items()}
    assert recipe.fingerprint() == "63eb51b90547df8d"  # what it was while params were free dicts
    again = load_recipe(write(tmp_path, dump_recipe(recipe)))
    assert again == recipe and again.fingerprint() == recipe.fingerprint()


def test_sweep_grid_keys_of_params_are_those_of_registered_plugins():
    from srnet.config import LossConfig, ObjectiveConfig

    assert ObjectiveConfig.known_key(["params", "pred_weight"]) and ObjectiveConfig.known_key(["params"])
    assert not ObjectiveConfig.known_key(["params", "pred_wieght"])
    assert LossConfig.known_key(["params", "anneal"]) and LossConfig.known_key(["inputs", "example_weights"])
    assert not LossConfig.known_key(["teacher", "x"]) and not LossConfig.known_key(["nope"])
