"""Surrogates as BoTorch models, built by name from ``(space, train_X, train_Y, **options)``."""

from manibo.models import (  # noqa: F401  (registers the surrogates)
    euclidean,
    exact_gp,
    vish,  # noqa: F401  (registers the "vish" surrogate)
)
from manibo.models.adgp import ActivatedDeepGP, ActivatedDGPModel  # registers "adgp"
from manibo.models.euclidean import ChartKernel, EmbeddingKernel
from manibo.models.exact_gp import ExactGPModel, fit_with_retries, validate_training_data
from manibo.models.gpnet import GPNet, GPNetModel  # registers the "gpnet" surrogate
from manibo.models.model_list import OutcomeList
from manibo.models.registry import (
    FEATURES,
    SurrogateEntry,
    available_surrogates,
    build_surrogate,
    check_surrogate_supports,
    register_surrogate,
    surrogate_entry,
    unsupported_feature,
    unsupported_reason,
)
from manibo.models.transforms import SpaceEmbedding, SpaceIsometry

__all__ = [
    "FEATURES",
    "ActivatedDGPModel",
    "ActivatedDeepGP",
    "ChartKernel",
    "EmbeddingKernel",
    "ExactGPModel",
    "GPNet",
    "GPNetModel",
    "OutcomeList",
    "SpaceEmbedding",
    "SpaceIsometry",
    "SurrogateEntry",
    "available_surrogates",
    "build_surrogate",
    "check_surrogate_supports",
    "fit_with_retries",
    "register_surrogate",
    "surrogate_entry",
    "unsupported_feature",
    "unsupported_reason",
    "validate_training_data",
]
