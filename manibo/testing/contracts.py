"""Property checks of the Space and Kernel contracts.

The checks raise AssertionError with a reason on failure. Each check takes the dtype and device to
run on, so the same checks run on CPU in the test suite and on CUDA in ``tests/test_cuda.py`` when a
GPU is present.
"""

from __future__ import annotations

import math
import warnings

import torch
from gpytorch.kernels import Kernel
from torch.quasirandom import SobolEngine

from manibo.exceptions import InputDataError, TruncationWarning
from manibo.spaces.base import CompactSpace, NoncompactSpace, Space


def _tol(dtype: torch.dtype) -> float:
    return 1e-10 if dtype == torch.float64 else 2e-4


def _assert_close(actual, expected, atol, what):
    err = float((actual - expected).abs().max()) if actual.numel() else 0.0
    assert err <= atol, f"{what}: max abs error {err:.3g} > {atol:.3g}"


def _assert_raises_input_error(fn, what: str) -> None:
    try:
        fn()
    except InputDataError as e:
        assert len(str(e)) > 30, f"{what}: error message too terse: {e}"
        return
    raise AssertionError(f"{what}: expected InputDataError, nothing was raised")


def check_space_contract(space: Space, dtype: torch.dtype, device: torch.device | str) -> None:
    """Check geometry invariants of ``space``.

    The checks cover membership, retraction, tangent projection and distance (symmetric, zero and
    with a finite gradient at coincident points).
    """
    gen = torch.Generator(device=device).manual_seed(0)
    x = space.random(16, generator=gen, dtype=dtype, device=device)
    assert x.shape == (16, *space.point_shape), f"random returned {tuple(x.shape)}"
    assert x.dtype == dtype and x.device.type == torch.device(device).type, (
        "random ignored dtype/device"
    )
    space.check(x)
    seeded = space.random(3, generator=5, dtype=dtype, device=device)
    cpu = space.random(3, generator=torch.Generator().manual_seed(5), dtype=dtype, device="cpu")
    assert torch.equal(seeded.cpu(), cpu) and seeded.device.type == x.device.type, (
        "random(n, generator=5) differs from a CPU generator seeded with 5"
    )
    y = space.random(16, generator=gen, dtype=dtype, device=device)
    tol = _tol(dtype)
    _assert_close(space.project(x), x, tol, "project(x) != x on the space")
    v = torch.randn(x.shape, generator=gen, dtype=dtype, device=device)
    tv = space.to_tangent(x, v)
    _assert_close(space.to_tangent(x, tv), tv, tol * 10, "to_tangent is not idempotent")
    _assert_close(space.retract(x, torch.zeros_like(tv)), x, tol, "retract(x, 0) != x")
    moved = space.retract(x, 0.3 * tv)
    space.check(moved, "retract(x, v)")
    d_xy, d_yx = space.distance(x, y), space.distance(y, x)
    assert d_xy.shape == (16,), f"distance returned shape {tuple(d_xy.shape)}"
    _assert_close(d_xy, d_yx, tol, "distance is not symmetric")
    _assert_close(
        space.distance(x, x), torch.zeros_like(d_xy), math.sqrt(tol), "distance(x, x) != 0"
    )
    assert (d_xy >= 0).all(), "negative distance"
    if not space.is_discrete:  # a gradient of 0 is a subgradient at a coincident point
        a = x.detach().clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(space.distance(a, x).sum(), a)
        assert torch.isfinite(grad).all(), "distance has a NaN or infinite gradient at x == y"
    bad = x.clone()
    bad[0, 0] = float("nan")
    _assert_raises_input_error(lambda: space.check(bad), "NaN point")
    wrong = torch.zeros(4, space.point_shape[-1] + 1, dtype=dtype, device=device)
    _assert_raises_input_error(lambda: space.check(wrong), "wrong trailing dimension")
    if isinstance(space, CompactSpace):
        eigenvalues, multiplicities = space.levels(
            5 if space.num_levels_available is None else min(5, space.num_levels_available)
        )
        assert (eigenvalues[1:] > eigenvalues[:-1]).all(), "levels not strictly increasing"
        assert (eigenvalues >= 0).all() and (multiplicities >= 1).all(), "bad levels"
    if isinstance(space, NoncompactSpace):
        _check_plane_waves(space, x[:4].double())
    if not space.is_discrete:
        _check_embedding(space, gen, dtype, device)


