r"""Feature maps of GPNet's networks: random Fourier, harmonic, random-phase and tanh features.

Random Fourier features act on :math:`\mathbb R^D`, harmonic and random-phase features on compact
spaces, the tanh network on any space's ambient coordinates. Each module maps points
``(*batch, P, *point_shape)`` to features ``(*batch, P, F)`` and exposes ``num_features``. Those
built from a kernel satisfy :math:`\mathbb E[\phi(x)^\top\phi(x')] = k(x, x')` (random features)
or :math:`\phi(x)^\top\phi(x') = k_L(x, x')` (the kernel truncated to ``L`` levels), with the
amplitude :math:`\sigma^2` of a :class:`gpytorch.kernels.ScaleKernel` included. Their
hyperparameters are copied from the kernel once, at construction (so a pretrained lengthscale is
the starting value; the official code's initialiser ordering could miss it), and belong to the
network afterwards: the prior's hyperparameters and the network never share a tensor, so the KL
step cannot put gradients on the prior and the hyperparameter step cannot move the network.
"""

from __future__ import annotations

import copy
import math
import warnings

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor, nn

from manibo._validation import as_tensor_arg, check_trailing_shape
from manibo.exceptions import ConfigurationError, TruncationWarning
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.kernels.zonal import ZonalKernel
from manibo.spaces.base import CompactSpace, Space, UnsupportedError


def split_outputscale(kernel: Kernel) -> tuple[Kernel, float]:
    """The base kernel and outputscale of a ``ScaleKernel`` (``(kernel, 1.0)`` for other kernels).

    Args:
        kernel: a GPyTorch kernel, wrapped in a ``ScaleKernel`` or not.
    """
    if isinstance(kernel, ScaleKernel):
        scale = kernel.outputscale.detach()
        if scale.numel() != 1:
            raise ConfigurationError(
                "batched kernels are not supported: the outputscale has shape "
                f"{tuple(scale.shape)}."
            )
        return kernel.base_kernel, float(scale)
    return kernel, 1.0


def _dtype_device(module: nn.Module) -> dict:
    tensor = next(iter(list(module.parameters()) + list(module.buffers())), None)
    if tensor is None:
        return {"dtype": torch.float64, "device": torch.device("cpu")}
    return {"dtype": tensor.dtype, "device": tensor.device}


