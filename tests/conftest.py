"""Shared fixtures: tiny random models (in memory: :func:`tiny_classifier`, :func:`tiny_mlm`; on
disk, loading like real checkpoints: :func:`save_tiny_model`, ``tiny_model_dirs``, ``tiny_model_dir``),
a tiny synthetic-NLI recipe, and the real-data folder."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SRNET_DATA_DIR", REPO.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
if "SRNET_CACHE_DIR" not in os.environ:  # resources srnet builds (counter-fitted spaces): per session
    os.environ["SRNET_CACHE_DIR"] = tempfile.mkdtemp(prefix="srnet_test_cache_")
    atexit.register(shutil.rmtree, os.environ["SRNET_CACHE_DIR"], ignore_errors=True)

torch.set_num_threads(1)  # tiny models: one thread is fastest and keeps parallel CI quiet


def synthetic_split(split: str, n: int) -> dict:
    """A DataSpec dict of the synthetic NLI task (seed 0); the ``challenge`` split is scored as HANS."""
    spec = {"format": "synthetic", "synthetic": {"split": split, "n": n, "seed": 0}}
    return spec | ({"challenge": "hans"} if split == "challenge" else {})


def merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` merged in, section by section (nested dicts merged, not replaced)."""
    out = dict(base)
    for key, value in extra.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merge(out[key], value) if nested else value
    return out


def tiny_recipe(root, model, name: str, **extra) -> dict:
    """A 6-step synthetic-NLI recipe on ``model`` into ``root/name`` (dev and challenge splits,
    evaluation every 3 steps); ``extra`` sections are merged in."""
    base = {
        "name": name, "task": "synthetic_nli", "seed": 0, "output_dir": str(root),
        "model": {"name": str(model), "max_length": 48},
        "data": {"train": synthetic_split("train", 48), "dev": synthetic_split("dev", 30),
                 "challenge": [synthetic_split("challenge", 24)]},
        "training": {"max_steps": 6, "batch_size": 8, "eval_every": 3, "lr": 1e-3},
    }
    return merge(base, extra)


BERT_SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
"""A tiny model: hidden 32, 2 layers of 2 heads, FFN 64 (BERT's spelling; :data:`TINY_SIZES` for
the families that spell or size it otherwise)."""
TINY_SIZES = {
    "distilbert": dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64),
    "electra": {**BERT_SIZES, "embedding_size": 16},
    "albert": {**BERT_SIZES, "embedding_size": 16},
}
BERT_IDS = {"pad_token_id": 0, "cls_token_id": 101, "sep_token_id": 102,  # the bundled vocabulary's
            "bos_token_id": 101, "eos_token_id": 102}
DEBERTA_V3 = {"relative_attention": True, "pos_att_type": ["p2c", "c2p"], "share_att_key": False,
              "position_buckets": 16, "norm_rel_ebd": "layer_norm"}
FAMILY_MODELS = {  # test id -> (model_type, tiny_config arguments): a tiny model of every family entry
    "bert": ("bert", {}), "roberta": ("roberta", {}), "xlm-roberta": ("xlm-roberta", {}),
    "camembert": ("camembert", {}), "electra": ("electra", {}), "distilbert": ("distilbert", {}),
    "deberta-v2": ("deberta-v2", {}),
    "deberta-v3": ("deberta-v2", DEBERTA_V3),  # + the relative-position key and query projections
    "mpnet": ("mpnet", {}), "albert": ("albert", {}),
    "modernbert": ("modernbert", BERT_IDS),  # fused Wqkv, GLU Wi
}
_LAYERS = {"distilbert": "n_layers"}
_HEADS = {"distilbert": "n_heads"}
_DROPOUTS = {"distilbert": ("dropout", "attention_dropout")}


@functools.lru_cache(maxsize=1)
def bundled_vocab_size() -> int:
    """The vocabulary size of the bundled tokenizer (the default of every tiny model)."""
    from transformers import AutoTokenizer

    from srnet.models import default_model_path

    return len(AutoTokenizer.from_pretrained(default_model_path()))


