"""The registry of spaces, kernels and surrogates that the contract tests run over.

``SPACES`` are the compact spaces (every kernel flavour runs on each), ``OTHER_SPACES`` those that
only the geometry contract covers.

One line adds a space, a kernel class or a surrogate; the coverage tests fail until it is added.
"""

from __future__ import annotations

import math

import torch

import manibo.kernels as kernels
import manibo.spaces as spaces
from manibo.kernels import GeometricMaternKernel


def _small_graph():
    # a 12-node graph: a cycle with two chords (not vertex-transitive, with a degenerate spectrum)
    a = torch.zeros(12, 12, dtype=torch.float64)
    for i in range(12):
        a[i, (i + 1) % 12] = a[(i + 1) % 12, i] = 1.0
    a[0, 6] = a[6, 0] = a[3, 9] = a[9, 3] = 1.0
    return spaces.Graph(a)


SPACES = {
    "sphere1": lambda: spaces.Sphere(1),
    "sphere2": lambda: spaces.Sphere(2),
    "sphere5": lambda: spaces.Sphere(5),
    "circle": lambda: spaces.Circle(),
    "torus2": lambda: spaces.Torus(2),
    "so3": lambda: spaces.SpecialOrthogonal(3),
    "product_sphere_circle": lambda: spaces.ProductSpace(spaces.Sphere(2), spaces.Circle()),
    "graph": _small_graph,
    "mesh": lambda: spaces.Mesh.icosphere(1),
}

# spaces without a spectrum: the geometry contract only
OTHER_SPACES = {
    "box": lambda: spaces.Box([-1.0, 0.0, 2.0], [1.0, 3.0, 2.5]),
}

# a (nu, num_levels) per kernel flavour; None levels = automatic truncation
KERNELS = {
    "matern12": (0.5, 30),
    "matern52": (2.5, None),
    "heat": (math.inf, None),
}


def make_kernel(space, flavour: str):
    nu, levels = KERNELS[flavour]
    if levels is not None and space.num_levels_available:
        levels = min(levels, space.num_levels_available)
    kernel = GeometricMaternKernel(space, nu=nu, num_levels=levels)
    kernel.lengthscale = 0.7
    return kernel


# every kernel class exported by manibo.kernels, on a space it serves: (space, kernel) makers
KERNEL_CASES = {
    "GeometricMaternKernel": lambda: (
        s := spaces.Torus(2),
        kernels.GeometricMaternKernel(s, nu=1.5, num_levels=200),
    ),
    "GeometricHeatKernel": lambda: (
        s := spaces.SpecialOrthogonal(3),
        kernels.GeometricHeatKernel(s),
    ),
    "ZonalKernel": lambda: (
        s := spaces.Sphere(2),
        kernels.ZonalKernel(s, lambda t: torch.exp(2.0 * (t - 1.0))),
    ),
    "ChordalMaternKernel": lambda: (s := spaces.Sphere(3), kernels.ChordalMaternKernel(s, nu=1.5)),
    "ArcCosineKernel": lambda: (s := spaces.Sphere(2), kernels.ArcCosineKernel(s, order=1)),
    "HomogeneousLiftKernel": lambda: (
        spaces.Box([-1.0, -1.0, 0.0], [1.0, 2.0, 1.0]),
        kernels.HomogeneousLiftKernel(kernels.ArcCosineKernel(spaces.Sphere(3), order=1), 3),
    ),
    "FactorProductKernel": lambda: (
        s := spaces.ProductSpace(spaces.Sphere(2), spaces.Circle()),
        kernels.FactorProductKernel(
            s, [GeometricMaternKernel(f, nu=1.5, num_levels=8) for f in s.factors]
        ),
    ),
}

# the spaces every surrogate is checked on, where its registry entry supports them
CONTRACT_SPACES = ("sphere2", "torus2", "so3")

# every registered surrogate, with the options that keep its contract checks fast, and the
# tolerances its approximations need (TOLERANCES of manibo.testing.model_contract)
SURROGATES = {
    "matern": {},
    "heat": {},
    "euclidean": {},
    "chart": {},
    "vish": {"options": {"num_features": 40, "maxiter": 15}},
    "gpnet": {
        "options": {
            "num_iterations": 15,
            "max_features": 32,
            "pretrain_points": 50,
            "num_measurement": 8,
        },
    },
    "adgp": {
        "options": {"num_units": 8, "network_epochs": 15, "elbo_epochs": 5},
        # a fantasy of a deep model averages its hidden layers over 32 draws (other draws for a
        # union of points than for its parts, and moment matching is not associative: two steps
        # differ from one by up to 3% of the outcomes' standard deviation); the variances of
        # fantasies are Monte Carlo estimates from 256 Sobol samples
        "tolerances": {"moments": 0.02, "conditioning": 0.05},
    },
}
