"""The registry of spaces and kernels that the contract tests run over: one line adds a space."""

from __future__ import annotations

import math

import torch

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
    "product_sphere_circle": lambda: spaces.ProductSpace(spaces.Sphere(2), spaces.Circle()),
    "product_sphere_box": lambda: spaces.ProductSpace(spaces.Sphere(2), spaces.Box([0.0], [3.0])),
    "se3": lambda: spaces.SE3([-1.0, -1.0, 0.0], [1.0, 1.0, 2.0]),
    "box": lambda: spaces.Box([-1.0, 0.0], [1.0, 5.0]),
    "graph": _small_graph,
    "mesh": lambda: spaces.Mesh.icosphere(1),
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
