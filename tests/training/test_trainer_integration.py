"""srnet inside a real ``transformers.Trainer`` (:mod:`srnet.integrations.transformers`).

The Trainer path and the recipe path run the same method, loss and seed on a tiny BERT without
dropout, one full batch per step (so sampling order cannot differ): their masks must agree bit
for bit and their exported models give the same logits, after masks that moved.  Checkpoints
are plain models that also restore the masks exactly (resume, best model); bad input fails in
one line before training.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainerCallback, TrainingArguments

from conftest import encoded, save_tiny_model, synthetic_split, tiny_classifier
from srnet import api
from srnet.bias import write_bias_predictions
from srnet.config import LossConfig
from srnet.errors import SrnetError
from srnet.evaluation.predict import predict_logits
from srnet.export.config import ExportConfig
from srnet.integrations.transformers import DEPRECATED_LOSS_KEYWORDS, SrnetTrainer, collapse_line
from srnet.sparsity.mask_io import load_masks
from srnet.tasks import generate_synthetic

LABELS = ["entailment", "neutral", "contradiction"]
N_TRAIN, N_DEV, STEPS = 48, 24, 10
CELLS = [  # deterministic methods (hard-concrete gates draw from the global RNG, which the two
    # loops consume differently), a learned mask, a weight-training one and a structured one
    ("mask_train", "poe", {"mask_lr": 0.05}, "unstructured"),
    ("imp", "ce", {}, "unstructured"),
    ("omp", "reweight", {}, "head+neuron"),
]


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """A tiny BERT without dropout, the synthetic splits, bias predictions for the train split."""
    root = tmp_path_factory.mktemp("trainer")
    model_dir = save_tiny_model(root / "tiny", dropout=0.0)
    train = generate_synthetic("train", N_TRAIN, seed=0)
    ids = [ex.id for ex in train]
    probs = np.random.default_rng(0).dirichlet(np.ones(3), size=len(ids))
    write_bias_predictions(root / "bias.jsonl", ids, np.log(probs), labels=LABELS, feature="test",
                           split="train")
    return {"root": root, "model": model_dir, "bias": root / "bias.jsonl", "train": train,
            "dev": generate_synthetic("dev", N_DEV, seed=0),
            "tokenizer": AutoTokenizer.from_pretrained(model_dir)}


def arguments(out, **extra) -> TrainingArguments:
    """The recipe path's schedule in TrainingArguments (AdamW, decay 0.01, no warm-up, clip 1)."""
    settings = dict(max_steps=STEPS, per_device_train_batch_size=N_TRAIN, learning_rate=1e-3,
                    weight_decay=0.01, warmup_steps=0, seed=3, use_cpu=True, report_to=[],
                    save_strategy="no", disable_tqdm=True)
    return TrainingArguments(output_dir=str(out), **{**settings, **extra})


def make_trainer(setting, out, pruning, loss="ce", model=None, train=None, **extra) -> SrnetTrainer:
    tokenizer = setting["tokenizer"]
    args = {k: extra.pop(k) for k in list(extra) if k in TrainingArguments.__dataclass_fields__}
    if isinstance(loss, str) and not DEPRECATED_LOSS_KEYWORDS.keys() & extra.keys():
        loss = {"name": loss, "bias_predictions": str(setting["bias"])}  # the recipe's loss section
    return SrnetTrainer(
        model=model or AutoModelForSequenceClassification.from_pretrained(setting["model"]),
        args=arguments(out, **args), train_dataset=train or encoded(tokenizer, setting["train"]),
        eval_dataset=encoded(tokenizer, setting["dev"]), processing_class=tokenizer, pruning=pruning,
        loss=loss, **extra)


def recipe(setting, pruning: dict, loss: str) -> dict:
    return {"name": "recipe_path", "task": "synthetic_nli", "seed": 3,
            "output_dir": str(setting["root"] / "runs"),
            "model": {"name": str(setting["model"]), "max_length": 48},
            "data": {"train": synthetic_split("train", N_TRAIN), "dev": synthetic_split("dev", N_DEV)},
            "training": {"max_steps": STEPS, "batch_size": N_TRAIN, "lr": 1e-3, "warmup_ratio": 0.0,
                         "select": "last", "group_by_length": False, "mixed_precision": "no"},
            "loss": {"name": loss, "bias_predictions": str(setting["bias"])}, "pruning": pruning}


def dev_logits(setting, folder) -> np.ndarray:
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    return predict_logits(model, setting["tokenizer"], setting["dev"], max_length=48)


