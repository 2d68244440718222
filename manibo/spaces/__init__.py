"""Geometry and spectra: each space knows its points, its geometry and its Laplacian's spectrum.

``make_space("sphere2*circle")`` builds a space from a short spec (as ``manibo run --space``
takes it); ``register_space`` adds one; ``available_spaces()`` lists the specs.
"""

from manibo.spaces.base import CompactSpace, NoncompactSpace, Space, UnsupportedError
from manibo.spaces.box import Box
from manibo.spaces.categorical import Categorical
from manibo.spaces.circle import Circle
from manibo.spaces.graph import Graph
from manibo.spaces.grassmann import Grassmann
from manibo.spaces.hyperbolic import Hyperbolic, poincare_to_hyperboloid
from manibo.spaces.integers import Integers
from manibo.spaces.mesh import Mesh
from manibo.spaces.product import CompactProductSpace, ProductSpace, Torus
from manibo.spaces.projective import RealProjectiveSpace
from manibo.spaces.registry import available_spaces, make_space, register_space
from manibo.spaces.se3 import SE3
from manibo.spaces.spd import SymmetricPositiveDefinite
from manibo.spaces.special_orthogonal import (
    SpecialOrthogonal,
    quaternion_to_rotation,
    rotation_to_quaternion,
)
from manibo.spaces.special_unitary import SpecialUnitary
from manibo.spaces.sphere import Sphere

__all__ = [
    "Box",
    "Categorical",
    "Circle",
    "CompactProductSpace",
    "CompactSpace",
    "Graph",
    "Hyperbolic",
    "Integers",
    "Mesh",
    "NoncompactSpace",
    "ProductSpace",
    "Grassmann",
    "RealProjectiveSpace",
    "SE3",
    "Space",
    "SpecialOrthogonal",
    "SpecialUnitary",
    "Sphere",
    "SymmetricPositiveDefinite",
    "Torus",
    "UnsupportedError",
    "available_spaces",
    "make_space",
    "poincare_to_hyperboloid",
    "quaternion_to_rotation",
    "register_space",
    "rotation_to_quaternion",
]
