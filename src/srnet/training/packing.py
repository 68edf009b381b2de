"""Raw text -> fixed-length token blocks (BERT pre-training style), with held-out dev blocks.

Documents are tokenised without special tokens and concatenated with the separator token
between them; the stream is cut into blocks of ``block_size - 2`` tokens, each wrapped as
``[CLS] ... [SEP]`` (the tokenizer's own special tokens), so every block is exactly
``block_size`` long and has no padding.  The tail shorter than one block is dropped.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from srnet.errors import SrnetError


def pack_blocks(texts: list[str], tokenizer, block_size: int, source: str = "corpus") -> torch.Tensor:
    """Token blocks ``[N, block_size]`` (long) of ``texts``; ``SrnetError`` when not one block fits."""
    if block_size < 8:
        raise SrnetError(f"block size must be at least 8 tokens, got {block_size}")
    if not texts:
        raise SrnetError(f"{source}: empty corpus")
    sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    cls = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    if sep is None or cls is None:
        raise SrnetError("packing text needs a tokenizer with separator and start tokens ([SEP], [CLS])")
    ids = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
    stream = np.fromiter(
        (t for doc in ids for t in (*doc, sep)), dtype=np.int64, count=sum(len(d) + 1 for d in ids)
    )
    body = block_size - 2
    n = len(stream) // body
    if n == 0:
        raise SrnetError(
            f"{source}: the corpus has {len(stream)} tokens, shorter than one block of {block_size}"
        )
    blocks = stream[: n * body].reshape(n, body)
    column = np.full((n, 1), 0, dtype=np.int64)
    return torch.from_numpy(np.hstack([column + cls, blocks, column + sep]))


def hold_out(blocks: torch.Tensor, fraction: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, dev) blocks: a seeded ``fraction`` of the blocks (at least one) held out as dev."""
    if len(blocks) < 2:
        raise SrnetError(
            f"the corpus packs into {len(blocks)} block; holding out dev blocks needs at least 2 "
            f"(give data.dev or more text)"
        )
    n_dev = min(len(blocks) - 1, max(1, round(fraction * len(blocks))))
    order = torch.randperm(len(blocks), generator=torch.Generator().manual_seed(seed))
    return blocks[order[n_dev:].sort().values], blocks[order[:n_dev].sort().values]


class TextBlocks(Dataset):
    """Packed blocks as training items (``input_ids``, ``attention_mask``, ``index``; no label)."""

    def __init__(self, blocks: torch.Tensor) -> None:
        self.blocks = blocks
        self.extras: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, index: int) -> dict:
        ids = self.blocks[index].tolist()
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "index": index}

    @property
    def lengths(self) -> list[int]:
        return [self.blocks.shape[1]] * len(self.blocks)