@pytest.mark.parametrize(("method", "loss", "params", "granularity"), CELLS)
def test_trainer_path_matches_the_recipe_path(setting, tmp_path, method, loss, params, granularity):
    pruning = {"method": method, "sparsity": 0.5, "granularity": granularity, "params": params}
    run = api.run(recipe(setting, pruning, loss), overwrite=True)
    trainer = make_trainer(setting, tmp_path / "hf", pruning, loss)
    metrics = trainer.train().metrics

    masks = trainer.masks()
    recipe_masks, _ = load_masks(run.run_dir / "masks.safetensors")
    assert sorted(masks) == sorted(recipe_masks)
    for name, mask in masks.items():
        assert torch.equal(mask, recipe_masks[name]), name
        assert int((~mask).sum()) == round(0.5 * mask.numel()), name  # every matrix/layer at target
    movement = trainer.mask_movement()
    if movement is not None:  # a learned mask moved from its start: the test is not about a no-op
        start = trainer.method.start_masks()
        flips = sum(int((start[n] != masks[n]).sum()) for n in masks)
        flipped = flips / sum(m.numel() for m in masks.values())
        assert metrics["mask_flipped"] == movement["flipped"] == pytest.approx(flipped)
        assert flipped > 0.05
        assert movement["flipped"] == run.metrics.mask_movement.flipped

    export = trainer.export(tmp_path / "export", shrink=granularity != "unstructured")
    loaded = (api.load_model(export) if granularity != "unstructured"
              else AutoModelForSequenceClassification.from_pretrained(export))
    ours = predict_logits(loaded, setting["tokenizer"], setting["dev"], max_length=48)
    np.testing.assert_allclose(ours, dev_logits(setting, run.run_dir / "model"), atol=1e-5)
    untrained = dev_logits(setting, setting["model"])
    assert np.abs(ours - untrained).max() > 1e-3  # training changed the model
    card = (export / "README.md").read_text()
    assert method in card and loss in card


def test_the_loss_is_the_srnet_loss_and_evaluation_reports_sparsity(setting, tmp_path):
    """PoE's training loss differs from cross-entropy on the same first batch; evaluation
    freezes the masks and reports their sparsity."""
    first = {}
    for loss in ("ce", "poe"):
        trainer = make_trainer(setting, tmp_path / loss, {"method": "omp", "sparsity": 0.5}, loss,
                               max_steps=1, logging_steps=1)
        trainer.train()
        first[loss] = trainer.state.log_history[0]["loss"]
        metrics = trainer.evaluate()
        assert metrics["eval_sparsity"] == pytest.approx(0.5, abs=1e-3)
    assert abs(first["ce"] - first["poe"]) > 1e-3


@pytest.mark.parametrize(("pruning", "expected"), [
    ({"method": "mask_train", "params": {"mask_lr": 0.05}}, {"mask_lr": 0.05}),  # the weights frozen
    ({"method": "l0", "params": {"mask_lr": 0.05, "train_weights": True}},
     {"learning_rate": 1e-3, "mask_lr": 0.05}),
])
def test_the_log_names_the_mask_lr_apart_from_the_weights_lr(setting, tmp_path, pruning, expected):
    """The Trainer logs its first group's lr as ``learning_rate``; the mask's is ``mask_lr``."""
    trainer = make_trainer(setting, tmp_path, {**pruning, "sparsity": 0.5}, max_steps=2, logging_steps=1,
                           lr_scheduler_type="constant")
    trainer.train()
    logged = trainer.state.log_history[0]
    assert {k: v for k, v in logged.items() if k in ("learning_rate", "mask_lr")} == expected


def test_checkpoints_are_plain_models_and_resume_restores_the_masks(setting, tmp_path):
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    whole = make_trainer(setting, tmp_path / "whole", pruning, "poe", save_strategy="steps", save_steps=5)
    whole.train()
    checkpoint = tmp_path / "whole" / "checkpoint-5"
    saved, meta = load_masks(checkpoint / "masks.safetensors")
    assert meta.method == "mask_train" and meta.target_sparsity == 0.5
    plain = AutoModelForSequenceClassification.from_pretrained(checkpoint)  # masks baked in
    weight = plain.bert.encoder.layer[0].attention.self.query.weight
    assert torch.equal(weight == 0, ~saved["bert.encoder.layer.0.attention.self.query"])

    resumed = make_trainer(setting, tmp_path / "resumed", pruning, "poe", save_strategy="steps", save_steps=5)
    resumed.train(resume_from_checkpoint=str(checkpoint))
    for name, mask in whole.masks().items():
        assert torch.equal(mask, resumed.masks()[name]), name
    a = resumed.export(tmp_path / "a")
    b = whole.export(tmp_path / "b")
    np.testing.assert_allclose(dev_logits(setting, a), dev_logits(setting, b), atol=1e-6)


