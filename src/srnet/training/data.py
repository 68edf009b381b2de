"""Tokenised examples, length-grouped batches and a padding collator that carries loss extras."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from srnet.tasks.base import Example


class EncodedDataset(Dataset):
    """Examples tokenised once; item ``i`` is a dict of token lists plus ``index`` and ``labels``.

    ``extras`` holds per-example arrays aligned with ``examples`` (e.g. ``bias_log_probs``
    [N, C], ``teacher_probs`` [N, C], ``difficulty`` [N]) that the collator batches.
    """

    def __init__(
        self,
        examples: Sequence[Example],
        tokenizer,
        max_length: int,
        extras: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.examples = list(examples)
        first = [ex.text_a for ex in self.examples]
        pairs = [ex.text_b for ex in self.examples]
        if any(p is None for p in pairs):
            encoded = tokenizer(first, truncation=True, max_length=max_length)
        else:
            encoded = tokenizer(first, pairs, truncation="longest_first", max_length=max_length)
        self.features = [
            {key: encoded[key][i] for key in encoded} for i in range(len(self.examples))
        ]
        self.extras = {k: np.asarray(v) for k, v in (extras or {}).items()}
        for key, value in self.extras.items():
            if len(value) != len(self.examples):
                raise ValueError(f"extra '{key}' has {len(value)} rows for {len(self.examples)} examples")

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict:
        item = dict(self.features[index])
        item["labels"] = self.examples[index].label
        item["index"] = index
        return item

    @property
    def lengths(self) -> list[int]:
        return [len(f["input_ids"]) for f in self.features]


class LengthGroupedBatchSampler(Sampler[list[int]]):
    """Shuffled batches of similar length: shuffle, cut into mega-batches, sort each by length.

    Deterministic for a given ``seed`` and epoch (``set_epoch``), so a resumed run sees the
    same batches.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, seed: int, group_by_length: bool = True,
        mega_factor: int = 50,
    ) -> None:
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.seed = seed
        self.group_by_length = group_by_length
        self.mega = batch_size * mega_factor
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.lengths))
        if self.group_by_length:
            chunks = [order[i : i + self.mega] for i in range(0, len(order), self.mega)]
            order = np.concatenate(
                [c[np.argsort(-self.lengths[c], kind="stable")] for c in chunks]
            )
        batches = [order[i : i + self.batch_size].tolist() for i in range(0, len(order), self.batch_size)]
        if self.group_by_length:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        yield from batches


class Collator:
    """Pad token lists to the longest in the batch and stack the labels (when items have them) and
    the loss extras."""

    def __init__(self, tokenizer, extras: dict[str, np.ndarray] | None = None) -> None:
        self.pad_id = tokenizer.pad_token_id or 0
        self.extras = extras or {}

    def __call__(self, items: list[dict]) -> dict[str, torch.Tensor]:
        longest = max(len(it["input_ids"]) for it in items)
        batch: dict[str, torch.Tensor] = {}
        for key in items[0]:
            if key in ("labels", "index"):
                continue
            pad = self.pad_id if key == "input_ids" else 0
            batch[key] = torch.tensor(
                [it[key] + [pad] * (longest - len(it[key])) for it in items], dtype=torch.long
            )
        if "labels" in items[0]:  # packed text blocks have none
            batch["labels"] = torch.tensor([it["labels"] for it in items], dtype=torch.long)
        index = np.array([it["index"] for it in items])
        batch["index"] = torch.from_numpy(index)
        for key, values in self.extras.items():
            batch[key] = torch.as_tensor(values[index], dtype=torch.float32)
        return batch


MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_inputs(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tokenizer outputs in ``batch`` that ``model.forward`` accepts (DistilBERT has no token types)."""
    accepted = inspect.signature(model.forward).parameters
    return {k: v for k, v in batch.items() if k in MODEL_INPUTS and k in accepted}
