"""One matrix: every pruning method x every loss x objective through the same end-to-end checks.

The objective axis: every cell runs ``standard``; ``freelb`` (2 ascent steps) runs on a
diagonal (each method once, the losses in turn), which keeps the matrix fast.  The granularity
axis: every method once with head/neuron masks (``fixed`` from a structured mask file, whose
granularity it follows), whose shrunk export must also give the masked model's logits.  The family
axis: a tiny model of every other family entry (conftest's ``FAMILY_MODELS``), each with a
mask-making method and a loss in turn, head+neuron masks, through the same checks; a family whose
entry names a shrunk class also shrinks to the masked logits.

Each cell runs a whole recipe (``srnet.api.run``) on a tiny random BERT and the synthetic
task, then checks: the target sparsity is reached exactly in every matrix; the mask file
round-trips bit for bit; the exported checkpoint reloads with plain ``transformers`` (no
missing or re-initialised weights) and gives the logits the masked model gave during the
run; frozen-weight methods leave the weights untouched.  Every cell is given a file of every
registered loss input, each written by its input (``LossInput.write_dummy``).  The matrix's
other axes, attacks x tasks and run kinds x tasks, are in tests/tasks/test_matrix_tasks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from conftest import FAMILY_MODELS
from conftest import synthetic_split as synthetic
from srnet import api, load_model
from srnet.evaluation.predict import predict_logits, softmax
from srnet.experiments.run import task as run_module
from srnet.loss_inputs import BUILT_IN_SOURCES, LOSS_INPUTS, ReadContext, loss_input
from srnet.losses import LOSSES as LOSS_REGISTRY
from srnet.models import shrinkable
from srnet.pruning import LearnedMaskMethod, OneShotMethod, available_methods, get_method
from srnet.sparsity.mask_io import load_masks, save_masks
from srnet.sparsity.shapes import expand_masks
from srnet.tasks import generate_synthetic, get_task

# rows come from the registries: a new method or loss joins the matrix by registering
# ("dense" has no mask to check; the task-agnostic objectives have their own tests; a method
# registered by a test, like tests/toy_method.py, runs the same cells: test_toy_method.py)
METHODS = [m for m in available_methods() if m != "dense"]
LOSSES = LOSS_REGISTRY.names()
SPARSITY = 0.5
STRUCTURED = ("head", "neuron", "head+neuron")
PARAMS = {"mask_train": {"rerank_every": 3}}
"""Method params of every cell (a method not named here runs on its defaults)."""


def matrix_cells(methods: list[str]) -> list[tuple[str, str, str]]:
    """Every method with every loss (objective ``standard``), and a ``freelb`` diagonal: each
    method once, with the losses in turn."""
    return ([(m, loss, "standard") for m in methods for loss in LOSSES]
            + [(m, LOSSES[i % len(LOSSES)], "freelb") for i, m in enumerate(methods)])


def granularity_cells(methods: list[str]) -> list[tuple[str, str, str]]:
    """The granularity axis: each method with a structured granularity and a loss, both taken in
    turn."""
    return [(m, LOSSES[i % len(LOSSES)], STRUCTURED[i % len(STRUCTURED)]) for i, m in enumerate(methods)]


def reads_mask_file(method: str) -> bool:
    """Whether the method applies a given mask file (``fixed``): it follows the file's granularity."""
    return "mask_file" in get_method(method).params_model.model_fields


def trains_over_steps(method: str) -> bool:
    """Whether the mask comes out of training steps (not decided once)."""
    return not issubclass(get_method(method), OneShotMethod)


def family_cells(methods: list[str]) -> list[tuple[str, str, str]]:
    """The family axis: each family but BERT (the matrix's own) with a method that makes its own
    masks and a loss, both taken in turn."""
    makers = [m for m in methods if not reads_mask_file(m)]
    families = [f for f in FAMILY_MODELS if f != "bert"]
    return [(f, makers[i % len(makers)], LOSSES[i % len(LOSSES)]) for i, f in enumerate(families)]


CELLS = matrix_cells(METHODS)
GRANULARITY_CELLS = granularity_cells(METHODS)
FAMILY_CELLS = family_cells(METHODS)


@pytest.fixture(scope="module")
def input_files(tmp_path_factory) -> dict[str, Path]:
    """A file of every registered loss input for the train split, by source, each written by its
    input (``LossInput.write_dummy``): a new input joins every cell by registering."""
    root = tmp_path_factory.mktemp("extras")
    train = generate_synthetic("train", 48, seed=0)
    labels = get_task("synthetic_nli").labels
    context = ReadContext([ex.id for ex in train], labels, len(labels), "synthetic_nli",
                          golds=[labels[ex.label] for ex in train])
    rng = np.random.default_rng(0)
    return {cls.source: loss_input(name).write_dummy(root / f"{cls.source}.jsonl", context, rng)
            for name, cls in LOSS_INPUTS.items()}