def tiny_config(model_type: str = "bert", *, num_labels: int = 3, vocab_size: int | None = None,
                layers: int = 2, heads: int = 2, dropout: float | None = None,
                max_position_embeddings: int = 128, **overrides):
    """The config of a tiny random ``model_type`` (hidden 32, FFN 64): ``layers`` layers of
    ``heads`` heads, the bundled tokenizer's vocabulary unless ``vocab_size`` is given, the
    family's default dropout unless ``dropout`` is given; ``overrides``: further config fields."""
    from transformers import AutoConfig

    sizes = dict(TINY_SIZES.get(model_type, BERT_SIZES))
    sizes[_LAYERS.get(model_type, "num_hidden_layers")] = layers
    sizes[_HEADS.get(model_type, "num_attention_heads")] = heads
    if dropout is not None:
        for key in _DROPOUTS.get(model_type, ("hidden_dropout_prob", "attention_probs_dropout_prob")):
            sizes[key] = dropout
    return AutoConfig.for_model(
        model_type, vocab_size=vocab_size or bundled_vocab_size(), num_labels=num_labels,
        max_position_embeddings=max_position_embeddings, **{**sizes, **overrides},
    )


def tiny_classifier(model_type: str = "bert", *, seed: int = 0, **config) -> torch.nn.Module:
    """A tiny random sequence classifier, initialised with ``seed`` (``config``: :func:`tiny_config`'s
    arguments); in training mode, like ``from_config``."""
    from transformers import AutoModelForSequenceClassification

    cfg = tiny_config(model_type, **config)
    torch.manual_seed(seed)
    return AutoModelForSequenceClassification.from_config(cfg)


def tiny_mlm(model_type: str = "bert", *, seed: int = 0, **config) -> torch.nn.Module:
    """A tiny random masked language model (an MLM head on the tiny backbone), initialised with
    ``seed`` (``config``: :func:`tiny_config`'s arguments)."""
    from transformers import AutoModelForMaskedLM

    cfg = tiny_config(model_type, **config)
    torch.manual_seed(seed)
    return AutoModelForMaskedLM.from_config(cfg)


def save_tiny_model(path: Path, model_type: str = "bert", num_labels: int = 3, **config) -> Path:
    """Save a tiny random ``model_type`` classifier (:func:`tiny_classifier`, seed 0) with the
    bundled tokenizer to ``path`` (``config``: further :func:`tiny_config` arguments)."""
    from transformers import AutoTokenizer

    from srnet.models import default_model_path

    tiny_classifier(model_type, num_labels=num_labels, **config).save_pretrained(path)
    AutoTokenizer.from_pretrained(default_model_path()).save_pretrained(path)
    return path


def save_borderline_classifier(path: Path, texts: list[str], **config) -> Path:
    """A tiny random 2-way BERT classifier (:func:`save_tiny_model`, ``config``: its arguments) whose
    decision boundary sits at the median of ``texts``' logit gaps (head weights scaled up), so one
    small edit can flip many."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    save_tiny_model(path, num_labels=2, **config)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(50)
        logits = model(**AutoTokenizer.from_pretrained(path)(texts, padding=True, return_tensors="pt")).logits
        model.classifier.bias[1] -= float((logits[:, 1] - logits[:, 0]).median()) - 1e-4
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory) -> Callable[..., Path]:
    """Tiny random classifiers on disk, one per distinct set of :func:`save_tiny_model` arguments,
    made once per session and shared: ``tiny_model_dirs("roberta", num_labels=2)``.  Tests read
    them; a test that changes a model saves its own copy with :func:`save_tiny_model`."""
    made: dict[tuple, Path] = {}

    def get(model_type: str = "bert", num_labels: int = 3, **config) -> Path:
        key = (model_type, num_labels, json.dumps(config, sort_keys=True))
        if key not in made:
            folder = tmp_path_factory.mktemp(f"tiny_{model_type}_{num_labels}")
            made[key] = save_tiny_model(folder, model_type, num_labels, **config)
        return made[key]

    return get


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model_dirs) -> Path:
    """A tiny random 3-way BERT classifier on disk (loads with ``from_pretrained``)."""
    return tiny_model_dirs()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; tests that use it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA


def assert_reloads_without_srnet(shrunk: Path, masked: Path, tmp_path: Path) -> None:
    """``shrunk``, loaded with ``trust_remote_code=True`` in a fresh process that never imports
    srnet, gives the logits of the masked export ``masked`` (1e-5) on random token ids."""
    from transformers import AutoModelForSequenceClassification

    ids = torch.randint(1000, 2000, (3, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = AutoModelForSequenceClassification.from_pretrained(masked).eval()(input_ids=ids).logits
    torch.save(ids, tmp_path / "ids.pt")
    script = (
        "import sys, torch\n"
        "from transformers import AutoModelForSequenceClassification\n"
        f"model = AutoModelForSequenceClassification.from_pretrained({str(shrunk)!r},\n"
        "                                                           trust_remote_code=True)\n"
        f"ids = torch.load({str(tmp_path / 'ids.pt')!r})\n"
        "with torch.no_grad():\n"
        f"    torch.save(model.eval()(input_ids=ids).logits, {str(tmp_path / 'logits.pt')!r})\n"
        "assert not any(name == 'srnet' or name.startswith('srnet.') for name in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    torch.testing.assert_close(torch.load(tmp_path / "logits.pt"), expected, rtol=0, atol=1e-5)


# Helpers shared by tests in several folders.

def srnet(*args: str, cwd: Path, pythonpath: list[Path] = ()) -> subprocess.CompletedProcess:
    """The srnet command in a fresh process (nothing of this test process is imported there)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in [REPO / "src", *pythonpath]),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "srnet.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def encoded(tokenizer, examples, ids: bool = True):
    """The examples tokenized as a datasets.Dataset (with their ids unless ``ids`` is False)."""
    import datasets

    enc = tokenizer([e.text_a for e in examples], [e.text_b for e in examples], truncation=True,
                    max_length=48)
    columns = {"label": [e.label for e in examples], **enc}
    if ids:
        columns["id"] = [e.id for e in examples]
    return datasets.Dataset.from_dict(columns)


