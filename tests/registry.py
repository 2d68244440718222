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
from manibo.kernels import GeometricMaternKernel, matern_kernel


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
    "so2": lambda: spaces.SpecialOrthogonal(2),
    "so3": lambda: spaces.SpecialOrthogonal(3),
    "so4": lambda: spaces.SpecialOrthogonal(4),
    "so5": lambda: spaces.SpecialOrthogonal(5),
    "su2": lambda: spaces.SpecialUnitary(2),
    "su3": lambda: spaces.SpecialUnitary(3),
    "rp2": lambda: spaces.RealProjectiveSpace(2),
    "rp3": lambda: spaces.RealProjectiveSpace(3),
    "grassmann24": lambda: spaces.Grassmann(2, 4),
    "grassmann35": lambda: spaces.Grassmann(3, 5),
    "product_sphere_circle": lambda: spaces.ProductSpace(spaces.Sphere(2), spaces.Circle()),
    "product_sphere_box": lambda: spaces.ProductSpace(spaces.Sphere(2), spaces.Box([0.0], [3.0])),
    "se3": lambda: spaces.SE3([-1.0, -1.0, 0.0], [1.0, 1.0, 2.0]),
    "box": lambda: spaces.Box([-1.0, 0.0], [1.0, 5.0]),
    "graph": _small_graph,
    "mesh": lambda: spaces.Mesh.icosphere(1),
    "hyperbolic2": lambda: spaces.Hyperbolic(2),
    "hyperbolic3": lambda: spaces.Hyperbolic(3),
    "spd2": lambda: spaces.SymmetricPositiveDefinite(2, eigenvalue_bounds=(0.1, 10.0)),
}

# the geometry contract only: a space without a spectrum, and graphs of closed-form spectra
# (their kernels are tested against closed forms in tests/spaces/test_integers.py and
# test_categorical.py) in a product with a manifold
OTHER_SPACES = {
    "box": lambda: spaces.Box([-1.0, 0.0, 2.0], [1.0, 3.0, 2.5]),
    "integers": lambda: spaces.Integers(-2, 9),
    "categorical": lambda: spaces.Categorical(4),
    "product_sphere_integers_categorical": lambda: spaces.ProductSpace(
        spaces.Sphere(2), spaces.Integers(1, 8), spaces.Categorical(3)
    ),
}

# a (nu, num_levels) per kernel flavour; None levels = automatic truncation
KERNELS = {
    "matern12": (0.5, 30),
    "matern52": (2.5, None),
    "heat": (math.inf, None),
}


def make_kernel(space, flavour: str):
    """The flavour's kernel: geometric Matérn on compact spaces, the default Matérn kernel
    (``matern_kernel``: Matérn per coordinate on boxes, products of factor kernels) otherwise."""
    nu, levels = KERNELS[flavour]
    if not isinstance(space, spaces.CompactSpace):
        kernel = matern_kernel(space, nu=nu)
        for factor in getattr(kernel, "factor_kernels", [kernel]):
            factor.lengthscale = 0.7
        return kernel
    if levels is not None and space.num_levels_available:
        levels = min(levels, space.num_levels_available)
    kernel = GeometricMaternKernel(space, nu=nu, num_levels=levels)
    kernel.lengthscale = 0.7
    return kernel


def surrogate_kernel(space):
    """Matérn-5/2 for BoTorch tests: at most 20 levels on compact spaces; elsewhere the default
    kernel (non-compact spaces, boxes, and products with a box: the factors' kernels)."""
    if not isinstance(space, spaces.CompactSpace):
        return matern_kernel(space, nu=2.5)
    return GeometricMaternKernel(
        space, nu=2.5, num_levels=min(20, space.num_levels_available or 20)
    )


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
    "BoxMaternKernel": lambda: (
        s := spaces.Box([-1.0, 0.0], [1.0, 5.0]),
        kernels.BoxMaternKernel(s, nu=1.5),
    ),
    "NoncompactMaternKernel": lambda: (
        s := spaces.Hyperbolic(3),
        kernels.NoncompactMaternKernel(s, nu=1.5),
    ),
    "NoncompactHeatKernel": lambda: (
        s := spaces.SymmetricPositiveDefinite(2, eigenvalue_bounds=(0.1, 10.0)),
        kernels.NoncompactHeatKernel(s),
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
    "chart": {
        # its ARD lengthscales (one per chart coordinate: 3 on SO(3)) are fitted by L-BFGS, whose
        # stopping point moves by a few 1e-6 of the outcomes' standard deviation when the
        # standardised data differ in their last bits (3.4e-6 on SO(3) with scipy 1.17)
        "tolerances": {"transform": 1e-5},
    },
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
