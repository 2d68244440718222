"""manibo: Bayesian optimisation on manifolds and other non-Euclidean spaces.

Subpackages, from the ground up (each imports only from those listed before it):

* ``manibo.harmonics`` — Gegenbauer polynomials, Funk–Hecke coefficients, spherical harmonics.
* ``manibo.spaces`` — geometry and Laplace–Beltrami spectra: Sphere, Circle, Torus, Product, SO(3),
  Mesh, Graph.
* ``manibo.kernels`` — GPyTorch kernels: spectral Matérn/heat, zonal, arc-cosine, homogeneous lift.
* ``manibo.models`` — surrogates as BoTorch models, built by name; ``manibo.optim`` — acquisition
  optimisation on a space; ``manibo.problems`` — benchmark functions with known optima.
* ``manibo.loop`` — ``BayesianOptimizer`` (ask / tell / run, journal, resume), ``minimize``,
  ``maximize``; ``manibo.result`` — ``OptimizationResult``, what they return.
* ``manibo.testing`` — contract checks for new spaces and kernels; ``manibo.demos`` —
  ``manibo demo``.
"""

import importlib
from typing import TYPE_CHECKING

from manibo.exceptions import ConfigurationError, EvaluationFailed, InputDataError, ManiboError

if TYPE_CHECKING:
    from manibo.loop import BayesianOptimizer, maximize, minimize
    from manibo.result import OptimizationResult

__version__ = "0.1.0"

#: Imported on first use (PEP 562): ``import manibo.journal`` (a journal reader) or
#: ``import manibo.spaces`` need neither the loop nor BoTorch and GPyTorch, which take seconds.
_LAZY = {
    "BayesianOptimizer": "manibo.loop",
    "maximize": "manibo.loop",
    "minimize": "manibo.loop",
    "OptimizationResult": "manibo.result",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'manibo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BayesianOptimizer",
    "ConfigurationError",
    "EvaluationFailed",
    "InputDataError",
    "ManiboError",
    "OptimizationResult",
    "__version__",
    "maximize",
    "minimize",
]