HANS_SPEC = {"path": "hans/train.jsonl", "name": "hans", "challenge": "hans", "n": 300}
DEV_SPEC = {"path": "mnli/dev_matched.jsonl", "name": "mnli_dev", "n": 200}


def hans_block(acc: float, gap: float, rule: str = "sum", other: tuple[float, float] = (0.5, 0.0)) -> dict:
    """A HANS block with both rules: ``rule`` gives (acc, gap), the other rule ``other``."""
    def scores(a: float, g: float) -> dict:
        table = {h: {"entailment": 0.5 + g / 2, "non-entailment": 0.5 - g / 2}
                 for h in ("lexical_overlap", "subsequence", "constituent")}
        return {"accuracy": a, "primary": a, "shortcut_gap": g, "by_heuristic": table}

    rules = {rule: scores(acc, gap), ("argmax" if rule == "sum" else "sum"): scores(*other)}
    return {"n": 300, **rules[rule], "collapse": rule, "by_rule": rules, "rule_disagreement": 7}


def write_run(root: Path, name: str, *, seed: int, dev: float, hans: dict | None = None,
              method: str | None = None, sparsity: float = 0.0, loss: str = "ce",
              tags: dict | None = None, task: str = "nli", dev_n: int = 200) -> Path:
    """A finished-run folder: metrics.json + config.yaml, as srnet writes them."""
    run = root / name
    run.mkdir(parents=True)
    recipe = {"name": name, "task": task, "seed": seed, "loss": {"name": loss},
              "pruning": {"method": method, "sparsity": sparsity} if method else None,
              "data": {"dev": DEV_SPEC | {"n": dev_n}, "challenge": [HANS_SPEC] if hans else []},
              "tags": tags or {}}
    metrics = {"run": name, "task": task, "seed": seed,
               "id": {"mnli_dev": {"n": dev_n, "accuracy": dev, "primary": dev}},
               "ood": {"hans": hans} if hans else {},
               "sparsity": {"overall": sparsity,
                            "by_layer_role": {"0.query": sparsity, "1.ffn_in": sparsity}}}
    (run / "config.yaml").write_text(yaml.safe_dump(recipe))
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


def entry_point_site(root: Path, module: str) -> Path:
    """A folder that installs ``tests/<module>.py`` as an ``srnet.plugins`` entry point when on the path."""
    site = root / "site"
    name = module.replace("_", "-")
    info = site / f"srnet_{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: srnet-{name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[srnet.plugins]\n{module} = {module}\n")
    return site