@pytest.fixture(scope="module")
def fixed_mask_file(tiny_model_dir, tmp_path_factory):
    """A mask for the `fixed` method: one-shot magnitude masks of the tiny model."""
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    masks = api.prune_(model, {"method": "omp", "sparsity": SPARSITY}, seed=0)
    from srnet.sparsity.fingerprint import model_fingerprint
    from srnet.sparsity.mask_io import MaskMetadata

    path = tmp_path_factory.mktemp("fixed") / "masks.safetensors"
    meta = MaskMetadata(method="omp", base_model=str(tiny_model_dir),
                        base_model_fingerprint=model_fingerprint(model, list(masks)))
    save_masks(path, masks, meta)
    return path


@pytest.fixture(scope="module")
def structured_mask_files(tiny_model_dir, tmp_path_factory):
    """Masks for the `fixed` method's structured cells: one-shot magnitude group gates, by granularity."""
    from srnet.sparsity.fingerprint import model_fingerprint
    from srnet.sparsity.mask_io import MaskMetadata

    root = tmp_path_factory.mktemp("fixed_structured")
    paths = {}
    for granularity in STRUCTURED:
        model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
        masks = api.prune_(model, {"method": "omp", "sparsity": SPARSITY, "granularity": granularity})
        paths[granularity] = root / f"{granularity}.safetensors"
        save_masks(paths[granularity], masks, MaskMetadata(
            method="omp", base_model=str(tiny_model_dir), granularity=granularity,
            base_model_fingerprint=model_fingerprint(model, list(masks))))
    return paths


def recipe(tmp_path, tiny_model_dir, method: str, loss: str, extras, fixed_mask,
           objective: str = "standard", granularity: str = "unstructured") -> dict:
    pruning = {"method": method, "sparsity": SPARSITY, "granularity": granularity,
               "params": dict(PARAMS.get(method, {}))}
    if reads_mask_file(method):
        pruning["params"]["mask_file"] = str(fixed_mask)
        del pruning["granularity"]  # it follows the mask file
    files = {source: str(path) for source, path in extras.items()}
    loss_cfg = {"name": loss, **{s: files.pop(s) for s in BUILT_IN_SOURCES if s in files}, "inputs": files}
    return {
        "name": f"{method}_{loss}", "task": "synthetic_nli", "seed": 3,
        "output_dir": str(tmp_path / "runs"),
        "model": {"name": str(tiny_model_dir), "max_length": 48},
        "data": {"train": synthetic("train", 48), "dev": synthetic("dev", 24),
                 "challenge": [synthetic("challenge", 24)]},
        "training": {"max_steps": 10, "batch_size": 8, "eval_every": 5, "lr": 1e-3,
                     "log_every": 5, "warmup_ratio": 0.0},
        "loss": loss_cfg,
        "pruning": pruning,
        "objective": {"name": objective, "params": {"steps": 2} if objective == "freelb" else {}},
    }


@pytest.mark.parametrize(("method", "loss", "objective"), CELLS)
def test_method_loss_matrix(method, loss, objective, tmp_path, tiny_model_dir, input_files, fixed_mask_file,
                            monkeypatch):
    check_cell(method, loss, objective, "unstructured", tmp_path, tiny_model_dir, input_files,
               fixed_mask_file, monkeypatch)


@pytest.mark.parametrize(("method", "loss", "granularity"), GRANULARITY_CELLS)
def test_granularity_axis(method, loss, granularity, tmp_path, tiny_model_dir, input_files,
                          structured_mask_files, monkeypatch):
    """Each method with head/neuron masks, whose shrunk export also gives the masked logits."""
    check_structured_cell(method, loss, granularity, tmp_path, tiny_model_dir, input_files,
                          structured_mask_files, monkeypatch)


@pytest.mark.parametrize(("family", "method", "loss"), FAMILY_CELLS)
def test_family_axis(family, method, loss, tmp_path, tiny_model_dirs, input_files, monkeypatch):
    """Each family's tiny model with head+neuron masks through :func:`check_cell`; it shrinks to the
    masked logits where its family entry names a shrunk class."""
    model_type, config = FAMILY_MODELS[family]
    model_dir = tiny_model_dirs(model_type, **config)
    if model_type in shrinkable():
        check_structured_cell(method, loss, "head+neuron", tmp_path, model_dir, input_files,
                              {"head+neuron": None}, monkeypatch)
    else:
        check_cell(method, loss, "standard", "head+neuron", tmp_path, model_dir, input_files, None,
                   monkeypatch)


def check_structured_cell(method, loss, granularity, tmp_path, tiny_model_dir, input_files,
                          structured_mask_files, monkeypatch) -> None:
    """Run one head/neuron cell through :func:`check_cell`; its shrunk export gives the masked logits."""
    run, masked_logits = check_cell(method, loss, "standard", granularity, tmp_path, tiny_model_dir,
                                    input_files, structured_mask_files[granularity], monkeypatch)
    shrunk = load_model(api.export_masked(str(run), run, tmp_path / "shrunk", shrink=True))
    tokenizer = AutoTokenizer.from_pretrained(run / "model")
    logits = predict_logits(shrunk, tokenizer, generate_synthetic("dev", 24, seed=0), max_length=48)
    np.testing.assert_allclose(logits, masked_logits, atol=1e-5)


