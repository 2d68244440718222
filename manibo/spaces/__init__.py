"""Geometry and spectra: each space knows its points, its geometry and its Laplacian's spectrum."""

from manibo.spaces.base import CompactSpace, NoncompactSpace, Space, UnsupportedError
from manibo.spaces.box import Box
from manibo.spaces.circle import Circle
from manibo.spaces.graph import Graph
from manibo.spaces.hyperbolic import Hyperbolic
from manibo.spaces.mesh import Mesh
from manibo.spaces.product import ProductSpace, Torus
from manibo.spaces.spd import SymmetricPositiveDefinite
from manibo.spaces.special_orthogonal import SpecialOrthogonal
from manibo.spaces.sphere import Sphere

__all__ = [
    "Box",
    "Circle",
    "CompactSpace",
    "Graph",
    "Hyperbolic",
    "Mesh",
    "NoncompactSpace",
    "ProductSpace",
    "Space",
    "SpecialOrthogonal",
    "Sphere",
    "SymmetricPositiveDefinite",
    "Torus",
    "UnsupportedError",
]
