"""Pure maths on tensors: Gegenbauer polynomials, Funk–Hecke coefficients, spherical harmonics."""

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

__all__ = [
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
