"""Whole-layer removal: transformer blocks taken out of the encoder's stack (``model.drop_layers``).

The model left is an ordinary checkpoint of its family with fewer layers (``num_hidden_layers``,
DistilBERT's ``n_layers``, lowered; the blocks kept renumbered 0..L'-1): every later step (masks,
shrinking, ONNX, ``from_pretrained``) sees a shallower model of the same class.  Each remaining
block computes what it computed before; a removed block's input goes straight to the next one.
``config.srnet_dropped_layers`` records the original indices removed (composed across drops), so a
card can say which ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from torch import nn

from srnet.errors import SrnetError
from srnet.models.structure import encoder_blocks, family_of_model, model_family

DROPPED_KEY = "srnet_dropped_layers"
log = logging.getLogger(__name__)


def layer_count(model: nn.Module) -> int:
    """How many transformer blocks ``model`` has (0 when srnet finds none)."""
    return len(encoder_blocks(model))


def top_layers(count: int, drop: int) -> list[int]:
    """The ``drop`` blocks nearest the output of a ``count``-block stack (0-based)."""
    return list(range(count - drop, count))


def drop_layers(model: nn.Module, indices: Sequence[int]) -> nn.Module:
    """``model`` with the blocks at ``indices`` (0-based, of its current stack) removed, in place;
    one line when its family's blocks cannot be removed, an index is out of range, or none is left."""
    if not indices:
        return model
    family = family_of_model(model)
    blocks = encoder_blocks(model)
    where = f"model.drop_layers {list(indices)}"
    if family is None or family.depth_key is None or not blocks:
        raise SrnetError(
            f"{where}: a {model_family(model)} model's layers cannot be removed (its blocks depend on their "
            "index or are shared); drop none"
        )
    bad = [i for i in indices if not 0 <= i < len(blocks)]
    if bad or len(set(indices)) == len(blocks):
        reason = f"{bad[0]} is not a layer (0..{len(blocks) - 1})" if bad else "no layer would be left"
        raise SrnetError(f"{where}: {reason}")
    stack_path = blocks[0][0].rsplit(".", 1)[0]
    stack = model.get_submodule(stack_path)
    kept = [block for i, block in enumerate(stack) if i not in set(indices)]
    parent_path, _, attribute = stack_path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    setattr(parent, attribute, nn.ModuleList(kept))
    config = model.config
    before = sorted(getattr(config, DROPPED_KEY, None) or [])
    if before:  # e.g. a recipe that dropped layers, reused to evaluate the model it made
        log.warning("%s: this model already lacks layers %s of its original; removing %s of the %d it has",
                    where, before, list(indices), len(blocks))
    original = len(blocks) + len(before)
    still = [i for i in range(original) if i not in set(before)]
    setattr(config, DROPPED_KEY, sorted([*before, *(still[i] for i in set(indices))]))
    setattr(config, family.depth_key, len(kept))
    return model
