"""Bias models and their predictions: features, out-of-fold logistic regression, bias files, RMC
difficulty."""

from srnet.bias.difficulty import compute_difficulty, load_difficulty, write_difficulty
from srnet.bias.features import (
    FEATURES,
    BiasFeature,
    FeatureContext,
    extract_features,
    get_feature,
    register_feature,
)
from srnet.bias.model import BiasConfig, BiasModel, SplitPredictions, fit_bias_model
from srnet.bias.predictions import (
    load_bias_log_probs,
    read_bias_header,
    write_bias_predictions,
)
from srnet.bias.word_vectors import EmbeddingWordVectors, FileWordVectors, WordVectors

__all__ = [
    "FEATURES",
    "BiasConfig",
    "BiasFeature",
    "BiasModel",
    "EmbeddingWordVectors",
    "FeatureContext",
    "FileWordVectors",
    "SplitPredictions",
    "WordVectors",
    "compute_difficulty",
    "extract_features",
    "fit_bias_model",
    "get_feature",
    "load_bias_log_probs",
    "load_difficulty",
    "read_bias_header",
    "register_feature",
    "write_bias_predictions",
    "write_difficulty",
]