class RandomFourierFeatures(nn.Module):
    r"""Random Fourier features :math:`\sqrt{\sigma^2/H}\,[\cos(x\Omega/\ell), \sin(x\Omega/\ell)]`.

    With the ``H`` columns of :math:`\Omega` drawn from the kernel's spectral density (standard
    normal for the RBF kernel, multivariate Student-t with :math:`2\nu` degrees of freedom for
    Matérn-:math:`\nu`), :math:`\mathbb E[\phi(x)^\top\phi(x')] = k(x, x')`. As in GPNet's RFE
    networks, the frequencies and the lengthscale are trainable (there is no random phase).

    Args:
        frequencies: :math:`\Omega`, shape ``(D, H)``.
        lengthscale: :math:`\ell`, shape ``(D,)`` (ARD) or ``(1,)``, positive.
        variance: :math:`\sigma^2 > 0`.
        train_frequencies: make :math:`\Omega` a parameter (else a buffer).
        train_lengthscale: make :math:`\ell` a parameter (stored as its logarithm).
    """

    def __init__(
        self,
        frequencies: Tensor,
        lengthscale: Tensor,
        variance: float = 1.0,
        train_frequencies: bool = True,
        train_lengthscale: bool = True,
    ) -> None:
        super().__init__()
        frequencies = as_tensor_arg("frequencies", frequencies)
        if frequencies.dim() != 2:
            raise ConfigurationError(
                f"`frequencies` must have shape (D, H), got {tuple(frequencies.shape)}."
            )
        lengthscale = torch.as_tensor(lengthscale).to(frequencies).reshape(-1)
        if lengthscale.numel() not in (1, frequencies.shape[0]) or not (lengthscale > 0).all():
            raise ConfigurationError(
                f"`lengthscale` must hold 1 or D = {frequencies.shape[0]} positive values, got "
                f"{lengthscale.tolist()}."
            )
        if not variance > 0:
            raise ConfigurationError(f"`variance` must be > 0, got {variance!r}.")
        self.input_dim = frequencies.shape[0]
        self.num_frequencies = frequencies.shape[1]
        log_ls = lengthscale.log()
        if train_frequencies:
            self.frequencies = nn.Parameter(frequencies.clone())
        else:
            self.register_buffer("frequencies", frequencies.clone())
        if train_lengthscale:
            self.log_lengthscale = nn.Parameter(log_ls)
        else:
            self.register_buffer("log_lengthscale", log_ls)
        self.register_buffer(
            "amplitude", torch.tensor(math.sqrt(variance / self.num_frequencies)).to(frequencies)
        )

    @classmethod
    def from_kernel(
        cls,
        kernel: Kernel,
        num_frequencies: int,
        generator: torch.Generator | None = None,
        **options,
    ) -> RandomFourierFeatures:
        """Features for a GPyTorch ``RBFKernel`` or ``MaternKernel`` (in a ``ScaleKernel`` or not).

        Args:
            kernel: the prior kernel on :math:`\\mathbb R^D`.
            num_frequencies: ``H`` (``F = 2H`` features).
            generator: random generator (CPU) for the frequencies.
            **options: ``train_frequencies``, ``train_lengthscale``.
        """
        base, variance = split_outputscale(kernel)
        if not isinstance(base, (RBFKernel, MaternKernel)):
            raise ConfigurationError(
                "random Fourier features need a stationary RBFKernel or MaternKernel on R^D, got "
                f"{type(base).__name__}. For kernels on spaces use HarmonicFeatures or "
                "RandomPhaseFeatures; for HomogeneousLiftKernel use HarmonicFeatures."
            )
        if isinstance(num_frequencies, bool) or int(num_frequencies) < 1:
            raise ConfigurationError(
                f"`num_frequencies` must be an integer >= 1, got {num_frequencies!r}."
            )
        lengthscale = base.lengthscale.detach().reshape(-1)
        dim = base.ard_num_dims or 1
        kwargs = _dtype_device(base)
        omega = torch.randn(dim, int(num_frequencies), generator=generator, dtype=torch.float64)
        if isinstance(base, MaternKernel):  # Student-t: z / sqrt(chi2_{2nu} / 2nu), per column
            dof = int(round(2 * base.nu))
            chi2 = torch.randn(dof, int(num_frequencies), generator=generator, dtype=torch.float64)
            omega = omega / (chi2.square().sum(0) / dof).sqrt()
        return cls(omega.to(**kwargs), lengthscale, variance, **options)

    @property
    def num_features(self) -> int:
        """``F = 2H``."""
        return 2 * self.num_frequencies

    @property
    def lengthscale(self) -> Tensor:
        """The network's own lengthscale, shape ``(D,)`` or ``(1,)``."""
        return self.log_lengthscale.exp()

    def forward(self, x: Tensor) -> Tensor:
        """Features of inputs ``x`` ``(*batch, P, D)``; returns ``(*batch, P, 2H)``."""
        check_trailing_shape("x", as_tensor_arg("x", x), (self.input_dim,), f"R^{self.input_dim}")
        projection = (x / self.lengthscale) @ self.frequencies
        return self.amplitude * torch.cat([projection.cos(), projection.sin()], dim=-1)


def levels_within(multiplicities: list[float], max_features: int) -> int:
    """The largest ``L >= 1`` whose first ``L`` multiplicities sum to at most ``max_features``."""
    total, levels = 0, 0
    for m in multiplicities:
        if total + m > max_features:
            break
        total, levels = total + m, levels + 1
    return max(levels, 1)


