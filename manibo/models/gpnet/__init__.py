"""GPNet: GP posteriors as inference networks, trained by stochastic functional mirror descent.

Modules: ``mirror_descent`` (the step: schedule, tempered prior, closed-form target, KL),
``networks`` (Gaussian-output networks on kernel feature maps from
:func:`manibo.kernels.feature_map` or on ``features``, the tanh network), ``measurement`` (the
measurement distribution c(x)), ``trainer`` (the iterations), ``pretrain`` (prior hyperparameters by
exact marginal likelihood), ``model`` (the BoTorch model), ``surrogate`` (the ``"gpnet"`` surrogate
of the registry: default prior and network, pretraining, training).
"""

from manibo.models.gpnet.features import MLPFeatures
from manibo.models.gpnet.measurement import MeasurementDistribution
from manibo.models.gpnet.mirror_descent import beta_schedule, conjugate_target, tempered_prior
from manibo.models.gpnet.model import GPNetModel
from manibo.models.gpnet.networks import BayesianLinearNetwork
from manibo.models.gpnet.pretrain import PretrainedPrior, pretrain_hyperparameters
from manibo.models.gpnet.surrogate import build_network, default_kernel, gpnet_surrogate
from manibo.models.gpnet.trainer import GPNet, StepResult

__all__ = [
    "BayesianLinearNetwork",
    "GPNet",
    "GPNetModel",
    "MLPFeatures",
    "MeasurementDistribution",
    "PretrainedPrior",
    "StepResult",
    "beta_schedule",
    "build_network",
    "conjugate_target",
    "default_kernel",
    "gpnet_surrogate",
    "pretrain_hyperparameters",
    "tempered_prior",
]