def _check_embedding(space: Space, gen, dtype, device) -> None:
    """``embed`` gives every point one row of the same width; on a compact space, the embedding
    distance of two points is between 0.5 and 1.5 times their geodesic distance, both for points a
    short step apart (no seam that tears neighbours apart) and for random pairs (no point named
    twice, as ``x`` and ``-x`` on a projective space; no two points merged)."""
    x = space.random(512, generator=gen, dtype=dtype, device=device)
    v = space.to_tangent(x, torch.randn(x.shape, generator=gen, dtype=dtype, device=device))
    near = space.retract(x, 0.3 * v)
    far = space.random(512, generator=gen, dtype=dtype, device=device)
    x, y = torch.cat([x, x]), torch.cat([near, far])
    ex, ey = space.embed(x), space.embed(y)
    assert ex.dim() == 2 and ex.shape[0] == 1024 and ey.shape == ex.shape, (
        f"embed returned {tuple(ex.shape)} and {tuple(ey.shape)} for 1024 points"
    )
    assert ex.dtype == dtype, f"embed returned {ex.dtype} for {dtype} points"
    assert torch.isfinite(ex).all(), "embed returned NaN or infinite coordinates"
    if not isinstance(space, CompactSpace):
        return
    step = space.distance(x, y)
    apart = step > 1e-3
    assert apart.sum() >= 512, "too few pairs of distinct points to check embed"
    ratio = (ex - ey).norm(dim=-1)[apart] / step[apart]
    assert ratio.max() <= 1.5 and ratio.min() >= 0.5, (
        f"embed maps geodesic distances to {ratio.min():.3g} to {ratio.max():.3g} times as much "
        "(expected within [0.5, 1.5]): a seam in the coordinates, a point named twice or two "
        "points merged reached the embedding"
    )


def _check_plane_waves(space: NoncompactSpace, x) -> None:
    r"""The plane waves average to the spherical function :math:`\varphi_{-i\rho} = 1`."""
    count = 4096
    uniforms = SobolEngine(space.uniform_dims[1], scramble=True, seed=0).draw(
        count, dtype=torch.float64
    )
    boundary = space.boundary_points(uniforms)
    h = space.horocyclic(x.cpu(), boundary)
    assert h.shape == (x.shape[0], count, space.rank), f"horocyclic returned {tuple(h.shape)}"
    waves = torch.exp(2 * h @ space.rho)  # (n, L)
    mean, spread = waves.mean(-1), waves.std(-1) / math.sqrt(count)
    assert ((mean - 1).abs() <= 5 * spread + 1e-3).all(), (
        f"plane waves e^(2 rho . H) average to {mean.tolist()}, not 1: the horocyclic projection "
        "or rho is wrong"
    )


def _check_input_gradient(kernel, space, x, z, gen) -> None:
    """d/dt sum K(retract(x, t v), z) at t = 0 by autograd equals central differences."""
    v = space.to_tangent(x, torch.randn(x.shape, generator=gen, dtype=x.dtype, device=x.device))
    xg = x.clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(kernel(xg, z).to_dense().sum(), xg)

    def central_difference(step: float) -> float:
        with torch.no_grad():
            plus = kernel(space.retract(x, step * v), z).to_dense().sum()
            minus = kernel(space.retract(x, -step * v), z).to_dense().sum()
        return float((plus - minus) / (2 * step))

    # Richardson-extrapolated central differences at shrinking steps: smooth kernels agree at the
    # first, rough ones (Matérn-1/2 random-phase features reach frequencies near 1e5) only once the
    # step resolves their highest frequency; a wrong gradient agrees at none
    analytic = float((gradient * v).sum())
    with torch.no_grad():
        kernel_scale = float(kernel(x, z).to_dense().abs().max())
    for step in (1e-4, 1e-5, 1e-6, 1e-7):
        numeric = (4 * central_difference(step / 2) - central_difference(step)) / 3
        scale = max(abs(numeric), kernel_scale)
        if abs(analytic - numeric) <= 1e-5 * scale:
            return
    assert abs(analytic - numeric) <= 1e-5 * scale, (
        f"gradient in the inputs {analytic:.8g} != central difference along geodesics {numeric:.8g}"
    )


PSD_POINTS = 100
"""Points of the positive semi-definiteness check of :func:`check_kernel_contract`."""

PSD_LENGTHSCALES = (0.5, 1.0, 3.0)
"""Multiples of the kernel's lengthscales at which :func:`check_kernel_contract` checks positive
semi-definiteness (only 1 for a kernel without a lengthscale)."""


