"""Default priors and constraints of the surrogates, in one place.

Every surrogate whose hyperparameters are a kernel variance, a geodesic lengthscale and a Gaussian
noise variance takes them from here, so that the exact GPs, VISH and GPNet's pretraining start from
the same beliefs. The outcomes are standardised (BoTorch's ``Standardize``) before these priors
apply, so they are in units of the outcomes' standard deviation.
"""

from __future__ import annotations

import math

from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior

MIN_NOISE = 1e-6
"""Smallest noise variance of the standardised outcomes."""


class MovableLogNormalPrior(LogNormalPrior):
    """GPyTorch's :class:`~gpytorch.priors.LogNormalPrior` whose samples follow ``.to()``.

    GPyTorch's moves the buffered ``loc`` and ``scale`` to another device or dtype but samples from
    the copies held by its base normal distribution, which stay where they were made: a model moved
    to CUDA drew its prior samples on the CPU, and BoTorch's fitting, which restarts from prior
    samples after a failed attempt, stopped with "Expected all tensors to be on the same device".
    """

    def _apply(self, fn, *args, **kwargs):
        moved = super()._apply(fn, *args, **kwargs)
        self.base_dist.loc, self.base_dist.scale = self._buffered_loc, self._buffered_scale
        return moved


def lengthscale_prior(median: float = 1.0) -> MovableLogNormalPrior:
    """A broad prior on the geodesic lengthscale.

    Median ``median`` (default 1, a radian on spheres; a space's ``length_unit``), 95% within
    ``[0.14, 7]`` times it.
    """
    return MovableLogNormalPrior(loc=math.log(median), scale=1.0)


def in_length_unit(kernel: Kernel, unit: float) -> Kernel:
    """``kernel`` with its initial lengthscale (GPyTorch's 0.69) multiplied by a space's
    ``length_unit``, as :func:`lengthscale_prior` with ``median=unit`` scales the prior, so that
    the fit starts where it would on the space in units of 1."""
    if unit != 1.0:
        kernel.lengthscale = kernel.lengthscale.detach() * unit
    return kernel


def outputscale_prior() -> GammaPrior:
    """The prior on the kernel variance of standardised outcomes: Gamma(2, 0.15), mean 13."""
    return GammaPrior(2.0, 0.15)


def noise_prior() -> MovableLogNormalPrior:
    """The prior on the noise variance of standardised outcomes: median e⁻⁴ ≈ 0.018."""
    return MovableLogNormalPrior(loc=-4.0, scale=1.0)


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