def test_resuming_a_checkpoint_of_another_sparsity_is_one_line(setting, tmp_path):
    """A checkpoint trained to 70% resumed by a trainer set to 50% would carry its recorded masks on
    at 70%: refused in one line naming both sparsities and the checkpoint, before any step."""
    pruning = {"method": "mask_train", "sparsity": 0.7, "params": {"mask_lr": 0.05}}
    make_trainer(setting, tmp_path / "seventy", pruning, max_steps=2, save_strategy="steps",
                 save_steps=2).train()
    checkpoint = tmp_path / "seventy" / "checkpoint-2"
    half = make_trainer(setting, tmp_path / "half", {**pruning, "sparsity": 0.5}, max_steps=4)
    refused = (rf"^{checkpoint}: checkpoint trained at sparsity 0\.7, this trainer's pruning has sparsity "
               r"0\.5; resume with the same sparsity \(or start over\)$")
    with pytest.raises(SrnetError, match=refused):
        half.train(resume_from_checkpoint=str(checkpoint))
    assert half.state.global_step == 0


def test_an_interrupted_checkpoint_is_refused_not_resumed_without_its_masks(setting, tmp_path):
    """srnet's checkpoint files are atomic and the state comes last: a save that fails midway
    leaves no state file and no temporary file, and resuming from that folder is one line."""
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    trainer = make_trainer(setting, tmp_path / "run", pruning, "poe", max_steps=2)
    trainer.train()

    def broken():
        raise RuntimeError("disk gone")

    trainer.method.state_dict = broken
    with pytest.raises(RuntimeError):
        trainer.save_model(str(tmp_path / "cut"))
    left = sorted(p.name for p in (tmp_path / "cut").iterdir())
    assert "srnet_state.safetensors" not in left and not [n for n in left if n.endswith(".tmp")], left
    (tmp_path / "cut" / "masks.safetensors").write_bytes(b"")  # as if killed after the masks
    again = make_trainer(setting, tmp_path / "again", pruning, "poe", max_steps=2)
    with pytest.raises(SrnetError, match=r"an interrupted SrnetTrainer checkpoint .* cannot be restored"):
        again.train(resume_from_checkpoint=str(tmp_path / "cut"))


def test_gradient_accumulation_and_bf16_keep_their_meaning(setting, tmp_path):
    """Two micro-batches of 24 make one optimizer step (the method's schedule counts optimizer
    steps, not micro-batches): the full batch's masks; bf16 autocast trains to the exact target."""
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    full = make_trainer(setting, tmp_path / "full", pruning, "poe")
    full.train()
    accumulated = make_trainer(setting, tmp_path / "accum", pruning, "poe", per_device_train_batch_size=24,
                               gradient_accumulation_steps=2)
    accumulated.train()
    agree = [float((full.masks()[n] == m).float().mean()) for n, m in accumulated.masks().items()]
    assert min(agree) > 0.99
    half = make_trainer(setting, tmp_path / "bf16", pruning, "poe", bf16=True, max_steps=3)
    half.train()
    assert all(int((~m).sum()) == m.numel() // 2 for m in half.masks().values())


def test_a_mask_that_did_not_move_is_reported_in_one_warning(setting, tmp_path, caplog):
    still = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 1e-9}}
    trainer = make_trainer(setting, tmp_path / "still", still, "poe")
    with caplog.at_level("WARNING", logger="srnet.trainer"):
        metrics = trainer.train().metrics
    assert metrics["mask_flipped"] < 0.01
    assert any("the mask did not move" in r.getMessage() for r in caplog.records)


def test_load_best_model_at_end_restores_that_checkpoints_masks(setting, tmp_path):
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    trainer = make_trainer(setting, tmp_path / "best", pruning, "poe", save_strategy="steps", save_steps=5,
                           eval_strategy="steps", eval_steps=5, load_best_model_at_end=True,
                           metric_for_best_model="loss", greater_is_better=False)
    trainer.train()
    best, _ = load_masks(f"{trainer.state.best_model_checkpoint}/masks.safetensors")
    for name, mask in trainer.masks().items():
        assert torch.equal(mask, best[name]), name