def check_cell(method, loss, objective, granularity, tmp_path, tiny_model_dir, input_files, fixed_mask_file,
               monkeypatch):
    """Run one cell and check it; return the run folder and the masked model's dev logits."""
    dev = generate_synthetic("dev", 24, seed=0)
    masked_logits = {}
    check = run_module.check_baked_model

    def capture_masked_model(masked, baked, tokenizer, probe, max_length):
        """The run's final parametrized (masked) model, seen just before it is exported."""
        masked_logits["dev"] = predict_logits(masked, tokenizer, dev, max_length=max_length)
        check(masked, baked, tokenizer, probe, max_length)

    monkeypatch.setattr(run_module, "check_baked_model", capture_masked_model)
    result = api.run(recipe(tmp_path, tiny_model_dir, method, loss, input_files, fixed_mask_file,
                            objective, granularity))
    run = result.run_dir
    assert (run / "config.yaml").read_text().count(f"name: {objective}") == 1

    # 1. exact sparsity in every masked matrix (or layer's heads/neurons), from the mask file and metrics
    masks, meta = load_masks(run / "masks.safetensors")
    assert (meta.method, meta.granularity) == (method, granularity)
    for name, mask in masks.items():
        zeros = mask.numel() - int(mask.sum())
        assert zeros == round(SPARSITY * mask.numel()), name
    assert result.metrics.sparsity.overall == pytest.approx(SPARSITY, abs=1e-3)

    # 2. masks round-trip bit for bit
    again_path = tmp_path / "again.safetensors"
    save_masks(again_path, masks, meta)
    again, _ = load_masks(again_path)
    assert list(again) == list(masks)
    assert all(torch.equal(again[k], masks[k]) for k in masks)

    # 3. plain transformers reload: every weight loaded, masked entries are zero
    exported, info = AutoModelForSequenceClassification.from_pretrained(
        run / "model", output_loading_info=True
    )
    assert not info["missing_keys"] and not info["mismatched_keys"]
    weight_masks = expand_masks(exported, masks)
    for name, mask in weight_masks.items():
        weight = exported.get_submodule(name).weight
        assert torch.all(weight[~mask] == 0), name

    # 4. the exported model, reloaded from disk, gives the masked model's logits (and the run's
    #    recorded predictions)
    tokenizer = AutoTokenizer.from_pretrained(run / "model")
    logits = predict_logits(exported.eval(), tokenizer, dev, max_length=48)
    np.testing.assert_allclose(logits, masked_logits["dev"], atol=1e-5)
    rows = [json.loads(line) for line in (run / "predictions" / "synthetic_dev.jsonl").open()]
    assert [r["id"] for r in rows] == [ex.id for ex in dev]
    np.testing.assert_allclose(softmax(logits), np.array([r["probs"] for r in rows]), atol=2e-6)

    # 5. mask-learning methods train no weight: export == frozen base weights x mask
    if issubclass(get_method(method), LearnedMaskMethod):
        base = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
        for name, mask in weight_masks.items():
            expected = base.get_submodule(name).weight * mask
            assert torch.equal(exported.get_submodule(name).weight, expected), name
    return run, masked_logits["dev"]


@pytest.mark.parametrize("method", [m for m in METHODS if trains_over_steps(m)])
def test_same_seed_same_masks_and_metrics(method, tmp_path, tiny_model_dir, input_files, fixed_mask_file):
    first = api.run(recipe(tmp_path / "a", tiny_model_dir, method, "ce", input_files, fixed_mask_file))
    second = api.run(recipe(tmp_path / "b", tiny_model_dir, method, "ce", input_files, fixed_mask_file))
    a, _ = load_masks(first.run_dir / "masks.safetensors")
    b, _ = load_masks(second.run_dir / "masks.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    strip = lambda m: {k: v for k, v in m.items() if k != "time_s"}  # noqa: E731
    assert strip(first.metrics.as_json()) == strip(second.metrics.as_json())


@pytest.mark.parametrize("method", [m for m in METHODS if not reads_mask_file(m)])
def test_global_sparsity_is_exact_over_all_masked_weights(method, tmp_path, tiny_model_dir, input_files,
                                                          fixed_mask_file):
    spec = recipe(tmp_path, tiny_model_dir, method, "ce", input_files, fixed_mask_file)
    spec["pruning"]["scope"] = "global"
    result = api.run(spec)
    masks, _ = load_masks(result.run_dir / "masks.safetensors")
    total = sum(m.numel() for m in masks.values())
    zeros = sum(m.numel() - int(m.sum()) for m in masks.values())
    assert zeros == round(SPARSITY * total)
    per_matrix = {n: 1 - m.float().mean().item() for n, m in masks.items()}
    if method != "random":  # magnitude/score ranking across matrices gives unequal per-matrix sparsity
        assert max(per_matrix.values()) - min(per_matrix.values()) > 0.01
