"""Synthetic controlled-bias NLI: a task whose shortcut strength is a parameter.

Premises are built from templates and the small lexicon below ("The doctor helped the artist
near the lake ."); each hypothesis comes from a *construction*, a rule that really determines
the label: dropping a modifier keeps an entailment, "never" or an antonym verb contradicts,
an added adverb or a swap of subject and object is neutral, synonyms keep the meaning with
few shared words.  Every construction has a fixed lexical-overlap class (the fraction of
hypothesis words that occur in the premise, see :func:`word_overlap`): *high* (>= 0.7) or
*low* (<= 0.6).

* **train / dev** (3-way, the task's labels): labels are balanced and ``bias_strength`` of the
  high-overlap pairs are entailment (an unbiased split has 1/3).  A model that learns
  "overlap => entailment" is right on most ID pairs.
* **challenge** (2-way entailment / non-entailment, like HANS; ``bias_strength`` unused):
  the shortcut is broken.  Heuristics ``lexical_overlap``, ``subsequence`` and ``constituent``
  pair high-overlap entailments with high-overlap non-entailments (subject/object swap, passive
  reversal, PP or relative clause on the subject, "if"/"perhaps"/"believed that" embeddings);
  heuristic ``synonym`` pairs low-overlap entailments (synonym substitution) with low-overlap
  non-entailments.  Each heuristic is half entailment; ``meta`` holds ``heuristic`` and
  ``subcase``.  The challenge constructions also occur, rarely, in the ID splits, so a model
  that reads the words can get them right.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from srnet.errors import SrnetError
from srnet.tasks.base import Example
from srnet.tasks.nli import HANS, HANS_LABELS, NLI_COLUMNS, NLI_LABELS
from srnet.tasks.spec import Task

NOUNS = (
    ("doctor", "physician"), ("artist", "painter"), ("lawyer", "attorney"),
    ("teacher", "instructor"), ("student", "pupil"), ("chef", "cook"), ("author", "writer"),
    ("singer", "vocalist"), ("soldier", "trooper"), ("sailor", "mariner"),
    ("judge", "magistrate"), ("banker", "financier"), ("child", "kid"),
    ("manager", "supervisor"), ("athlete", "sportsman"), ("scientist", "researcher"),
    ("senator", "legislator"), ("tourist", "traveler"), ("actor", "performer"),
    ("professor", "lecturer"),
)
"""(noun, synonym)."""

VERBS = (
    ("helped", "assisted", "hindered"), ("loved", "adored", "hated"),
    ("praised", "complimented", "criticized"), ("accepted", "welcomed", "rejected"),
    ("admired", "respected", "despised"), ("supported", "backed", "opposed"),
    ("attacked", "assaulted", "defended"), ("remembered", "recalled", "forgot"),
    ("encouraged", "motivated", "discouraged"), ("obeyed", "heeded", "defied"),
    ("protected", "guarded", "endangered"), ("greeted", "saluted", "ignored"),
)
"""(past tense = past participle, synonym, antonym) of transitive verbs."""

INTRANSITIVE = (
    "slept", "danced", "laughed", "smiled", "waited", "shouted", "arrived", "left", "ran",
    "cried", "sang", "waved",
)
ADJECTIVES = ("old", "young", "tall", "famous", "quiet", "clever", "busy", "polite")
STATES = ("tired", "hungry", "nervous", "cheerful", "worried", "sleepy")
PREPOSITIONS = ("near", "beside", "behind")
PLACES = ("lake", "park", "station", "library", "museum", "river", "market", "bridge", "garden")
NEW_ADVERBS = ("yesterday", "twice", "secretly", "quickly", "again", "recently")
SURE_ADVERBS = ("certainly", "clearly", "definitely", "undoubtedly")
UNSURE_ADVERBS = ("perhaps", "maybe", "probably", "supposedly")
ATTITUDES = ("believed", "hoped", "thought", "suspected", "claimed")

HIGH_OVERLAP = 0.7
"""High-overlap constructions have at least this overlap; low ones at most ``LOW_OVERLAP``."""
LOW_OVERLAP = 0.6
CHALLENGE_HEURISTICS = ("lexical_overlap", "subsequence", "constituent", "synonym")


@dataclass(frozen=True)
class _Scene:
    """The random words one example is built from."""

    s: str
    s_syn: str
    o: str
    o_syn: str
    o2: str
    v: str
    v_syn: str
    v_ant: str
    i: str
    i2: str
    adj: str
    state: str
    place: str
    pp: str
    adv: str
    sure: str
    unsure: str
    attitude: str

    @classmethod
    def draw(cls, rng: random.Random) -> _Scene:
        (s, syn_s), (o, syn_o), (o2, _) = rng.sample(NOUNS, 3)
        v, syn_v, ant = rng.choice(VERBS)
        i, i2 = rng.sample(INTRANSITIVE, 2)
        place = f"{rng.choice(PREPOSITIONS)} the {rng.choice(PLACES)}"
        return cls(
            s, syn_s, o, syn_o, o2, v, syn_v, ant, i, i2, rng.choice(ADJECTIVES), rng.choice(STATES),
            place, rng.choice(PREPOSITIONS), rng.choice(NEW_ADVERBS), rng.choice(SURE_ADVERBS),
            rng.choice(UNSURE_ADVERBS), rng.choice(ATTITUDES),
        )

    @property
    def clause(self) -> str:
        """The base transitive clause: the s v the o."""
        return f"the {self.s} {self.v} the {self.o}"


@dataclass(frozen=True)
class Construction:
    """A rule producing a (premise, hypothesis) pair whose NLI label it determines."""

    name: str
    label: str
    overlap: str
    heuristic: str | None
    """Challenge-split heuristic, or None for constructions only used in ID splits."""
    build: Callable[[_Scene], tuple[str, str]]


E, N, C = NLI_LABELS
CONSTRUCTIONS = (
    # entailment, high overlap
    Construction("le_drop_modifiers", E, "high", "lexical_overlap",
                 lambda x: (f"the {x.adj} {x.s} {x.v} the {x.o} {x.place}", x.clause)),
    Construction("le_relative_clause", E, "high", "lexical_overlap",
                 lambda x: (f"the {x.s} who {x.v} the {x.o} {x.i}", f"the {x.s} {x.i}")),
    Construction("le_passive", E, "high", "lexical_overlap",
                 lambda x: (x.clause, f"the {x.o} was {x.v} by the {x.s}")),
    Construction("se_drop_pp", E, "high", "subsequence",
                 lambda x: (f"{x.clause} {x.place}", x.clause)),
    Construction("se_conjunction", E, "high", "subsequence",
                 lambda x: (f"the {x.s} and the {x.o2} {x.v} the {x.o}", f"the {x.o2} {x.v} the {x.o}")),
    Construction("ce_adverb", E, "high", "constituent",
                 lambda x: (f"{x.sure} the {x.s} {x.i}", f"the {x.s} {x.i}")),
    Construction("ce_conjunction", E, "high", "constituent",
                 lambda x: (f"the {x.s} {x.i} , and the {x.o} {x.i2}", f"the {x.s} {x.i}")),
    # neutral, high overlap: the challenge's non-entailments, and two ID-only additions
    Construction("ln_subject/object_swap", N, "high", "lexical_overlap",
                 lambda x: (x.clause, f"the {x.o} {x.v} the {x.s}")),
    Construction("ln_passive_reversal", N, "high", "lexical_overlap",
                 lambda x: (x.clause, f"the {x.s} was {x.v} by the {x.o}")),
    Construction("sn_PP_on_subject", N, "high", "subsequence",
                 lambda x: (f"the {x.s} {x.pp} the {x.o} {x.i}", f"the {x.o} {x.i}")),
    Construction("sn_relative_clause_on_subject", N, "high", "subsequence",
                 lambda x: (f"the {x.s} who {x.v} the {x.o} {x.i}", f"the {x.o} {x.i}")),
    Construction("cn_embedded_under_if", N, "high", "constituent",
                 lambda x: (f"if the {x.s} {x.i} , the {x.o} {x.i2}", f"the {x.s} {x.i}")),
    Construction("cn_adverb", N, "high", "constituent",
                 lambda x: (f"{x.unsure} the {x.s} {x.i}", f"the {x.s} {x.i}")),
    Construction("cn_embedded_under_verb", N, "high", "constituent",
                 lambda x: (f"the {x.o} {x.attitude} that the {x.s} {x.i}", f"the {x.s} {x.i}")),
    Construction("n_added_modifier", N, "high", None,
                 lambda x: (x.clause, f"the {x.s} {x.v} the {x.adj} {x.o}")),
    Construction("n_added_adverb", N, "high", None,
                 lambda x: (x.clause, f"{x.clause} {x.adv}")),
    # contradiction, high overlap
    Construction("c_negation", C, "high", None,
                 lambda x: (f"{x.clause} {x.place}", f"the {x.s} never {x.v} the {x.o}")),
    Construction("c_antonym", C, "high", None,
                 lambda x: (x.clause, f"the {x.s} {x.v_ant} the {x.o}")),
    Construction("c_negated_premise", C, "high", None,
                 lambda x: (f"the {x.s} never {x.i}", f"the {x.s} {x.i}")),
    # low overlap: synonyms
    Construction("syn_substitution", E, "low", "synonym",
                 lambda x: (f"{x.clause} {x.place}", f"the {x.s_syn} {x.v_syn} the {x.o_syn}")),
    Construction("syn_partial", E, "low", "synonym",
                 lambda x: (x.clause, f"the {x.s_syn} {x.v_syn} the {x.o}")),
    Construction("syn_passive", E, "low", "synonym",
                 lambda x: (x.clause, f"the {x.o_syn} was {x.v_syn} by the {x.s_syn}")),
    Construction("syn_swap", N, "low", "synonym",
                 lambda x: (x.clause, f"the {x.o_syn} {x.v_syn} the {x.s_syn}")),
    Construction("syn_state", N, "low", None,
                 lambda x: (x.clause, f"the {x.o_syn} was {x.state}")),
    Construction("syn_adverb", N, "low", None,
                 lambda x: (x.clause, f"the {x.s_syn} {x.v_syn} the {x.o_syn} {x.adv}")),
    Construction("syn_negation", C, "low", "synonym",
                 lambda x: (f"{x.clause} {x.place}", f"the {x.s_syn} never {x.v_syn} the {x.o_syn}")),
    Construction("syn_antonym", C, "low", None,
                 lambda x: (x.clause, f"the {x.s_syn} {x.v_ant} the {x.o_syn}")),
    Construction("syn_negated_intransitive", C, "low", None,
                 lambda x: (f"the {x.s} {x.i} {x.place}", f"the {x.s_syn} never {x.i}")),
)

TASK = Task(
    name="synthetic_nli",
    labels=NLI_LABELS,
    columns=NLI_COLUMNS,
    aliases={"0": E, "1": N, "2": C},
    primary_metric="accuracy",
    challenge_sets={"hans": HANS},
    description="synthetic NLI with a controlled lexical-overlap shortcut; challenge: HANS-like",
)

_PUNCTUATION = frozenset({".", ",", "!", "?"})


def word_overlap(premise: str, hypothesis: str) -> float:
    """Fraction of hypothesis words (lower-cased, punctuation ignored) that occur in the premise."""
    words = [w for w in hypothesis.lower().split() if w not in _PUNCTUATION]
    vocab = set(premise.lower().split())
    return sum(w in vocab for w in words) / len(words) if words else 0.0


def synthetic_labels(split: str) -> tuple[str, ...]:
    """Label names of a generated split: NLI's for train/dev, HANS's for the challenge split."""
    return HANS_LABELS if split == "challenge" else NLI_LABELS


def generate_synthetic(split: str, n: int, bias_strength: float = 0.9, seed: int = 0) -> list[Example]:
    """``n`` examples of ``split`` (train, dev or challenge), the same for the same arguments."""
    if split not in ("train", "dev", "challenge"):
        raise SrnetError(f"synthetic split '{split}' is not one of ['train', 'dev', 'challenge']")
    if n <= 0:
        raise SrnetError(f"synthetic: n must be positive, got {n}")
    if not 0.0 <= bias_strength <= 1.0:
        raise SrnetError(f"synthetic: bias_strength must be in [0, 1], got {bias_strength}")
    rng = random.Random(f"srnet.synthetic:{split}:{seed}")
    plan = _challenge_plan(n) if split == "challenge" else _id_plan(n, bias_strength, rng)
    rng.shuffle(plan)
    names = synthetic_labels(split)
    examples = []
    for index, construction in enumerate(plan):
        premise, hypothesis = construction.build(_Scene.draw(rng))
        if split == "challenge":
            label = int(construction.label != E)  # HANS_LABELS: entailment, non-entailment
            meta = {"heuristic": str(construction.heuristic), "subcase": construction.name}
        else:
            label = names.index(construction.label)
            meta = {"construction": construction.name, "overlap": construction.overlap}
        examples.append(
            Example(f"synthetic-{split}-{seed}-{index}", _sentence(premise), _sentence(hypothesis),
                    label, meta)
        )
    return examples


def _id_plan(n: int, bias_strength: float, rng: random.Random) -> list[Construction]:
    """Balanced labels; P(high | entailment) = 2b/(1+b), P(high | other) = 1 - that, which makes
    P(entailment | high) = b exactly (up to rounding)."""
    p_entail_high = 2 * bias_strength / (1 + bias_strength)
    plan = []
    for k, label in enumerate(NLI_LABELS):
        count = n // 3 + (k < n % 3)
        p_high = p_entail_high if label == E else 1 - p_entail_high
        high = int(count * p_high + 0.5)
        for overlap, size in (("high", high), ("low", count - high)):
            pool = [c for c in CONSTRUCTIONS if c.label == label and c.overlap == overlap]
            plan += [rng.choice(pool) for _ in range(size)]
    return plan


def _challenge_plan(n: int) -> list[Construction]:
    """Each heuristic x {entailment, non-entailment} cell gets n/8 examples, subcases in turn."""
    cells = [(h, entails) for h in CHALLENGE_HEURISTICS for entails in (True, False)]
    plan = []
    for k, (heuristic, entails) in enumerate(cells):
        pool = [c for c in CONSTRUCTIONS if c.heuristic == heuristic and (c.label == E) == entails]
        size = n // len(cells) + (k < n % len(cells))
        plan += [pool[j % len(pool)] for j in range(size)]
    return plan


def _sentence(words: str) -> str:
    return f"{words[0].upper()}{words[1:]} ."