def _check_positive_semidefinite(
    kernel: Kernel, space: Space, dtype: torch.dtype, device: torch.device | str
) -> None:
    """K on :data:`PSD_POINTS` points has no negative eigenvalue beyond rounding, at each multiple
    :data:`PSD_LENGTHSCALES` of the lengthscales of the kernel and its parts (a multiple the
    lengthscale constraint refuses is left out; truncation warnings at the other multiples are
    silenced). The lengthscales are restored afterwards."""
    gen = torch.Generator(device=device).manual_seed(2)
    x = space.random(PSD_POINTS, generator=gen, dtype=dtype, device=device)
    parts = [m for m in kernel.modules() if getattr(m, "has_lengthscale", False)]
    saved = [m.raw_lengthscale.detach().clone() for m in parts]
    try:
        for factor in PSD_LENGTHSCALES if parts else (1.0,):
            values = [factor * m.lengthscale.detach() for m in parts]
            if not all(
                m.raw_lengthscale_constraint.check(v) for m, v in zip(parts, values, strict=True)
            ):
                continue
            for m, value in zip(parts, values, strict=True):
                m.lengthscale = value
            with torch.no_grad(), warnings.catch_warnings():
                if factor != 1.0:  # about a lengthscale the user did not choose
                    warnings.simplefilter("ignore", TruncationWarning)
                K = kernel(x).to_dense().double()
            tol = _tol(dtype) * max(1.0, float(K.abs().max())) * 1000
            eig_min = float(torch.linalg.eigvalsh(K).min())
            at = f" at {factor} times its lengthscale" if parts else ""
            assert eig_min > -tol, (
                f"K is not positive semi-definite on {PSD_POINTS} points{at}: smallest "
                f"eigenvalue {eig_min:.3g}"
            )
    finally:
        with torch.no_grad():
            for m, raw in zip(parts, saved, strict=True):
                m.raw_lengthscale.copy_(raw)


def check_kernel_contract(
    kernel: Kernel, space: Space, dtype: torch.dtype, device: torch.device | str
) -> None:
    """Check a kernel on ``space``.

    The checks cover symmetry, PSD (on 100 points, at 0.5, 1 and 3 times the lengthscales:
    ``PSD_POINTS`` and ``PSD_LENGTHSCALES`` of this module), ``diag``, batch shapes, inputs with no
    points, gradients (hyperparameters: finite; inputs, in float64 on continuous spaces: equal to
    finite differences along geodesics) and dtype/device: ``x1`` and ``x2`` of different dtypes
    must be refused with :class:`~manibo.exceptions.InputDataError`.

    Raises:
        AssertionError: naming the property that fails.
    """
    kernel = kernel.to(device=device, dtype=dtype)
    gen = torch.Generator(device=device).manual_seed(1)
    x = space.random(12, generator=gen, dtype=dtype, device=device)
    z = space.random(5, generator=gen, dtype=dtype, device=device)
    with torch.no_grad():
        K = kernel(x).to_dense()
    assert K.shape == (12, 12) and K.dtype == dtype and K.device == x.device, (
        "wrong K shape/dtype/device"
    )
    scale = float(K.abs().max())
    tol = _tol(dtype) * max(1.0, scale) * 100
    _assert_close(K, K.transpose(-1, -2), tol, "K is not symmetric")
    _check_positive_semidefinite(kernel, space, dtype, device)
    with torch.no_grad():
        diag = kernel(x, diag=True)
        Kxz = kernel(x, z).to_dense()
    _assert_close(diag, K.diagonal(), tol, "diag=True differs from the diagonal of K")
    assert Kxz.shape == (12, 5), f"K(x, z) has shape {tuple(Kxz.shape)}"
    # BoTorch t-batches: b x q x d against b x n x d equals a loop over b
    xb = space.random(3 * 2, generator=gen, dtype=dtype, device=device).reshape(
        3, 2, *space.point_shape
    )
    with torch.no_grad():
        batched = kernel(xb, x.expand(3, *x.shape)).to_dense()
        for i in range(3):
            _assert_close(
                batched[i], kernel(xb[i], x).to_dense(), tol, "batched K differs from a loop"
            )
    # no points: empty matrices of the right shapes
    with torch.no_grad():
        for a, b, shape in ((x[:0], z, (0, 5)), (x, z[:0], (12, 0)), (x[:0], x[:0], (0, 0))):
            empty = kernel(a, b).to_dense()
            assert empty.shape == shape, f"K with no points has shape {tuple(empty.shape)}"
        assert kernel(x[:0], diag=True).shape == (0,), "diag=True with no points"
    # gradients with respect to hyperparameters are finite
    if any(p.requires_grad for p in kernel.parameters()):
        kernel.zero_grad()
        kernel(x).to_dense().sum().backward()
        for name, p in kernel.named_parameters():
            if p.grad is not None:
                assert torch.isfinite(p.grad).all(), f"non-finite gradient for {name}"
    if not space.is_discrete and dtype == torch.float64:
        _check_input_gradient(kernel, space, x[:4], z, gen)
    # mixed dtypes are refused with manibo's InputDataError (not torch's RuntimeError, nor promoted)
    other = torch.float32 if dtype == torch.float64 else torch.float64
    requirement = (
        f"mixed dtypes: the kernel must refuse x1 {dtype} with x2 {other} by raising "
        "manibo.exceptions.InputDataError (compare `x1.dtype` and `x2.dtype` in `forward`)"
    )
    try:
        kernel(x, z.to(other)).to_dense()
    except InputDataError as error:
        assert len(str(error)) > 30, f"mixed dtypes: error message too terse: {error}"
    except Exception as error:
        raise AssertionError(f"{requirement}; got {type(error).__name__}: {error}") from error
    else:
        raise AssertionError(f"{requirement}; nothing was raised")
