"""manibo: Bayesian optimisation on manifolds and other non-Euclidean spaces.

Subpackages, from the ground up (each imports only from those listed before it):

* ``manibo.harmonics`` — Gegenbauer polynomials, Funk–Hecke coefficients, spherical harmonics.
* ``manibo.spaces`` — geometry and Laplace–Beltrami spectra: Sphere, Circle, Torus, Product, SO(3),
  Mesh, Graph.
* ``manibo.kernels`` — GPyTorch kernels: spectral Matérn/heat, zonal, arc-cosine, homogeneous lift.
"""

from manibo.exceptions import InputDataError, ManiboError

__version__ = "0.1.0"

__all__ = ["InputDataError", "ManiboError", "__version__"]
