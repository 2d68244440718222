r"""Independent references for kernels on non-compact spaces, from their spectral definitions.

Everything here is plain NumPy/SciPy and shares no code with :mod:`manibo.harmonics.hyperbolic`,
:mod:`manibo.spaces.hyperbolic`, :mod:`manibo.spaces.spd` or :mod:`manibo.kernels.noncompact`:

* spherical functions of :math:`H^d` from the Mehler–Koornwinder integral
  :math:`\varphi_\lambda(r) = C_d \sinh^{2-d} r \int_0^r \cos(\lambda s)
  (\cosh r - \cosh s)^{(d-3)/2} ds` (Gauss–Jacobi quadrature);
* the Plancherel density of :math:`H^d` from Harish-Chandra's formula
  :math:`|c(\lambda)|^{-2} \propto |\Gamma(i\lambda + \rho)/\Gamma(i\lambda)|^2`;
* kernels :math:`k(r) \propto \int_0^\infty S(\lambda)\varphi_\lambda(r)|c(\lambda)|^{-2}d\lambda`
  by Gauss–Legendre quadrature in :math:`\lambda`;
* kernels on :math:`\mathrm{SPD}(2) \cong \mathbb R \times H^2`: the determinant direction
  :math:`u = \log\det X / \sqrt 2` is Euclidean and the unimodular part is the hyperbolic plane
  with its metric doubled, so the shifted eigenvalues are :math:`\omega^2 + \mu^2/2` and the kernel
  is :math:`\int\int S(\omega^2 + \mu^2/2)\cos(\omega u)\varphi^{H^2}_\mu(r)\,\mu\tanh(\pi\mu)
  \,d\mu\,d\omega` (the :math:`\omega`-integral in closed form with Bessel functions).

Accurate to about :math:`10^{-8}` on :math:`H^d` and :math:`10^{-6}` on :math:`\mathrm{SPD}(2)` for
:math:`\nu \ge 3/2` or the heat kernel and distances up to about 5 (slow spectral tails limit
smaller :math:`\nu`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

_PANELS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
_GAUSS = np.polynomial.legendre.leggauss(48)


def _frequency_nodes(scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre nodes and weights on ``[0, 1024 * scale]``."""
    x, w = _GAUSS
    nodes, weights = [], []
    for a, b in zip(_PANELS[:-1], _PANELS[1:], strict=True):
        nodes.append(scale * (a + (b - a) * (x + 1) / 2))
        weights.append(scale * (b - a) / 2 * w)
    return np.concatenate(nodes), np.concatenate(weights)


