"""Each verb's settings are written once: every field of its config model is a flag of
its command, a keyword of its ``api`` call and (where a sweep stage runs the verb) a field of the
stage's params, each with the same name and default; the config and the keywords give one call."""

from __future__ import annotations

import inspect

import pytest

from srnet import api
from srnet.cli import api_function, build_parser
from srnet.errors import SrnetError
from srnet.experiments.sweep.plan import key_params
from srnet.experiments.sweep.stages import get_stage
from srnet.experiments.verbs.attack import AttackConfig, AttackSettings
from srnet.experiments.verbs.base import VERBS
from srnet.experiments.verbs.bench import BenchConfig
from srnet.settings import flag_name

VERB_CONFIGS = {words: verb.config for words, verb in VERBS.items() if verb.config is not None}
"""Each command with settings -> its config model, as its declaration registers them."""
STAGES = {words: verb.stage for words, verb in VERBS.items() if verb.config is not None and verb.stage}
SHARED = {"attack": AttackSettings}
"""A stage that runs its verb for several inputs shares only these settings (``attack``: one
stage attacks every run with every attack, each with its own ``params``)."""


def _leaf(command: str):
    parser = build_parser()
    for word in command.split():
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[word]
    return parser


def _default(field):
    return inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)


@pytest.mark.parametrize("command", list(VERB_CONFIGS))
def test_a_verbs_flags_api_keywords_and_stage_fields_agree(command):
    config = VERB_CONFIGS[command]
    flags = {a.dest: a for a in _leaf(command)._actions}
    keywords = inspect.signature(api_function(command)).parameters
    assert keywords["config"].annotation in (f"{config.__name__} | None", config | None)
    for name, field in config.model_fields.items():
        flag = flags[name]
        assert flag_name(name, field) in flag.option_strings, name
        assert flag.required == field.is_required(), name
        if not field.is_required():
            default = _default(field)
            assert flag.default == ([] if isinstance(default, dict) else default), name  # --param k=v
        assert keywords[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert keywords[name].default == _default(field), name
    if command in STAGES:
        stage = get_stage(STAGES[command]).params_model
        shared = SHARED.get(command, config)
        assert issubclass(stage, shared)
        for name, field in shared.model_fields.items():
            assert repr(stage.model_fields[name]) == repr(field), name  # inherited, not redeclared


def test_no_flag_of_a_config_is_also_written_by_hand():
    """A flag built from a config field is not added again (argparse would refuse a clash; a
    different spelling of the same setting is caught here)."""
    for command, config in VERB_CONFIGS.items():
        dests = [a.dest for a in _leaf(command)._actions]
        assert all(dests.count(name) == 1 for name in config.model_fields), command


def test_the_config_and_keywords_give_the_same_call(monkeypatch):
    from srnet.experiments import timing as bench

    given = []
    monkeypatch.setattr(bench, "bench", lambda models, config, **io: given.append((config, io)))
    api.bench(["m"], BenchConfig(rounds=3), warmup=0, out="x.json")
    api.bench(["m"], rounds=3, warmup=0, out="x.json")
    assert given[0] == given[1] and given[0][0] == BenchConfig(rounds=3, warmup=0)
    assert given[0][1] == {"out": "x.json", "overwrite": False}


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: api.bench(["m"], rounds=0), SrnetError, "--rounds 0: Input should be greater than or equal"),
    (lambda: api.bench(["m"], quantize="int8"), SrnetError, "--quantize int8 quantizes the ONNX graph"),
    (lambda: api.bench(["m"], runtimes=["tensorrt"]), SrnetError, "--runtimes tensorrt: not one of torch"),
    (lambda: api.bench(["m"], onnx=True, runtimes=["onnx-int8"]), SrnetError,
     "--runtimes onnx-int8 needs --onnx --quantize int8"),
    (lambda: api.bench(["m"], roundz=3), TypeError, "unexpected keyword argument 'roundz'"),
    (lambda: api.bench(["m"], AttackConfig(attack="charswap")), TypeError, "expected a BenchConfig"),
    (lambda: api.attack("m", split="dev"), SrnetError, "--attack: required"),
])
def test_bad_settings_are_one_line_before_anything_loads(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_stage_keys_hold_at_the_configs_defaults():
    """A setting added later (``bench.omp``) keeps recorded stage keys while at its default."""
    stage = get_stage("bench")
    params = {"models": ["m"], **BenchConfig().model_dump()}
    assert "omp" not in key_params(stage, params)
    assert key_params(stage, {**params, "omp": [0.5]})["omp"] == [0.5]


@pytest.mark.parametrize(("settings", "message"), [
    ({"n": "5"}, "--n '5': expected an integer, got str"),
    ({"n": True}, "--n True: expected an integer, got bool"),
    ({"seed": -5}, "--seed -5: Input should be greater than or equal to 0"),
])
def test_attack_counts_are_integers_not_coerced(settings, message):
    with pytest.raises(SrnetError, match=message):
        AttackConfig.resolve(None, {"attack": "charswap", **settings})


def test_one_plugin_name_as_a_string_is_one_module(tmp_path):
    from srnet.plugins import load_plugins

    module = tmp_path / "one_plugin_module.py"
    module.write_text("LOADED = True\n")
    load_plugins(str(module))  # not 'o', 'n', 'e', ...


def test_every_verb_offers_the_runtimes_of_one_table():
    """``evaluation.runtime`` (a recipe's literal), ``compress --runtime`` and the quantize modes of
    ``export``/``bench`` are the runtime table's entries, so none can drift from the others."""
    from typing import get_args

    from srnet.config import EvaluationConfig
    from srnet.export.onnx import check_quantize
    from srnet.export.runtimes import QUANTIZE_MODES, RUNTIMES

    assert get_args(EvaluationConfig.model_fields["runtime"].annotation) == tuple(RUNTIMES)
    assert {r.quantize for r in RUNTIMES.values() if r.quantize} == set(QUANTIZE_MODES)
    for mode in QUANTIZE_MODES:
        check_quantize(mode, onnx=True)
    with pytest.raises(SrnetError, match="--runtime onnx-int4: not one of"):
        api.compress("m", out="o", sparsity=0.5, runtime="onnx-int4")
