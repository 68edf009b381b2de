"""Every public ``srnet.api`` function refuses a wrong-typed or empty argument in one line naming
it, before any model loads or anything is written (issue 48 §4): no traceback, no ``"5"`` taken
for 5, no bool taken for an int, no empty path taken for the working directory."""

from __future__ import annotations

import inspect

import pytest

from srnet import api
from srnet.errors import SrnetError

CASES = {  # id -> (function name, positional args, keyword args, the line's start)
    "run-int": ("run", (5,), {}, "recipe: expected a file or folder path, got 5"),
    "run-empty": ("run", ("",), {}, "recipe: expected a file or folder path, got ''"),
    "demo-seeds-text": ("demo", (), {"seeds": "3"}, "seeds: expected an integer, got '3'"),
    "sweep-int": ("sweep", (5,), {}, "path: expected a file or folder path, got 5"),
    "sweep-workers-bool": ("sweep", ("s.yaml",), {"workers": True}, "workers: expected an integer, got True"),
    "evaluate-empty": ("evaluate", ("",), {}, "model: expected a file or folder path, got ''"),
    "fit_bias-out-empty": ("fit_bias", (None, ""), {}, "out: expected a file or folder path, got ''"),
    "difficulty-out-empty": ("difficulty", (None, ["p.jsonl"], ""), {}, "out: expected a file or folder"),
    "difficulty-alpha-text": ("difficulty", (None, ["p.jsonl"], "d.jsonl"), {"alpha": "0.2"},
                              "--alpha '0.2': expected a number, got str"),
    "predict-int": ("predict", (5,), {}, "run: expected a file or folder path, got 5"),
    "report-empty-list": ("report", ([],), {}, "runs: give at least one run folder"),
    "report-out-empty": ("report", (["r"],), {"out": ""}, "out: expected a file or folder path, got ''"),
    "mask_sparsity-empty": ("mask_sparsity", ("",), {}, "masks: expected a file or folder path, got ''"),
    "compare_masks-int": ("compare_masks", (5, "b"), {}, "a: expected a file or folder path, got 5"),
    "draw_ticket-text": ("draw_ticket", ("s", "half", "o"), {}, "sparsity: expected a number in [0, 1)"),
    "draw_ticket-bool": ("draw_ticket", ("s", True, "o"), {}, "sparsity: expected a number in [0, 1)"),
    "random_like-seed-text": ("random_like", ("m", "o"), {"seed": "x"}, "seed: expected an integer >= 0"),
    "random_like-seed-bool": ("random_like", ("m", "o"), {"seed": True}, "seed: expected an integer >= 0"),
    "transfer-empty": ("transfer", ("", ["t.yaml"]), {}, "mask: expected a file or folder path, got ''"),
    "attack-n-text": ("attack", ("m",), {"attack": "charswap", "n": "5"}, "--n '5': expected an integer"),
    "attack-out-empty": ("attack", ("m",), {"attack": "charswap", "out": ""}, "--out '': give a folder"),
    "attack-out-int": ("attack", ("m",), {"attack": "charswap", "out": 5}, "out: expected a folder path"),
    "prune_-sparsity": ("prune_", (None, {"method": "omp", "sparsity": 2}), {},
                        "config: sparsity: sparsity must be in [0, 1), got 2.0"),
    "prune_-seed-text": ("prune_", (None, {"method": "omp"}), {"seed": "1"}, "seed: expected an integer"),
    "export_masked-out-empty": ("export_masked", ("m", "k.safetensors", ""), {}, "export folder '': give"),
    "bench-rounds-text": ("bench", (["m"],), {"rounds": "5"}, "--rounds '5': expected an integer, got str"),
    "bench-rounds-bool": ("bench", (["m"],), {"rounds": True}, "--rounds True: expected an integer"),
    "compress-out-empty": ("compress", ("m",), {"out": "", "speedup": 2.0}, "out: expected a file or folder"),
    "compress-speedup-text": ("compress", ("m",), {"out": "o", "speedup": "2"},
                              "--speedup '2': expected a number, got str"),
    "metrics-int": ("metrics", (5,), {}, "run: expected a file or folder path, got 5"),
    "load_model-empty": ("load_model", ("",), {}, "path: expected a file or folder path, got ''"),
}
NO_ARGUMENTS = {"info"}
HELPERS = {"as_recipe", "with_flags"}  # called by the functions above with checked arguments


def test_every_public_api_function_is_in_the_matrix():
    public = {name for name, f in vars(api).items() if inspect.isfunction(f) and f.__module__ == "srnet.api"
              and not name.startswith("_")}
    assert public - NO_ARGUMENTS - HELPERS == {function for function, *_ in CASES.values()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_typed_or_empty_argument_is_one_line_naming_it(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative names above point at nothing; nothing may be written here
    function, args, kwargs, start = CASES[case]
    with pytest.raises(SrnetError) as info:
        getattr(api, function)(*args, **kwargs)
    message = str(info.value)
    assert message.startswith(start) and "\n" not in message, message
    assert list(tmp_path.iterdir()) == []
