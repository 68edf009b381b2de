"""The encoder families srnet knows, one entry each: where a block's matrices sit by role, the
config key of the head count, how positions are counted, the fused matrices and the shrunk class.

Adding a family is one :func:`register_family` call (a plug-in can make it from outside the
package); ``docs/architecture.md``'s family table is :func:`family_table`'s output (a test fails
when the page is stale and prints the fresh table).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from srnet.errors import SrnetError
from srnet.registry import Registry

ENCODER_ROLES = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")
"""The roles every transformer block has (a fused role stands for some of them)."""
FUSED_ROLES = {"qkv": ("query", "key", "value")}
"""The encoder roles a fused matrix holds: ModernBERT's ``Wqkv`` (one mask over the whole fused
matrix when unstructured, so its sparsity is local to the fused matrix, not to each of Q, K and V)."""
FAMILY_ROLES = {**FUSED_ROLES, "pos_key": ("key",), "pos_query": ("query",)}
"""Roles of some families only, each masked wherever all the encoder roles it stands for are asked
for (so recipes name the six encoder roles): the fused ``qkv`` and DeBERTa-v2/v3's relative-position
key/query projections (``pos_key_proj``/``pos_query_proj``, ``share_att_key: false``)."""
OPTIONAL_ROLES = ("pos_key", "pos_query")
"""Roles a family's blocks have only in some configurations (DeBERTa-v2: ``share_att_key: false``)."""
BLOCK_ROLES = (*ENCODER_ROLES, *FAMILY_ROLES)
CLASSIFIER_PATHS = (r"^classifier$", r"^classifier\.(dense|out_proj)$")
"""The classification head's modules, as most families name them (regexes on the qualified name)."""
EMBEDDINGS_PATH = r"(^|\.)embeddings\.word_embeddings$"

Positions = Literal["absolute", "after_padding", "relative"]


@dataclass(frozen=True, eq=False)
class Family:
    """One encoder family (one ``config.model_type``)."""

    model_type: str
    label: str
    """The name people know it by, for docs and messages."""
    layer: str
    """Regex of a block's module path up to its matrices, with a ``(?P<layer>\\d+)`` group."""
    roles: Mapping[str, str]
    """Role -> a matrix's module path inside its block (plain dotted text, not a regex)."""
    heads_key: str = "num_attention_heads"
    """The config attribute holding the number of attention heads."""
    positions: Positions = "absolute"
    """``absolute``: ``max_position_embeddings`` learned positions; ``after_padding``: the same,
    counted after the padding index (RoBERTa: 514 positions, 512 usable); ``relative``: no limit
    srnet checks (relative or rotary positions)."""
    fused: Mapping[str, int] = field(default_factory=dict)
    """Role -> parts stacked along the rows, each holding every head's slice in turn (ModernBERT's
    ``Wqkv``: 3, the Q, K and V of all heads)."""
    gated_ffn: bool = False
    """FFN-in holds two stacked halves (GLU: input and gate), neuron i is row i of each."""
    shrunk: str | None = None
    """The class in :mod:`srnet.models.shrunk` its shrunk export loads with (None: no ``--shrink``)."""
    classifier: tuple[str, ...] = CLASSIFIER_PATHS
    depth_key: str | None = "num_hidden_layers"
    """The config attribute holding the number of blocks; None where a block's computation depends
    on its index (ModernBERT's local/global attention) or blocks are shared (ALBERT), so whole
    blocks cannot be removed (:func:`srnet.models.layers.drop_layers`)."""

    def __post_init__(self) -> None:
        where = f"model family '{self.model_type}'"
        if "(?P<layer>" not in self.layer:
            raise SrnetError(f"{where}: its layer pattern '{self.layer}' has no (?P<layer>...) group")
        unknown = [r for r in self.roles if r not in BLOCK_ROLES]
        if unknown:
            raise SrnetError(f"{where}: unknown role '{unknown[0]}' (block roles: {list(BLOCK_ROLES)})")
        held = set(self.roles).union(*(FAMILY_ROLES[r] for r in self.roles if r in FUSED_ROLES))
        missing = [r for r in ENCODER_ROLES if r not in held]
        if missing:
            raise SrnetError(f"{where}: no module path for role(s) {missing}")
        loose = [r for r in self.fused if r not in self.roles or r not in FUSED_ROLES]
        if loose:
            raise SrnetError(f"{where}: fused '{loose[0]}' is not one of its fused roles")

    def patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        """(role, compiled regex on a qualified module name) for its block matrices and head."""
        block = [(role, re.compile(self.layer + re.escape(path) + "$")) for role, path in self.roles.items()]
        return [*block, *(("classifier", re.compile(p)) for p in self.classifier)]

    def parts(self, role: str) -> int:
        """How many stacked parts a matrix of ``role`` holds along its rows (1: a plain matrix)."""
        if role in self.fused:
            return self.fused[role]
        return 2 if role == "ffn_in" and self.gated_ffn else 1


FAMILIES: Registry[Family] = Registry("model family")