class _DropState(TrainerCallback):
    """Deletes srnet's state from every checkpoint as it is saved (a plain or damaged checkpoint)."""

    def on_save(self, args, state, control, **kwargs):
        (Path(args.output_dir) / f"checkpoint-{state.global_step}" / "srnet_state.safetensors").unlink()
        return control


def test_load_best_model_at_end_refuses_a_best_checkpoint_without_its_masks(setting, tmp_path):
    """The Trainer's fallback once loaded the baked weights into the masked model with a
    warning and kept the last step's masks."""
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    trainer = make_trainer(setting, tmp_path / "best", pruning, "poe", save_strategy="steps", save_steps=5,
                           eval_strategy="steps", eval_steps=5, load_best_model_at_end=True,
                           metric_for_best_model="loss", greater_is_better=False, callbacks=[_DropState()])
    with pytest.raises(SrnetError, match=r"checkpoint-\d+: an interrupted SrnetTrainer checkpoint"):
        trainer.train()


def test_a_plain_checkpoint_is_refused_for_masks_and_loads_for_dense_training(setting, tmp_path):
    """resume_from_checkpoint= of a checkpoint without srnet's files: one line when the trainer
    masks (even on its second train(), masks attached), the Trainer's own loading when it is dense."""
    dense = make_trainer(setting, tmp_path / "dense", None, max_steps=2, save_strategy="steps", save_steps=2)
    dense.train()
    plain = tmp_path / "dense" / "checkpoint-2"
    assert not (plain / "srnet_state.safetensors").exists()
    make_trainer(setting, tmp_path / "dense2", None, max_steps=3).train(resume_from_checkpoint=str(plain))
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    masked = make_trainer(setting, tmp_path / "masked", pruning, "poe", max_steps=2)
    masked.train()  # masks attached: the Trainer's loading would put the baked weights under them
    with pytest.raises(SrnetError, match=r"checkpoint-2: no srnet_state.safetensors, so the masks of pruning "
                                         r"'mask_train' cannot be restored"):
        masked.train(resume_from_checkpoint=str(plain))
    fresh = make_trainer(setting, tmp_path / "fresh", pruning, "poe", max_steps=2)
    with pytest.raises(SrnetError, match="so the masks of pruning 'mask_train' cannot be restored"):
        fresh.train(resume_from_checkpoint=str(plain))


def test_masking_a_model_loaded_from_a_checkpoint_is_refused_unless_resumed(setting, tmp_path):
    """from_pretrained of an SrnetTrainer checkpoint gives its baked weights, not its masks: masking
    it anew is one line; resuming from that checkpoint restores the masks exactly."""
    pruning = {"method": "mask_train", "sparsity": 0.5, "params": {"mask_lr": 0.05}}
    first = make_trainer(setting, tmp_path / "first", pruning, "poe", max_steps=2, save_strategy="steps",
                         save_steps=2)
    first.train()
    checkpoint = tmp_path / "first" / "checkpoint-2"
    baked = AutoModelForSequenceClassification.from_pretrained(checkpoint)
    again = make_trainer(setting, tmp_path / "again", pruning, "poe", model=baked, max_steps=3)
    with pytest.raises(SrnetError, match=r"checkpoint-2: an SrnetTrainer checkpoint, its masks baked into "
                                         r"the weights; train\(resume_from_checkpoint="):
        again.train()
    resumed = make_trainer(setting, tmp_path / "resumed", pruning, "poe", max_steps=2,
                           model=AutoModelForSequenceClassification.from_pretrained(checkpoint))
    resumed.train(resume_from_checkpoint=str(checkpoint))
    for name, mask in first.masks().items():
        assert torch.equal(mask, resumed.masks()[name]), name
    dense = make_trainer(setting, tmp_path / "dense", None, max_steps=1,
                         model=AutoModelForSequenceClassification.from_pretrained(checkpoint))
    dense.train()  # dense fine-tuning of the baked subnetwork: no masks to restore


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: {"pruning": {"method": "omp", "sparsity": 1.5}}, "pruning: sparsity"),
    (lambda s: {"pruning": {"method": "nope"}}, "nope"),
    (lambda s: {"train": encoded(s["tokenizer"], s["train"], ids=False)}, "needs a 'id' column"),
    (lambda s: {"train": encoded(s["tokenizer"], generate_synthetic("train", N_TRAIN + 4, seed=0))},
     "synthetic-train"),
    (lambda s: {"bias_predictions": None}, "needs loss={'bias_predictions': ...}"),
    (lambda s: {"model": tiny_classifier("albert", embedding_size=16, inner_group_num=2)},
     "cannot be masked in full"),
    (lambda s: {"optimizers": (torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1), None)},
     "drop optimizers="),
    (lambda s: {"label_smoothing_factor": 0.1}, "label_smoothing_factor"),
])
def test_bad_input_fails_in_one_line_before_training(setting, tmp_path, change, message):
    settings = {"pruning": {"method": "mask_train", "sparsity": 0.5}, "loss": "poe", **change(setting)}
    with pytest.raises(SrnetError) as caught:
        make_trainer(setting, tmp_path / "bad", **settings)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "bad").exists()


