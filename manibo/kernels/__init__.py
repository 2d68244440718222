"""GPyTorch kernels on spaces.

Spectral Matérn/heat kernels (compact and non-compact spaces), zonal and arc-cosine kernels, the
homogeneous lift, and feature maps.
"""

from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.features import FeatureMap, feature_map
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.noncompact import NoncompactHeatKernel, NoncompactMaternKernel
from manibo.kernels.product import FactorProductKernel
from manibo.kernels.spectral import GeometricHeatKernel, GeometricMaternKernel
from manibo.kernels.zonal import ChordalMaternKernel, ZonalKernel

__all__ = [
    "ArcCosineKernel",
    "ChordalMaternKernel",
    "FactorProductKernel",
    "FeatureMap",
    "GeometricHeatKernel",
    "GeometricMaternKernel",
    "HomogeneousLiftKernel",
    "NoncompactHeatKernel",
    "NoncompactMaternKernel",
    "ZonalKernel",
    "feature_map",
]
