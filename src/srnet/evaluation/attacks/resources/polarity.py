"""A word's prior polarity from two independent sources, offline: the VADER valence lexicon (Hutto &
Gilbert 2014; the file bundled in the PyPI package ``vaderSentiment``, MIT, read without importing
it) and smoothed log-odds of the word in a labelled training file (SST-2's training split).

A substitution keeps polarity when neither source says its sign flips or its strength vanishes;
:class:`Polarity` holds both tables and their SHA-256 for the attack's summary.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from srnet.errors import SrnetError
from srnet.evaluation.attacks.resources.extra import INSTALL
from srnet.evaluation.attacks.resources.text import Words
from srnet.io import file_sha256

VADER_FILE = "vader_lexicon.txt"
VADER_MAX = 4.0
"""VADER's valence scale: mean human ratings in [-4, 4]."""


def vader_path() -> Path:
    """``vader_lexicon.txt`` inside the installed ``vaderSentiment`` package (found without importing it)."""
    spec = importlib.util.find_spec("vaderSentiment")
    if spec is None or not spec.submodule_search_locations:
        raise SrnetError(f"the strict attack needs vaderSentiment's lexicon: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations))) / VADER_FILE


def read_vader(path: Path) -> dict[str, float]:
    """``token -> valence / 4`` in [-1, 1] from a VADER lexicon file (token TAB mean TAB sd TAB ratings);
    a missing file or a malformed line is one error naming the file and line."""
    if not path.is_file():
        raise SrnetError(f"{path}: VADER lexicon not found: {INSTALL}")
    table: dict[str, float] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="strict").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            value = float(fields[1])
        except (IndexError, ValueError):
            raise SrnetError(f"{path} line {number}: not 'token<TAB>valence<TAB>...' "
                             f"(corrupt VADER lexicon; reinstall: {INSTALL})") from None
        if not math.isfinite(value) or abs(value) > VADER_MAX:
            raise SrnetError(f"{path} line {number}: valence {fields[1]} outside [-4, 4] (corrupt lexicon)")
        table[fields[0].lower()] = value / VADER_MAX
    if len(table) < 1000:
        raise SrnetError(f"{path}: {len(table)} entries; the VADER lexicon has about 7,500 (corrupt file?)")
    return table


def log_odds(path: Path, positive: int = 1, alpha: float = 1.0, min_count: int = 5) -> dict[str, float]:
    """Smoothed log-odds of each word (seen at least ``min_count`` times) between the texts labelled
    ``positive`` and the rest of a ``{"sentence", "label"}`` JSON-lines file
    (add-``alpha`` smoothing): the word's log odds among the positive texts' words minus among the
    rest's, in nats."""
    counts = [Counter(), Counter()]
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text, label = row["sentence"], int(row["label"])
        except (ValueError, KeyError, TypeError):
            raise SrnetError(f"{path} line {number}: not a {{\"sentence\", \"label\"}} JSON object") from None
        counts[int(label == positive)].update(w.lower() for w in Words.split(text).words)
    neg, pos = counts
    n_neg, n_pos = sum(neg.values()), sum(pos.values())
    vocabulary = [w for w in set(neg) | set(pos) if neg[w] + pos[w] >= min_count]
    size = len(vocabulary)
    out: dict[str, float] = {}
    for word in vocabulary:
        a, b = pos[word] + alpha, neg[word] + alpha
        delta = math.log(a / (n_pos + alpha * size - a)) - math.log(b / (n_neg + alpha * size - b))
        out[word] = delta
    return out


@dataclass(frozen=True)
class Scale:
    """How one source's polarities are compared: opposite signs with either word at least ``margin``
    is a flip; one word at least ``strong`` and the other under ``weak`` is a sentiment that vanishes."""

    margin: float
    strong: float
    weak: float

    def kept(self, a: float, b: float) -> bool:
        if a * b < 0 and max(abs(a), abs(b)) >= self.margin:
            return False
        return not (max(abs(a), abs(b)) >= self.strong and min(abs(a), abs(b)) < self.weak)


VADER_SCALE = Scale(margin=0.25, strong=0.5, weak=0.1)
"""On valence / 4: a flip at 1.0 on VADER's scale (ridiculous -1.5 -> outrageous -2.0 is kept)."""
ODDS_SCALE = Scale(margin=0.75, strong=2.0, weak=0.5)
"""On SST-2 log-odds: bad -2.6 -> tough +0.5 flips; movie -0.25 -> film +0.39 is kept (both neutral)."""


@dataclass
class Polarity:
    """Both polarity sources and the rule a substitution must keep.

    ``vader`` is in [-1, 1] (valence / 4) for the words the lexicon lists; ``odds`` is the smoothed
    log-odds (positive vs negative) of the words the training file has at least 5 times.  Each
    source compares the two words when it knows both (:class:`Scale`); and a word strongly polar
    in a source must be replaced by one that some source knows with the same sign (useless, log-odds
    -2.3 -> unworthy passes: VADER lists it as negative; brilliant 2.2 -> commendable, which neither
    source knows, is rejected).
    """

    vader: dict[str, float]
    odds: dict[str, float]
    record: dict = field(default_factory=dict)

    def kept(self, original: str, substitute: str) -> bool:
        """Whether swapping ``original`` for ``substitute`` keeps the prior polarity."""
        a, b = original.lower(), substitute.lower()
        sources = ((self.vader, VADER_SCALE), (self.odds, ODDS_SCALE))
        for table, scale in sources:
            if a in table and b in table and not scale.kept(table[a], table[b]):
                return False
        for x, y in ((a, b), (b, a)):
            sign = next((math.copysign(1.0, t[x]) for t, scale in sources
                         if abs(t.get(x, 0.0)) >= scale.strong), None)
            if sign is not None and not any(t.get(y, 0.0) * sign > 0 for t, _ in sources):
                return False
        return True


def load_polarity(training: Path, lexicon: Path | None = None, positive: int = 1) -> Polarity:
    """The VADER-format ``lexicon`` (default: vaderSentiment's) and the log-odds of ``training`` (labels:
    ``positive`` vs the rest), recorded with their SHA-256."""
    if not training.is_file():
        raise SrnetError(f"{training}: polarity training file not found (set $SRNET_DATA_DIR, or "
                         "--param polarity_data=PATH)")
    lexicon = lexicon or vader_path()
    vader = read_vader(lexicon)
    odds = log_odds(training, positive)
    record = {"vader": {"file": str(lexicon), "sha256": file_sha256(lexicon), "entries": len(vader)},
              "log_odds": {"file": str(training), "sha256": file_sha256(training), "words": len(odds)}}
    return Polarity(vader, odds, record)