def test_the_loss_is_the_recipe_s_section_and_the_old_keywords_warn_once(setting, tmp_path, monkeypatch):
    """``loss=`` takes a name, the recipe's loss section or a LossConfig; the six keywords it
    replaces still work, each warning once per process, and give the same loss and extras; a
    deprecated keyword beside a section is one line, before any output folder."""
    import srnet.integrations.transformers as integration

    monkeypatch.setattr(integration, "_WARNED", set())
    section = make_trainer(setting, tmp_path / "a", "dense", LossConfig(name="poe", params={"anneal": True},
                                                                        bias_predictions=str(setting["bias"])))
    with pytest.warns(FutureWarning) as caught:
        old = make_trainer(setting, tmp_path / "b", "dense", "poe", bias_predictions=setting["bias"],
                           loss_params={"anneal": True})
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in caught) == ["bias_predictions",
                                                                                  "loss_params"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second use does not warn again
        make_trainer(setting, tmp_path / "c", "dense", "poe", bias_predictions=setting["bias"],
                     loss_params={"anneal": True})
    assert section.loss_config == old.loss_config and section.srnet_loss.params.anneal
    assert section._extras.keys() == old._extras.keys() == {"bias_log_probs"}
    for key, rows in section._extras.items():
        assert all(np.array_equal(rows[i], old._extras[key][i]) for i in rows)
    with pytest.raises(SrnetError, match=r"^SrnetTrainer: teacher= and loss=dict both set the loss; give "
                                         r"teacher inside loss= only$"):
        make_trainer(setting, tmp_path / "bad", "dense", {"name": "ce"}, teacher="t.jsonl")
    assert not (tmp_path / "bad").exists()


def test_export_takes_the_export_verb_s_config(setting, tmp_path):
    trainer = make_trainer(setting, tmp_path / "hf", {"method": "omp", "sparsity": 0.5,
                                                      "granularity": "head+neuron"}, max_steps=1)
    trainer.train()
    export = trainer.export(tmp_path / "export", ExportConfig(shrink=True))
    assert (export / "modeling_srnet.py").is_file()  # shrunk
    with pytest.raises(SrnetError, match="--quantize int8 quantizes the ONNX graph: add --onnx"):
        trainer.export(tmp_path / "export2", quantize="int8")


def test_the_example_script_runs_offline(setting, tmp_path):
    """examples/trainer_poe.py end to end on the tiny model (a smoke-sized schedule)."""
    script = Path(__file__).resolve().parents[2] / "examples" / "trainer_poe.py"
    done = subprocess.run([sys.executable, str(script), "--model", str(setting["model"]), "--n-train", "64",
                           "--epochs", "0.1", "--out", str(tmp_path / "example")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "50% PoE subnetwork" in done.stdout
    exported = AutoModelForSequenceClassification.from_pretrained(tmp_path / "example" / "subnetwork")
    weight = exported.bert.encoder.layer[0].output.dense.weight
    assert (weight == 0).float().mean().item() == pytest.approx(0.5, abs=1e-3)


def test_a_collapsed_evaluation_is_one_warning_line(setting, tmp_path, caplog):
    model = AutoModelForSequenceClassification.from_pretrained(setting["model"])
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([100.0, 0.0, 0.0]))  # every prediction: entailment
    trainer = make_trainer(setting, tmp_path / "lost", {"method": "omp", "sparsity": 0.5}, model=model)
    with caplog.at_level("WARNING", logger="srnet.trainer"):
        trainer.evaluate()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("COLLAPSED: ")]
    assert lines == ["COLLAPSED: SrnetTrainer puts 100% of its eval predictions in one class (LABEL_0): "
                     "its accuracy there is no robustness"]
    spread = np.eye(3)[[0, 1, 2] * 7 + [0] * 3]  # 10 of 24 in the largest class: no line
    assert collapse_line(spread, "eval", {}) is None
    assert collapse_line((np.eye(3)[[2] * 19 + [0]], None), "dev", {2: "c"}).startswith(
        "COLLAPSED: SrnetTrainer puts 95% of its dev predictions in one class (c)")
