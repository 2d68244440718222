"""manibo: Bayesian optimisation on manifolds and other non-Euclidean spaces.

Subpackages, from the ground up (each imports only from those listed before it):

* ``manibo.harmonics`` — Gegenbauer polynomials, Funk–Hecke coefficients, spherical harmonics.
* ``manibo.spaces`` — geometry and Laplace–Beltrami spectra: Sphere, Circle, Torus, Product, SO(3),
  Mesh, Graph.
* ``manibo.kernels`` — GPyTorch kernels: spectral Matérn/heat, zonal, arc-cosine, homogeneous lift.
* ``manibo.models`` — surrogates as BoTorch models, built by name; ``manibo.optim`` — acquisition
  optimisation on a space; ``manibo.problems`` — benchmark functions with known optima.
* ``manibo.loop`` — ``BayesianOptimizer`` (ask / tell / run, journal, resume), ``minimize``,
  ``maximize``.
* ``manibo.testing`` — contract checks for new spaces and kernels; ``manibo.demos`` —
  ``manibo demo``.
"""

from manibo.exceptions import ConfigurationError, EvaluationFailed, InputDataError, ManiboError
from manibo.loop import BayesianOptimizer, maximize, minimize

__version__ = "0.1.0"

__all__ = [
    "BayesianOptimizer",
    "ConfigurationError",
    "EvaluationFailed",
    "InputDataError",
    "ManiboError",
    "__version__",
    "maximize",
    "minimize",
]
