"""Pruning methods behind one interface, registered by name.

A method is one module: its :class:`PruningMethod` subclass, its ``params_model`` (the
``pruning.params`` section of a recipe) and ``@register_method("name")``.  Importing this package
imports the built-in method modules, which registers them: ``dense`` (no masks), ``omp``,
``random``, ``imp``, ``mask_train``, ``l0`` and ``fixed``.
"""

from srnet.pruning.base import (
    LearnedMaskMethod,
    LearnedMaskParams,
    OneShotMethod,
    OneShotParams,
    PruningMethod,
)
from srnet.pruning.config import MethodParams, PruningConfig, ScheduleConfig
from srnet.pruning.dense import Dense
from srnet.pruning.fixed import FixedMaskMethod, FixedParams
from srnet.pruning.imp import ImpParams, IterativeMagnitude
from srnet.pruning.l0 import L0Gates, L0Params
from srnet.pruning.magnitude import OmpParams, OneShotMagnitude
from srnet.pruning.mask_training import MaskTraining, MaskTrainingParams
from srnet.pruning.random import RandomPruning
from srnet.pruning.registry import (
    METHODS,
    available_methods,
    build_method,
    get_method,
    method_help,
    register_method,
)

ImpConfig = ImpParams
"""The name of :class:`ImpParams` before methods owned their params (kept for old imports)."""
L0Config = L0Params
"""The name of :class:`L0Params` before methods owned their params (kept for old imports)."""

__all__ = [
    "METHODS",
    "Dense",
    "FixedMaskMethod",
    "FixedParams",
    "ImpConfig",
    "ImpParams",
    "IterativeMagnitude",
    "L0Config",
    "L0Gates",
    "L0Params",
    "LearnedMaskMethod",
    "LearnedMaskParams",
    "MaskTraining",
    "MaskTrainingParams",
    "MethodParams",
    "OmpParams",
    "OneShotMagnitude",
    "OneShotMethod",
    "OneShotParams",
    "PruningConfig",
    "PruningMethod",
    "RandomPruning",
    "ScheduleConfig",
    "available_methods",
    "build_method",
    "get_method",
    "method_help",
    "register_method",
]