def _zonal_part(kernel: Kernel) -> ZonalKernel | None:
    if isinstance(kernel, HomogeneousLiftKernel):
        return kernel.base_kernel
    return kernel if isinstance(kernel, ZonalKernel) else None


class HarmonicFeatures(nn.Module):
    r"""Eigenfunction features :math:`\sigma\Phi(x)` of a kernel (:math:`\Phi\Phi^\top = k_L`).

    Reuses the kernel's own ``feature_map`` (Laplace–Beltrami eigenfunctions weighted by the
    spectrum for :class:`~manibo.kernels.GeometricMaternKernel` on any compact space with
    eigenfunctions; spherical harmonics weighted by Funk–Hecke eigenvalues for
    :class:`~manibo.kernels.ZonalKernel`; the radius-scaled harmonics of
    :class:`~manibo.kernels.HomogeneousLiftKernel` on :math:`\mathbb R^D`), evaluated by a frozen
    copy of the kernel. With these features the network family is the VISH variational family; GPNet
    trains it differently. The features are deterministic: there are no phases to train.

    Args:
        kernel: the prior kernel (optionally in a ``ScaleKernel``); copied and frozen.
        max_features: the most features; levels are kept whole, in order, up to this count (a
            Matérn kernel keeps at most the levels its truncation tolerance asks for). Levels cut
            here are missing from the network's initial covariance (a Matérn kernel renormalises
            its weights over the kept levels).
    """

    def __init__(self, kernel: Kernel, max_features: int = 512) -> None:
        super().__init__()
        if isinstance(max_features, bool) or int(max_features) < 1:
            raise ConfigurationError(
                f"`max_features` must be an integer >= 1, got {max_features!r}."
            )
        base, variance = split_outputscale(kernel)
        frozen = copy.deepcopy(base)
        for p in frozen.parameters():
            p.requires_grad_(False)
        if isinstance(frozen, GeometricMaternKernel):
            with warnings.catch_warnings():  # the cap below is what decides the levels
                warnings.simplefilter("ignore", TruncationWarning)
                wanted = frozen.levels_for(frozen.lengthscale)
            _, multiplicities = frozen.space.levels(wanted)
            frozen.num_levels = levels_within(multiplicities.tolist(), int(max_features))
            self.space = frozen.space
        elif _zonal_part(frozen) is not None:
            zonal = _zonal_part(frozen)
            d = zonal.sphere.dim + 1
            sizes = [harmonic_dimension(d, n) for n in range(zonal.num_levels)]
            zonal.num_levels = levels_within(sizes, int(max_features))
            self.space = None if isinstance(frozen, HomogeneousLiftKernel) else zonal.sphere
        else:
            raise ConfigurationError(
                "harmonic features need a GeometricMaternKernel, a ZonalKernel (ArcCosineKernel, "
                f"ChordalMaternKernel) or a HomogeneousLiftKernel, got {type(base).__name__}. For "
                "RBF or Matérn kernels on R^D use RandomFourierFeatures."
            )
        self.kernel = frozen
        self.register_buffer(
            "amplitude", torch.tensor(math.sqrt(variance)).to(**_dtype_device(frozen))
        )
        probe = self._probe_point()
        with torch.no_grad():
            self._num_features = int(frozen.feature_map(probe).shape[-1])

    def _probe_point(self) -> Tensor:
        kwargs = _dtype_device(self)
        if self.space is not None:
            # drawn on the CPU and moved: the same probe on every device (a CPU generator cannot
            # draw on CUDA)
            point = self.space.random(
                1, generator=torch.Generator().manual_seed(0), dtype=kwargs["dtype"]
            )
            return point.to(kwargs["device"])
        return torch.zeros(1, self.kernel.input_dim, **kwargs)

    @property
    def num_features(self) -> int:
        """``F``, the number of eigenfunctions in the kept levels."""
        return self._num_features

    def forward(self, x: Tensor) -> Tensor:
        """Features of points ``x`` ``(*batch, P, *point_shape)``; returns ``(*batch, P, F)``."""
        return self.amplitude * self.kernel.feature_map(x)


