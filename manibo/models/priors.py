"""Default priors and constraints of the surrogates, in one place.

Every surrogate whose hyperparameters are a kernel variance, a geodesic lengthscale and a Gaussian
noise variance takes them from here, so that the exact GPs, VISH and GPNet's pretraining start from
the same beliefs. The outcomes are standardised (BoTorch's ``Standardize``) before these priors
apply, so they are in units of the outcomes' standard deviation.
"""

from __future__ import annotations

from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior

MIN_NOISE = 1e-6
"""Smallest noise variance of the standardised outcomes."""


def lengthscale_prior() -> LogNormalPrior:
    """A broad prior on the geodesic lengthscale.

    Median 1 (a radian on spheres), 95% in [0.14, 7].
    """
    return LogNormalPrior(loc=0.0, scale=1.0)


def outputscale_prior() -> GammaPrior:
    """The prior on the kernel variance of standardised outcomes: Gamma(2, 0.15), mean 13."""
    return GammaPrior(2.0, 0.15)


def noise_prior() -> LogNormalPrior:
    """The prior on the noise variance of standardised outcomes: median e⁻⁴ ≈ 0.018."""
    return LogNormalPrior(loc=-4.0, scale=1.0)


def scaled_kernel(base: Kernel) -> ScaleKernel:
    """``ScaleKernel(base)`` with :func:`outputscale_prior` on its variance; a ``base`` that is
    already a ``ScaleKernel`` is returned as it is (wrapping it again made two outputscales, of
    which only the product is identifiable)."""
    if isinstance(base, ScaleKernel):
        return base
    return ScaleKernel(base, outputscale_prior=outputscale_prior())


def gaussian_likelihood(with_prior: bool = True) -> GaussianLikelihood:
    """A Gaussian likelihood whose noise variance stays above :data:`MIN_NOISE`.

    Args:
        with_prior: put :func:`noise_prior` on the noise (the surrogates do; a bare likelihood for
            models fitted without hyperpriors does not).
    """
    return GaussianLikelihood(
        noise_prior=noise_prior() if with_prior else None,
        noise_constraint=GreaterThan(MIN_NOISE),
    )
