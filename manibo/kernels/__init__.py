"""GPyTorch kernels on spaces.

Spectral Matérn/heat, zonal and arc-cosine kernels, and the homogeneous lift.
"""

from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricHeatKernel, GeometricMaternKernel
from manibo.kernels.zonal import ChordalMaternKernel, ZonalKernel

__all__ = [
    "ArcCosineKernel",
    "ChordalMaternKernel",
    "FactorProductKernel",
    "GeometricHeatKernel",
    "GeometricMaternKernel",
    "HomogeneousLiftKernel",
    "ZonalKernel",
]
