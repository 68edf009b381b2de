"""Backbones and their structure.

:mod:`srnet.models.loading` loads the bundled default or any Hugging Face id/path (tokenizers,
classifiers with their heads matched to the task's labels, masked-LM models);
:mod:`srnet.models.families` holds one entry per encoder family; :mod:`srnet.models.structure`
finds the prunable weights by role and the head/neuron groups from those entries.  ``structure``
imports nothing from ``loading``.
"""

from srnet.models.families import (
    BLOCK_ROLES,
    ENCODER_ROLES,
    FAMILIES,
    Family,
    family_of,
    register_family,
    shrinkable,
)
from srnet.models.loading import (
    DEFAULT_MODEL,
    check_max_length,
    check_model_source,
    default_device,
    default_model_path,
    load_classifier,
    load_masked_lm,
    load_tokenizer,
    quiet_transformers,
    resolve_model_name,
)
from srnet.models.structure import (
    ALL_ROLES,
    DEFAULT_ROLES,
    GRANULARITIES,
    GroupMember,
    MaskGroup,
    PrunableWeight,
    check_encoder_coverage,
    classify_weight,
    encoder_blocks,
    find_groups,
    find_prunable,
    group_kinds,
)

__all__ = [
    "ALL_ROLES",
    "BLOCK_ROLES",
    "DEFAULT_MODEL",
    "DEFAULT_ROLES",
    "ENCODER_ROLES",
    "FAMILIES",
    "GRANULARITIES",
    "Family",
    "GroupMember",
    "MaskGroup",
    "PrunableWeight",
    "check_encoder_coverage",
    "check_max_length",
    "check_model_source",
    "classify_weight",
    "default_device",
    "default_model_path",
    "encoder_blocks",
    "family_of",
    "find_groups",
    "find_prunable",
    "group_kinds",
    "load_classifier",
    "load_masked_lm",
    "load_tokenizer",
    "quiet_transformers",
    "register_family",
    "resolve_model_name",
    "shrinkable",
]