@functools.lru_cache(maxsize=64)
def _jacobi_rule(nodes: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Gauss–Jacobi nodes and weights for the weight :math:`(1 - x)^\alpha` (read-only: shared
    by every call, 0.2 s to compute for 2000 nodes)."""
    x, w = special.roots_jacobi(nodes, alpha, 0.0)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def hyperbolic_spherical_function(lam: np.ndarray, r: float, d: int, nodes: int = 2000):
    r""":math:`\varphi_\lambda(r)` on :math:`H^d`, ``lam`` ``(M,)`` → ``(M,)``."""
    lam = np.asarray(lam, dtype=np.float64)
    if r == 0:
        return np.ones_like(lam)
    alpha = (d - 3) / 2
    x, w = _jacobi_rule(nodes, alpha)
    s = r * (1 + x) / 2
    quarter = r * (1 - x) / 4
    sinhc = np.where(quarter > 0, np.sinh(quarter) / np.where(quarter > 0, quarter, 1), 1.0)
    g = 2 * np.sinh((r + s) / 2) * (r / 4) * sinhc  # (cosh r - cosh s) / (1 - x)
    constant = 2 ** ((d - 1) / 2) * math.gamma(d / 2)
    constant /= math.sqrt(math.pi) * math.gamma((d - 1) / 2)
    integral = (np.cos(np.outer(lam, s)) * g**alpha) @ w * (r / 2)
    return constant * math.sinh(r) ** (2 - d) * integral


def hyperbolic_log_plancherel(lam: np.ndarray, d: int) -> np.ndarray:
    r""":math:`\log|\Gamma(i\lambda + \rho)/\Gamma(i\lambda)|^2` on :math:`H^d`."""
    z = 1j * np.asarray(lam, dtype=np.float64)
    return 2 * np.real(special.loggamma(z + (d - 1) / 2) - special.loggamma(z))


def _log_spectrum(eigen: np.ndarray, nu: float, ell: float, d: float) -> np.ndarray:
    if math.isinf(nu):
        return -0.5 * ell**2 * eigen
    return -(nu + d / 2) * np.log(2 * nu / ell**2 + eigen)


def hyperbolic_kernel(d: int, nu: float, ell: float, distances, shifted: bool = True) -> np.ndarray:
    """The normalised Matérn (or heat, ``nu = inf``) kernel of :math:`H^d` at ``distances``."""
    rho2 = ((d - 1) / 2) ** 2
    scale = 1 / ell if math.isinf(nu) else math.sqrt(2 * nu / ell**2 + (0 if shifted else rho2))
    lam, weights = _frequency_nodes(max(scale, 1.0) / 8)
    eigen = lam**2 + (0.0 if shifted else rho2)
    log_w = _log_spectrum(eigen, nu, ell, d) + hyperbolic_log_plancherel(lam, d)
    w = np.exp(log_w - log_w.max()) * weights
    values = [w @ hyperbolic_spherical_function(lam, float(r), d) for r in np.ravel(distances)]
    return np.reshape(np.array(values) / w.sum(), np.shape(distances))


def spd2_coordinates(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    r"""``(u, r)`` of two :math:`2\times 2` SPD matrices: the difference of
    :math:`\log\det/\sqrt 2` and the :math:`H^2` distance of their unimodular parts."""
    chol = np.linalg.cholesky(x)
    whitened = np.linalg.solve(chol, np.linalg.solve(chol, y).T)  # L^-1 y L^-T
    logs = np.log(np.linalg.eigvalsh(0.5 * (whitened + whitened.T)))
    return float(logs.sum() / math.sqrt(2)), float(abs(logs[1] - logs[0]) / 2)


def spd2_kernel(nu: float, ell: float, x: np.ndarray, y: np.ndarray) -> float:
    r"""The normalised shifted Matérn (or heat) kernel of :math:`\mathrm{SPD}(2)` at two matrices.

    Args:
        nu: smoothness (``inf`` for heat).
        ell: lengthscale, for the affine-invariant metric :math:`\operatorname{tr}((X^{-1}dX)^2)`.
        x, y: SPD matrices ``(2, 2)``.
    """
    u, r = spd2_coordinates(x, y)
    u = abs(u)
    scale = 1 / ell if math.isinf(nu) else math.sqrt(2 * nu) / ell
    mu, weights = _frequency_nodes(max(scale, 1.0) / 16)  # up to 64 times the spectral scale
    density = mu * np.tanh(np.pi * mu) * weights
    # resolves cos(mu s) for s <= r; rounded up to a multiple of 250, so that few rules are built
    nodes = int(min(2000, 250 * math.ceil((60 + 1.5 * mu.max() * r) / 250)))
    phi = hyperbolic_spherical_function(mu, r, 2, nodes)
    if math.isinf(nu):
        w = np.exp(-(ell**2) / 4 * mu**2) * density
        return math.exp(-(u**2) / (2 * ell**2)) * float(w @ phi / w.sum())
    a2 = 2 * nu / ell**2 + mu**2 / 2
    at_zero = a2 ** (-nu - 1)  # the omega-integral at u = 0, up to a common constant
    if u == 0:
        profile = at_zero
    else:
        root = np.sqrt(a2)
        ratio = 2 / special.gamma(nu + 1)  # the closed form over its value at u = 0
        profile = ratio * (u / (2 * root)) ** (nu + 1) * special.kv(nu + 1, root * u)
    return float((profile * density) @ phi / (at_zero * density).sum())
