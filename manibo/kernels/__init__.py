"""GPyTorch kernels on spaces: spectral Matérn/heat, zonal and arc-cosine kernels, the homogeneous lift."""

from manibo.kernels.spectral import GeometricHeatKernel, GeometricMaternKernel

__all__ = ["GeometricHeatKernel", "GeometricMaternKernel"]
