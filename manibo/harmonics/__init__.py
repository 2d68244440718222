"""Pure maths on tensors: Gegenbauer polynomials, Funk–Hecke coefficients, spherical harmonics."""

from manibo.harmonics.funk_hecke import (
    arc_cosine_eigenvalues,
    funk_hecke,
    funk_hecke_constant,
    relu_coefficients,
    step_coefficients,
)
from manibo.harmonics.gegenbauer import (
    addition_kernel,
    gegenbauer,
    gegenbauer_at_one,
    gegenbauer_derivative,
    harmonic_dimension,
    iter_normalized_gegenbauer,
    normalized_gegenbauer,
    normalized_gegenbauer_derivative,
)
from manibo.harmonics.series import GegenbauerLevels, LevelRecurrence, level_series
from manibo.harmonics.spherical_harmonics import (
    fundamental_system,
    harmonic_level_index,
    harmonic_transform,
    spherical_harmonics,
    zonal_features,
)

__all__ = [
    "arc_cosine_eigenvalues",
    "fundamental_system",
    "funk_hecke",
    "funk_hecke_constant",
    "harmonic_level_index",
    "harmonic_transform",
    "relu_coefficients",
    "spherical_harmonics",
    "step_coefficients",
    "zonal_features",
    "GegenbauerLevels",
    "LevelRecurrence",
    "addition_kernel",
    "gegenbauer",
    "gegenbauer_at_one",
    "gegenbauer_derivative",
    "harmonic_dimension",
    "iter_normalized_gegenbauer",
    "level_series",
    "normalized_gegenbauer",
    "normalized_gegenbauer_derivative",
]