def level_weights(kernel: Kernel, num_levels: int | None = None) -> tuple[CompactSpace, Tensor]:
    r"""The space and per-level weights :math:`w_l` with :math:`k = \sigma^2\sum_l w_l G_l`.

    Args:
        kernel: a :class:`~manibo.kernels.GeometricMaternKernel` (weights from its spectrum, at its
            truncation) or :class:`~manibo.kernels.ZonalKernel` (Funk–Hecke eigenvalues, clipped at
            0), optionally in a ``ScaleKernel`` (the outputscale is *not* included).
        num_levels: keep only the first levels (default: all the kernel uses).

    Returns:
        ``(space, weights)``, weights of shape ``(L,)``, detached.
    """
    base, _ = split_outputscale(kernel)
    with torch.no_grad():
        if isinstance(base, GeometricMaternKernel):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TruncationWarning)
                weights = base.level_weights().reshape(-1)
            space = base.space
        elif isinstance(base, ZonalKernel):
            weights = base.eigenvalues(num_levels).reshape(-1).clamp_min(0)
            space = base.sphere
        else:
            raise ConfigurationError(
                "random-phase features need a GeometricMaternKernel or a ZonalKernel, got "
                f"{type(base).__name__}."
            )
    return space, weights[:num_levels] if num_levels is not None else weights


