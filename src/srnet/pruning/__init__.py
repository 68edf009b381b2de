"""Pruning methods behind one interface, registered by name.

Importing this package registers the built-in methods: ``dense`` (no masks), ``omp``,
``random``, ``imp``, ``mask_train``, ``l0`` and ``fixed``.
"""

from srnet.pruning.base import (
    LearnedMaskMethod,
    OneShotMethod,
    PruningMethod,
    available_methods,
    build_method,
    get_method,
    register_method,
)
from srnet.pruning.config import ImpConfig, L0Config, PruningConfig, ScheduleConfig
from srnet.pruning.dense import Dense
from srnet.pruning.fixed import FixedMaskMethod
from srnet.pruning.imp import IterativeMagnitude
from srnet.pruning.l0 import L0Gates
from srnet.pruning.magnitude import OneShotMagnitude
from srnet.pruning.mask_training import MaskTraining
from srnet.pruning.random import RandomPruning

__all__ = [
    "Dense",
    "FixedMaskMethod",
    "ImpConfig",
    "IterativeMagnitude",
    "L0Config",
    "L0Gates",
    "LearnedMaskMethod",
    "MaskTraining",
    "OneShotMagnitude",
    "OneShotMethod",
    "PruningConfig",
    "PruningMethod",
    "RandomPruning",
    "ScheduleConfig",
    "available_methods",
    "build_method",
    "get_method",
    "register_method",
]
