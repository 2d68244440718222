r"""Gegenbauer polynomials by their three-term recurrence.

The module also gives the constants of the addition theorem.

Conventions (ambient dimension ``d``, sphere :math:`S^{d-1}`, index :math:`\alpha = (d-2)/2`):

* :math:`C_n^\alpha` satisfies :math:`n C_n = 2t(n+\alpha-1) C_{n-1} - (n+2\alpha-2) C_{n-2}`.
* The *normalised* polynomial :math:`P_n = C_n^\alpha / C_n^\alpha(1)` has :math:`P_n(1) = 1` and
  obeys :math:`(n+2\alpha-1) P_n = 2t(n+\alpha-1) P_{n-1} - (n-1) P_{n-2}`, which also holds at
  :math:`\alpha = 0` where it is Chebyshev's :math:`T_n`. All evaluation goes through :math:`P_n`:
  it is bounded by 1 on :math:`[-1, 1]`, so the recurrence is stable in float32 and float64 (no
  monomial coefficients, which lose all accuracy beyond degree ~25).
* The level-:math:`n` reproducing kernel under the normalised surface measure is
  :math:`G_n(t) = N(d, n) P_n(t)` (addition theorem).
* :math:`P_n'(t) = \frac{n(n+2\alpha)}{2\alpha+1} P^{(\alpha+1)}_{n-1}(t)`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError


def _check_alpha(alpha: float) -> None:
    if not alpha >= 0:
        raise ConfigurationError(
            f"`alpha` must be >= 0, got {alpha}. For S^(d-1) use alpha = (d-2)/2."
        )


def _check_degree(n: int) -> None:
    if int(n) != n or n < 0:
        raise ConfigurationError(f"degrees must be non-negative integers, got {n}.")


def harmonic_dimension(d: int, n: int) -> int:
    r"""Number :math:`N(d, n)` of linearly independent degree-``n`` spherical harmonics.

    The harmonics are those on :math:`S^{d-1}`.

    Args:
        d: ambient dimension, ``d >= 2``.
        n: degree, ``n >= 0``.

    Returns:
        ``1`` for ``n = 0``, ``2`` on the circle (``d = 2``), ``2n+1`` on :math:`S^2`, in general
        :math:`\binom{n+d-1}{n} - \binom{n+d-3}{n-2}`.
    """
    if d < 2:
        raise ConfigurationError(f"`d` (ambient dimension) must be >= 2, got {d}.")
    _check_degree(n)
    if n == 0:
        return 1
    return math.comb(n + d - 1, n) - (math.comb(n + d - 3, n - 2) if n >= 2 else 0)


def degrees_with_float_dimension(d: int, limit: int = 10**8) -> int | None:
    r"""How many degrees ``n = 0, 1, ..`` have :math:`N(d, n)` below :math:`10^{300}`.

    :math:`N(d, n)` grows like :math:`n^{d-2}`: on :math:`S^{135}` it passes float64's range near
    degree 9,000, so a scan of the spectrum stops there. None when it stays below up to
    ``limit``.
    """

    def log_dimension(n: int) -> float:  # log N(d, n) = log((2n+d-2) (n+d-3)! / (n! (d-2)!))
        factorials = math.lgamma(n + d - 2) - math.lgamma(n + 1) - math.lgamma(d - 1)
        return math.log(2 * n + d - 2) + factorials

    bound = 300 * math.log(10)
    if d < 3 or log_dimension(limit) < bound:
        return None
    low, high = 1, limit  # log N(d, n) increases with n; low is below the bound, high above
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if log_dimension(middle) < bound else (low, middle)
    return high


def gegenbauer_at_one(n: int, alpha: float) -> float:
    r""":math:`C_n^\alpha(1) = (2\alpha)_n / n!` (zero for ``n >= 1`` when ``alpha = 0``)."""
    _check_alpha(alpha)
    _check_degree(n)
    if n == 0:
        return 1.0
    if alpha == 0:
        return 0.0
    return math.exp(math.lgamma(n + 2 * alpha) - math.lgamma(2 * alpha) - math.lgamma(n + 1))


def recurrence_coefficients(n: int, alpha: float) -> tuple[float, float]:
    r"""``(a, b)`` with :math:`P_n(t) = a\, t\, P_{n-1}(t) - b\, P_{n-2}(t)`, for ``n >= 2``."""
    return 2.0 * (n + alpha - 1) / (n + 2 * alpha - 1), (n - 1) / (n + 2 * alpha - 1)


def iter_normalized_gegenbauer(alpha: float, t: Tensor, inplace: bool = False):
    r"""Yield :math:`P_0(t), P_1(t), P_2(t), \dots` without end.

    Args:
        alpha: Gegenbauer index, ``>= 0``.
        t: arguments of any shape, expected in :math:`[-1, 1]`.
        inplace: when True the yielded tensors are reused buffers, valid only until the next step
            (for streaming sums without autograd); when False every yielded tensor is fresh.

    Yields:
        Tensors of the shape of ``t``.
    """
    _check_alpha(alpha)
    previous = torch.ones_like(t)
    yield previous
    current = t.clone()
    yield current
    n = 2
    while True:
        a, b = recurrence_coefficients(n, alpha)
        if inplace:
            previous.mul_(-b).addcmul_(t, current, value=a)
            previous, current = current, previous
        else:
            previous, current = current, a * t * current - b * previous
        yield current
        n += 1


def normalized_gegenbauer(n_max: int, alpha: float, t: Tensor) -> Tensor:
    r""":math:`P_n(t) = C_n^\alpha(t)/C_n^\alpha(1)` for ``n = 0..n_max``.

    Args:
        n_max: highest degree.
        alpha: Gegenbauer index, ``>= 0`` (``0`` gives Chebyshev :math:`T_n`).
        t: arguments, shape ``(*shape)``.

    Returns:
        Tensor of shape ``(*shape, n_max + 1)``; accurate to ~1e-14 in float64 up to
        ``n_max = 200``.
    """
    _check_degree(n_max)
    values = []
    for n, p in enumerate(iter_normalized_gegenbauer(alpha, t)):
        values.append(p)
        if n == n_max:
            break
    return torch.stack(values, dim=-1)


def gegenbauer(n_max: int, alpha: float, t: Tensor) -> Tensor:
    r"""Unnormalised :math:`C_n^\alpha(t)` for ``n = 0..n_max``, shape ``(*t.shape, n_max + 1)``."""
    p = normalized_gegenbauer(n_max, alpha, t)
    scale = torch.tensor(
        [gegenbauer_at_one(n, alpha) for n in range(n_max + 1)], dtype=t.dtype, device=t.device
    )
    return p * scale


def normalized_gegenbauer_derivative(n_max: int, alpha: float, t: Tensor) -> Tensor:
    r""":math:`P_n'(t)` for ``n = 0..n_max``, shape ``(*t.shape, n_max + 1)``.

    Uses :math:`P_n'(t) = \frac{n(n+2\alpha)}{2\alpha+1} P^{(\alpha+1)}_{n-1}(t)`.
    """
    _check_degree(n_max)
    derivative = [torch.zeros_like(t)]
    if n_max >= 1:
        shifted = normalized_gegenbauer(n_max - 1, alpha + 1, t)
        factor = torch.tensor(
            [n * (n + 2 * alpha) / (2 * alpha + 1) for n in range(1, n_max + 1)],
            dtype=t.dtype,
            device=t.device,
        )
        derivative.extend((shifted * factor).unbind(-1))
    return torch.stack(derivative, dim=-1)


def gegenbauer_derivative(n_max: int, alpha: float, t: Tensor) -> Tensor:
    r""":math:`\frac{d}{dt} C_n^\alpha(t) = 2\alpha C_{n-1}^{\alpha+1}(t)`.

    Returns shape ``(*t.shape, n_max + 1)``.
    """
    p = normalized_gegenbauer_derivative(n_max, alpha, t)
    scale = torch.tensor(
        [gegenbauer_at_one(n, alpha) for n in range(n_max + 1)], dtype=t.dtype, device=t.device
    )
    return p * scale


def addition_kernel(n_max: int, d: int, t: Tensor) -> Tensor:
    r"""Level reproducing kernels :math:`G_n(t) = N(d,n) P_n(t)` on :math:`S^{d-1}`.

    The levels are ``n = 0..n_max``. :math:`\sum_k Y_{n,k}(x) Y_{n,k}(y) = G_n(x \cdot y)` for
    harmonics orthonormal under the normalised surface measure. Returns shape
    ``(*t.shape, n_max + 1)``.
    """
    p = normalized_gegenbauer(n_max, (d - 2) / 2, t)
    dims = torch.tensor(
        [harmonic_dimension(d, n) for n in range(n_max + 1)], dtype=t.dtype, device=t.device
    )
    return p * dims
