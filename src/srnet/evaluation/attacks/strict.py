"""``strict_synonym``: a word-substitution attack whose successes a reader accepts
(docs/studies/strict_attack_cpu.md).

TextFooler's substitutes are near in an embedding and often not synonyms (lazy -> crazy, waste ->
shovel, lacks -> demonstrates).  Here a substitute must be a WordNet synonym *in the word's own
sense* (the sense whose gloss is closest to the context; an adjective's similar-to cluster too),
also near in srnet's counter-fitted space, and pass per-swap checks (:meth:`StrictSynonym.rejection`):
polarity kept in VADER and in SST-2 log-odds, a familiar word not much rarer than the original, no
negators, degree adverbs, stop words, names or numbers, no opposite or negated form (un-, in-,
dis-, -less), the tags around it unchanged.  At most ``max_words`` words change (per-swap validity
compounds), found by word importance and a beam.  A success must also convince an independent
label judge (:mod:`srnet.evaluation.attacks.resources.judge`) that the gold label still holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationError, field_validator

from srnet.errors import SrnetError
from srnet.evaluation.attacks.base import Candidate, register_attack
from srnet.evaluation.attacks.resources.counterfit import CounterFitSettings, load_counterfitted
from srnet.evaluation.attacks.resources.inflection import inflections, lemma, lemminflect
from srnet.evaluation.attacks.resources.judge import LabelJudge, cached_judge, load_judge
from srnet.evaluation.attacks.resources.lexicon import zipf
from srnet.evaluation.attacks.resources.polarity import Polarity, load_polarity
from srnet.evaluation.attacks.resources.pos import penn_tags, tagger, wordnet_pos
from srnet.evaluation.attacks.resources.similarity import sentence_encoder
from srnet.evaluation.attacks.resources.text import Words, editable, match_case
from srnet.evaluation.attacks.resources.wordnet import WORD, load_wordnet, wordnet_record
from srnet.evaluation.attacks.swap_settings import SwapSettings, with_default
from srnet.evaluation.attacks.victim import Pair
from srnet.evaluation.attacks.wordswap import LIGHT_VERBS, WordSwap
from srnet.tasks.base import Example
from srnet.tasks.spec import Task

NEGATORS = frozenset(
    [
        "not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "nowhere", "without", "hardly",
        "barely", "scarcely", "seldom", "rarely", "lack", "lacks", "lacking", "lacked", "fail", "fails",
        "failed", "failing", "cannot",
    ]
)
"""Words whose swap can reverse a sentence's meaning; never swapped (nor swapped in)."""
DEGREE_ADVERBS = frozenset(
    [
        "very", "really", "extremely", "quite", "rather", "too", "so", "pretty", "fairly", "highly",
        "totally", "completely", "absolutely", "utterly", "incredibly", "remarkably", "especially",
        "particularly", "somewhat", "slightly", "almost", "nearly", "entirely", "deeply", "truly",
        "terribly", "awfully", "overly", "most", "least", "more", "less", "enough", "largely", "mostly",
        "mainly", "merely", "simply", "just", "only", "even", "still", "already", "exceptionally",
        "extraordinarily", "unusually", "hugely", "enormously", "immensely", "thoroughly", "genuinely",
        "downright", "altogether", "fully", "wholly", "partly", "partially", "barely", "hardly",
    ]
)
"""Intensifiers and degree words: swapping them changes how much (very -> rather, extraordinarily ->
overly), which changes a sentiment's strength; never swapped."""
UNITS = frozenset(
    [
        "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month",
        "months", "year", "years", "decade", "decades", "century", "centuries", "moment", "moments",
        "inch", "inches", "foot", "feet", "mile", "miles", "pound", "pounds", "dollar", "dollars",
    ]
)
"""Units of time, length, weight and money: WordNet puts some in one synset (minute = second, a
moment), but swapping them changes a fact ("the longest 90 minutes" -> "seconds"); never swapped."""
AUXILIARIES = frozenset(
    ["do", "does", "did", "n't", "will", "would", "can", "could", "may", "might", "must", "shall", "should"]
)
"""After these a word is a verb's base form: a noun or adjective tag there is a tagging error (does
n't offer/NN -> offering), so the word is not swapped."""
COMPARATIVE_HEADS = frozenset(["more", "most", "less", "least"])
"""An adjective after these is never swapped: its synonym may compare another way ("more important"
-> "more great")."""
COUNTERFIT_K = 50
"""Counter-fitted neighbours looked at per word with ``source: counterfitted`` (TextFooler's 50)."""
NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "mis", "anti")
NEGATING_SUFFIXES = ("less",)


