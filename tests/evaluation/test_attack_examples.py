"""``srnet attack --examples N``: the review file of the first successes, end to end on a tiny model."""

from __future__ import annotations

import json
import re

import pytest
import torch

from conftest import save_borderline_classifier
from srnet import api
from srnet.cli import main
from srnet.errors import SrnetError
from srnet.evaluation.attacks import AttackOutcome
from srnet.evaluation.attacks.resources.text import Words
from srnet.experiments.sweep.stages import get_stage
from srnet.experiments.verbs.attack_examples import render_examples
from srnet.tasks.base import Example

SENTENCES = [
    "the movie was good and the actors were great", "a charming and often affecting journey",
    "the film is bad and boring", "an awful picture with terrible acting", "the story was funny and warm",
    "a dull and tedious movie", "great actors in a good story", "the plot is boring and the acting awful",
]
PARAMS = {"max_fraction": 0.5, "per_op": 3}
ENTRY = re.compile(r"^\d+\. ", re.MULTILINE)


@pytest.fixture(scope="module")
def sentiment(tmp_path_factory):
    """A borderline tiny 2-way model and a recipe whose dev split is SENTENCES labelled as the model
    predicts them (so none is skipped)."""
    from srnet.models import load_classifier, load_tokenizer

    root = tmp_path_factory.mktemp("attack_examples")
    model = save_borderline_classifier(root / "model", SENTENCES)
    net, tokenizer = load_classifier(str(model), ("negative", "positive")), load_tokenizer(str(model))
    with torch.no_grad():
        preds = net(**tokenizer(SENTENCES, padding=True, return_tensors="pt")).logits.argmax(-1).tolist()
    (root / "dev.jsonl").write_text("".join(json.dumps({"sentence": s, "label": y}) + "\n"
                                            for s, y in zip(SENTENCES, preds, strict=True)))
    recipe = root / "recipe.yaml"
    recipe.write_text(json.dumps({"task": "sentiment", "model": {"max_length": 64},
                                  "data": {"dev": {"path": str(root / "dev.jsonl")}}}))
    return model, recipe


def _entries(markdown: str) -> list[str]:
    return ENTRY.split(markdown)[1:]


def _unmark(line: str, wrap: str) -> str:
    return line.replace(wrap, "")


def test_examples_file_shows_the_first_successes_highlighted(sentiment, tmp_path):
    model, recipe = sentiment
    report = api.attack(str(model), recipe=recipe, attack="charswap", out=tmp_path, params=PARAMS, examples=2)
    rows = [json.loads(line) for line in (tmp_path / "charswap.jsonl").read_text().splitlines()]
    wins = [r for r in rows if r["result"] == "successful"]
    assert len(wins) >= 3 and report.review_path == tmp_path / "charswap_examples.md"
    markdown = report.review_path.read_text()
    header = markdown.splitlines()[2]
    assert f"{len(wins)} successful, {8 - len(wins)} failed, 0 skipped of 8 examples" in header
    assert "`charswap` (max_fraction=0.5, per_op=3)" in header
    assert f"`{model}`" in header and f"split `{report.summary['split']}`" in header
    assert header.endswith("; the first 2 below.")
    entries = _entries(markdown)
    assert len(entries) == 2
    for entry, row in zip(entries, wins, strict=False):
        facts, original, adversarial = entry.splitlines()
        prediction = f"{row['pred_before']} → {row['pred_after']}"
        assert facts.startswith(f"`{row['id']}` · gold {row['gold']} · {prediction}")
        assert facts.endswith(f"· {row['queries']} queries") and "similarity" not in facts
        before = Words.split(row["original"])
        struck = re.findall(r"~~(\w+)~~", original)
        assert struck == [before.words[i] for i in row["changed_words"]] and struck
        assert _unmark(original, "~~") == "   - original: " + row["original"]
        assert len(re.findall(r"\*\*\w+\*\*", adversarial)) == len(struck)
        assert _unmark(adversarial, "**") == "   - adversarial: " + row["perturbed"]


def test_fewer_successes_than_asked_and_no_file_by_default(sentiment, tmp_path):
    model, recipe = sentiment
    report = api.attack(str(model), recipe=recipe, attack="charswap", out=tmp_path, params=PARAMS,
                        examples=50)
    wins = report.summary["successful"]
    markdown = report.review_path.read_text()
    assert f"only {wins} to show (50 asked for)" in markdown and len(_entries(markdown)) == wins
    report = api.attack(str(model), recipe=recipe, attack="charswap", out=tmp_path, params=PARAMS,
                        overwrite=True)
    assert report.review_path is None
    assert not (tmp_path / "charswap_examples.md").exists()  # the earlier run's file is removed


def test_cli_examples_and_bad_value(capsys, sentiment, tmp_path):
    model, recipe = sentiment
    argv = ["attack", str(model), "--recipe", str(recipe), "--attack", "charswap", "--out", str(tmp_path),
            "--param", "per_op=3", "--param", "max_fraction=0.5"]
    assert main([*argv, "--examples", "1"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "charswap_examples.md") in out
    assert len(_entries((tmp_path / "charswap_examples.md").read_text())) == 1
    assert main([*argv, "--examples", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--examples -1" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SrnetError, match="--examples -3"):
        api.attack(str(model), recipe=recipe, attack="charswap", out=tmp_path, examples=-3)


def test_a_second_attack_into_the_same_folder_needs_overwrite(capsys, sentiment, tmp_path):
    """A second `srnet attack --out D` replaced the earlier results without a word."""
    model, recipe = sentiment
    argv = ["attack", str(model), "--recipe", str(recipe), "--attack", "charswap", "--out", str(tmp_path),
            "--param", "per_op=3"]
    assert main(argv) == 0
    first = (tmp_path / "charswap.json").read_bytes()
    assert main([*argv, "--seed", "7"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"error: {tmp_path / 'charswap.json'}: already exists; pass "
                                            "--overwrite to replace it")
    assert (tmp_path / "charswap.json").read_bytes() == first
    assert main([*argv, "--seed", "7", "--overwrite"]) == 0
    assert json.loads((tmp_path / "charswap.json").read_text())["seed"] == 7


def test_pairs_show_the_premise_and_markdown_is_escaped():
    example = Example("p1", "a *bold* premise", "the cat sat | still", 0)
    outcome = AttackOutcome("successful", "the cat sat | still", "the cta sat | still", 0, 0, 1, 7,
                            changed_words=[1], similarity=0.9312)
    summary = {"attack": "charswap", "model": "m", "split": "dev", "params": {"max_fraction": 0.3},
               "successful": 1, "failed": 0, "skipped": 0, "total": 1}
    (entry,) = _entries(render_examples(summary, [example], [outcome], ["yes", "no"], 3))
    assert entry.splitlines() == [
        "`p1` · gold yes · yes → no · similarity 0.931 · 7 queries",
        r"   - premise: a \*bold\* premise",
        r"   - original: the ~~cat~~ sat \| still",
        r"   - adversarial: the **cta** sat \| still",
    ]


def test_attack_stage_takes_examples_and_rejects_negative():
    params = get_stage("attack").params_model
    assert params.model_validate({"runs": ["@ft"], "attacks": ["charswap"], "examples": 3}).examples == 3
    with pytest.raises(ValueError, match="examples"):
        params.model_validate({"runs": ["@ft"], "attacks": ["charswap"], "examples": -1})
