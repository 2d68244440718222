r"""A Gaussian process over the detection field, with the prior belief as its prior mean and scale.

The quantity a search senses is the **detection field** :math:`f(s) = b(d(s, X))`: the probability
that a search at :math:`s` gets a contact from the object at :math:`X` (the sensor's lateral-range
curve centred on the object). It is flat (zero) except near the hidden object. What a search reports
in the end is whether it found the object (a contact that the investigation confirmed, probability
:math:`b\,c`); the GP observes :math:`z = \mathbb{1}\{\text{found}\}/c`, so that
:math:`E[z \mid X] = f(s)`. An unsuccessful search is :math:`z = 0`, a noisy observation of
:math:`f(s)`, not a proof that :math:`f(s) = 0` ("not seen" is not "absent"). An unconfirmed contact
also counts as :math:`z = 0`: with a confirmation probability near 1 it is almost no evidence either
way (its likelihood ratio is :math:`b(1-c) + (1-b)\alpha` against :math:`\alpha`).

Before any search, :math:`X` follows the prior :math:`p_0`, so :math:`f` is a random field with
mean :math:`m(s) = E_{p_0}[b(d(s, X))]` and variance :math:`a(s)^2 = E_{p_0}[b^2] - m^2`
(computed from the prior particles). The GP here matches these two moments:

.. math::
    f \sim \mathcal{GP}\bigl(m(s),\; a(s)\,a(s')\,c(s, s')\bigr),

with a correlation :math:`c` of lengthscale :math:`\sqrt{2}\rho/R` (the correlation of two
Gaussian beams of width :math:`\rho`) and, for each observation, the noise variance of the
best *linear* update, :math:`E_{p_0}[\mathrm{Var}(z \mid X)] = m/c - E_{p_0}[b^2]`. With this noise
a search that finds nothing at :math:`s` lowers the mean there by the factor
:math:`\approx 1 - c\,p_{\max}/2` where the prior is locally flat, as the exact update
:math:`p \propto p(1 - bc)` does (two misses: 0.42 against the exact 0.41, for
:math:`c = 0.95, p_{\max} = 0.85`).
No hyperparameter is fitted: all of them follow from the sensor physics and the prior.

The GP takes points in the comoving frame of the drift (see :mod:`manibo.search.drift`); the
correlation is either the zonal squared-exponential kernel on :math:`S^2`
(:class:`~manibo.kernels.ChordalMaternKernel` with :math:`\nu = \infty`,
:math:`c = \exp(-(1 - s\cdot s')/\ell^2)`, positive definite and rotation invariant) or, for the
baseline, the same squared exponential on latitude/longitude (:class:`~manibo.models.ChartKernel`).
"""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from gpytorch.kernels import Kernel, RBFKernel
from gpytorch.means import Mean
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.kernels.zonal import ChordalMaternKernel
from manibo.models.euclidean import ChartKernel
from manibo.search.geography import EARTH_RADIUS_KM, GLOBE, check_points, pairwise_distance_km
from manibo.search.sensor import Sensor

#: Floor of the observation noise variance (keeps the Gram matrix well conditioned).
MIN_NOISE_VARIANCE = 1e-6
_CHUNK_ELEMENTS = 1 << 21
CORRELATIONS = ("sphere", "latlon")