class StrictSynonymParams(SwapSettings):
    """Strict substitution: WordNet synonyms of the sense in context, near in the counter-fitted space,
    every per-swap check on, a small word budget, a beam, and an independent label judge."""

    max_words: int = Field(
        2, ge=1, description="Most words changed per text (SST-2's sentences: per-swap validity compounds, "
        "so a third swap mostly adds invalid examples).",
    )
    beam: int = Field(3, ge=1, description="Partial perturbations kept between words (1: greedy).")
    candidate_senses: int | None = with_default(
        SwapSettings, "candidate_senses", 2, description="A synonym is kept only when the sense it shares "
        "with the word is among its own N most frequent senses (null: any).")
    sense_in_context: bool = with_default(
        SwapSettings, "sense_in_context", True, description="Synonyms of the word's sense closest to its "
        "window only (an embedding Lesk); false: of every sense of the word, the contextual word "
        "similarity then judging the sense.")
    source: Literal["wordnet", "counterfitted"] = Field(
        "wordnet", description="Where substitutes come from: 'wordnet' (synonyms of the word's sense, "
        "above) or 'counterfitted' (TextFooler's: the nearest words in srnet's counter-fitted space at "
        "cosine >= `counterfit_min_cos`, in the forms the space holds); every check below applies to both.",
    )
    max_candidates: int = with_default(
        SwapSettings, "max_candidates", 20, description="Most substitutes tried per word.")
    counterfit_min_cos: float = Field(
        0.45, ge=-1.0, le=1.0, description="Least cosine between the word and its substitute in srnet's "
        "counter-fitted space (both must be in it): the least with 95% precision on balanced WordNet "
        "synonym vs antonym pairs of SST-2 training words (benchmarks/calibrate_strict.py; unweighted, "
        "with WordNet's four antonym pairs per synonym pair, 0.8).",
    )
    min_zipf: float | None = with_default(
        SwapSettings, "min_zipf", 3.0, description="Least Zipf frequency of a substitute (a familiar "
        "word: nerve -> muddle 2.8, fiercely -> vociferously 2.3 rejected).")
    max_zipf_drop: float = Field(
        2.0, ge=0.0, description="A substitute at most this much rarer than the word on the Zipf scale "
        "(fun 5.3 -> looney 3.0 rejected).",
    )
    min_word_similarity: float | None = with_default(
        SwapSettings, "min_word_similarity", 0.5, description="Least cosine between the word's "
        "contextual embedding in place (mean of its pieces, `similarity_model`) before and after the swap: "
        "the sense check in context (its audit: docs/studies/strict_attack_cpu.md).")
    min_similarity: float = with_default(
        SwapSettings, "min_similarity", 0.9,
        description="Least window cosine between the original and the edited text.")
    context_tags: bool = Field(
        True, description="The re-tagged words either side of the edit keep their Penn tags (a swap that "
        "changes how its neighbours parse is ungrammatical or changes the meaning).",
    )
    polarity_data: str = Field(
        "sst2/train.jsonl", description="JSON lines {sentence, label} (label 1 positive) whose smoothed "
        "log-odds give each word's polarity, beside VADER's lexicon; relative to the data folder.",
    )
    lexicon: str | None = Field(
        None, description="A VADER-format valence lexicon (token TAB valence in [-4, 4] ...); default: the "
        "one vaderSentiment bundles.",
    )
    judge: str | None = Field(
        "default", description="The label judge: 'default' (a logistic regression on the bundled MiniLM's "
        "sentence embeddings, trained on `judge_data` once and cached), a path to a saved judge (.npz "
        "with its .json), or null: no judge (the validity of successes then is unchecked).",
    )
    judge_data: str = Field(
        "sst2/train.jsonl", description="The default judge's training split (the attacked task's format), "
        "relative to the data folder.",
    )
    judge_min_prob: float = Field(
        0.5, gt=0.0, lt=1.0, description="When the judge gives the original at least this gold probability, "
        "a success must keep it at least this high (0.5: the judge keeps the gold label).",
    )
    judge_max_drop: float = Field(
        0.15, ge=0.0, le=1.0, description="A success's judge gold probability at most this much below the "
        "original's (the judge is not moved towards another label, whether or not it was right).",
    )

    @field_validator("judge")
    @classmethod
    def _judge_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("empty; give 'default', the path of a saved judge (.npz) or null (no judge)")
        return value


