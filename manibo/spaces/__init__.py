"""Geometry and spectra: each space knows its points, its geometry and (when compact) its levels.

``make_space("sphere2*circle")`` builds a space from a short spec (as ``manibo run --space``
takes it); ``register_space`` adds one; ``available_spaces()`` lists the specs.
"""

from manibo.spaces.base import CompactSpace, Space, UnsupportedError
from manibo.spaces.box import Box
from manibo.spaces.circle import Circle
from manibo.spaces.graph import Graph
from manibo.spaces.mesh import Mesh
from manibo.spaces.product import ProductSpace, Torus
from manibo.spaces.registry import available_spaces, make_space, register_space
from manibo.spaces.special_orthogonal import SpecialOrthogonal
from manibo.spaces.sphere import Sphere

__all__ = [
    "Box",
    "Circle",
    "CompactSpace",
    "Graph",
    "Mesh",
    "ProductSpace",
    "Space",
    "SpecialOrthogonal",
    "Sphere",
    "Torus",
    "UnsupportedError",
    "available_spaces",
    "make_space",
    "register_space",
]
