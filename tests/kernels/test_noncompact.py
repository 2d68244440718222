"""Kernels on H^d and SPD(n): exact evaluation against closed forms and spectral integrals, the
random-phase features within their Monte Carlo error, seeded determinism, gradients, BoTorch."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel
from scipy import special

from manibo.exceptions import ConfigurationError, ManiboWarning, TruncationWarning
from manibo.kernels import (
    GeometricHeatKernel,
    GeometricMaternKernel,
    NoncompactHeatKernel,
    NoncompactMaternKernel,
)
from manibo.kernels.noncompact import DEFAULT_NUM_PHASES
from manibo.optim import LBFGSOptions, optimize_acqf_on_space
from manibo.spaces import Hyperbolic, SymmetricPositiveDefinite
from manibo.testing.references import hyperbolic_kernel, spd2_kernel

# few random phases, for speed: such kernels warn that their estimates are noisy
FEW_PHASES = pytest.mark.filterwarnings(
    "ignore:random-phase features:manibo.exceptions.ManiboWarning",
    "ignore:.*its random-phase estimates of k:manibo.exceptions.ManiboWarning",
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _kernel(space, nu, ell, **options):
    kernel = GeometricMaternKernel(space, nu=nu, **options).double()
    kernel.lengthscale = ell
    return kernel


def _dense(kernel, x1, x2=None):
    with torch.no_grad():
        return kernel(x1, x1 if x2 is None else x2).to_dense()


def _along_geodesic(space, distances):
    """Points at the given distances from the origin along one direction."""
    o = space.origin()
    v = torch.zeros(space.dim + 1, dtype=torch.float64)
    v[1] = 1.0
    return torch.stack([space.exp(o, float(r) * v) for r in distances])


def _flat_profile(nu, a, r):
    """The Euclidean Matérn profile in ``a r`` (any nu, Bessel K), or the Gaussian for
    ``nu = inf`` (then ``a`` is the lengthscale)."""
    if math.isinf(nu):
        return np.exp(-(r**2) / (2 * a**2))
    z = np.where(r > 0, a * r, 1.0)
    profile = 2 ** (1 - nu) / special.gamma(nu) * z**nu * special.kv(nu, z)
    return np.where(r > 0, profile, 1.0)


def _h3_closed_form(nu, a, r):
    """(r / sinh r) times :func:`_flat_profile`."""
    s = np.where(r > 0, r / np.sinh(np.where(r > 0, r, 1.0)), 1.0)
    return s * _flat_profile(nu, a, r)


@pytest.mark.parametrize("nu", [0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.5, math.inf])
@pytest.mark.parametrize("shifted", [True, False])
@pytest.mark.parametrize("ell", [0.1, 1.0, 5.0])
def test_h3_matches_the_closed_form(nu, shifted, ell):
    # closed forms for half-integer nu and heat; the heat-kernel superposition otherwise
    space = Hyperbolic(3, radius=3.0)
    r = np.array([0.0, 1e-3, 0.02, 0.3, 1.0, 2.5, 6.0])
    x = _along_geodesic(space, r / 2)
    y = _along_geodesic(space, -r / 2)
    kernel = _kernel(space, nu, ell, shifted_laplacian=shifted)
    with torch.no_grad():
        got = kernel(x, y, diag=True).numpy()
    a = ell if math.isinf(nu) else math.sqrt(2 * nu / ell**2 + (0 if shifted else 1))
    tol = 2e-6 if nu < 1 else 1e-8  # the interpolated superposition; closed forms are exact
    assert np.abs(got - _h3_closed_form(nu, a, r)).max() < tol


@pytest.mark.parametrize("d", [2, 4, 5])
@pytest.mark.parametrize("nu", [1.5, 2.5, math.inf])
def test_other_dimensions_match_the_spectral_integral(d, nu):
    space = Hyperbolic(d, radius=2.0)
    r = np.array([0.0, 0.15, 0.8, 2.0, 3.9])
    x, y = _along_geodesic(space, r / 2), _along_geodesic(space, -r / 2)
    ell = 0.7
    with torch.no_grad():
        got = _kernel(space, nu, ell)(x, y, diag=True).numpy()
    tol = 3e-6 if nu == 1.5 else 1e-7  # the reference's spectral tail
    assert np.abs(got - hyperbolic_kernel(d, nu, ell, r)).max() < tol


def _h3_exact(space, nu, ell, x):
    return _dense(_kernel(space, nu, ell, method="exact"), x)


def _spd2_exact(nu, ell, x):
    m = x.reshape(-1, 2, 2).numpy()
    out = np.eye(len(m))
    for i in range(len(m)):
        for j in range(i + 1, len(m)):
            out[i, j] = out[j, i] = spd2_kernel(nu, ell, m[i], m[j])
    return torch.from_numpy(out)


@pytest.mark.parametrize(
    ("case", "ell", "num_phases"),
    [("h3", 0.8, 4096), ("h2", 0.8, 4096), ("spd2", 0.8, 4096), ("spd2", 3.0, 16384)],
)
def test_features_are_within_five_standard_errors(case, ell, num_phases):
    # the long SPD(2) lengthscale weighs the small frequencies, where the tanh of the c-function
    # matters: tanh(2 pi |lam_i - lam_j|) instead of tanh(pi |...|) puts it 8 errors off
    nu = 2.5
    if case == "spd2":
        space = SymmetricPositiveDefinite(2, eigenvalue_bounds=(0.05, 5.0))
        x = space.random(8, generator=_gen(1))
        exact = _spd2_exact(nu, ell, x)
    else:
        space = Hyperbolic(3 if case == "h3" else 2, radius=2.0)
        x = space.random(20, generator=_gen(1))
        exact = _h3_exact(space, nu, ell, x)
    kernel = _kernel(space, nu, ell, method="features", num_phases=num_phases)
    estimate = _dense(kernel, x)
    with torch.no_grad():
        error = kernel.feature_standard_error(x, x)
    assert ((estimate - exact).abs() <= 5 * error + 1e-12).all()
    # the bound is sharp enough to reject a kernel that is off by 30% in the lengthscale
    some = x[:4]
    if case == "spd2":
        wrong = _spd2_exact(nu, 1.3 * ell, some)
    else:
        wrong = _h3_exact(space, nu, 1.3 * ell, some)
    assert not ((estimate[:4, :4] - wrong).abs() <= 5 * error[:4, :4] + 1e-12).all()


def test_stated_tolerances_at_the_default_number_of_phases():
    # documented in docs/noncompact.md: max abs error over 40 volume-uniform points of H^3 and 10
    # points of SPD(2)'s default sampling, Matérn-5/2, lengthscale 1, default seed
    assert DEFAULT_NUM_PHASES == 4096
    space = Hyperbolic(3, radius=2.0)
    x = space.random(40, generator=_gen(11))
    features = _dense(_kernel(space, 2.5, 1.0, method="features"), x)
    assert float((features - _h3_exact(space, 2.5, 1.0, x)).abs().max()) < 0.05
    space = SymmetricPositiveDefinite(2)  # eigenvalues in [1e-3, 5]
    x = space.random(10, generator=_gen(11))
    features = _dense(_kernel(space, 2.5, 1.0), x)
    assert float((features - _spd2_exact(2.5, 1.0, x)).abs().max()) < 0.12


def test_a_priori_bound_of_the_h3_features():
    # Var <= E[e^{4 rho H}] / L = phi_{-3i}(R) / L = (4 cosh^2 R - 1) / (3 L) on H^3
    radius, num_phases = 2.0, 2048
    space = Hyperbolic(3, radius=radius)
    x = space.random(30, generator=_gen(2))
    kernel = _kernel(space, math.inf, 1.0, method="features", num_phases=num_phases)
    bound = math.sqrt((4 * math.cosh(radius) ** 2 - 1) / (3 * num_phases))
    error = (_dense(kernel, x) - _h3_exact(space, math.inf, 1.0, x)).abs().max()
    assert float(error) < 4 * bound


@pytest.mark.parametrize(
    ("dim", "radius"), [(2, 2.0), (2, 15.0), (3, 1.0), (3, 2.0), (4, 3.0), (5, 2.0)]
)
def test_the_feature_second_moment_is_the_expectation_over_the_boundary(dim, radius):
    """E_k[e^{4 rho H(k x)}] at distance R: the hypergeometric closed form against the integral
    over the direction's angle theta to the point (density sin^(d - 2) theta) of
    (cosh R - sinh R cos theta)^(-4 rho), in 30-digit arithmetic; cosh R on H^2 and
    (4 cosh^2 R - 1)/3 on H^3."""
    import mpmath

    def weight(theta):
        return mpmath.sin(theta) ** (dim - 2)

    with mpmath.workdps(30):
        rho = mpmath.mpf(dim - 1) / 2
        c, s = mpmath.cosh(radius), mpmath.sinh(radius)
        cuts = [0, 1e-7, 1e-5, 1e-3, 0.1, 1, mpmath.pi]  # the integrand peaks at theta ~ e^-R
        expected = mpmath.quad(lambda t: weight(t) * (c - s * mpmath.cos(t)) ** (-4 * rho), cuts)
        expected = float(expected / mpmath.quad(weight, [0, mpmath.pi]))
    moment = Hyperbolic(dim, radius=radius).feature_second_moment()
    assert moment == pytest.approx(expected, rel=1e-9)
    if dim == 2:
        assert moment == pytest.approx(math.cosh(radius), rel=1e-12)
    if dim == 3:
        assert moment == pytest.approx((4 * math.cosh(radius) ** 2 - 1) / 3, rel=1e-12)


def test_features_too_noisy_for_their_domain_warn_at_construction():
    """On H^2 with radius 15 the estimates of k(x, x) = 1 ranged 0.0009-0.095 over 10 points,
    without a warning, and feature_standard_error (from the same phases) said 0.0004-0.09."""
    space = Hyperbolic(2, radius=15.0)
    with pytest.warns(
        ManiboWarning, match=r"up to 20(\.\d)? .*method='exact'.*num_phases >= 163,450,869 "
    ):
        kernel = GeometricMaternKernel(space, nu=2.5, method="features").double()
    with pytest.warns(ManiboWarning, match=r"estimates of k\(x, x\), which is exactly 1, range"):
        diagonal = kernel(space.random(10, generator=0), diag=True).detach()
    assert float((diagonal - 1).abs().max()) > 0.5  # the warnings were earned
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManiboWarning)
        GeometricMaternKernel(Hyperbolic(2, radius=15.0))  # exact: silent
        GeometricMaternKernel(Hyperbolic(3, radius=2.0), method="features")  # bound 0.067
        GeometricMaternKernel(SymmetricPositiveDefinite(2))  # no closed form: silent


def test_estimates_of_k_x_x_far_from_1_warn_where_they_are_computed():
    """SPD(3) with eigenvalues in [1e-3, 1e3], log-eigenvalue sampling: the estimates of
    k(x, x) = 1 ranged 0.126-7.07 over 200 points, without a word (nothing bounds the features'
    second moment on SPD a priori, as on hyperbolic spaces)."""
    space = SymmetricPositiveDefinite(3, (1e-3, 1e3), sampling="log-eigenvalues")
    x = space.random(200, generator=0)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    message = r"range 0\.126-7\.07 over 200 estimates \(the worst at the matrix with eigenvalues "
    with pytest.warns(ManiboWarning, match=message + r"0\.00118, 0\.0251, 192\)"):
        kernel(x).to_dense()
    diagonal = torch.diagonal(kernel(x).to_dense().detach())  # warned once
    assert float(diagonal.min()) < 0.5 and float(diagonal.max()) > 1.5
    other = GeometricMaternKernel(space, nu=1.5).double()  # once per space: a loop builds many
    other(x, diag=True)
    # the worst point of a batch (the second of two batches of 100 points) is named as it is
    space = SymmetricPositiveDefinite(3, (1e-3, 1e3), sampling="log-eigenvalues")
    with pytest.warns(ManiboWarning, match=message):
        GeometricMaternKernel(space, nu=2.5).double()(x.reshape(2, 100, 9), diag=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManiboWarning)
        narrow = SymmetricPositiveDefinite(3, (1e-3, 1e3), sampling="eigenvalues")
        estimates = GeometricMaternKernel(narrow).double()(
            narrow.random(200, generator=0), diag=True
        )
        assert float((estimates.detach() - 1).abs().max()) < 0.1  # 0.915-1.082


@FEW_PHASES
@pytest.mark.parametrize("space", [Hyperbolic(2), SymmetricPositiveDefinite(3, (0.1, 10.0))])
def test_feature_gram_matrices_are_positive_semidefinite(space):
    x = space.random(60, generator=_gen(3))
    kernel = _kernel(space, 1.5, 0.3, method="features", num_phases=64)
    eig = torch.linalg.eigvalsh(_dense(kernel, x))
    assert float(eig.min()) > -1e-10 * float(eig.max())
    if isinstance(space, Hyperbolic):  # the exact kernel too
        eig = torch.linalg.eigvalsh(_dense(_kernel(space, 1.5, 0.3), x))
        assert float(eig.min()) > -1e-9


@FEW_PHASES
@pytest.mark.parametrize("space", [Hyperbolic(3), SymmetricPositiveDefinite(2)])
def test_seeded_features_are_deterministic_and_smooth(space):
    x = space.random(9, generator=_gen(4))
    a = _dense(_kernel(space, 2.5, 0.9, method="features", seed=3), x)
    b = _dense(_kernel(space, 2.5, 0.9, method="features", seed=3), x)
    c = _dense(_kernel(space, 2.5, 0.9, method="features", seed=4), x)
    assert torch.equal(a, b) and not torch.equal(a, c)
    # smooth in the lengthscale: the gradient matches central differences
    kernel = _kernel(space, 2.5, 0.9, method="features", num_phases=256)
    total = kernel(x).to_dense().sum()
    (grad,) = torch.autograd.grad(total, kernel.raw_lengthscale)
    h = 1e-6
    values = []
    for sign in (1, -1):
        with torch.no_grad():
            kernel.raw_lengthscale.add_(sign * h)
            values.append(float(kernel(x).to_dense().sum()))
            kernel.raw_lengthscale.sub_(sign * h)
    assert abs(float(grad) - (values[0] - values[1]) / (2 * h)) < 1e-5 * max(1, abs(float(grad)))


def _model(space, n=12):
    x = space.random(n, generator=_gen(5))
    y = -space.distance(x, x[:1]).unsqueeze(-1)
    covar = ScaleKernel(GeometricMaternKernel(space, nu=2.5))
    return SingleTaskGP(x, y, covar_module=covar).double().eval(), x


@pytest.mark.parametrize("space", [Hyperbolic(3), Hyperbolic(2), SymmetricPositiveDefinite(2)])
def test_qlognei_is_deterministic_with_gradients_that_match_finite_differences(space):
    model, x = _model(space)
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=x, sampler=SobolQMCNormalSampler(torch.Size([64]), seed=0)
    )
    b, q = 4, 3
    candidates = space.random(b * q, generator=_gen(6)).reshape(b, q, -1).requires_grad_(True)
    first = acqf(candidates)
    assert first.shape == (b,) and torch.isfinite(first).all()
    assert torch.equal(first.detach(), acqf(candidates).detach())  # L-BFGS sees one function
    (grad,) = torch.autograd.grad(first.sum(), candidates)
    assert torch.isfinite(grad).all()
    # towards other points of the domain: tangent vectors scaled to the geometry (on SPD(2) the
    # domain reaches eigenvalues of 1e-3, where a Euclidean step of 1e-5 is already large)
    targets = space.random(b * q, generator=_gen(7)).reshape(b, q, -1)
    direction = space.log(candidates.detach(), targets)
    h = 1e-5
    with torch.no_grad():
        plus = acqf(space.exp(candidates.detach(), h * direction))
        minus = acqf(space.exp(candidates.detach(), -h * direction))
    slope = (grad * direction).flatten(1).sum(-1)
    assert torch.allclose(slope, (plus - minus) / (2 * h), rtol=1e-3, atol=1e-5)


def _count_feature_rows(kernel, monkeypatch):
    """Count the points whose horocyclic coordinates the kernel computes."""
    rows = []
    horocyclic = kernel.space.horocyclic

    def counted(x, boundary):
        rows.append(x.shape[:-1].numel())
        return horocyclic(x, boundary)

    monkeypatch.setattr(kernel.space, "horocyclic", counted)
    return rows


def test_features_of_repeated_batches_are_computed_once(monkeypatch):
    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    train = space.random(6, generator=_gen(20))
    test = space.random(8, generator=_gen(21)).reshape(8, 1, 4).requires_grad_(True)
    repeated = torch.cat([train.expand(8, 6, 4), test.detach()], dim=-2)[..., :6, :]
    rows = _count_feature_rows(kernel, monkeypatch)
    cross = kernel(test, repeated).to_dense()
    assert sum(rows) == 8 + 6  # each training point once, not once per test batch (8 + 48)
    (grad,) = torch.autograd.grad(cross.square().sum(), test)
    # independent reference: one test point at a time against the unrepeated training points
    phi_train = kernel.feature_map(train).detach()
    for b in range(8):
        point = test[b].detach().clone().requires_grad_(True)
        expected = kernel.feature_map(point) @ phi_train.T
        assert torch.allclose(cross[b], expected, rtol=0, atol=1e-14)
        (expected_grad,) = torch.autograd.grad(expected.square().sum(), point)
        assert torch.allclose(grad[b], expected_grad, rtol=1e-12, atol=1e-14)


def test_the_diagonal_check_reads_the_device_once_and_never_copies_expanded_features(
    monkeypatch,
):
    # every forward of a features kernel checks k(x, x) ~ 1: it read the device three times (a
    # host sync each on CUDA) and squared the expanded copies of the training features (128
    # copies of 100 points x 8192 features: 419 MB more, 33 -> 234 ms)
    from torch.utils._python_dispatch import TorchDispatchMode

    class Reads(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.scalars, self.largest = 0, 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.ops.aten._local_scalar_dense.default:
                self.scalars += 1
            elif isinstance(out, torch.Tensor):
                self.largest = max(self.largest, out.untyped_storage().nbytes() // 8)
            return out

    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    x = space.random(6, generator=_gen(22))
    phi = kernel.feature_map(x).detach()
    lists = []
    tolist = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda t: lists.append(t) or tolist(t))
    with Reads() as reads:
        kernel._check_diagonal(x.expand(32, 6, 4), phi.expand(32, 6, 512))
    assert reads.scalars + len(lists) == 1  # the range of the estimates, read at once
    assert reads.largest <= 6 * 512  # float64 entries stored: the distinct rows, not 32 copies


def test_two_views_of_the_test_block_share_their_features(monkeypatch):
    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    full = space.random(10, generator=_gen(22))
    rows = _count_feature_rows(kernel, monkeypatch)
    block = kernel(full[6:], full[6:]).to_dense()  # two slices, one memory
    assert sum(rows) == 4
    phi = kernel.feature_map(full[6:].clone())
    assert torch.allclose(block, phi @ phi.T, rtol=0, atol=1e-14)


def test_identical_leaf_copies_that_require_grad_each_get_their_gradient():
    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    point = space.random(3, generator=_gen(23))
    copies = point.expand(2, 3, 4).clone().requires_grad_(True)  # two leaves, equal values
    other = space.random(5, generator=_gen(24))
    (grad,) = torch.autograd.grad(kernel(copies, other).to_dense().sum(), copies)
    assert grad[0].abs().max() > 0 and torch.allclose(grad[0], grad[1], rtol=0, atol=1e-14)


def test_posterior_of_a_batch_equals_its_points_one_at_a_time(monkeypatch):
    space = SymmetricPositiveDefinite(2)
    model, _ = _model(space)
    test = space.random(8, generator=_gen(25)).reshape(8, 1, 4)
    rows = _count_feature_rows(model.covar_module.base_kernel, monkeypatch)
    with torch.no_grad():
        batched = model.posterior(test)
    # test points twice (test-test, test-train), training points twice (train-train for the
    # prediction cache, test-train): 40 rows, not 132 with the training points once per test batch
    assert sum(rows) <= 2 * 8 + 2 * 12
    for b in range(8):
        with torch.no_grad():
            single = model.posterior(test[b])
        assert torch.allclose(batched.mean[b], single.mean, rtol=0, atol=1e-10)
        assert torch.allclose(batched.variance[b], single.variance, rtol=0, atol=1e-10)


@pytest.mark.parametrize("space", [Hyperbolic(3, radius=1.5), SymmetricPositiveDefinite(2)])
def test_optimize_acqf_on_space_keeps_candidates_in_the_domain(space):
    model, x = _model(space)
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=x, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    candidates, value = optimize_acqf_on_space(
        acqf, space, q=2, num_restarts=3, raw_samples=32, options=LBFGSOptions(maxiter=15), seed=0
    )
    assert candidates.shape == (2, *space.point_shape) and torch.isfinite(value)
    space.check(candidates)


@FEW_PHASES
def test_float32_matches_float64():
    for space, method in (
        (Hyperbolic(2), "exact"),
        (Hyperbolic(3), "features"),
        (SymmetricPositiveDefinite(2, (0.1, 5.0)), "features"),
    ):
        x = space.random(10, generator=_gen(8))
        kernel = _kernel(space, 1.5, 0.7, method=method, num_phases=512)
        k64 = _dense(kernel, x)
        k32 = _dense(kernel.float(), x.float())
        assert k32.dtype == torch.float32
        assert float((k32.double() - k64).abs().max()) < 2e-4


def test_batch_shape_broadcasts_like_separate_kernels():
    space = Hyperbolic(2)
    x = space.random(6, generator=_gen(9))
    kernel = GeometricMaternKernel(space, nu=1.5, batch_shape=torch.Size([2])).double()
    kernel.lengthscale = torch.tensor([[[0.4]], [[1.3]]], dtype=torch.float64)
    batched = _dense(kernel, x)
    assert batched.shape == (2, 6, 6)
    for i, ell in enumerate((0.4, 1.3)):
        assert torch.allclose(batched[i], _dense(_kernel(space, 1.5, ell), x), atol=1e-12)
    with torch.no_grad():
        diag = kernel(x, diag=True)
    assert torch.allclose(diag, batched.diagonal(dim1=-2, dim2=-1), atol=1e-12)


def test_constructors_dispatch_and_refuse_bad_options():
    assert isinstance(GeometricMaternKernel(Hyperbolic(3), nu=1.5), NoncompactMaternKernel)
    heat = GeometricHeatKernel(SymmetricPositiveDefinite(2))
    assert isinstance(heat, NoncompactHeatKernel) and heat.method == "features"
    assert GeometricMaternKernel(Hyperbolic(2)).method == "exact"
    bad = [
        (Hyperbolic(3), {"num_levels": 10}),
        (SymmetricPositiveDefinite(2), {"method": "exact"}),
        (Hyperbolic(3), {"method": "fast"}),
        (Hyperbolic(3), {"nu": 0.0}),
        (Hyperbolic(3), {"num_phases": 0}),
        (Hyperbolic(3), {"truncation_tol": 2.0}),
    ]
    for space, options in bad:
        with pytest.raises(ConfigurationError):
            GeometricMaternKernel(space, **options)
    with pytest.raises(ConfigurationError, match="non-compact"):
        NoncompactMaternKernel(object())


def _euclidean_matern(nu, ell, r):
    """The kernel of lengthscale ``ell`` on R^d, which one far below the curvature radius
    reduces to."""
    return _flat_profile(nu, ell if math.isinf(nu) else math.sqrt(2 * nu) / ell, r)


@pytest.mark.parametrize("d", [2, 5])
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, math.inf])
@pytest.mark.parametrize("ell", [3e-4, 1e-3])
def test_short_lengthscales_on_tabulated_dimensions_match_the_flat_limit(d, nu, ell):
    # with a distance table of spacing 1e-4 near 0, H^2 at l = 1e-3 was off by up to 4.2e-4
    # (nu = 3/2) and its Gram matrices were indefinite; within 1.5 l the curvature changes the
    # kernel by less than 2e-7 here
    space = Hyperbolic(d)
    r = np.linspace(0.0, 1.5 * ell, 61)
    kernel = GeometricMaternKernel(space, nu=nu).double()
    kernel.lengthscale = torch.tensor(ell, dtype=torch.float64)
    values = _dense(kernel, space.origin()[None], _along_geodesic(space, r))[0].numpy()
    assert np.abs(values - _euclidean_matern(nu, ell, r)).max() < (3e-7 if ell >= 1e-3 else 1e-6)


def test_a_cluster_of_points_at_a_short_lengthscale_has_a_positive_definite_gram_matrix():
    # 40 points within about 3e-4 of the origin of H^2 at l = 1e-3: the smallest eigenvalue was
    # -4.0e-6 (the exact one is +6.9e-7)
    space = Hyperbolic(2)
    tangent = torch.zeros(40, 3, dtype=torch.float64)
    tangent[:, 1:] = 3e-4 * torch.randn(40, 2, dtype=torch.float64, generator=_gen())
    x = space.exp(space.origin().expand(40, -1), tangent)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = torch.tensor(1e-3, dtype=torch.float64)
    flat = _euclidean_matern(2.5, 1e-3, space.distance(x[:, None], x[None]).numpy())
    smallest = torch.linalg.eigvalsh(_dense(kernel, x)).min()
    assert smallest > 0 and abs(float(smallest) - np.linalg.eigvalsh(flat).min()) < 1e-8


def test_lengthscales_finer_than_the_distance_table_warn():
    x = Hyperbolic(2).random(3, generator=_gen())
    with pytest.warns(TruncationWarning, match="finer than the table of distances"):
        _dense(_kernel(Hyperbolic(2), 2.5, torch.tensor(5e-5, dtype=torch.float64)), x)
    with warnings.catch_warnings():  # H^3's closed forms need no table
        warnings.simplefilter("error")
        h3 = Hyperbolic(3)
        _dense(_kernel(h3, 2.5, torch.tensor(5e-5, dtype=torch.float64)), h3.random(3, generator=0))


def test_lengthscales_outside_the_time_grid_warn():
    space = Hyperbolic(2)
    kernel = _kernel(space, 2.5, 1e7)
    x = space.random(3, generator=_gen())
    with pytest.warns(TruncationWarning, match="lengthscale"):
        _dense(kernel, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _dense(_kernel(space, 2.5, 0.5), x)


@FEW_PHASES
@pytest.mark.parametrize(
    ("space", "method"),
    [(Hyperbolic(2), "exact"), (Hyperbolic(3), "features"), (SymmetricPositiveDefinite(2), "auto")],
)
def test_inputs_without_points_give_empty_matrices(space, method):
    kernel = _kernel(space, 1.5, 0.7, method=method, num_phases=64)
    x = space.random(3, generator=_gen())
    for a, b, shape in ((x[:0], x, (0, 3)), (x, x[:0], (3, 0)), (x[:0], x[:0], (0, 0))):
        assert _dense(kernel, a, b).shape == shape
    with torch.no_grad():
        assert kernel(x[:0], diag=True).shape == (0,)
        assert kernel.feature_map(x[:0]).shape == (0, 128)


@pytest.mark.parametrize(
    "space, method", [(Hyperbolic(2), "exact"), (SymmetricPositiveDefinite(2), "features")]
)
def test_batch_index_gives_the_batch_members_kernel(space, method):
    # GPyTorch's Kernel.__getitem__ indexed the phase tables spectral_base (4096, 1) and boundary
    # (4096, 2) by the batch index: on SPD(2) kernel[1](x) raised "IndexError: too many indices"
    batch = torch.Size([2])
    kernel = GeometricMaternKernel(space, nu=1.5, method=method, batch_shape=batch).double()
    kernel.lengthscale = torch.tensor([[[0.4]], [[1.3]]], dtype=torch.float64)
    x = space.random(4, generator=_gen(3))
    scaled = ScaleKernel(kernel, batch_shape=batch).double()
    full, full_scaled = _dense(kernel, x), _dense(scaled, x)
    for i in range(2):
        member = kernel[i]
        assert member.batch_shape == torch.Size([])
        assert torch.allclose(_dense(member, x), full[i], atol=1e-12)
        assert member.spectral_base is kernel.spectral_base
        assert torch.allclose(_dense(scaled[i], x), full_scaled[i], atol=1e-12)
    # the phases saved in a state dict still load into the unindexed kernel and an indexed one
    state = kernel.state_dict()
    assert {"spectral_base", "boundary"} <= set(state)
    kernel.load_state_dict(state)
    kernel[0].load_state_dict(kernel[1].state_dict())


@pytest.mark.parametrize("space", [Hyperbolic(2), SymmetricPositiveDefinite(2)], ids=repr)
def test_ard_num_dims_is_refused_at_construction(space):
    # it was accepted; the exact kernel on Hyperbolic(2) then used the first of 3 lengthscales
    with pytest.raises(ConfigurationError, match="one lengthscale"):
        GeometricMaternKernel(space, ard_num_dims=3)


def _uncached(kernel, x1, x2):
    """``kernel(x1, x2)`` computed with an empty cache of horocyclic projections, left empty."""
    kernel._horocyclic_cache.clear()
    value = kernel(x1, x2).to_dense()
    kernel._horocyclic_cache.clear()
    return value


@FEW_PHASES
def test_a_call_under_inference_mode_leaves_nothing_for_a_later_backward():
    """Projections kept from an ``inference_mode`` call cannot be saved for backward: a later
    differentiable call raised "Inference tensors cannot be saved for backward"."""
    space = SymmetricPositiveDefinite(3)
    kernel = NoncompactMaternKernel(space, nu=2.5, method="features", num_phases=256).double()
    x = space.random(20, generator=0)
    with torch.inference_mode():
        kernel(x, x).to_dense()
    kernel(x, x).to_dense().sum().backward()
    assert torch.isfinite(kernel.raw_lengthscale.grad).all()


def test_the_horocyclic_projections_of_the_training_inputs_are_reused_while_valid(monkeypatch):
    """A posterior call reuses the projections of the training inputs (they depend on neither
    the lengthscale nor any other parameter); a new lengthscale, a new dtype, inputs changed in
    place and a new boundary give the values computed afresh."""
    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    train = space.random(7, generator=_gen(30))
    test = space.random(3, generator=_gen(31))
    rows = _count_feature_rows(kernel, monkeypatch)
    with torch.no_grad():
        first = kernel(test, train.clone()).to_dense()
        assert sum(rows) == 3 + 7
        second = kernel(test.clone(), train.clone()).to_dense()  # equal content, new tensors
        assert sum(rows) == 3 + 7  # both found again
        assert torch.equal(first, second)
        kernel.lengthscale = 0.3
        cached = kernel(test, train).to_dense()
        assert sum(rows) == 3 + 7
        assert not torch.allclose(cached, first)
        assert torch.equal(cached, _uncached(kernel, test, train))
        kernel(test, train).to_dense()  # fill the cache again
        train[0] = space.random(1, generator=_gen(32))[0]  # in place: content differs now
        assert torch.equal(kernel(test, train).to_dense(), _uncached(kernel, test, train))
        kernel(test, train).to_dense()
        kernel.boundary.copy_(kernel.boundary.flip(0))  # a changed buffer (load_state_dict)
        assert torch.equal(kernel(test, train).to_dense(), _uncached(kernel, test, train))
        kernel(test, train).to_dense()
        kernel.float()
        assert kernel._horocyclic_cache == []
        low = kernel(test.float(), train.float()).to_dense()
        assert low.dtype == torch.float32
        assert torch.equal(low, _uncached(kernel, test.float(), train.float()))
        kernel(test.float(), train.float()).to_dense()
    assert len(kernel._horocyclic_cache) == 2
    assert all(h.dtype == torch.float32 for e in kernel._horocyclic_cache for h in e[3])
    monkeypatch.undo()  # the counting function cannot be pickled
    assert pickle.loads(pickle.dumps(kernel))._horocyclic_cache == []
    assert copy.deepcopy(kernel)._horocyclic_cache == []


@FEW_PHASES
def test_gradients_through_cached_projections_match_uncached_and_finite_differences():
    """With the training inputs' projections cached, gradients with respect to the lengthscale
    (fitting) and to the test inputs (acquisition optimisation) are those computed afresh, and
    repeated backward passes through the same cached values work."""
    space = SymmetricPositiveDefinite(2)
    kernel = _kernel(space, 2.5, 0.8, num_phases=256)
    train = space.random(6, generator=_gen(33))
    test = space.random(4, generator=_gen(34))

    def loss(x1, x2):
        return (kernel(x1, x2).to_dense() * torch.linspace(-1, 1, x2.shape[-2])).sum()

    def lengthscale_gradient(cache: bool):
        if not cache:
            kernel._horocyclic_cache.clear()
        (grad,) = torch.autograd.grad(loss(train, train), kernel.raw_lengthscale)
        return grad

    with torch.no_grad():
        kernel(train, train).to_dense()  # cached
    assert len(kernel._horocyclic_cache) == 1
    cached = [lengthscale_gradient(True) for _ in range(2)]  # twice through the same cache
    assert torch.equal(cached[0], cached[1])
    assert torch.allclose(cached[0], lengthscale_gradient(False), rtol=1e-12, atol=0)
    step = 1e-6
    with torch.no_grad():
        values = []
        for sign in (1, -1):
            kernel.raw_lengthscale.add_(sign * step)
            values.append(float(loss(train, train)))
            kernel.raw_lengthscale.sub_(sign * step)
    assert float(cached[0]) == pytest.approx((values[0] - values[1]) / (2 * step), rel=1e-5)

    point = test.clone().requires_grad_(True)
    kernel(train, train).to_dense()
    (grad,) = torch.autograd.grad(loss(point, train), point)
    assert len(kernel._horocyclic_cache) >= 1  # train cached, the point never
    assert all(not torch.equal(e[0], test) for e in kernel._horocyclic_cache)
    kernel._horocyclic_cache.clear()
    (fresh,) = torch.autograd.grad(loss(point, train), point)
    assert torch.allclose(grad, fresh, rtol=1e-12, atol=1e-14)


def test_the_exact_kernel_checks_its_points_once_per_call(monkeypatch):
    """The exact kernel's distances and heat kernels do not check the points again after its
    ``forward`` did (each of the two inputs once); the space's public methods still refuse
    points off the hyperboloid."""
    from manibo.exceptions import InputDataError

    for space, nu in [(Hyperbolic(3), 2.5), (Hyperbolic(3), math.inf), (Hyperbolic(2), 1.5)]:
        kernel = _kernel(space, nu, 0.7, method="exact")
        x1, x2 = space.random(5, generator=_gen(35)), space.random(4, generator=_gen(36))
        calls = []
        monkeypatch.setattr(
            space,
            "_check_on_manifold",
            lambda x, n, f=space._check_on_manifold, c=calls: (c.append(n), f(x, n))[1],
        )
        kernel(x1, x2).to_dense()
        assert calls == ["x1", "x2"]  # forward's membership checks, nothing more
        bad = x1 * 1.01
        time = torch.ones(1, 1, dtype=torch.float64)
        for method, args in [
            ("pairwise_distance", (bad, x2)),
            ("distance", (bad, x1)),
            ("heat_kernel", (time, bad, x2)),
            ("heat_mixture", (torch.zeros(1, 1, dtype=torch.float64), -90.0, x1, bad)),
        ]:
            with pytest.raises(InputDataError, match="hyperboloid|-x0"):
                getattr(space, method)(*args)