def register_family(family: Family) -> Family:
    """Add a family (ValueError when its ``model_type`` is taken); returns it."""
    return FAMILIES.add(family.model_type, family)


def family_of(model_type: str) -> Family | None:
    """The entry of a ``config.model_type``, or None for a family srnet has no entry for."""
    return FAMILIES.get(model_type, None)


def shrinkable() -> list[str]:
    """The model types whose head/neuron masks shrink (their entry names a shrunk class)."""
    return [name for name in FAMILIES.names() if FAMILIES[name].shrunk]


def shrunk_class_name(model_type: str) -> str:
    """The shrunk class of ``model_type``; SrnetError naming the families that have one."""
    family = family_of(model_type)
    if family is None or family.shrunk is None:
        raise SrnetError(f"cannot shrink a {model_type} model: srnet has shrunk classes for "
                         f"{', '.join(shrinkable())}; export without shrinking keeps its masked heads "
                         "and neurons as zeros")
    return family.shrunk


def family_table() -> str:
    """The families as a Markdown table (the one in ``docs/architecture.md``)."""
    rows = ["| model_type | family | block | matrices by role | heads | positions | shrinks | drops layers |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in FAMILIES.names():
        f = FAMILIES[name]
        block = re.sub(r"\(\?P<layer>\\d\+\)", "N", f.layer.replace("(^|\\.)", ""))
        block = block.replace("\\.", ".").strip(".")
        roles = ", ".join(f"{role} `{path}`" + (f" ({f.parts(role)} parts)" if f.parts(role) > 1 else "")
                          for role, path in f.roles.items())
        rows.append(f"| `{name}` | {f.label} | `{block}` | {roles} | `{f.heads_key}` | {f.positions} | "
                    f"{'yes' if f.shrunk else 'no'} | {'yes' if f.depth_key else 'no'} |")
    return "\n".join(rows)


_LAYER = r"\.layer\.(?P<layer>\d+)\."
_BERT_ROLES = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
               "attn_out": "attention.output.dense", "ffn_in": "intermediate.dense",
               "ffn_out": "output.dense"}

for _family in (
    Family("bert", "BERT", _LAYER, _BERT_ROLES, shrunk="SrnetBertForSequenceClassification"),
    Family("roberta", "RoBERTa", _LAYER, _BERT_ROLES, positions="after_padding",
           shrunk="SrnetRobertaForSequenceClassification"),
    Family("xlm-roberta", "XLM-R", _LAYER, _BERT_ROLES, positions="after_padding",
           shrunk="SrnetXLMRobertaForSequenceClassification"),
    Family("camembert", "CamemBERT", _LAYER, _BERT_ROLES, positions="after_padding",
           shrunk="SrnetCamembertForSequenceClassification"),
    Family("electra", "ELECTRA", _LAYER, _BERT_ROLES, shrunk="SrnetElectraForSequenceClassification"),
    Family("distilbert", "DistilBERT", _LAYER,
           {"query": "attention.q_lin", "key": "attention.k_lin", "value": "attention.v_lin",
            "attn_out": "attention.out_lin", "ffn_in": "ffn.lin1", "ffn_out": "ffn.lin2"},
           heads_key="n_heads", depth_key="n_layers", shrunk="SrnetDistilBertForSequenceClassification",
           classifier=(*CLASSIFIER_PATHS, r"^pre_classifier$")),
    Family("deberta-v2", "DeBERTa-v2/v3", _LAYER,
           {"query": "attention.self.query_proj", "key": "attention.self.key_proj",
            "value": "attention.self.value_proj", "pos_key": "attention.self.pos_key_proj",
            "pos_query": "attention.self.pos_query_proj", "attn_out": "attention.output.dense",
            "ffn_in": "intermediate.dense", "ffn_out": "output.dense"},
           positions="relative", shrunk="SrnetDebertaV2ForSequenceClassification"),
    Family("mpnet", "MPNet", _LAYER,
           {"query": "attention.attn.q", "key": "attention.attn.k", "value": "attention.attn.v",
            "attn_out": "attention.attn.o", "ffn_in": "intermediate.dense", "ffn_out": "output.dense"},
           positions="after_padding"),
    Family("albert", "ALBERT (a group's one shared layer)",
           r"\.albert_layer_groups\.(?P<layer>\d+)\.albert_layers\.0\.",
           {"query": "attention.query", "key": "attention.key", "value": "attention.value",
            "attn_out": "attention.dense", "ffn_in": "ffn", "ffn_out": "ffn_output"}, depth_key=None),
    Family("modernbert", "ModernBERT", r"\.layers\.(?P<layer>\d+)\.",
           {"qkv": "attn.Wqkv", "attn_out": "attn.Wo", "ffn_in": "mlp.Wi", "ffn_out": "mlp.Wo"},
           positions="relative", fused={"qkv": 3}, gated_ffn=True, depth_key=None,
           shrunk="SrnetModernBertForSequenceClassification"),
):
    register_family(_family)