class RandomPhaseFeatures(nn.Module):
    r"""Random-phase features :math:`\phi_{l,o}(x) = \sqrt{\sigma^2 w_l / O}\, G_l(x, u_o)`.

    :math:`G_l` is level :math:`l`'s reproducing kernel and :math:`u_1..u_O` are uniform points of
    the space (the phases). Because :math:`\int G_l(x, u) G_m(u, y)\,du = \delta_{lm} G_l(x, y)`
    under the normalised volume measure, :math:`\mathbb E_u[\phi(x)^\top\phi(y)] = \sigma^2\sum_l
    w_l G_l(x, y)`, the kernel. They need no explicit eigenfunctions (cheap on high-dimensional
    spheres) and are evaluated by the space's ``spectral_sum``. On continuous spaces the phases are
    trainable (kept on the space by ``space.project``), the analogue of trainable frequencies; on
    graphs and meshes they are fixed.

    Args:
        kernel: a GeometricMaternKernel or ZonalKernel, optionally in a ``ScaleKernel``.
        num_phases: ``O``; ``F = L * O`` features.
        num_levels: number of levels ``L`` (default: all the kernel uses).
        train_phases: train the phases on continuous spaces.
        generator: random generator (CPU) for the phases.
    """

    def __init__(
        self,
        kernel: Kernel,
        num_phases: int,
        num_levels: int | None = None,
        train_phases: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if isinstance(num_phases, bool) or int(num_phases) < 1:
            raise ConfigurationError(f"`num_phases` must be an integer >= 1, got {num_phases!r}.")
        space, weights = level_weights(kernel, num_levels)
        _, variance = split_outputscale(kernel)
        kwargs = {"dtype": weights.dtype, "device": weights.device}
        self.space = space
        self.num_phases = int(num_phases)
        self.register_buffer("level_scale", (variance * weights / self.num_phases).sqrt())
        phases = space.random(self.num_phases, generator=generator, dtype=kwargs["dtype"]).to(
            kwargs["device"]
        )
        self.train_phases = bool(train_phases) and not space.is_discrete
        if self.train_phases:
            self.raw_phases = nn.Parameter(phases)
        else:
            self.register_buffer("raw_phases", phases)

    @property
    def num_features(self) -> int:
        """``F = L * O``."""
        return self.level_scale.shape[0] * self.num_phases

    @property
    def phases(self) -> Tensor:
        """The phase points on the space, shape ``(O, *point_shape)``."""
        return self.space.project(self.raw_phases) if self.train_phases else self.raw_phases

    def forward(self, x: Tensor) -> Tensor:
        """Features at points ``x`` ``(*batch, P, *point_shape)``; shape ``(*batch, P, L * O)``."""
        self.space.check(x, "x")
        levels = self.level_scale.shape[0]
        batch_dims = x.dim() - 1 - len(self.space.point_shape)
        one_hot = torch.eye(levels, dtype=x.dtype, device=x.device)
        one_hot = one_hot.reshape(levels, *([1] * batch_dims), levels)
        per_level = self.space.spectral_sum(one_hot, x, self.phases)  # (L, *batch, P, O)
        scaled = per_level.movedim(0, -2) * self.level_scale.unsqueeze(-1)  # (*batch, P, L, O)
        return scaled.flatten(-2)


class MLPFeatures(nn.Module):
    r"""A deterministic tanh network, :math:`\phi = \sqrt{\sigma^2/H}\tanh(\dots(W_1\hat x + b_1))`.

    Under a Bayesian last layer this is GPNet's "deep" network. Points are flattened to their
    ambient coordinates and, where the space has an ambient bounding box, mapped affinely to
    :math:`[-1, 1]`. Weights start as :math:`\mathcal N(0, g^2/\text{fan-in})` with gain :math:`g =
    3` in the first layer (so the features vary on the scale of the box) and 1 after; biases start
    uniform in :math:`[-1, 1]`.

    Args:
        space: the space of the inputs (a :class:`~manibo.spaces.Box` for :math:`\mathbb R^D`).
        widths: hidden widths; the last one is ``F``.
        variance: :math:`\sigma^2`, the prior variance scale.
        generator: random generator (CPU) for the initial weights.
        dtype: floating dtype of the weights.
    """

    def __init__(
        self,
        space: Space,
        widths: tuple[int, ...] = (64, 64),
        variance: float = 1.0,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        widths = tuple(int(w) for w in widths)
        if not widths or min(widths) < 1:
            raise ConfigurationError(f"`widths` must be positive integers, got {widths!r}.")
        if not variance > 0:
            raise ConfigurationError(f"`variance` must be > 0, got {variance!r}.")
        self.space = space
        in_dim = math.prod(space.point_shape)
        try:
            bounds = space.ambient_bounds().to(dtype).reshape(2, in_dim)
            center, half = bounds.mean(0), (bounds[1] - bounds[0]) / 2
        except UnsupportedError:
            center, half = torch.zeros(in_dim, dtype=dtype), torch.ones(in_dim, dtype=dtype)
        self.register_buffer("input_center", center)
        self.register_buffer("input_half_width", half)
        layers = []
        for i, (fan_in, fan_out) in enumerate(zip((in_dim, *widths[:-1]), widths, strict=True)):
            layer = nn.Linear(fan_in, fan_out, dtype=dtype)
            gain = 3.0 if i == 0 else 1.0
            with torch.no_grad():
                weight = torch.randn(fan_out, fan_in, generator=generator, dtype=dtype)
                layer.weight.copy_(weight * gain / math.sqrt(fan_in))
                layer.bias.copy_(2 * torch.rand(fan_out, generator=generator, dtype=dtype) - 1)
            layers.append(layer)
        self.layers = nn.ModuleList(layers)
        self.register_buffer(
            "amplitude", torch.tensor(math.sqrt(variance / widths[-1]), dtype=dtype)
        )

    @property
    def num_features(self) -> int:
        """``F``, the last hidden width."""
        return self.layers[-1].out_features

    def forward(self, x: Tensor) -> Tensor:
        """Features of points ``x`` ``(*batch, P, *point_shape)``; returns ``(*batch, P, F)``."""
        self.space.check(x, "x")
        k = len(self.space.point_shape)
        h = (x.flatten(-k) - self.input_center) / self.input_half_width
        for layer in self.layers:
            h = torch.tanh(layer(h))
        return self.amplitude * h
