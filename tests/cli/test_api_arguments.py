"""Every public ``srnet.api`` function refuses a wrong-typed or empty argument in one line naming
it, before any model loads or anything is written: no traceback, no ``"5"`` taken
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
    "bias_fit-out-empty": ("bias_fit", (None, ""), {}, "out: expected a file or folder path, got ''"),
    "bias_difficulty-out-empty": ("bias_difficulty", (None, ["p.jsonl"], ""), {},
                                  "out: expected a file or folder"),
    "bias_difficulty-alpha-text": ("bias_difficulty", (None, ["p.jsonl"], "d.jsonl"), {"alpha": "0.2"},
                              "--alpha '0.2': expected a number, got str"),
    "predict-int": ("predict", (5,), {}, "run: expected a file or folder path, got 5"),
    "report-empty-list": ("report", ([],), {}, "runs: give at least one run folder"),
    "report-out-empty": ("report", (["r"],), {"out": ""}, "out: expected a file or folder path, got ''"),
    "masks_show-empty": ("masks_show", ("",), {}, "masks: expected a file or folder path, got ''"),
    "masks_compare-int": ("masks_compare", (5, "b"), {}, "a: expected a file or folder path, got 5"),
    "masks_draw-text": ("masks_draw", ("s", "half", "o"), {}, "sparsity: expected a number in [0, 1)"),
    "masks_draw-bool": ("masks_draw", ("s", True, "o"), {}, "sparsity: expected a number in [0, 1)"),
    "masks_random_like-text": ("masks_random_like", ("m", "o"), {"seed": "x"}, "seed: expected an integer"),
    "masks_random_like-bool": ("masks_random_like", ("m", "o"), {"seed": True}, "seed: expected an integer"),
    "transfer-empty": ("transfer", ("", ["t.yaml"]), {}, "mask: expected a file or folder path, got ''"),
    "attack-n-text": ("attack", ("m",), {"attack": "charswap", "n": "5"}, "--n '5': expected an integer"),
    "attack-out-empty": ("attack", ("m",), {"attack": "charswap", "out": ""}, "--out '': give a folder"),
    "attack-out-int": ("attack", ("m",), {"attack": "charswap", "out": 5}, "out: expected a folder path"),
    "prune_-sparsity": ("prune_", (None, {"method": "omp", "sparsity": 2}), {},
                        "config: sparsity: sparsity must be in [0, 1), got 2.0"),
    "prune_-seed-text": ("prune_", (None, {"method": "omp"}), {"seed": "1"}, "seed: expected an integer"),
    "export-out-empty": ("export", ("m", "k.safetensors", ""), {}, "export folder '': give"),
    "bench-rounds-text": ("bench", (["m"],), {"rounds": "5"}, "--rounds '5': expected an integer, got str"),
    "bench-rounds-bool": ("bench", (["m"],), {"rounds": True}, "--rounds True: expected an integer"),
    "compress-out-empty": ("compress", ("m",), {"out": "", "speedup": 2.0}, "out: expected a file or folder"),
    "compress-speedup-text": ("compress", ("m",), {"out": "o", "speedup": "2"},
                              "--speedup '2': expected a number, got str"),
    "metrics-int": ("metrics", (5,), {}, "run: expected a file or folder path, got 5"),
    "load_model-empty": ("load_model", ("",), {}, "path: expected a file or folder path, got ''"),
}
NO_ARGUMENTS = {"info"}
DEPRECATED = set(api.DEPRECATED_NAMES)  # aliases of the functions above
HELPERS = {"as_recipe", "with_flags"}  # called by the functions above with checked arguments


def test_every_public_api_function_is_in_the_matrix():
    public = {name for name, f in vars(api).items() if inspect.isfunction(f) and f.__module__ == "srnet.api"
              and not name.startswith("_")}
    assert public - NO_ARGUMENTS - HELPERS - DEPRECATED == {function for function, *_ in CASES.values()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_typed_or_empty_argument_is_one_line_naming_it(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative names above point at nothing; nothing may be written here
    function, args, kwargs, start = CASES[case]
    with pytest.raises(SrnetError) as info:
        getattr(api, function)(*args, **kwargs)
    message = str(info.value)
    assert message.startswith(start) and "\n" not in message, message
    assert list(tmp_path.iterdir()) == []


def test_the_api_names_a_verb_as_the_cli_does_and_the_old_names_warn_once(monkeypatch):
    """``srnet bias fit`` is ``api.bias_fit``, ``srnet masks random-like`` ``api.masks_random_like``,
    ``srnet export`` ``api.export``: every command (and sub-command) has its function of the same
    name, but ``finetune`` (``api.run`` with flags); each old name is the same function, warning
    once."""
    import warnings

    from srnet.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    names = set()
    for name, sub in commands.items():
        nested = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
        names |= {f"{name}_{action}".replace("-", "_") for action in nested[0].choices} if nested else {name}
    assert names - {"finetune"} <= set(vars(api)), sorted(names - set(vars(api)))
    monkeypatch.setattr(api, "_WARNED", set())
    warned = r"srnet\.api\.draw_ticket is deprecated .* use srnet\.api\.masks_draw"
    with pytest.warns(FutureWarning, match=warned), pytest.raises(SrnetError, match="sparsity: expected a"):
        api.draw_ticket("s", "half", "o")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SrnetError):
            api.draw_ticket("s", "half", "o")  # once only