@register_attack("strict_synonym")
class StrictSynonym(WordSwap):
    """Strict synonyms in the word's sense, per-swap checks, a beam over 2 words, a label judge."""

    params_model = StrictSynonymParams
    params: StrictSynonymParams

    def __init__(self, params: StrictSynonymParams | None = None, **resources: Any) -> None:
        super().__init__(params, **resources)
        self.polarity: Polarity | None = None
        self.judge: LabelJudge | None = None
        self.judged_originals: list[bool] = []
        self.flips_rejected = 0

    def budget(self, words: int) -> int:
        return self.params.max_words

    def beam_width(self) -> int:
        return self.params.beam

    def ready(self, task: Task, data_dir: Path | None) -> None:
        """The polarity tables and the label judge (the default one built on first use from
        ``judge_data`` read as ``task``'s data), checked against ``task``'s labels."""
        p = self.params
        base = data_dir or Path.cwd()
        lexicon = Path(p.lexicon) if p.lexicon is not None else None
        self.polarity = load_polarity(_under(base, p.polarity_data), lexicon)
        if p.judge is None:
            return
        if p.judge == "default":
            source = _under(base, p.judge_data)
            self.judge = cached_judge(source, lambda: _single_texts(task, source), task.labels,
                                      p.similarity_model)
        else:
            self.judge = load_judge(Path(p.judge))
        self.judge.check_labels(task.labels)

    def prepare(self, model: Any, tokenizer: Any) -> None:
        """The tagger, inflections, WordNet, the counter-fitted space and the sentence encoder."""
        p = self.params
        if self.polarity is None:
            raise RuntimeError("strict_synonym: call ready(task, data_dir) before prepare")
        tagger(p.tagger)
        lemminflect()
        self.wordnet = load_wordnet()
        self.space = load_counterfitted(self.wordnet, CounterFitSettings(vocab_size=p.counterfit_vocab))
        if self.encoder is None:
            self.encoder = sentence_encoder(p.similarity_model, p.similarity_precision)

    def resources(self) -> dict[str, Any]:
        out = super().resources()
        assert self.polarity is not None
        out["polarity"] = self.polarity.record
        out["counterfitted"] = self.space.record if self.space is not None else None
        out["wordnet"] = wordnet_record()
        if self.judge is not None:
            out["judge"] = {k: v for k, v in self.judge.record.items() if k != "labels"}
        return out

    def report(self) -> dict[str, Any]:
        if self.judge is None:
            return {"validity": "unchecked: no label judge"}
        agreed = self.judged_originals
        return {"judge_agreement_on_originals": round(float(np.mean(agreed)), 4) if agreed else None,
                "judge_originals": len(agreed), "judge_rejected_flips": self.flips_rejected}

    def attack(self, victim, pair: Pair, gold: int, rng: np.random.Generator):
        outcome = super().attack(victim, pair, gold, rng)
        if self.judge is not None and outcome.result != "skipped":
            self.judged_originals.append(int(self.judge.probs([_field(pair)])[0].argmax()) == gold)
        return outcome

    def accept(self, original: Pair, edited: list[Pair], gold: int) -> list[bool]:
        """Successes whose judge gold probability is at most ``judge_max_drop`` below the original's and,
        when the original's is at least ``judge_min_prob``, stays at least that."""
        if self.judge is None:
            return [True] * len(edited)
        p = self.params
        probs = self.judge.probs([_field(original)] + [_field(e) for e in edited])[:, gold]
        confident = probs[0] >= p.judge_min_prob
        verdicts = [bool(probs[0] - q <= p.judge_max_drop and (q >= p.judge_min_prob or not confident))
                    for q in probs[1:]]
        self.flips_rejected += verdicts.count(False)
        return verdicts

    def candidates(
        self, original: Words, current: Words, index: int, rng: np.random.Generator
    ) -> list[Candidate]:
        if self.encoder is None or self.wordnet is None:
            raise RuntimeError("strict_synonym: call ready() and prepare() before attacking")
        p = self.params
        word, tag = current.words[index], penn_tags(current, p.tagger)[index]
        pos = wordnet_pos(tag)
        if tag is None or pos is None or self.word_rejection(word, pos) is not None:
            return []
        if p.sense_in_context and p.source == "wordnet":  # the Lesk sense (60% of the loop) only when it
            # can matter: its synonyms are a subset of every sense's, so when no edit with any sense's
            # synonym passes the checks, none would
            every = inflections(self._sense_synonyms(original, index, pos, every_sense=True), tag,
                                original.words[index].lower())
            if not self._passing_edits(current, index, pos, every):
                return []
        edited = self._passing_edits(current, index, pos, self._substitutes(original, index, pos, tag),
                                     p.max_candidates)
        if not edited:
            return []
        sims = self.similarities(original, edited, index)
        return [Candidate(e, s) for e, s in zip(edited, sims, strict=True) if s is not None]

    def _passing_edits(self, current: Words, index: int, pos: str, substitutes: list[str],
                       limit: int | None = None) -> list[Words]:
        """``current`` with word ``index`` swapped for each of the first ``limit`` (all when None)
        ``substitutes`` that pass the per-swap checks, kept where the grammar around it holds."""
        word = current.words[index]
        kept = [s for s in substitutes if self.rejection(word, s, pos) is None][:limit]
        edited = [current.replace(index, match_case(s, word)) for s in kept]
        return [e for e in edited if self.context_rejection(current, e, index) is None]

    def similarities(self, original: Words, edited: list[Words], index: int) -> list[float | None]:
        """Each edit's window similarity to ``original``, or None when it or the word's contextual
        similarity in place falls below its threshold (``min_similarity``, ``min_word_similarity``)."""
        assert self.encoder is not None
        p = self.params
        reference = original.window(index, p.window).text
        sims = self.encoder.similarity(reference, [e.window(index, p.window).text for e in edited])
        in_place = (self.encoder.word_similarity(original, edited, index) if p.min_word_similarity is not None
                    else [1.0] * len(edited))
        return [s if s >= p.min_similarity and w >= (p.min_word_similarity or 0.0) else None
                for s, w in zip(sims, in_place, strict=True)]

    def _substitutes(self, original: Words, index: int, pos: str, tag: str) -> list[str]:
        """The candidate source ``source`` names, in the word's form: WordNet synonyms of its sense, or
        its nearest words in the counter-fitted space (TextFooler's source; every check still applies)."""
        word = original.words[index].lower()
        if self.params.source == "counterfitted":
            assert self.space is not None
            return self.space.nearest(word, COUNTERFIT_K, self.params.counterfit_min_cos)
        return inflections(self._sense_synonyms(original, index, pos), tag, word)

    def _sense_synonyms(self, original: Words, index: int, pos: str, every_sense: bool = False) -> list[str]:
        """Single-word lemmas of the word's WordNet sense closest to its window (every sense with
        ``every_sense`` or without ``sense_in_context``; an adjective's similar-to synsets too), kept
        when that sense is among their own ``candidate_senses`` most frequent."""
        assert self.wordnet is not None
        own = lemma(original.words[index].lower(), pos) or original.words[index].lower()
        if self.params.sense_in_context and not every_sense:
            closest = self._closest_synset(original, index, pos)
            synsets = [] if closest is None else [closest]
        else:
            synsets = [self.wordnet.synset(pos, offset) for offset in self.wordnet.senses(own, pos)]
        if not synsets:
            return []
        if pos == "a":
            synsets += [self.wordnet.synset(q.pos, q.offset) for one in synsets for q in one.related("&")]
        offsets = [self.wordnet.senses(w.lower(), pos) for s in synsets for w in s.words]
        words = [w for s in synsets for w in s.words]
        keep = []
        for w, senses in zip(words, offsets, strict=True):
            mine = [o for o in senses if self.wordnet.synset(pos, o) in synsets]
            top = senses[: self.params.candidate_senses] if self.params.candidate_senses else senses
            if w.islower() and WORD.fullmatch(w) and w != own and any(o in top for o in mine):
                keep.append(w)
        return list(dict.fromkeys(keep))

    def word_rejection(self, word: str, pos: str) -> str | None:
        """Why ``word`` (tagged as ``pos``) is never swapped, or None."""
        low = word.lower()
        if not editable(word):
            return "stop word"
        if low in NEGATORS:
            return "negator"
        if low in DEGREE_ADVERBS:
            return "degree adverb"
        if pos == "v" and lemma(low, "v") in LIGHT_VERBS:
            return "light verb"
        if self.params.max_word_zipf is not None and zipf(low) >= self.params.max_word_zipf:
            return "very frequent word"
        if low in UNITS:
            return "unit"
        if low == "worth":
            return "worth takes an object (worth caring about)"
        return None

    def rejection(self, word: str, substitute: str, pos: str) -> str | None:
        """Why swapping ``word`` for ``substitute`` (both as ``pos``) is rejected, or None: the per-swap
        checks the replay of hand-judged successes runs too."""
        assert self.wordnet is not None and self.space is not None and self.polarity is not None
        p = self.params
        a, b = word.lower(), substitute.lower()
        reason = self.word_rejection(word, pos)
        if reason is not None:
            return reason
        if not editable(b) or b in NEGATORS or b in DEGREE_ADVERBS:
            return "substitute is a stop word, negator or degree adverb"
        lemma_a, lemma_b = lemma(a, pos) or a, lemma(b, pos) or b
        if self.wordnet.opposed(lemma_a, lemma_b, pos) or _negated_form(lemma_a, lemma_b):
            return "opposite or negated form"
        if p.min_zipf is not None and zipf(b) < p.min_zipf:
            return "unfamiliar substitute"
        if zipf(b) < zipf(a) - p.max_zipf_drop:
            return "much rarer substitute"
        if not self.polarity.kept(a, b):
            return "polarity changes"
        cos = self.space.cosine(a, b)
        if cos is None or cos < p.counterfit_min_cos:
            return "far in the counter-fitted space"
        return None

    def audit(self, original: str, perturbed: str, gold: int) -> str | None:
        """The first of this attack's checks that a finished perturbation of ``original`` fails (the
        word budget, each swap's :meth:`rejection` and :meth:`context_rejection`, the judge), or None:
        how successes of other attacks are replayed and their validity estimated."""
        before, after = Words.split(original), Words.split(perturbed)
        if len(after.words) != len(before.words):
            return "words added or removed"
        changed = after.changed(before)
        if len(changed) > self.params.max_words:
            return f"budget ({len(changed)} words)"
        tags = penn_tags(before, self.params.tagger)
        current = before
        for index in changed:
            old, new = before.words[index], after.words[index]
            pos = wordnet_pos(tags[index])
            edited = current.replace(index, new)
            reason = (f"not a content word ({tags[index]})" if pos is None
                      else self.rejection(old, new, pos) or self.context_rejection(current, edited, index))
            if reason is None and self.similarities(before, [edited], index)[0] is None:
                reason = "context similarity"
            if reason is not None:
                return f"{reason}: {old} -> {new}"
            current = edited
        if not self.accept((original, None), [(perturbed, None)], gold)[0]:
            return "judge"
        return None

    def context_rejection(self, current: Words, edited: Words, index: int) -> str | None:
        """Why the edit breaks the grammar around it, or None: its tag (and with ``context_tags`` its
        neighbours'), a/an before it, a verb taking "to" (needs to -> requires to), an adjective after
        more/most/less."""
        before, after = penn_tags(current, self.params.tagger), penn_tags(edited, self.params.tagger)
        previous = current.words[index - 1].lower() if index > 0 else ""
        following = current.words[index + 1].lower() if index + 1 < len(current.words) else ""
        if previous in ("a", "an") and _starts_with_vowel(current.words[index]) != _starts_with_vowel(
                edited.words[index]):
            return "a/an no longer fits"
        if following == "to" and (before[index] or "").startswith("VB"):
            return "verb taking 'to'"
        if previous in COMPARATIVE_HEADS and (before[index] or "").startswith("JJ"):
            return "adjective in a comparison"
        if previous in AUXILIARIES and not (before[index] or "").startswith("VB"):
            return "not tagged as the verb the auxiliary needs"
        if after[index] != before[index]:
            return "tag changes"
        if self.params.context_tags:
            for j in (index - 1, index + 1):
                if 0 <= j < len(before) and before[j] != after[j]:
                    return "neighbour's tag changes"
        return None


