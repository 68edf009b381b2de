"""Built-in attacks on a tiny random model with a hand-built synonym table; metrics; the CLI."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch
import yaml

from srnet.cli import main
from srnet.evaluation.attacks import AttackOutcome, SynonymTable, Victim, attack_metrics, build_attack
from srnet.evaluation.attacks.charswap import char_edits
from srnet.evaluation.attacks.resources.similarity import SentenceEncoder
from srnet.evaluation.attacks.resources.text import STOP_WORDS, Words
from srnet.models import load_classifier, load_tokenizer

SENTENCES = [
    "the movie was good and the actors were great", "a charming and often affecting journey",
    "the film is bad and boring", "an awful picture with terrible acting", "the story was funny and warm",
    "a dull and tedious movie", "great actors in a good story", "the plot is boring and the acting awful",
]
TABLE = SynonymTable({
    "movie": ["film", "picture", "flick"], "good": ["fine", "nice", "decent"],
    "great": ["terrific", "superb"],
    "charming": ["delightful", "lovely"], "journey": ["trip", "voyage"], "bad": ["poor", "lousy"],
    "boring": ["dull", "tedious"], "awful": ["dreadful", "terrible"], "acting": ["performance"],
    "funny": ["amusing", "comic"], "warm": ["cordial", "kind"], "story": ["tale", "plot"],
    "dull": ["boring", "flat"], "tedious": ["tiresome"], "film": ["movie"], "actors": ["performers", "cast"],
    "picture": ["movie"], "plot": ["story"], "terrible": ["awful"], "affecting": ["moving", "touching"],
})


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory):
    """A tiny random 2-way model whose decision boundary sits at the median of SENTENCES' logit gaps,
    so small edits can flip it; saved to disk for the CLI tests."""
    from conftest import save_tiny_model

    path = save_tiny_model(tmp_path_factory.mktemp("tiny_sentiment"), num_labels=2)
    model = load_classifier(str(path), ("negative", "positive"))
    tokenizer = load_tokenizer(str(path))
    enc = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        model.classifier.weight.mul_(50)
        logits = model(**enc).logits
        gap = logits[:, 1] - logits[:, 0]
        model.classifier.bias[1] -= float(gap.median()) - 1e-4
    model.save_pretrained(path)
    return path, model.eval(), tokenizer


def _attack_all(name, model, tokenizer, params, **resources):
    victim = Victim(model, tokenizer, 64)
    attack = build_attack(name, params, **resources)
    clean = victim.probs([(s, None) for s in SENTENCES]).argmax(axis=1)
    start = victim.queries
    outcomes = [attack.attack(victim, (s, None), int(g), np.random.default_rng(i))
                for i, (s, g) in enumerate(zip(SENTENCES, clean, strict=True))]
    return outcomes, victim.queries - start


def _predict(model, tokenizer, texts):
    with torch.no_grad():
        return model(**tokenizer(texts, padding=True, return_tensors="pt")).logits.argmax(-1).tolist()


def test_wordswap_flips_with_table_synonyms_under_constraints(sentiment_model):
    path, model, tokenizer = sentiment_model
    encoder = SentenceEncoder(str(path))
    params = {"max_fraction": 0.4, "min_similarity": 0.9}
    outcomes, queries = _attack_all("wordswap", model, tokenizer, params, neighbours=TABLE, encoder=encoder)
    wins = [o for o in outcomes if o.result == "successful"]
    assert wins, outcomes
    assert all(o.result != "skipped" for o in outcomes)  # gold = the clean prediction
    assert sum(o.queries for o in outcomes) == queries
    assert _predict(model, tokenizer, [o.perturbed for o in wins]) == [1 - o.gold for o in wins]
    for o in outcomes:
        before, after = Words.split(o.original), Words.split(o.perturbed)
        assert o.changed_words == after.changed(before)
        assert len(o.changed_words) <= max(1, math.floor(0.4 * len(before.words)))
        for i in o.changed_words:
            assert after.words[i] in TABLE(before.words[i], "NN")
            assert before.words[i] not in STOP_WORDS
        if o.changed_words:
            sim = encoder.similarity(o.original, [o.perturbed])[0]
            assert sim >= 0.9 and o.similarity == pytest.approx(sim, abs=1e-5)
        assert o.queries >= 1 + len(before.editable())  # clean + one leave-one-out batch


def test_charswap_edits_one_character_per_word(sentiment_model):
    _, model, tokenizer = sentiment_model
    outcomes, queries = _attack_all("charswap", model, tokenizer, {"max_fraction": 0.5, "per_op": 3})
    assert sum(o.queries for o in outcomes) == queries
    wins = [o for o in outcomes if o.result == "successful"]
    assert wins, outcomes
    assert _predict(model, tokenizer, [o.perturbed for o in wins]) == [1 - o.gold for o in wins]
    for o in outcomes:
        before, after = Words.split(o.original), Words.split(o.perturbed)
        for i in after.changed(before):
            old, new = before.words[i], after.words[i]
            assert old not in STOP_WORDS
            assert abs(len(old) - len(new)) <= 1 and (sorted(old) == sorted(new) or _one_edit(old, new))


def _one_edit(a: str, b: str) -> bool:
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def test_words_round_trip_and_editable():
    words = Words.split("you wonder why it was n't a Movie .")
    assert words.text == "you wonder why it was n't a Movie ."
    assert [words.words[i] for i in words.editable()] == ["wonder", "Movie"]
    assert words.replace(1, "marvel").text == "you marvel why it was n't a Movie ."


def test_char_edits_are_one_edit_and_seeded():
    edits = char_edits("movie", 3, np.random.default_rng(0))
    assert edits == char_edits("movie", 3, np.random.default_rng(0))
    assert edits and "movie" not in edits and len(set(edits)) == len(edits)
    assert all(_one_edit("movie", e) or sorted(e) == sorted("movie") for e in edits)


def test_victim_batches_caches_and_counts(sentiment_model):
    _, model, tokenizer = sentiment_model
    victim = Victim(model, tokenizer, 64, batch_size=3)
    pairs = [(s, None) for s in SENTENCES]
    batched = victim.probs(pairs + pairs[:2])
    assert (victim.queries, victim.evaluated) == (10, 8)
    victim.probs(pairs[:1])
    assert (victim.queries, victim.evaluated) == (11, 8)
    one_by_one = np.concatenate([Victim(model, tokenizer, 64, cache=False).probs([p]) for p in pairs])
    np.testing.assert_allclose(batched[:8], one_by_one, atol=1e-5)  # padding to the batch's longest


def test_attack_metrics_match_hand_counts():
    def outcome(result, queries):
        return AttackOutcome(result, "x", "y", 0, 0, 0, queries)

    outcomes = [outcome("successful", q) for q in (10, 20, 30)] + [outcome("failed", q) for q in (5, 15)]
    outcomes.append(outcome("skipped", 1))
    m = attack_metrics(outcomes)
    assert (m["total"], m["attacked"], m["successful"], m["failed"], m["skipped"]) == (6, 5, 3, 2, 1)
    assert m["clean"] == pytest.approx(5 / 6) and m["aua"] == pytest.approx(2 / 6)
    assert m["success_rate"] == pytest.approx(3 / 5) and m["avg_queries"] == pytest.approx(16.0)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def nli_run(tmp_path_factory, tiny_model_dir):
    """A finished 3-step NLI run on a tiny model and its data folder."""
    root = tmp_path_factory.mktemp("attack_nli")
    rows = [("the cat sat on the mat", "a small cat sat quietly", "entailment"),
            ("a dog ran in the park", "the dog is asleep at home", "contradiction"),
            ("the man read a book", "the man read a long novel", "neutral")] * 4
    for name in ("train", "dev"):
        (root / f"{name}.jsonl").write_text("".join(
            json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in rows))
    code = main(["finetune", "--model", str(tiny_model_dir), "--task", "nli",
                 "--train", str(root / "train.jsonl"),
                 "--dev", str(root / "dev.jsonl"), "--output-dir", str(root / "runs"), "--name", "ft",
                 "--set", "training.max_steps=2"])
    assert code == 0
    return root


def test_cli_attack_nli_run_edits_only_the_hypothesis(capsys, nli_run):
    run = nli_run / "runs" / "ft"
    code, out, err = _cli(capsys, "attack", str(run), "--attack", "charswap", "--n", "6", "--seed", "1")
    assert code == 0, err
    summary = json.loads((run / "attack" / "charswap.json").read_text())
    rows = [json.loads(line) for line in (run / "attack" / "charswap.jsonl").read_text().splitlines()]
    assert len(rows) == 6 == summary["total"]
    hypotheses = {json.loads(x)["hypothesis"] for x in (nli_run / "dev.jsonl").read_text().splitlines()}
    assert all(r["original"] in hypotheses for r in rows)
    labels = {"entailment", "neutral", "contradiction"}
    assert all({r["gold"], r["pred_before"], r["pred_after"]} <= labels for r in rows)
    for key in ("successful", "failed", "skipped"):
        assert summary[key] == sum(r["result"] == key for r in rows)
    attacked = [r for r in rows if r["result"] != "skipped"]
    mean_queries = sum(r["queries"] for r in attacked) / max(1, len(attacked))
    assert summary["avg_queries"] == pytest.approx(mean_queries)
    assert summary["survivors"] == [r["id"] for r in rows if r["result"] == "failed"]
    assert "success_rate" in out


def test_cli_attack_bad_input(capsys, nli_run, tmp_path, monkeypatch):
    run = str(nli_run / "runs" / "ft")
    before = sorted(p.name for p in (nli_run / "runs" / "ft").rglob("*"))
    for param, named in (("min_similarity=0", "min_similarity"), ("min_similarity=1.5", "min_similarity"),
                         ("min_word_similarity=-0.2", "min_word_similarity"), ("window=abc", "window"),
                         ("windw=3", "windw"), ("counterfit_vocab=1000000000", "counterfit_vocab")):
        code, _, err = _cli(capsys, "attack", run, "--attack", "wordswap", "--param", param)
        assert code == 2 and named in err and len(err.strip().splitlines()) == 1, (param, err)
    code, _, err = _cli(capsys, "attack", run, "--attack", "textbugger")
    assert code == 2 and "unknown attack 'textbugger'" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, "attack", run, "--attack", "charswap", "--n", "13")
    assert code == 2 and "--n 13" in err and "12 examples" in err
    monkeypatch.setenv("SRNET_WORDNET_DIR", str(tmp_path))
    code, _, err = _cli(capsys, "attack", run, "--attack", "wordswap", "--n", "2")
    assert code == 2 and "pip install 'srnet[attack]'" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, "attack", run, "--attack", "charswap", "--param", "max_fraction=2")
    assert code == 2 and "max_fraction" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"premise": "a cat", "hypothesis": " ", "label": "neutral"}) + "\n")
    code, _, err = _cli(capsys, "attack", run, "--attack", "charswap", "--set", f"data.dev.path={empty}")
    assert code == 2 and "no text field to attack" in err
    assert sorted(p.name for p in (nli_run / "runs" / "ft").rglob("*")) == before  # nothing written
    damaged = tmp_path / "damaged"
    shutil.copytree(run, damaged)
    (damaged / "metrics.json").write_text("[]")
    code, _, err = _cli(capsys, "attack", str(damaged), "--attack", "charswap", "--n", "2")
    assert code == 2 and "metrics.json: not a run record" in err and len(err.strip().splitlines()) == 1


def test_cli_attack_plain_model_wordswap_with_embedding_neighbours(capsys, sentiment_model, tmp_path):
    path, _, _ = sentiment_model
    data = tmp_path / "dev.jsonl"
    rows = [json.dumps({"sentence": s, "label": i % 2}) for i, s in enumerate(SENTENCES)]
    data.write_text("\n".join(rows) + "\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"task: sentiment\ndata:\n  dev: {{path: {data}}}\n")
    out = tmp_path / "out"
    code, _, err = _cli(capsys, "attack", str(path), "--recipe", str(recipe), "--attack", "wordswap", "--out",
                        str(out), "--param", "neighbours=embedding", "--param", f"similarity_model={path}",
                        "--param", "min_similarity=0.5")
    assert code == 0, err
    summary = json.loads((out / "wordswap.json").read_text())
    assert summary["total"] == 8 and summary["params"]["neighbours"] == "embedding"
    assert summary["skipped"] == sum(json.loads(r)["result"] == "skipped"
                                     for r in (out / "wordswap.jsonl").read_text().splitlines())
    code, _, err = _cli(capsys, "attack", str(path), "--attack", "charswap")
    assert code == 2 and "--recipe" in err


def test_attack_stage_hands_the_encoder_and_its_cache_to_the_next_run(nli_run, tiny_model_dir, tmp_path,
                                                                      monkeypatch):
    from srnet.evaluation.attacks import wordswap
    from srnet.experiments.sweep.stages import get_stage

    built, encoded = [], []
    real = wordswap.sentence_encoder

    def counting_encoder(*args):
        encoder = real(*args)
        inner = encoder._encode
        encoder._encode = lambda texts: encoded.append(len(texts)) or inner(texts)
        built.append(encoder)
        return encoder

    monkeypatch.setattr(wordswap, "sentence_encoder", counting_encoder)
    dev = tmp_path / "dev.jsonl"  # contradictions (the collapsed tiny run's answer) with synonyms to try
    rows = [{"premise": "a cat sat", "hypothesis": h, "label": "contradiction"}
            for h in ("the big dog looked happy", "a large house seemed quiet and old")]
    dev.write_text("".join(json.dumps(row) + "\n" for row in rows))
    first, second = tmp_path / "ft_a", tmp_path / "ft_b"
    for copy in (first, second):
        shutil.copytree(nli_run / "runs" / "ft", copy, ignore=shutil.ignore_patterns("attack"))
        config = yaml.safe_load((copy / "config.yaml").read_text())
        config["data"]["dev"]["path"] = str(dev)
        (copy / "config.yaml").write_text(yaml.safe_dump(config))
    stage = get_stage("attack")

    def attack_stage(runs, folder):
        params = stage.params_model.model_validate(
            {"runs": [str(r) for r in runs], "attacks": ["wordswap"],
             "params": {"wordswap": {"similarity_model": str(tiny_model_dir), "min_similarity": 0.5}}})
        stage.run(None, params, tmp_path / folder)
        return sum(encoded)

    alone = attack_stage([first], "alone")
    assert alone > 0 and len(built) == 1
    encoded.clear()
    assert attack_stage([first, second], "both") == alone  # the second victim encodes nothing new
    assert len(built) == 2  # one encoder per stage, handed to the next run

    def rows(run, stage):  # each stage writes in its own sub-folder of the run
        lines = (run / "attack" / stage / "wordswap.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    assert rows(second, "both") == rows(first, "both") == rows(first, "alone")  # through the cache: the same
    summaries = [json.loads((r / "attack" / "both" / "wordswap.json").read_text()) for r in (first, second)]
    assert summaries[0]["resources"] == summaries[1]["resources"]


def test_an_attack_refuses_an_out_folder_another_attack_is_writing(capsys, nli_run, tmp_path):
    from srnet.rundir import locks

    out = tmp_path / "shared_out"
    held = locks.acquire(out, ".charswap.lock")  # another process's attack of the same name
    try:
        code, _, err = _cli(capsys, "attack", str(nli_run / "runs" / "ft"), "--attack", "charswap",
                            "--n", "2", "--out", str(out))
    finally:
        locks.release(out, held.token, ".charswap.lock")
    assert code == 2 and "another srnet attack 'charswap' is writing there" in err
    assert not (out / "charswap.json").exists()
    code, _, err = _cli(capsys, "attack", str(nli_run / "runs" / "ft"), "--attack", "charswap", "--n", "2",
                        "--out", "")
    assert code == 2 and "--out '': give a folder" in err


def test_every_attack_setting_is_declared_once_and_never_switched_off():
    """A params model inherits its settings (limits and help from one declaration) and may change a
    default, never the type: no attack narrows an inherited setting to None ("not used")."""
    from pydantic import ValidationError

    from srnet.evaluation.attacks import available_attacks, get_attack
    from srnet.evaluation.attacks.swap_settings import SwapSettings

    for name in available_attacks():
        model = get_attack(name).params_model
        for base in model.__mro__[1:]:
            for field, info in getattr(base, "model_fields", {}).items():
                mine = model.model_fields[field]
                assert mine.annotation == info.annotation, (name, field)
                assert info.description and mine.description, (name, field)
                assert not mine.description.lower().startswith(("not used", "not a ")), (name, field)
    swaps = [n for n in available_attacks() if issubclass(get_attack(n).params_model, SwapSettings)]
    assert {"wordswap", "textfooler", "strict_synonym"} <= set(swaps)
    assert get_attack("textfooler").params_model().embedding_k == 50  # its own default ...
    with pytest.raises(ValidationError, match="embedding_k"):  # ... under the shared limits
        get_attack("textfooler").params_model(embedding_k=0)
    with pytest.raises(ValidationError, match="max_fraction"):  # a count budget has no fraction
        get_attack("strict_synonym").params_model(max_fraction=0.2)
