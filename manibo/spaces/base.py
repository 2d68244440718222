r"""The Space contract.

Geometry of a space of points and, for compact spaces, its Laplace–Beltrami spectrum.

Points are tensors ``(*batch, n, *point_shape)`` in ambient coordinates (see ``docs/concepts.md``).
A compact space lists its spectrum as *levels*: eigenspaces of :math:`-\Delta` sorted by eigenvalue
:math:`\lambda_l`, with multiplicity :math:`m_l`, and evaluates
:math:`\sum_l w_l G_l(x, x')`, where :math:`G_l(x, x') = \sum_{k} f_{lk}(x) f_{lk}(x')` is the
level's reproducing kernel for eigenfunctions orthonormal under the *normalised* volume measure
(so the average of :math:`G_l(x, x)` over the space is :math:`m_l`).
"""

from __future__ import annotations

import functools
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from manibo._validation import (
    as_tensor_arg,
    check_finite,
    check_same_dtype_device,
    check_seed,
    check_trailing_shape,
)
from manibo.exceptions import InputDataError, ManiboError


class UnsupportedError(ManiboError, NotImplementedError):
    """A space or kernel does not offer the requested capability.

    An example of such a capability is explicit eigenfunctions.
    """


_POINT_ARGUMENTS = {
    "project": ("x",),
    "distance": ("x", "y"),
    "log": ("x", "y"),
    "chart": ("x",),
    "pairwise_distance": ("x1", "x2"),
    "heat_kernel": ("time", "x1", "x2"),
    "heat_mixture": ("log_weights", "log_time_start", "x1", "x2"),
}
"""Geometry methods whose point arguments every space checks before computing, by method: their
leading positional parameters, of which those in :data:`_POINT_NAMES` are points. A NaN reaching
LAPACK (eigenvalues on SO(n) and SU(n), Cholesky on SPD) can crash the process, and a wrongly
sized point would be cut into factors silently. The library's own calls on points it has checked
already skip the checks (:meth:`Space._unchecked`)."""

_POINT_NAMES = frozenset({"x", "y", "x1", "x2"})

_SNAPPED_ARGUMENTS = {"spectral_sum": ("weights", "x1", "x2"), "eigenfunctions": ("x",)}
"""Series methods whose point arguments (:data:`_POINT_NAMES` among their leading positional
parameters) every space moves onto itself first (:meth:`Space.snap`): a series that reads an inner
product of points off the space by the tolerance of :meth:`Space.check` misreads small angles."""

_ON_MANIFOLD_METHODS = frozenset(
    {"distance", "log", "chart", "pairwise_distance", "heat_kernel", "heat_mixture"}
)
"""Those of :data:`_POINT_ARGUMENTS` defined only on the manifold (not on all ambient points, as
``project`` is): their arguments must also lie on it (:meth:`Space._check_on_manifold`) and share
one dtype and device. Off it they returned numbers without meaning (a reflection at distance 0
from the identity, a frame of the same subspace at 80% of the Grassmannian's diameter)."""


def _checking_points(method: Callable, names: tuple[str, ...]) -> Callable:
    """``method`` of a space class, first refusing arguments ``names`` that are not finite floating
    tensors ``(*batch, *point_shape)`` (:meth:`Space._check_coordinates`) and, for the methods in
    :data:`_ON_MANIFOLD_METHODS`, arguments off the manifold or of mixed dtypes or devices: every
    subclass's geometry methods in :data:`_POINT_ARGUMENTS` are wrapped once."""
    on_manifold = method.__name__ in _ON_MANIFOLD_METHODS

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        given = dict(zip(names, args, strict=False))
        given.update((name, kwargs[name]) for name in names[len(args) :] if name in kwargs)
        given = {name: value for name, value in given.items() if name in _POINT_NAMES}
        for name, value in given.items():
            self._check_coordinates(value, name)
        if on_manifold:
            check_same_dtype_device(**given)
            for name, value in given.items():
                self._check_on_manifold(value.detach(), name)
        return method(self, *args, **kwargs)

    checked.checks_points = True
    checked.unchecked = method
    return checked


