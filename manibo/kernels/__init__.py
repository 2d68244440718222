"""GPyTorch kernels on spaces.

Spectral Matérn/heat kernels (compact and non-compact spaces), zonal and arc-cosine kernels, the
homogeneous lift, Matérn on boxes, products of factor kernels, the default Matérn kernel of every
space, and feature maps.
"""

from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.box import BoxMaternKernel
from manibo.kernels.defaults import matern_kernel
from manibo.kernels.features import (
    AdditionTheoremFeatureMap,
    FeatureMap,
    KernelFeatureMap,
    ProductFeatureMap,
    ScaledFeatureMap,
    feature_map,
)
from manibo.kernels.fourier_features import RandomFourierFeatureMap
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.noncompact import NoncompactHeatKernel, NoncompactMaternKernel
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricHeatKernel, GeometricMaternKernel
from manibo.kernels.zonal import ChordalMaternKernel, ZonalKernel

__all__ = [
    "AdditionTheoremFeatureMap",
    "ArcCosineKernel",
    "BoxMaternKernel",
    "ChordalMaternKernel",
    "FactorProductKernel",
    "FeatureMap",
    "GeometricHeatKernel",
    "GeometricMaternKernel",
    "HomogeneousLiftKernel",
    "KernelFeatureMap",
    "NoncompactHeatKernel",
    "NoncompactMaternKernel",
    "ProductFeatureMap",
    "RandomFourierFeatureMap",
    "ScaledFeatureMap",
    "ZonalKernel",
    "feature_map",
    "matern_kernel",
]
