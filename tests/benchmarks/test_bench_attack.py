"""benchmarks/bench_attack.py's mechanics on a tiny srnet run: the log, its replays, the numbers."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from transformers import AutoTokenizer

from conftest import REPO, save_borderline_classifier

SENTENCES = ["the movie was good and the actors were great", "the film is bad and boring",
             "an awful picture with terrible acting", "the story was funny and warm",
             "a dull and tedious movie"]


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_attack", REPO / "benchmarks" / "bench_attack.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tiny_run(tmp_path, monkeypatch):
    """A finished-looking srnet run (model/ + config.yaml) of a tiny sentiment model whose tokenizer
    says 64 tokens (as srnet's export writes it), and an SST-2 test file under $SRNET_DATA_DIR."""
    run = tmp_path / "run"
    stock = save_borderline_classifier(tmp_path / "stock", SENTENCES, max_position_embeddings=512)
    save_borderline_classifier(run / "model", SENTENCES, max_position_embeddings=512)
    AutoTokenizer.from_pretrained(run / "model", model_max_length=64).save_pretrained(run / "model")
    (run / "config.yaml").write_text(json.dumps({"task": "sentiment", "model": {"name": str(stock),
                                                                                "max_length": 64}}))
    (tmp_path / "data" / "sst2").mkdir(parents=True)
    (tmp_path / "data" / "sst2" / "test.jsonl").write_text(
        "".join(json.dumps({"sentence": s, "label": i % 2}) + "\n" for i, s in enumerate(SENTENCES)))
    monkeypatch.setenv("SRNET_DATA_DIR", str(tmp_path / "data"))
    return run


def test_bench_replays_the_log_through_every_loop(bench, tiny_run, tmp_path, capsys):
    out = tmp_path / "bench.json"
    report = bench.main(["--model", str(tiny_run), "--n", "4", "--baseline", "10", "--threads", "1",
                         "--attacks", "charswap", "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert (report["stock_length"], report["run_length"], report["n"]) == (512, 64, 4)
    timings = report["attacks"]["charswap"]["timings"]
    assert list(timings) == ["srnet", "srnet_loop", "a", "a_run", "b", "c"]
    asked = timings["srnet"]["asked"]
    assert asked > 10 and timings["a"]["asked"] == 10
    assert {timings[k]["asked"] for k in ("srnet_loop", "a_run", "b", "c")} == {asked}
    assert timings["b"]["ran"] == timings["c"]["ran"] == timings["a_run"]["ran"] <= asked
    assert set(report["attacks"]["charswap"]["ratios"]) == {
        "srnet/a", "srnet_loop/a", "srnet/a_run", "padding c/a", "batching c/b", "srnet/c"}
    printed = capsys.readouterr().out
    assert "a: TextAttack default, batches of 32, pad to 512" in printed and "srnet/a " in printed


def test_prefix_keeps_example_and_step_boundaries(bench):
    log = [[[("a", None), ("b", None)], [("c", None)]], [[("d", None), ("e", None)]]]
    assert bench.prefix(log, None) is log
    assert bench.prefix(log, 2) == [[[("a", None), ("b", None)]]]
    assert bench.prefix(log, 4) == [log[0], [[("d", None)]]]


def test_replay_caches_per_example(bench, tiny_run):
    from srnet.models import load_classifier, load_tokenizer

    model = load_classifier(str(tiny_run / "model"), ("negative", "positive"))
    tokenizer = load_tokenizer(str(tiny_run / "model"))
    log = [[[("a b", None), ("a b", None)], [("a b", None), ("c", None)]], [[("a b", None)]]]
    timing = bench.replay(bench.Loop("c", "", 32, None), model, tokenizer, 64, log)
    assert (timing.asked, timing.ran) == (5, 3)  # 'a b' once per example, 'c' once


def test_missing_run_says_how_to_train_it(bench, tmp_path):
    with pytest.raises(SystemExit, match=r"srnet run recipes/sst2/victim_cpu\.yaml"):
        bench.main(["--model", str(tmp_path)])


def test_an_attack_spec_carries_its_params(bench):
    assert bench.attack_spec("textfooler") == ("textfooler", {})
    assert bench.attack_spec("textfooler:similarity_precision=bfloat16,max_candidates=20") == (
        "textfooler", {"similarity_precision": "bfloat16", "max_candidates": 20})
    with pytest.raises(SystemExit, match="expected name or name:key=value"):
        bench.attack_spec("textfooler:oops")