class DetectionFieldFeatures(InputTransform):
    r"""Input transform appending the field's prior mean :math:`m(s)` and scale :math:`a(s)`.

    Points ``(*batch, n, 3)`` become ``(*batch, n, 5)``: the point, then :math:`m`, then :math:`a`.

    Args:
        particles: prior samples in the comoving frame, ``(N, 3)``.
        sensor: the detection model.
    """

    def __init__(self, particles: Tensor, sensor: Sensor) -> None:
        super().__init__()
        check_points("particles", particles)
        self.register_buffer("particles", particles)
        self.sensor = sensor
        self.transform_on_train = True
        self.transform_on_eval = True
        self.transform_on_fantasize = True

    def moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Prior moments :math:`E f, E f^2` at ``x`` (``(*batch, n, 3)``); each ``(*batch, n)``."""
        flat = x.reshape(-1, 3)
        if flat.shape[0] == 0:
            return x.new_zeros(x.shape[:-1]), x.new_zeros(x.shape[:-1])
        rows = max(1, _CHUNK_ELEMENTS // (3 * self.particles.shape[0]))
        first, second = [], []
        for start in range(0, flat.shape[0], rows):
            b = self.sensor.detection_probability(
                pairwise_distance_km(flat[start : start + rows], self.particles)
            )
            first.append(b.mean(-1))
            second.append((b * b).mean(-1))
        shape = x.shape[:-1]
        return torch.cat(first).reshape(shape), torch.cat(second).reshape(shape)

    def transform(self, X: Tensor) -> Tensor:
        """Append ``[m, a]`` to every point: ``(*batch, n, 3)`` → ``(*batch, n, 5)``."""
        mean, second = self.moments(X)
        variance = (second - mean**2).clamp_min(0)
        scale = torch.where(variance > 0, variance, torch.ones_like(variance)).sqrt()
        scale = torch.where(variance > 0, scale, torch.zeros_like(variance))
        return torch.cat([X, mean.unsqueeze(-1), scale.unsqueeze(-1)], dim=-1)

    def noise_variance(self, x: Tensor) -> Tensor:
        r"""Variance of the best linear update's noise at ``x`` (``(n, 3)``); returns ``(n,)``."""
        mean, second = self.moments(x)
        confirm = max(self.sensor.confirm_pod, 1e-12)
        return (mean / confirm - second).clamp_min(MIN_NOISE_VARIANCE)


class FeatureMean(Mean):
    """The prior mean read from the features: input ``(*batch, n, 5)``, output ``(*batch, n)``."""

    def forward(self, x: Tensor) -> Tensor:
        """Column 3 of the transformed inputs (the prior mean :math:`m`)."""
        return x[..., 3]


class ModulatedKernel(Kernel):
    r""":math:`k(s, s') = a(s)\, a(s')\, c(s, s')` on transformed inputs ``(*batch, n, 5)``.

    Scaling a positive-definite correlation by a function on both sides keeps it positive definite.

    Args:
        correlation: kernel on the points (the first three columns).
    """

    def __init__(self, correlation: Kernel) -> None:
        super().__init__()
        self.correlation = correlation

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        """Gram matrix ``(*batch, n, m)`` (or its diagonal ``(*batch, n)``)."""
        c = self.correlation.forward(x1[..., :3], x2[..., :3], diag=diag)
        a1, a2 = x1[..., 4], x2[..., 4]
        if diag:
            return a1 * c * a2
        return a1.unsqueeze(-1) * c * a2.unsqueeze(-2)


def correlation_kernel(kind: str, sensor: Sensor, dtype=torch.float64, device=None) -> Kernel:
    r"""The correlation :math:`c` with lengthscale :math:`\sqrt{2}\rho/R` (radians), fixed.

    Args:
        kind: ``"sphere"`` (zonal squared exponential on :math:`S^2`) or ``"latlon"`` (squared
            exponential on latitude/longitude in radians, the Euclidean baseline).
        sensor: supplies :math:`\rho`.
    """
    lengthscale = math.sqrt(2) * sensor.range_km / EARTH_RADIUS_KM
    if kind == "sphere":
        kernel = ChordalMaternKernel(GLOBE, nu=math.inf)
        target = kernel
    elif kind == "latlon":
        target = RBFKernel()
        kernel = ChartKernel(GLOBE, target)
    else:
        raise ConfigurationError(f"`kind` must be one of {CORRELATIONS}, got {kind!r}.")
    target.lengthscale = lengthscale
    target.raw_lengthscale.requires_grad_(False)
    return kernel.to(dtype=dtype, device=device)


def detection_field_gp(
    points: Tensor, observations: Tensor, features: DetectionFieldFeatures, correlation: Kernel
) -> SingleTaskGP:
    """The GP of the detection field conditioned on searches (no hyperparameter fitting).

    Args:
        points: searched points in the comoving frame, ``(n, 3)`` (``n`` may be 0).
        observations: ``z = 1{found} / c`` of each search, ``(n,)``.
        features: the prior moments (also the model's input transform).
        correlation: from :func:`correlation_kernel`.

    Returns:
        A BoTorch ``SingleTaskGP`` on comoving points ``(*batch, q, 3)``, in eval mode.
    """
    noise = features.noise_variance(points) if points.shape[0] else points.new_zeros(0)
    model = SingleTaskGP(
        points,
        observations.unsqueeze(-1),
        train_Yvar=noise.unsqueeze(-1),
        covar_module=ModulatedKernel(correlation),
        mean_module=FeatureMean(),
        input_transform=features,
        outcome_transform=None,
    )
    return model.eval()
