"""Activated deep GPs: deep GPs whose mean is a neural network, for BoTorch.

Dutordoir, Hensman, van der Wilk, Ek, Ghahramani & Durrande (2021), "Deep Neural Networks as Point
Estimates for Deep Gaussian Processes" (NeurIPS), presented in chapter 4 of Dutordoir (2021),
"Non-Parametric Decision Making in Non-Euclidean Spaces" (PhD first-year report, University of
Cambridge); section, equation and figure numbers in this package are that report's.
"""

from manibo.models.adgp.activations import Activation, ReLU, Softplus
from manibo.models.adgp.initialization import initialize_from_network
from manibo.models.adgp.layer import ActivatedGPLayer, LayerState
from manibo.models.adgp.model import ActivatedDGPModel
from manibo.models.adgp.network import ActivatedDeepGP
from manibo.models.adgp.posterior import ActivatedDGPPosterior, get_activated_dgp_sampler
from manibo.models.adgp.surrogate import activated_dgp_surrogate
from manibo.models.adgp.training import ElboTrace, NetworkTrace, fit_elbo, fit_network

__all__ = [
    "Activation",
    "ActivatedDGPModel",
    "ActivatedDGPPosterior",
    "ActivatedDeepGP",
    "ActivatedGPLayer",
    "ElboTrace",
    "LayerState",
    "NetworkTrace",
    "ReLU",
    "Softplus",
    "activated_dgp_surrogate",
    "fit_elbo",
    "fit_network",
    "get_activated_dgp_sampler",
    "initialize_from_network",
]
