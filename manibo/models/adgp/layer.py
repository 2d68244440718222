r"""One activated GP layer: a sparse variational GP whose basis functions are network activations.

The input :math:`h \in \mathbb R^D` is lifted to :math:`\tilde x = [h, b] \in \mathbb R^d`,
:math:`d = D + 1` (bias :math:`b > 0`), and the kernel is the homogeneous extension of a
zonal kernel on :math:`S^D`,
:math:`k(\tilde x, \tilde x') = \sigma_k^2 \|\tilde x\|\|\tilde x'\|\kappa(\hat z
\cdot \hat z')` with Funk–Hecke eigenvalues :math:`\lambda_n`. Unit :math:`m` has weights
:math:`w_m \in \mathbb R^d` and the activated inducing variable
:math:`u_m = \langle f, g_m\rangle_{\mathcal H}` (Dutordoir 2021, §4.3):

* :math:`K_{uf}[m, x] = g_m(\tilde x)`, the activation itself (reproducing property);
* :math:`K_{uu}[m, m'] = \|w_m\|\|w_{m'}\| \sum_{n<L} \frac{\sigma_n^2}{\sigma_k^2\lambda_n}
  G_n(\hat w_m\cdot\hat w_{m'})`, truncated at ``num_levels`` :math:`L`; levels where
  :math:`\sigma_n = 0` are dropped by parity, and a level with :math:`\sigma_n \ne 0` but
  :math:`\lambda_n = 0` (the activation is not in the RKHS) is an error.

Decisions (where the references leave a choice):

* **Exact activation in** :math:`K_{uf}`. The layer mean is then exactly the network layer
  :math:`\sum_m V_m g_m(\tilde x)` with the plain activation. The price: with a truncated
  :math:`K_{uu}` the Nyström term :math:`Q_{ff}` is not guaranteed to stay below :math:`K_{ff}`, so
  the conditional variance :math:`K_{ff} - Q_{ff}` is clamped at 0. For softplus the truncation
  is harmless: the RKHS norm beyond :math:`L = 20` is 1.2e-8 of the total for :math:`\beta = 3`
  on :math:`S^{13}` and below 1e-12 for :math:`\beta = 1` on :math:`S^4`. For ReLU the truncated
  norm grows without bound and the clamp can bind (a test shows it at :math:`L = 2`).
* **Mean parametrised by the read-out weights** :math:`V`. Each of the ``P`` outputs has an
  independent whitened :math:`q(v_j) = \mathcal N(L_{uu}^\top V_j, R_j R_j^\top)`,
  :math:`u_j = L_{uu} v_j`, so :math:`m_u = K_{uu} V` holds for every value of the hyperparameters
  and the layer mean
  :math:`K_{fu}K_{uu}^{-1}m_u = K_{fu} V` is the network layer before, during and after ELBO
  training. Same variational family as a free :math:`m_v`; only the coordinates differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from gpytorch.constraints import Positive
from gpytorch.module import Module
from gpytorch.utils.transforms import inv_softplus
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor, nn
from torch.nn import functional

from manibo.exceptions import ConfigurationError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.harmonics.series import GegenbauerLevels, level_series
from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.zonal import ZonalKernel
from manibo.models.adgp.activations import Activation, make_activation
from manibo.spaces.base import safe_sqrt
from manibo.spaces.sphere import Sphere

KernelFactory = Callable[[Sphere], ZonalKernel]


def _relative_jitter(dtype: torch.dtype) -> float:
    return 1e-10 if dtype == torch.float64 else 1e-6


@dataclass
class LayerState:
    """What one evaluation of a layer shares between its points and samples.

    Attributes:
        chol: lower Cholesky factor :math:`L_{uu}` of :math:`K_{uu}`, shape ``(M, M)``.
        inverse: :math:`L_{uu}^{-1}`, shape ``(M, M)``: whitening is then one matrix product for
            any batch of inputs (a broadcast triangular solve copies the factor per batch entry).
        scale_tril: factors :math:`R_j` of the whitened covariances, shape ``(*batch, P, M, M)``
            (a batch for the conditioned layers of fantasy models).
        readout: read-out weights :math:`V` (the posterior mean :math:`m_u = K_{uu} V`), shape
            ``(*batch, M, P)``.
    """

    chol: Tensor
    inverse: Tensor
    scale_tril: Tensor
    readout: Tensor


class ActivatedGPLayer(Module):
    r"""A GP layer :math:`\mathbb R^D \to \mathbb R^P` with ``num_units`` activated inducing units.

    Args:
        input_dim: ``D``.
        output_dim: ``P`` outputs: independent GPs sharing the kernel and the weights ``W``.
        num_units: ``M`` hidden units (inducing variables).
        activation: ``"softplus"`` (default, :class:`Softplus` with :math:`\beta = 3`), ``"relu"``
            or an :class:`Activation`.
        kernel: a factory ``Sphere(D) -> ZonalKernel``; default the order-1 arc-cosine kernel (whose
            zero levels match the activations' by parity). The kernel's parameters train in stage
            2.
        num_levels: truncation level ``L`` of :math:`K_{uu}`.
        bias: initial bias :math:`b > 0` of the lift.
        variance: initial kernel variance :math:`\sigma_k^2`.
        initial_scale: initial whitened posterior standard deviation (:math:`R_j = s I`).
        generator: random generator for the initial weights (Gaussian, variance ``1/d`` for ``W``
            and ``1/M`` for ``V``, drawn in float64 whatever ``dtype``).
        dtype: dtype of the parameters.
        device: device of the parameters.
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        num_units: int,
        activation: str | Activation = "softplus",
        kernel: KernelFactory | None = None,
        num_levels: int = 20,
        bias: float = 1.0,
        variance: float = 1.0,
        initial_scale: float = 1e-3,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> None:
        for name, value in (
            ("input_dim", input_dim),
            ("output_dim", output_dim),
            ("num_units", num_units),
            ("num_levels", num_levels),
        ):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ConfigurationError(f"`{name}` must be an integer >= 1, got {value!r}.")
        for name, value in (
            ("bias", bias),
            ("variance", variance),
            ("initial_scale", initial_scale),
        ):
            if not float(value) > 0:
                raise ConfigurationError(f"`{name}` must be > 0, got {value!r}.")
        super().__init__()
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.num_units, self.num_levels = int(num_units), int(num_levels)
        self.activation = make_activation(activation)
        sphere = Sphere(self.input_dim)
        self.kernel = (kernel or (lambda s: ArcCosineKernel(s, order=1)))(sphere)
        if not isinstance(self.kernel, ZonalKernel):
            raise ConfigurationError(
                f"`kernel` must build a ZonalKernel on {sphere!r} (ArcCosineKernel, "
                f"ChordalMaternKernel, ZonalKernel), got {type(self.kernel).__name__}."
            )
        self.kernel.to(dtype=dtype, device=device)
        d = self.input_dim + 1
        factory = {"dtype": dtype, "device": device}
        # drawn in float64 and rounded: one seed gives the same network in every dtype
        weights = torch.randn(self.num_units, d, generator=generator, dtype=torch.float64)
        readout = torch.randn(
            self.num_units, self.output_dim, generator=generator, dtype=torch.float64
        )
        self.weights = nn.Parameter((weights / d**0.5).to(**factory))
        self.readout = nn.Parameter((readout / self.num_units**0.5).to(**factory))
        for name, value in (("bias", bias), ("variance", variance)):
            self.register_parameter(f"raw_{name}", nn.Parameter(torch.zeros((), **factory)))
            self.register_constraint(f"raw_{name}", Positive())
            getattr(self, f"raw_{name}_constraint").to(**factory)
            self.initialize(**{f"raw_{name}": self._positive_to_raw(name, value)})
        self.scale_offdiag = nn.Parameter(
            torch.zeros(self.output_dim, self.num_units, self.num_units, **factory)
        )
        self.raw_scale_diag = nn.Parameter(
            inv_softplus(
                torch.full((self.output_dim, self.num_units), float(initial_scale), **factory)
            )
        )
        levels = [n for n in range(self.num_levels) if not self.activation.vanishes(n)]
        self.register_buffer("kept_levels", torch.tensor(levels, device=device), persistent=False)
        sigma = self.activation.coefficients(d, self.num_levels, torch.float64, None)
        self.register_buffer(
            "activation_coefficients", sigma.to(**factory)[self.kept_levels], persistent=False
        )
        multiplicity = [float(harmonic_dimension(d, n)) for n in range(self.num_levels)]
        self.register_buffer(
            "multiplicities",
            torch.tensor(multiplicity, **factory)[self.kept_levels],
            persistent=False,
        )
        self._levels = GegenbauerLevels(d)
        self._check_spectra_match()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.input_dim} -> {self.output_dim}, units={self.num_units}, "
            f"{self.activation!r}, {self.kernel!r}, num_levels={self.num_levels})"
        )

    # ------------------------------------------------------------------ hyperparameters
    def _positive_to_raw(self, name: str, value: float | Tensor) -> Tensor:
        raw = getattr(self, f"raw_{name}")
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device).reshape(())
        return getattr(self, f"raw_{name}_constraint").inverse_transform(value)

    @property
    def bias(self) -> Tensor:
        """The bias :math:`b > 0` of the lift, a scalar tensor (``raw_bias`` through a
        ``Positive`` constraint)."""
        return self.raw_bias_constraint.transform(self.raw_bias)

    @bias.setter
    def bias(self, value: float | Tensor) -> None:
        self.initialize(raw_bias=self._positive_to_raw("bias", value))

    @property
    def variance(self) -> Tensor:
        """The kernel variance :math:`\\sigma_k^2 > 0`, a scalar tensor (``raw_variance`` through
        a ``Positive`` constraint)."""
        return self.raw_variance_constraint.transform(self.raw_variance)

    @variance.setter
    def variance(self, value: float | Tensor) -> None:
        self.initialize(raw_variance=self._positive_to_raw("variance", value))

    def scale_tril(self) -> Tensor:
        """Whitened posterior factors :math:`R_j` (lower, positive diagonal), ``(P, M, M)``."""
        return torch.tril(self.scale_offdiag, -1) + torch.diag_embed(
            functional.softplus(self.raw_scale_diag)
        )

    def set_variance(self, value: float | Tensor) -> None:
        """Set :math:`\\sigma_k^2 > 0` (the same as assigning ``variance``)."""
        self.variance = value

    def set_scale_tril(self, value: Tensor) -> None:
        """Set the whitened covariance factors :math:`R_j`.

        Args:
            value: lower-triangular factors with a positive diagonal, shape ``(P, M, M)``.
        """
        expected = (self.output_dim, self.num_units, self.num_units)
        if value.shape != expected or not bool((value.diagonal(dim1=-2, dim2=-1) > 0).all()):
            raise ConfigurationError(
                f"`value` must be lower-triangular factors of shape {expected} with a positive "
                f"diagonal, got shape {tuple(value.shape)}."
            )
        diagonal = value.diagonal(dim1=-2, dim2=-1).to(self.raw_scale_diag)
        self.scale_offdiag.data.copy_(torch.tril(value, -1))
        self.raw_scale_diag.data.copy_(diagonal + torch.log(-torch.expm1(-diagonal)))

    def eigenvalues(self) -> Tensor:
        r"""The kernel's :math:`\lambda_n` on the kept levels, shape ``(L_kept,)``."""
        values = self.kernel.eigenvalues(self.num_levels).to(self.weights)
        return values[self.kept_levels]

    def _check_spectra_match(self) -> None:
        eigenvalues = self.eigenvalues().detach()
        missing = (eigenvalues <= 0) & (self.activation_coefficients != 0)
        if missing.any():
            level = int(self.kept_levels[missing.nonzero()[0]])
            raise ConfigurationError(
                f"{self.activation!r} has a nonzero coefficient at level {level} where "
                f"{self.kernel!r} has eigenvalue {float(eigenvalues[missing][0]):.3g}: the "
                "activation is not in the kernel's RKHS, so the inducing variables are undefined. "
                "Use the order-1 arc-cosine kernel (ArcCosineKernel(sphere, order=1)) or a kernel "
                "with positive eigenvalues on these levels."
            )

    # ------------------------------------------------------------------ the network layer
    def lift(self, h: Tensor) -> Tensor:
        """:math:`\\tilde x = [h, b]`, shape ``(*batch, n, D+1)`` for ``h`` ``(*batch, n, D)``."""
        bias = self.bias.to(h).expand(*h.shape[:-1], 1)
        return torch.cat([h, bias], dim=-1)

    def features(self, h: Tensor) -> Tensor:
        """:math:`K_{fu}`: the activations :math:`g_m(\\tilde x)`, shape ``(*batch, n, M)``."""
        return self.activation.inducing_function(self.lift(h), self.weights)

    def network(self, h: Tensor) -> Tensor:
        """The equivalent network layer :math:`g(\\tilde x) V` (the GP mean), ``(*batch, n, P)``."""
        return self.features(h) @ self.readout

    # ------------------------------------------------------------------ GP quantities
    def inducing_covariance(self) -> Tensor:
        r""":math:`K_{uu}`, the truncated Gegenbauer series, shape ``(M, M)`` (no jitter)."""
        return self._unit_inducing_covariance() / self.variance

    def _unit_inducing_covariance(self) -> Tensor:
        r""":math:`K_{uu}` for :math:`\sigma_k^2 = 1`: depends on ``W`` and the kernel only."""
        norms = self.weights.norm(dim=-1)
        unit = self.weights / norms.unsqueeze(-1)
        gram = unit @ unit.T  # blocked GEMM need not be bitwise symmetric: symmetrise exactly
        cosine = (0.5 * (gram + gram.T)).clamp(-1, 1)
        sigma = self.activation_coefficients
        ratio = torch.where(sigma != 0, sigma**2 / self.eigenvalues(), torch.zeros_like(sigma))
        coeffs = _scatter_levels(ratio * self.multiplicities, self.kept_levels, self.num_levels)
        series = level_series(cosine, coeffs, self._levels)
        return norms.unsqueeze(-1) * norms.unsqueeze(-2) * series

    def _unit_cholesky(self) -> tuple[Tensor, Tensor]:
        """Cholesky factor of the unit-variance :math:`K_{uu}` plus a relative jitter, and its
        inverse.

        Cached while ``W`` and the kernel's parameters neither change nor need gradients (stage 2
        with frozen weights, and every posterior after training), so that a step costs no series
        and no Cholesky then.
        """
        tracked = [self.weights, *self.kernel.parameters()]
        key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in tracked)
        needs_graph = torch.is_grad_enabled() and any(p.requires_grad for p in tracked)
        cached = getattr(self, "_cholesky_cache", None)
        if not needs_graph and cached is not None and cached[0] == key:
            return cached[1]
        kuu = self._unit_inducing_covariance()
        jitter = _relative_jitter(kuu.dtype) * kuu.diagonal().mean().detach()
        eye = torch.eye(self.num_units, dtype=kuu.dtype, device=kuu.device)
        chol = psd_safe_cholesky(kuu + jitter * eye)
        factors = (chol, torch.linalg.solve_triangular(chol, eye, upper=False))
        if not needs_graph:
            self._cholesky_cache = (key, factors)
        return factors

    def prior_variance(self, h: Tensor) -> Tensor:
        r""":math:`K_{ff}(x, x) = \sigma_k^2 \|\tilde x\|^2 \kappa(1)`, shape ``(*batch, n)``."""
        one = torch.ones(1, 1, dtype=h.dtype, device=h.device)
        kappa_one = self.kernel.shape_function(one).reshape(())
        return self.variance * (h.pow(2).sum(-1) + self.bias**2) * kappa_one

    def state(self) -> LayerState:
        """Cholesky factor of :math:`K_{uu}` (relative jitter added), its inverse, the
        :math:`R_j` and the read-out :math:`V`."""
        chol, inverse = self._unit_cholesky()
        scale = self.variance.sqrt()
        return LayerState(chol / scale, inverse * scale, self.scale_tril(), self.readout)

    def conditional_variance(self, h: Tensor, state: LayerState) -> tuple[Tensor, Tensor, Tensor]:
        r"""Whitened projections and :math:`\max(K_{ff} - Q_{ff}, 0)`.

        Args:
            h: inputs, shape ``(*batch, n, D)``.
            state: from :meth:`state`.

        Returns:
            ``(features, whitened, residual)``: :math:`K_{fu}` of shape ``(*batch, n, M)``,
            :math:`A^\top = K_{fu} L_{uu}^{-\top}` of shape ``(*batch, n, M)`` and the clamped
            conditional prior variance of shape ``(*batch, n)``.
        """
        features = self.features(h)
        whitened = features @ state.inverse.transpose(-1, -2)
        residual = (self.prior_variance(h) - whitened.pow(2).sum(-1)).clamp_min(0)
        return features, whitened, residual

    def marginal(self, h: Tensor, state: LayerState) -> tuple[Tensor, Tensor]:
        r"""Marginal mean and variance of :math:`q(f(x))` at each input.

        :math:`\mu = K_{fu} V`, :math:`v_j = \max(K_{ff} - \|A\|^2, 0) + \|R_j^\top A\|^2`.

        Args:
            h: inputs, shape ``(*batch, n, D)``.
            state: from :meth:`state`.

        Returns:
            ``(mean, variance)``, each of shape ``(*batch, n, P)``; the variance is ``>= 0``.
        """
        features, whitened, residual = self.conditional_variance(h, state)
        # rows A^T R_j, (*b, P, n, M); einsum folds the batch into one GEMM per output, where
        # a broadcast matmul would copy every R_j per batch entry
        projected = torch.einsum("...nm,pmk->...pnk", whitened, state.scale_tril)
        variance = residual.unsqueeze(-1) + projected.pow(2).sum(-1).transpose(-1, -2)
        return features @ state.readout, variance

    def sample(self, h: Tensor, state: LayerState, eps_u: Tensor, eps_f: Tensor) -> Tensor:
        r"""Reparameterised samples :math:`f(x) = K_{fu}(V + L_{uu}^{-\top}R\,\epsilon_u) +
        \sqrt{K_{ff} - Q_{ff}}\,\epsilon_f`.

        One draw of the inducing variables per sample is shared by all inputs (so samples are
        correlated across points through :math:`q(u)`); the conditional residual is drawn
        independently per input and output. Each input's marginal is exactly that of
        :meth:`marginal`.

        Args:
            h: inputs, shape ``(*batch, n, D)``.
            state: from :meth:`state`.
            eps_u: standard normals for :math:`q(v)`, shape ``(*sbatch, P, M)``, where ``sbatch``
                broadcasts against ``batch`` (for example ``(S, 1, 1)`` against ``(S, b, ...)``).
            eps_f: standard normals for the residual, shape ``(*batch, n, P)``.

        Returns:
            Shape ``(*batch, n, P)``.
        """
        features, _, residual = self.conditional_variance(h, state)
        # einsum, not a broadcast matmul: the batch dimensions along which one operand is
        # constant become rows of one GEMM instead of a small product per batch entry (~10x)
        drawn = torch.einsum("...pij,...pj->...pi", state.scale_tril, eps_u)  # (*sbatch, P, M)
        shift = (drawn @ state.inverse).transpose(-1, -2)  # L^-T R eps: (*sbatch, M, P)
        mean = torch.einsum("...nm,...mp->...np", features, state.readout + shift)
        return mean + safe_sqrt(residual).unsqueeze(-1) * eps_f

    def kl_divergence(self, state: LayerState) -> Tensor:
        r"""The whitened KL, :math:`\sum_j \mathrm{KL}[\mathcal N(L_{uu}^\top V_j, R_jR_j^\top)
        \| \mathcal N(0, I)]`.

        Args:
            state: from :meth:`state`.

        Returns:
            A scalar.
        """
        mean = state.chol.transpose(-1, -2) @ self.readout  # (M, P)
        diag = state.scale_tril.diagonal(dim1=-2, dim2=-1)
        trace = state.scale_tril.pow(2).sum()
        return 0.5 * (
            mean.pow(2).sum() + trace - self.output_dim * self.num_units - 2 * diag.log().sum()
        )


def _scatter_levels(values: Tensor, kept: Tensor, num_levels: int) -> Tensor:
    """Put per-kept-level values into a length-``num_levels`` vector, zeros elsewhere."""
    full = torch.zeros(num_levels, dtype=values.dtype, device=values.device)
    return full.index_put((kept,), values)
