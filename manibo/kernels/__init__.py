"""GPyTorch kernels on spaces.

Spectral Matérn/heat, zonal and arc-cosine kernels, the homogeneous lift, Matérn on boxes, products
of factor kernels, and the default Matérn kernel of every space.
"""

from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.box import BoxMaternKernel
from manibo.kernels.defaults import matern_kernel
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricHeatKernel, GeometricMaternKernel
from manibo.kernels.zonal import ChordalMaternKernel, ZonalKernel

__all__ = [
    "ArcCosineKernel",
    "BoxMaternKernel",
    "ChordalMaternKernel",
    "FactorProductKernel",
    "GeometricHeatKernel",
    "GeometricMaternKernel",
    "HomogeneousLiftKernel",
    "ZonalKernel",
    "matern_kernel",
]
