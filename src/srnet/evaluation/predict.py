"""Run a classifier over examples and turn its logits into per-split metrics and prediction files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from scipy.special import softmax as scipy_softmax
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from srnet.bias.predictions import load_bias_log_probs
from srnet.io import atomic_write_jsonl
from srnet.tasks.base import Example, LabelSpace
from srnet.training.data import Collator, EncodedDataset, model_inputs


@torch.no_grad()
def predict_logits(
    model: torch.nn.Module,
    tokenizer,
    examples: Sequence[Example],
    *,
    max_length: int,
    batch_size: int = 128,
    device: torch.device | None = None,
    desc: str | None = None,
) -> np.ndarray:
    """Logits [N, C] in the order of ``examples``; batches sorted by length for speed."""
    dataset = EncodedDataset(examples, tokenizer, max_length)
    order = np.argsort(-np.asarray(dataset.lengths), kind="stable")
    batches = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    loader = DataLoader(dataset, batch_sampler=batches, collate_fn=Collator(tokenizer))
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = np.zeros((len(dataset), model.config.num_labels), dtype=np.float32)
    for batch in tqdm(loader, desc=desc or "predict", leave=False, disable=desc is None):
        inputs = {k: v.to(device) for k, v in model_inputs(model, batch).items()}
        logits = model(**inputs).logits.float().cpu().numpy()
        out[batch["index"].numpy()] = logits
    model.train(was_training)
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64."""
    return scipy_softmax(logits.astype(np.float64), axis=1)


def hard_examples(
    bias_file: Path, ids: Sequence[str], gold: Sequence[int], labels: Sequence[str]
) -> np.ndarray:
    """Which examples are hard (Gururangan et al. 2018; RMC paper §4): the bias model's argmax in
    ``bias_file`` is not the gold label (``gold``: indices into the task's ``labels``).

    Ties in the bias model's log-probabilities go to the first class, as ``argmax`` does.
    """
    log_probs = load_bias_log_probs(bias_file, ids, len(labels), labels=labels)
    return log_probs.argmax(axis=1) != np.asarray(gold)


def write_predictions(
    path: Path,
    examples: Sequence[Example],
    logits: np.ndarray,
    preds: np.ndarray,
    space: LabelSpace,
    *,
    hard: np.ndarray | None = None,
) -> None:
    """Per-example predictions as JSON Lines: id, gold and pred (in the split's labels), probs
    (over the model's classes, in the task's label order) and, when ``hard`` is given (an ID split
    with bias predictions, :func:`hard_examples`), whether the example is hard."""
    probs = softmax(logits)
    flags = [None] * len(examples) if hard is None else [bool(h) for h in hard]
    atomic_write_jsonl(
        path,
        (
            {"id": ex.id, "gold": space.names[ex.label], "pred": space.names[int(p)],
             "probs": [round(float(x), 6) for x in row], **({} if flag is None else {"hard": flag})}
            for ex, p, row, flag in zip(examples, preds, probs, flags, strict=True)
        ),
    )