def _negated_form(a: str, b: str) -> bool:
    """Whether one word is the other with a negating prefix or suffix (kind -> unkind, use -> useless)."""
    for x, y in ((a, b), (b, a)):
        if any(y == prefix + x or (y.startswith(prefix) and not x.startswith(prefix) and y[len(prefix):][:4]
                                   == x[:4]) for prefix in NEGATING_PREFIXES):
            return True
        if any(y.endswith(suffix) and not x.endswith(suffix) and y[: -len(suffix)][:3] == x[:3]
               for suffix in NEGATING_SUFFIXES):
            return True
    return False


def _starts_with_vowel(word: str) -> bool:
    """Whether ``word`` takes "an" (by its first letter: a spelling rule, not a sound rule)."""
    return word[:1].lower() in "aeiou"


def _field(pair: Pair) -> str:
    return pair[1] if pair[1] is not None else pair[0]


def _under(base: Path, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else base / candidate


def _single_texts(task: Task, source: Path) -> list[Example]:
    """``source`` read as ``task``'s data; one-line error when its examples are pairs."""
    from srnet.tasks import load_examples
    from srnet.tasks.spec import DataSpec

    try:
        spec = DataSpec(path=str(source))
    except ValidationError:  # a suffix that names no data format (e.g. .yaml)
        raise SrnetError(f"judge_data {source}: not a data file srnet reads by its suffix (give the "
                         "task's training split, e.g. .jsonl, .csv or .tsv)") from None
    examples = load_examples(task, spec)
    if any(ex.text_b is not None for ex in examples):
        raise SrnetError(f"judge data {source}: the label judge reads single texts; these are pairs "
                         "(pass --param judge=null: validity unchecked)")
    return examples
