"""Geometry and spectra: each space knows its points, its geometry and (when compact) its levels."""

from manibo.spaces.base import CompactSpace, Space, UnsupportedError
from manibo.spaces.circle import Circle
from manibo.spaces.sphere import Sphere

__all__ = ["Circle", "CompactSpace", "Space", "Sphere", "UnsupportedError"]