def _snapping_points(method: Callable, names: tuple[str, ...]) -> Callable:
    """``method`` of a space class, called with its point arguments among ``names`` moved onto
    the space (:meth:`Space.snap`): every subclass's methods in :data:`_SNAPPED_ARGUMENTS` are
    wrapped once."""
    points = [(i, name) for i, name in enumerate(names) if name in _POINT_NAMES]

    @functools.wraps(method)
    def snapped(self, *args, **kwargs):
        args, done = list(args), {}  # done: a tensor passed twice (k(X, X)) is snapped once

        def once(x: Tensor) -> Tensor:
            if id(x) not in done:
                done[id(x)] = self.snap(x)
            return done[id(x)]

        for i, name in points:
            if i < len(args):
                args[i] = once(args[i])
            elif name in kwargs:
                kwargs[name] = once(kwargs[name])
        return method(self, *args, **kwargs)

    snapped.snaps_points = True
    return snapped


class Space(ABC):
    """A space of points with the geometry Bayesian optimisation needs.

    Attributes:
        dim: intrinsic dimension (``Sphere(2)`` is the globe, ``dim = 2``).
        point_shape: trailing shape of one point in ambient coordinates.
        is_discrete: True for finite spaces (mesh vertices, graph nodes), optimised by enumeration.
        is_setting: True for the finite spaces of settings (an integer, a choice), which in a
            product with other factors get their own kernel and have their values enumerated by
            the acquisition optimiser.
        matrix_shape: the shape of the matrix a point flattens row-major (SO(n), SPD, Grassmann
            frames), or None.
        length_unit: the geodesic length the surrogates' default lengthscale prior takes as its
            median: 1 (a radian on spheres), except on spaces whose size is set by the user's
            units (a mesh: the radius of the sphere of its area).
    """

    dim: int
    point_shape: tuple[int, ...]
    is_discrete: bool = False
    is_setting: bool = False
    matrix_shape: tuple[int, int] | None = None
    length_unit: float = 1.0

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        random = cls.__dict__.get("random")
        if random is not None and not getattr(random, "takes_seeds", False):
            cls.random = _taking_seeds(random)
        for method, names in _POINT_ARGUMENTS.items():
            function = cls.__dict__.get(method)
            if function is not None and not getattr(function, "checks_points", False):
                setattr(cls, method, _checking_points(function, names))
        for method, names in _SNAPPED_ARGUMENTS.items():
            function = cls.__dict__.get(method)
            if function is not None and not getattr(function, "snaps_points", False):
                setattr(cls, method, _snapping_points(function, names))

    @abstractmethod
    def random(
        self,
        n: int,
        generator: torch.Generator | int | None = None,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> Tensor:
        """Draw ``n`` points uniformly with respect to the volume measure (unless a space says
        otherwise: SPD matrices by default draw their eigenvalues uniformly from their box).

        Args:
            n: number of points.
            generator: a ``torch.Generator`` on ``device``, an integer seed (the points are drawn
                with a CPU generator seeded with it and moved to ``device``, so a seed gives the
                same points on every device), or None (torch's global generator).
            dtype, device: of the points.

        Returns:
            Tensor of shape ``(n, *point_shape)``.
        """

    def check(self, x: Tensor, name: str = "x", membership: bool = True) -> Tensor:
        """Return ``x`` if it holds finite points of this space, else raise ``InputDataError``.

        ``x`` is returned unchanged.

        Args:
            x: points, shape ``(*batch, *point_shape)``.
            name: the argument's name, used in the error message.
            membership: also require the points to lie on the space (False: finite floating
                coordinates of the right shape only, for functions defined off the space).
        """
        self._check_coordinates(x, name)
        if membership:
            self._check_membership(x, name)
        return x

    def _check_coordinates(self, x: Tensor, name: str) -> None:
        """Raise ``InputDataError`` unless ``x`` is a floating tensor ``(*batch, *point_shape)``
        with finite entries (it need not lie on the space)."""
        as_tensor_arg(name, x)
        self.check_point_shape(x, name)
        check_finite(name, x)

    def check_point_shape(self, x: Tensor, name: str = "x") -> None:
        """Raise ``InputDataError`` unless ``x`` ends in the point shape ``(*batch,
        *point_shape)``; the message says how to flatten matrices, and what to do where the
        space recognises what ``x`` holds (:meth:`_shape_advice`)."""
        if tuple(x.shape[x.dim() - len(self.point_shape) :]) != self.point_shape:
            advice = self._shape_advice(x, name)
            check_trailing_shape(name, x, self.point_shape, repr(self), self.matrix_shape, advice)

    def point_key(self, x: Tensor) -> tuple[float, ...]:
        """A hashable key of one point ``x`` (``point_shape``), equal for coordinates of the same
        point: its coordinates, except on spaces where several coordinates are one point
        (:class:`~manibo.spaces.RealProjectiveSpace`: ``x`` and ``-x``;
        :class:`~manibo.spaces.Grassmann`: every frame of one subspace). The loop reads it to
        tell when a point is told a second time."""
        return tuple(x.reshape(-1).tolist())

    def snap(self, x: Tensor) -> Tensor:
        """Points that :meth:`check` accepts, moved onto the space where they are off it by more
        than rounding; points on it to rounding are returned bit for bit.

        :meth:`check` allows points off the space by its tolerance (1e-6 in float64, 1e-4 in
        float32), which a kernel that reads an inner product of points would misread as an angle
        of about the square root of it. The kernels' series (``spectral_sum``,
        ``eigenfunctions``) evaluate at the snapped points; the default, for spaces whose
        coordinates need no such care, returns ``x``. Cheaper than :meth:`project` and
        differentiable, but only for points already within the tolerance.

        Args:
            x: points, shape ``(*batch, *point_shape)``.

        Returns:
            The same shape, dtype and device.
        """
        return x

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        """What to do about ``x`` of the wrong trailing shape, where this space recognises what
        ``x`` holds (SO(3): quaternions); None leaves the generic advice."""
        return None

    @abstractmethod
    def _check_membership(self, x: Tensor, name: str) -> None:
        """Raise ``InputDataError`` if finite, well-shaped ``x`` does not lie on the space."""

    def _unchecked(self, method: str) -> Callable:
        """The geometry method ``method`` (one of :data:`_POINT_ARGUMENTS`) of this space, bound,
        without the checks of its arguments that the public method runs first.

        For the library's own calls on points already checked (a kernel's inputs after its
        ``forward`` checked them, a surrogate's training data checked at construction and ``X``
        in ``posterior``, a space's methods calling one another or their factors'): those run
        on every posterior and every kernel evaluation, and the membership checks cost an
        eigendecomposition per SPD matrix. Users call the public methods.
        """
        function = getattr(type(self), method)
        return functools.partial(getattr(function, "unchecked", function), self)

    def _check_on_manifold(self, x: Tensor, name: str) -> None:
        """Raise ``InputDataError`` if finite, well-shaped ``x`` does not lie on the manifold where
        :meth:`distance`, ``log`` and :meth:`chart` are defined. That is the space itself, except
        where the space is a bounded domain of a larger manifold (a box of R^d, a geodesic ball of
        H^d, an eigenvalue box of SPD matrices): there the domain's bounds are not required."""
        self._check_membership(x, name)

    @abstractmethod
    def project(self, x: Tensor) -> Tensor:
        """Nearest point of the space to each ambient point ``x``.

        ``x`` has shape ``(*batch, *point_shape)``.
        """

    @abstractmethod
    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        """Orthogonal projection of ambient vectors ``v`` onto the tangent space at ``x``.

        ``x``, ``v`` and the result have the same shapes.
        """

    @abstractmethod
    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """Move from ``x`` along tangent vector ``v``; ``retract(x, 0) = x``.

        Shapes ``(*batch, *point_shape)``.
        """

    @abstractmethod
    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        """Geodesic distance between broadcastable ``x`` and ``y``; returns shape ``(*batch)``."""

    def scaled_distance(self, x: Tensor, y: Tensor) -> Tensor:
        """Distance between broadcastable ``x`` and ``y`` that does not depend on the units of box
        coordinates, for telling a point from the same point rounded: :meth:`distance`, except
        that a :class:`~manibo.spaces.box.Box` (alone or as a factor of a product) measures each
        coordinate in units of its width. Returns shape ``(*batch)``."""
        return self.distance(x, y)

    def chart(self, x: Tensor) -> Tensor:
        """Coordinates of ``x`` in a global chart (for Euclidean baselines).

        Shapes: ``(*batch, *point_shape)`` → ``(*batch, k)``.
        """
        raise UnsupportedError(f"{type(self).__name__} has no global chart.")

    def embed(self, x: Tensor) -> Tensor:
        r"""Coordinates of ``x`` in a Euclidean space that holds the space continuously and
        injectively, for surrogates that work on coordinates (``"adgp"``, ``"euclidean"``).

        The default is the point's ambient coordinates, flattened (spheres, SO(n), SPD matrices,
        the hyperboloid, boxes); spaces whose coordinates have a seam or name a point twice
        override it (a circle's angle becomes :math:`(\cos\theta, \sin\theta)`, an axis
        :math:`\pm x` of :math:`\mathbb{RP}^d` the matrix :math:`x x^\top`).

        Shapes: ``(*batch, *point_shape)`` → ``(*batch, E)``.
        """
        return x.flatten(-len(self.point_shape))

    def ambient_bounds(self) -> Tensor:
        """A box ``(2, D)`` of ambient coordinates containing the space.

        It serves box-optimised baselines.
        """
        raise UnsupportedError(f"{type(self).__name__} has no ambient bounding box.")

    def all_points(self, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
        """Every point of a finite space, ``(num_points, *point_shape)``."""
        raise UnsupportedError(
            f"{type(self).__name__} is not a finite space; it cannot be enumerated."
        )

    def fingerprint(self) -> str:
        """A hash of what defines the space, for recognising it when a run is resumed.

        Two spaces with the same fingerprint have the same points, geometry and spectrum. The
        default hashes the class and ``repr``, which is enough for spaces fixed by a few numbers
        (``Sphere(2)``, ``Torus(3)``, a ``Box``); spaces defined by data (graphs, meshes) and
        spaces made of other spaces override it. A space without its own ``repr`` is identified
        by its class, ``dim`` and ``point_shape`` only.

        Returns:
            64 hexadecimal digits.
        """
        cls = type(self)
        if cls.__repr__ is object.__repr__:
            return content_digest(cls.__module__, cls.__qualname__, self.dim, self.point_shape)
        return content_digest(cls.__module__, cls.__qualname__, repr(self))

    def _membership_error(self, name: str, what: str, advice: str) -> InputDataError:
        return InputDataError(f"`{name}` holds points off {self!r}: {what}. {advice}")


class CompactSpace(Space):
    """A space with a discrete Laplace–Beltrami spectrum, grouped into levels.

    Attributes:
        spectral_dim: the ``d`` of the Matérn spectrum
            :math:`(2\\nu/\\ell^2 + \\lambda)^{-\\nu - d/2}` (the manifold dimension; 0 for graphs
            and 2 for meshes, as in GeometricKernels).
        num_levels_available: number of levels that exist (``None`` when infinite).
        default_max_levels: cap on the levels a kernel uses when it picks the count itself.
        max_scan_levels: cap on the levels a kernel lists to estimate the spectral mass beyond its
            own cap (``None``: 50 times that cap, at least 10,000); spaces whose levels are costly
            to enumerate, or whose multiplicities pass float64's range, set it.
    """

    spectral_dim: int
    num_levels_available: int | None = None
    default_max_levels: int = 100
    max_scan_levels: int | None = None

    @abstractmethod
    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        """Eigenvalues and multiplicities of the first ``num_levels`` levels.

        Returns:
            ``(eigenvalues, multiplicities)``, each float64 of shape ``(num_levels,)``, sorted by
            eigenvalue, with distinct eigenvalues (a level is a whole eigenspace).
        """

    def level_peaks(self, num_levels: int) -> Tensor | None:
        r"""The largest value over the points of each level's :math:`G_l(x, x)`, for the first
        ``num_levels`` levels, float64 ``(num_levels,)``; None where it equals the multiplicity
        at every point (a homogeneous space, by the addition theorem).

        Its mean over the space is the multiplicity; on a mesh or graph whose eigenvectors
        localise it may be thousands of times more, and a kernel that drops such a level makes
        an error that large where it peaks: automatic truncation weighs each level by its peak.
        """
        return None

    @abstractmethod
    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        r""":math:`\sum_{l<L} w_l G_l(x_1, x_2)` without building an ``N x N x L`` tensor.

        Args:
            weights: per-level weights, shape ``(*wbatch, L)``.
            x1: points, shape ``(*batch1, n, *point_shape)``.
            x2: points, shape ``(*batch2, m, *point_shape)``.
            diag: return only the diagonal (requires ``n == m``).

        Returns:
            Shape ``(*batch, n, m)``, or ``(*batch, n)`` when ``diag``; ``batch`` broadcasts the
            three.
        """

    def eigenfunctions(self, x: Tensor, num_levels: int) -> Tensor:
        """Orthonormal eigenfunctions of the first ``num_levels`` levels, level by level.

        Args:
            x: points, shape ``(*batch, n, *point_shape)``.

        Returns:
            Shape ``(*batch, n, M)`` with ``M = sum(multiplicities)``.
        """
        raise UnsupportedError(f"{type(self).__name__} has no explicit eigenfunctions.")

    @functools.cached_property
    def has_eigenfunctions(self) -> bool:
        """Whether :meth:`eigenfunctions` returns explicit eigenfunctions (tried once, on one
        point): not on groups whose kernels are sums of characters (SO(n), n >= 4; SU(n))."""
        try:
            self.eigenfunctions(self.random(1, generator=torch.Generator().manual_seed(0)), 1)
        except UnsupportedError:
            return False
        return True


def _taking_seeds(random: Callable) -> Callable:
    """``random`` of a space class, also taking an integer seed as its ``generator``: every
    subclass's ``random`` is wrapped once, so an implementation only handles torch generators."""

    @functools.wraps(random)
    def random_from_generator_or_seed(
        self, n, generator=None, dtype=torch.float64, device=None
    ) -> Tensor:
        if generator is None or isinstance(generator, torch.Generator):
            return random(self, n, generator, dtype, device)
        cpu = torch.Generator().manual_seed(check_seed("generator", generator))
        points = random(self, n, cpu, dtype, "cpu")
        return points if device is None else points.to(device)

    random_from_generator_or_seed.takes_seeds = True
    return random_from_generator_or_seed


def safe_sqrt(u: Tensor) -> Tensor:
    """:math:`\\sqrt{\\max(u, 0)}` with gradient 0 (not infinite or NaN) where ``u <= 0``: the
    root of a distance's sum of squares, differentiable at coincident points. Any shape."""
    positive = u > 0
    return torch.where(positive, torch.where(positive, u, torch.ones_like(u)).sqrt(), 0.0 * u)


def safe_atan2(y: Tensor, x: Tensor) -> Tensor:
    """``torch.atan2(y, x)``, the same values, with gradient 0 (not NaN) where ``x = y = 0``: an
    angle of a chart where it is undefined (a sphere's longitude at a pole). Broadcastable
    shapes."""
    origin = (x == 0) & (y == 0)
    # atan2's NaN gradient at the origin goes to the detached copies, not to x and y
    return torch.atan2(torch.where(origin, y.detach(), y), torch.where(origin, x.detach(), x))


def rescaled(x: Tensor) -> tuple[Tensor, Tensor]:
    """``x / s`` and ``s``, the largest absolute entry of each vector (at least the dtype's
    smallest normal number, and constant for autograd): ``(*batch, D)`` → ``(*batch, D)`` and
    ``(*batch, 1)``. The rescaled vectors have norms in ``[1, √D]`` (or 0): their squares neither
    overflow (entries beyond ``1e154`` in float64, ``1e19`` in float32) nor underflow."""
    scale = x.detach().abs().amax(-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    return x / scale, scale


def content_digest(*parts: object) -> str:
    """SHA-256 of ``parts`` (strings, numbers, tuples, NumPy arrays, tensors), as hexadecimal.

    Arrays and tensors contribute their dtype, shape and bytes, so equal data on any device gives
    the same digest.
    """
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Tensor):
            part = part.detach().cpu().numpy()
        if isinstance(part, np.ndarray):
            part = np.ascontiguousarray(part)
            digest.update(f"array {part.dtype.str} {part.shape}:".encode())
            digest.update(part.tobytes())
        else:
            digest.update(f"{type(part).__name__} {part!r}:".encode())
    return digest.hexdigest()


DISTANCE_ACCURACY = 1e-3
"""The distance error up to which a dtype is said to resolve the points of a non-compact space:
where its coordinates cannot (float32 far out on the hyperboloid, float32 matrices of large
condition number), ``check`` refuses them."""


class NoncompactSpace(Space):
    r"""A Riemannian symmetric space :math:`G/K` of non-compact type (hyperbolic spaces, SPD).

    Its Laplace–Beltrami spectrum is continuous. The spherical functions :math:`\varphi_\lambda`,
    :math:`\lambda \in \mathbb R^{\mathrm{rank}}`, are eigenfunctions of :math:`-\Delta` with
    eigenvalue :math:`|\lambda|^2 + |\rho|^2`, and the Plancherel measure is
    :math:`|c(\lambda)|^{-2} d\lambda` (Harish-Chandra's :math:`c`-function). A stationary kernel
    is :math:`k(x, y) = \int S(\lambda)\, \varphi_\lambda(x, y)\, |c(\lambda)|^{-2} d\lambda`
    (Azangulov, Smolensky, Terenin and Borovitskiy 2024). Helgason's formula
    :math:`\varphi_\lambda(x, y) = \int_K e^{(i\lambda + \rho)\cdot H(k x)}
    \overline{e^{(i\lambda + \rho)\cdot H(k y)}}\,dk`, with :math:`H` the horocyclic projection
    (the :math:`A`-part of the Iwasawa decomposition), turns it into an expectation over
    :math:`\lambda \sim S |c|^{-2}` and Haar-random :math:`k`: random-phase features.

    A space supplies the Plancherel density, a reparametrised sampler of the spectral measure (so
    that features are smooth in the lengthscale for fixed randomness), boundary points and the
    horocyclic projection. Rank-one spaces also evaluate heat kernels exactly
    (:meth:`heat_kernel`, :meth:`heat_mixture`).

    Attributes:
        rank: dimension of the frequencies :math:`\lambda`.
        spectral_dim: the ``d`` of the Matérn spectrum
            :math:`(2\nu/\ell^2 + |\lambda|^2)^{-\nu - d/2}` (the manifold dimension).
        uniform_dims: ``(s, b)``, the uniform coordinates per feature that
            :meth:`spectral_base` and :meth:`boundary_points` consume.
    """

    rank: int
    spectral_dim: int
    uniform_dims: tuple[int, int]

    @property
    @abstractmethod
    def rho(self) -> Tensor:
        r"""Half the sum of the positive roots, float64 ``(rank,)``; the bottom of the spectrum is
        :math:`|\rho|^2`."""

    @abstractmethod
    def log_plancherel(self, lam: Tensor) -> Tensor:
        r""":math:`\log |c(\lambda)|^{-2}` up to a constant; ``(..., rank)`` → ``(...)``."""

    def feature_second_moment(self) -> float | None:
        r"""The largest over the domain of :math:`E_k[e^{4\rho\cdot H(k x)}]`, which bounds
        :math:`L` times the variance of the random-phase estimate of :math:`k(x, x)` from
        :math:`L` phases; None where no closed form is known."""
        return None

    @abstractmethod
    def spectral_base(self, uniforms: Tensor, nu: float) -> Tensor:
        """Fixed randomness of the spectral sampler from uniforms ``(L, s)``; float64 ``(L, k)``."""

    @abstractmethod
    def spectral_sample(
        self, base: Tensor, nu: float, lengthscale: Tensor, shifted: bool = True
    ) -> tuple[Tensor, Tensor]:
        r"""Frequencies from the Matérn (or heat, ``nu = inf``) spectral measure.

        Args:
            base: from :meth:`spectral_base`, ``(L, k)``.
            nu: smoothness.
            lengthscale: ``(*W, 1)``; the samples are differentiable in it.
            shifted: spectrum of :math:`-\Delta - |\rho|^2` (True) or of :math:`-\Delta`.

        Returns:
            ``(lam, log_weight)``: frequencies ``(*W, L, rank)`` and log importance weights
            ``(*W, L)`` (not normalised; all equal for an exact sampler).
        """

    @abstractmethod
    def boundary_points(self, uniforms: Tensor) -> Tensor:
        """Haar-random elements of :math:`K` from uniforms ``(L, b)``; ``(L, *boundary_shape)``."""

    @abstractmethod
    def horocyclic(self, x: Tensor, boundary: Tensor) -> Tensor:
        """:math:`H(k x)` for points ``(*batch, n, *point_shape)`` and boundary points
        ``(L, *boundary_shape)``; returns ``(*batch, n, L, rank)``."""

    def heat_kernel(self, time: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """The normalised heat kernel of the shifted Laplacian at ``time`` ``(*W, 1)``.

        Returns ``(*batch, n, m)`` (``(*batch, n)`` when ``diag``).
        """
        raise UnsupportedError(f"{type(self).__name__} has no exact heat kernel; use features.")

    def heat_mixture(
        self,
        log_weights: Tensor,
        log_time_start: float,
        x1: Tensor,
        x2: Tensor,
        diag: bool = False,
    ) -> Tensor:
        """The normalised superposition of heat kernels at the times of :meth:`heat_times`.

        ``log_weights`` ``(*W, T)`` over ``heat_times(log_time_start)``; returns ``(*batch, n, m)``
        (``(*batch, n)`` when ``diag``).
        """
        raise UnsupportedError(f"{type(self).__name__} has no exact heat kernels; use features.")

    def heat_times(self, log_time_start: float) -> tuple[Tensor, Tensor]:
        """Log-times ``(T,)`` from ``log_time_start`` and the log heat kernels at the origin
        ``(T,)``, float64, for :meth:`heat_mixture`."""
        raise UnsupportedError(f"{type(self).__name__} has no exact heat kernels; use features.")


def pairwise_in_chunks(
    pair_fn: Callable[[Tensor, Tensor], Tensor],
    x1: Tensor,
    x2: Tensor,
    point_ndim: int,
    target_elements: int = 1 << 17,
) -> Tensor:
    """Evaluate ``pair_fn(x1_rows, x2)`` over row blocks of ``x1`` and concatenate along rows.

    Row blocks keep the working set of elementwise recurrences in cache and bound temporary memory.

    Args:
        pair_fn: maps ``(*b1, r, *p)`` and ``(*b2, m, *p)`` to ``(*b, r, m)``.
        x1: shape ``(*b1, n, *p)``; x2: shape ``(*b2, m, *p)``.
        point_ndim: ``len(point_shape)``.
        target_elements: approximate number of output elements per block.
    """
    n = x1.shape[-1 - point_ndim]
    m = x2.shape[-1 - point_ndim]
    batch = torch.broadcast_shapes(x1.shape[: -1 - point_ndim], x2.shape[: -1 - point_ndim]).numel()
    rows = max(1, target_elements // max(1, m * batch))
    if rows >= n:
        return pair_fn(x1, x2)
    row_dim = x1.dim() - 1 - point_ndim
    blocks = [pair_fn(x1.narrow(row_dim, s, min(rows, n - s)), x2) for s in range(0, n, rows)]
    return torch.cat(blocks, dim=-2)


def series_coefficients(weights: Tensor, scales: list[float], extra_dims: int) -> Tensor:
    """Per-level coefficients ``w_l * s_l``, shaped for broadcasting.

    The shape is ``(*wbatch, 1 x extra_dims, L)``.
    """
    scale = torch.tensor(scales, dtype=weights.dtype, device=weights.device)
    coeffs = weights * scale
    return coeffs.reshape(*coeffs.shape[:-1], *([1] * extra_dims), coeffs.shape[-1])


def _argument(inner: Tensor, scale: float, shift: float) -> Tensor:
    """The recurrence's argument ``scale * (inner - shift)``, clamped to [-1, 1].

    Points a little off the space (a unit vector of norm 1 + 1e-6, which the space accepts, or
    float32 rounding) put it past 1, where the series' slope is about 1/lengthscale^2: at
    lengthscale 0.05 on S^2, k(x, x) was 1.0013.
    """
    return (scale * (inner - shift)).clamp(-1.0, 1.0)


def inner_product_series(
    levels,
    weights: Tensor,
    x1: Tensor,
    x2: Tensor,
    diag: bool,
    scale: float = 1.0,
    shift: float = 0.0,
) -> Tensor:
    r""":math:`\sum_l w_l s_l b_l(t)`, :math:`t = \mathrm{scale}\,(x_1 \cdot x_2 - \mathrm{shift})`.

    The level sum of every space whose level kernels are a recurrence in one affine function of the
    inner product of ambient coordinates (spheres and RP^d: :math:`t = x \cdot y`; SO(2), SO(3) and
    SU(2): the cosine of an angle read off the trace), in row blocks.

    Args:
        levels: a :class:`~manibo.harmonics.series.LevelRecurrence`.
        weights: per-level weights, shape ``(*wbatch, L)``.
        x1, x2: points ``(*b1, n, D)`` and ``(*b2, m, D)``.
        diag: only the diagonal (``n == m``).
        scale, shift: the affine map from the inner product to the recurrence's argument.

    Returns:
        ``(*batch, n, m)``, or ``(*batch, n)`` when ``diag``.
    """
    from manibo.harmonics.series import level_series

    scales = levels.scales(weights.shape[-1])
    if diag:
        coeffs = series_coefficients(weights, scales, extra_dims=1)
        return level_series(_argument((x1 * x2).sum(-1), scale, shift), coeffs, levels)
    coeffs = series_coefficients(weights, scales, extra_dims=2)

    def block(a: Tensor, b: Tensor) -> Tensor:
        return level_series(_argument(a @ b.transpose(-1, -2), scale, shift), coeffs, levels)

    return pairwise_in_chunks(block, x1, x2, point_ndim=1)
