"""H^d: geometry against geomstats and the Poincaré ball, uniform sampling of the domain ball,
projection and retraction into the ball, plane waves as Laplace eigenfunctions, spectral
sampling against the spectral measure."""

import math

import numpy as np
import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.exceptions.warnings import InputDataWarning
from scipy import integrate, stats

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.models import build_surrogate
from manibo.optim import optimize_acqf_on_space
from manibo.spaces import Hyperbolic, poincare_to_hyperboloid
from manibo.spaces._geomstats import geomstats_module
from manibo.spaces.hyperbolic import FLOAT32_RADIUS, MAX_RADIUS, lorentz
from manibo.spaces.registry import describe_spaces, make_space
from manibo.testing.references import hyperbolic_log_plancherel


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _at(space, r, direction=None):
    """The point at distance ``r`` from the origin, along ``direction`` (default e_1)."""
    u = torch.zeros(space.dim, dtype=torch.float64)
    u[0] = 1.0
    u = u if direction is None else direction / direction.norm()
    return torch.cat([torch.tensor([math.cosh(r)]), math.sinh(r) * u]).to(torch.float64)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_geometry_matches_geomstats(d):
    space = Hyperbolic(d, radius=3.0)
    x, y = space.random(6, generator=_gen()), space.random(6, generator=_gen(1))
    hyperboloid = geomstats_module("geometry.hyperboloid").Hyperboloid(d)
    assert torch.allclose(space.distance(x, y), hyperboloid.metric.dist(x, y), atol=1e-9)
    log = space.log(x, y)
    assert torch.allclose(log, hyperboloid.metric.log(y, x), atol=1e-8)
    assert torch.allclose(space.exp(x, log), y, atol=1e-9)
    assert torch.allclose(lorentz(x, log), torch.zeros(6, dtype=torch.float64), atol=1e-10)


def test_distance_keeps_relative_accuracy_near_zero_and_far_away():
    space = Hyperbolic(3, radius=15.0)
    o = space.origin()
    direction = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64)
    for r in (1e-9, 1e-5, 0.5, 12.0, 29.0):  # a and b on either side of the origin
        a, b = _at(space, r / 2, direction), _at(space, r / 2, -direction)
        assert abs(float(space.distance(a, b)) / r - 1) < 1e-12
    assert float(space.distance(o, o)) == 0.0


def test_poincare_chart_gives_the_same_distance():
    space = Hyperbolic(4, radius=2.5)
    x, y = space.random(50, generator=_gen()), space.random(50, generator=_gen(2))
    u, v = space.chart(x), space.chart(y)
    assert (u.norm(dim=-1) < math.tanh(2.5 / 2) + 1e-12).all()
    ball = torch.acosh(
        1 + 2 * (u - v).square().sum(-1) / ((1 - u.square().sum(-1)) * (1 - v.square().sum(-1)))
    )
    assert torch.allclose(space.distance(x, y), ball, atol=1e-9)


def test_poincare_coordinates_convert_to_the_points_at_their_distance():
    # |u| = tanh(r/2) is the point at distance r from the origin; the ball's own distance formula
    # between converted points; the chart undoes the conversion, also near the domain's edge.
    space = Hyperbolic(3, radius=MAX_RADIUS)
    radii = torch.tensor([0.0, 1e-8, 0.5, 1.0986, 5.0, 14.9], dtype=torch.float64)
    direction = torch.tensor([0.6, 0.0, -0.8], dtype=torch.float64)
    u = torch.tanh(radii / 2).unsqueeze(-1) * direction
    x = poincare_to_hyperboloid(u)
    space.check(x)
    # near the edge |u| = 1 - 7e-7 carries a relative rounding of 1e-16 / 7e-7 into x0
    assert torch.allclose(space.distance(x, space.origin()), radii, rtol=1e-10, atol=1e-15)
    assert torch.allclose(space.chart(x), u, rtol=1e-12, atol=1e-15)
    a = torch.tensor([[0.3, -0.2, 0.1], [0.9, 0.05, 0.0]], dtype=torch.float64)
    b = torch.tensor([[-0.5, 0.4, 0.2], [0.1, 0.9, -0.3]], dtype=torch.float64)
    ball = torch.acosh(
        1 + 2 * (a - b).square().sum(-1) / ((1 - a.square().sum(-1)) * (1 - b.square().sum(-1)))
    )
    ya, yb = poincare_to_hyperboloid(a), poincare_to_hyperboloid(b)
    assert torch.allclose(space.distance(ya, yb), ball, rtol=1e-12)
    assert poincare_to_hyperboloid(a.float()).dtype == torch.float32


def test_poincare_coordinates_are_refused_with_the_conversion_to_use():
    # Poincaré coordinates given as points (shape (n, d)), or with a leading 1 to make up the
    # shape, must point to the conversion, not only to `project` (which keeps x1..xd: the point
    # with u = (0.5, 0) is at distance 1.0986, `project([1, 0.5, 0])` at 0.481).
    space = Hyperbolic(2)
    u = torch.tensor([[0.5, 0.0], [0.1, -0.3]], dtype=torch.float64)
    with pytest.raises(InputDataError, match=r"Poincaré.*poincare_to_hyperboloid\(x\)"):
        space.check(u)
    padded = torch.cat([torch.ones(2, 1, dtype=torch.float64), u], dim=-1)
    with pytest.raises(InputDataError, match=r"poincare_to_hyperboloid\(u\).*off by rounding"):
        space.check(padded)
    with pytest.raises(InputDataError, match=r"norm < 1.*1 point\(s\).*largest 1\.2"):
        poincare_to_hyperboloid(torch.tensor([[0.2, 0.1], [1.2, 0.0]], dtype=torch.float64))
    with pytest.raises(InputDataError, match="NaN"):
        poincare_to_hyperboloid(torch.tensor([[float("nan"), 0.0]], dtype=torch.float64))
    with pytest.raises(InputDataError, match="floating tensor"):
        poincare_to_hyperboloid([[0.1, 0.2]])


@pytest.mark.parametrize("d", [2, 3, 6])
def test_random_is_uniform_on_the_ball(d):
    radius = 1.7
    space = Hyperbolic(d, radius=radius)
    x = space.random(4000, generator=_gen())
    space.check(x)
    r = torch.acosh(x[:, 0].clamp_min(1)).numpy()

    def cdf(s):
        mass = integrate.quad(lambda t: math.sinh(t) ** (d - 1), 0, s)[0]
        return mass / integrate.quad(lambda t: math.sinh(t) ** (d - 1), 0, radius)[0]

    assert stats.kstest(r, np.vectorize(cdf)).pvalue > 0.01
    directions = x[:, 1:] / x[:, 1:].norm(dim=-1, keepdim=True)
    assert float(directions.mean(0).norm()) < 4 / math.sqrt(4000)


def test_project_maps_to_the_hyperboloid_and_pulls_back_into_the_ball():
    space = Hyperbolic(3, radius=2.0)
    inside = space.random(5, generator=_gen())
    assert torch.allclose(space.project(inside), inside, atol=1e-12)
    far = torch.stack([_at(space, 3.5, torch.tensor([1.0, -2.0, 0.5])), _at(space, 9.0)])
    pulled = space.project(far)
    space.check(pulled)
    assert torch.allclose(space.distance(pulled, space.origin()), torch.full((2,), 2.0).double())
    # along the geodesic from the origin: the spatial directions are kept
    cosine = torch.nn.functional.cosine_similarity(pulled[:, 1:], far[:, 1:], dim=-1)
    assert torch.allclose(cosine, torch.ones(2, dtype=torch.float64))
    ambient = torch.tensor([[5.0, 0.3, -0.2, 0.1]], dtype=torch.float64)  # off the hyperboloid
    projected = space.project(ambient)
    assert torch.allclose(lorentz(projected, projected), -torch.ones(1, dtype=torch.float64))


def test_retraction_is_first_order_and_stays_in_the_ball():
    space = Hyperbolic(3, radius=2.0)
    x = space.random(8, generator=_gen())
    v = space.to_tangent(x, torch.randn(x.shape, generator=_gen(3), dtype=torch.float64))
    assert torch.allclose(lorentz(x, v), torch.zeros(8, dtype=torch.float64), atol=1e-12)
    t = 1e-6
    moved = space.retract(x, t * v)
    assert torch.allclose((moved - x) / t, v, atol=1e-5)
    for scale in (10.0, 1e3, 1e8):
        far = space.retract(x, scale * v)
        space.check(far)
        assert torch.isfinite(far).all()
    # a step whose Lorentz square overflows (2e154 in float64, 2e19 in float32) went nowhere: the
    # length was inf and the step was scaled by 40 / inf = 0
    origin = Hyperbolic(2).origin()
    for dtype, huge in ((torch.float64, 2e154), (torch.float32, 2e19)):
        step = torch.tensor([0.0, huge, 0.0], dtype=dtype)
        moved = Hyperbolic(2).retract(origin.to(dtype), step)
        assert Hyperbolic(2).distance(origin.to(dtype), moved) > 1.9  # toward the boundary (r = 2)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_retraction_is_differentiable_in_the_step_in_either_precision(dtype):
    """d/dt retract(x, t v) at t = 0 is v (float32 gave NaN: a guard of 1e-300 underflowed)."""
    space = Hyperbolic(3)
    x = space.random(4, generator=_gen()).to(dtype)
    v = space.to_tangent(x, torch.randn(x.shape, generator=_gen(5), dtype=torch.float64).to(dtype))
    t = torch.zeros((), dtype=dtype, requires_grad=True)
    moved = space.retract(x, t * v)
    (slope,) = torch.autograd.grad(moved, t, grad_outputs=torch.ones_like(moved))
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    assert abs(float(slope) - float(v.sum())) < tol * float(v.abs().sum())


def test_to_tangent_is_the_euclidean_orthogonal_projection():
    space = Hyperbolic(2, radius=2.0)
    x = space.random(5, generator=_gen())
    v = torch.randn(x.shape, generator=_gen(4), dtype=torch.float64)
    tangent = space.to_tangent(x, v)
    normal = torch.cat([-x[:, :1], x[:, 1:]], -1)
    residual = v - tangent
    assert torch.allclose(torch.linalg.cross(residual, normal), torch.zeros_like(v), atol=1e-12)


def test_pairwise_distance_matches_and_has_a_finite_gradient_at_coincident_points():
    space = Hyperbolic(3, radius=2.0)
    x = space.random(7, generator=_gen()).requires_grad_(True)
    pairwise = space.pairwise_distance(x, x)
    expected = space.distance(x.unsqueeze(-2), x.unsqueeze(-3))
    assert torch.allclose(pairwise, expected, atol=1e-12)
    assert float(pairwise.detach().diagonal().abs().max()) == 0.0
    (grad,) = torch.autograd.grad(pairwise.square().sum(), x)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("d", [2, 3, 4])
def test_plane_waves_are_laplace_eigenfunctions(d):
    # Delta e^{(i lam + rho) H} = -(lam^2 + rho^2) e^{(i lam + rho) H}, by second differences along
    # geodesics in an orthonormal tangent frame
    space = Hyperbolic(d, radius=3.0)
    boundary = space.boundary_points(torch.rand(1, d, generator=_gen(5), dtype=torch.float64))
    x = space.random(1, generator=_gen(6))[0]
    lam, rho = 1.3, (d - 1) / 2

    def wave(points):
        h = space.horocyclic(points.unsqueeze(0), boundary)[0, 0, 0]
        return torch.exp(rho * h) * torch.cos(lam * h)

    basis, step, laplacian = [], 1e-3, 0.0
    for column in space.to_tangent(x.expand(d + 1, -1), torch.eye(d + 1).double()):
        for b in basis:
            column = column - lorentz(column, b) * b
        norm2 = float(lorentz(column, column))  # tangent vectors are spacelike
        if norm2 > 1e-10 and len(basis) < d:
            basis.append(column / math.sqrt(norm2))
    for e in basis:
        forward, backward = wave(space.exp(x, step * e)), wave(space.exp(x, -step * e))
        laplacian = laplacian + (forward - 2 * wave(x) + backward) / step**2
    assert abs(float(laplacian / wave(x)) + lam**2 + rho**2) < 1e-4 * (lam**2 + rho**2)


def test_spectral_samples_follow_the_spectral_measure():
    space = Hyperbolic(4)
    nu, ell = 1.5, 0.8
    u = torch.rand(3000, 1, generator=_gen(7), dtype=torch.float64)
    lengthscale = torch.tensor([[ell]], dtype=torch.float64, requires_grad=True)
    lam, log_weight = space.spectral_sample(space.spectral_base(u, nu), nu, lengthscale)
    assert lam.shape == (1, 3000, 1) and torch.all(log_weight == 0)
    a2 = 2 * nu / ell**2

    def density(x):
        return math.exp(-(nu + 2) * math.log(a2 + x * x) + hyperbolic_log_plancherel(x, 4))

    total = integrate.quad(density, 0, np.inf, limit=200)[0]

    def cdf(x):
        return integrate.quad(density, 0, x, limit=200)[0] / total

    samples = lam.detach()[0, :, 0].numpy()
    assert stats.kstest(samples, np.vectorize(cdf)).pvalue > 0.01
    (grad,) = torch.autograd.grad(lam.sum(), lengthscale)
    assert torch.isfinite(grad).all() and float(grad) < 0  # shorter lengthscales, higher frequency


def test_boundary_points_are_uniform_directions():
    space = Hyperbolic(3)
    points = space.boundary_points(torch.rand(5000, 3, generator=_gen(8), dtype=torch.float64))
    assert torch.allclose(points.norm(dim=-1), torch.ones(5000, dtype=torch.float64))
    assert float(points.mean(0).norm()) < 4 / math.sqrt(5000)


def test_bad_points_and_configurations_are_refused():
    space = Hyperbolic(2, radius=1.0)
    with pytest.raises(InputDataError, match="hyperboloid"):
        space.check(torch.tensor([[1.0, 0.5, 0.5]], dtype=torch.float64))
    with pytest.raises(InputDataError, match=r"1 point\(s\) have x0 <= 0.*project"):
        space.check(torch.tensor([[-1.0, 0.0, 0.0]], dtype=torch.float64))  # once "off by 0"
    with pytest.raises(InputDataError, match="within distance 1.*radius of at least 2 .*measured"):
        space.check(_at(Hyperbolic(2, radius=3.0), 2.0).unsqueeze(0))
    for bad in ({"dim": 1}, {"dim": 2.5}, {"dim": 2, "radius": 0.0}, {"dim": 2, "radius": 40}):
        with pytest.raises(ConfigurationError):
            Hyperbolic(**bad)


def test_a_spec_without_a_radius_gives_the_ball_of_radius_2_its_description_names():
    # the registry's description says radius 2: a spec without ?radius must build that ball
    assert make_space("hyperbolic2").radius == 2.0 == Hyperbolic(2).radius
    assert make_space("hyperbolic3?radius=3").radius == 3.0
    (description,) = [text for spec, text in describe_spaces() if spec.startswith("hyperbolic")]
    assert "a geodesic ball of radius 2;" in description


def test_ambient_bounds_contain_the_ball():
    space = Hyperbolic(3, radius=2.0)
    x = space.random(500, generator=_gen())
    bounds = space.ambient_bounds()
    assert ((x >= bounds[0] - 1e-12) & (x <= bounds[1] + 1e-12)).all()


@pytest.mark.parametrize(
    "dtype, radius", [(torch.float64, 14.0), (torch.float64, 10.0), (torch.float32, 6.0)]
)
def test_pairwise_distances_far_from_the_origin_match_points_at_known_distance(dtype, radius):
    r""":math:`y = \cosh(s)\,x + \sinh(s)\,u` (``u`` a unit tangent at ``x``) lies at distance
    ``s`` from ``x``. The Gram path errs by :math:`\epsilon x_0 y_0` in
    :math:`\sinh^2(d/2)`; close pairs were recomputed from differences only below an absolute
    1e-4, so at radius 14 (float64) a distance of 0.05 came out 3.7% off, and at radius 6 (float32)
    every distance from 0.001 to 0.05 came out 0.088. Along the sphere of radius ``radius`` the
    coordinates themselves fix the distance to about :math:`\epsilon x_0`; in other directions to
    about :math:`\epsilon x_0^2`."""
    space = Hyperbolic(3, radius=15.0)
    eps = torch.finfo(dtype).eps
    x = torch.tensor([math.cosh(radius), math.sinh(radius), 0.0, 0.0], dtype=torch.float64)
    s = torch.logspace(-6, 0.5, 27, dtype=torch.float64)
    for angle in (0.0, 0.7, math.pi / 2):
        u = torch.tensor(
            [math.cos(angle) * math.sinh(radius), math.cos(angle) * math.cosh(radius)]
            + [math.sin(angle), 0.0],
            dtype=torch.float64,
        )
        y = torch.cosh(s)[:, None] * x + torch.sinh(s)[:, None] * u
        d = space.pairwise_distance(x[None].to(dtype), y.to(dtype))[0].double()
        assert (d - s).abs().max() < 8 * eps * math.cosh(radius) ** 2
        if angle == math.pi / 2 and dtype == torch.float64:
            assert ((d - s).abs() / s).max() < 1e-4


def test_projection_handles_huge_and_tiny_coordinates():
    """|x| beyond 1e154 overflowed to inf, and (1, 1e160, 0, 0) went to the origin instead of the
    boundary point along e_1."""
    space = Hyperbolic(3, radius=2.0)
    for big in (1e160, 1e300):
        point = space.project(torch.tensor([[1.0, big, 0, 0]], dtype=torch.float64))
        assert torch.allclose(point, _at(space, 2.0)[None])
    far = space.project(torch.tensor([[1.0, 3e38, 3e38, 0]], dtype=torch.float32))
    assert torch.allclose(far, _at(space, 2.0, torch.tensor([1.0, 1.0, 0]))[None].float())
    tiny = torch.tensor([[1.0, 1e-200, 0, 0]], dtype=torch.float64)
    assert torch.equal(space.project(tiny), tiny)


def _near_pairs_within(radius, count, d=3, seed=0):
    """Pairs at known distance ``s`` (1e-3 to 1) with both points within ``radius`` of the origin,
    built in float64 (exact to 1e-9 there): ``x`` at distance ``radius - U(0, 0.3)``,
    ``y = cosh(s) x + sinh(s) w`` with ``w`` a unit tangent at ``x`` in a random direction."""
    g = _gen(seed)
    r = radius - 0.3 * torch.rand(count, 1, generator=g, dtype=torch.float64)
    u = torch.randn(count, d, generator=g, dtype=torch.float64)
    u = u / u.norm(dim=-1, keepdim=True)
    v = torch.randn(count, d, generator=g, dtype=torch.float64)
    v = v - (v * u).sum(-1, keepdim=True) * u
    v = v / v.norm(dim=-1, keepdim=True)
    x = torch.cat([torch.cosh(r), torch.sinh(r) * u], -1)
    radial = torch.cat([torch.sinh(r), torch.cosh(r) * u], -1)
    angular = torch.cat([torch.zeros_like(r), v], -1)
    alpha = 2 * math.pi * torch.rand(count, 1, generator=g, dtype=torch.float64)
    w = torch.cos(alpha) * radial + torch.sin(alpha) * angular
    s = 10 ** (-3 * torch.rand(count, 1, generator=g, dtype=torch.float64))
    y = torch.cosh(s) * x + torch.sinh(s) * w
    keep = y[:, 0] <= math.cosh(radius)
    return x[keep], y[keep], s[keep, 0]


def test_float32_resolves_distances_to_1e3_within_its_radius_only():
    """The bound behind FLOAT32_RADIUS: rounded to float32, near pairs within 4.5 of the origin keep
    their distances to 1e-3 (2.9e-4 measured against mpmath over 15,600 pairs); within 8 they are
    off by more than 0.1, in float64 arithmetic too (the rounded points are off the hyperboloid)."""
    space = Hyperbolic(3, radius=15.0)
    x, y, s = _near_pairs_within(FLOAT32_RADIUS, 2000)
    for a, b in ((x.float(), y.float()), (x.float().double(), y.float().double())):
        assert float((space.distance(a, b).double() - s).abs().max()) < 1e-3
        paired = torch.diagonal(space.pairwise_distance(a, b)).double()
        assert float((paired - s).abs().max()) < 1e-3
    x, y, s = _near_pairs_within(8.0, 2000)
    assert float((space.distance(x.float().double(), y.float().double()) - s).abs().max()) > 0.1
    assert float((space.distance(x, y) - s).abs().max()) < 1e-8


def test_float32_points_beyond_its_radius_are_refused_with_advice():
    """Such points gave silently wrong distances and kernel values (see above); every path that
    checks points (kernels, models) refuses them, and so does random(dtype=float32). float64
    points pass everywhere up to MAX_RADIUS."""
    space = Hyperbolic(2, radius=10.0)
    x = space.random(200, generator=_gen())
    far = float(torch.acosh(x.float()[:, 0].max().double()))
    message = (
        rf"`x` is torch.float32.*only within 4.5 of the origin.*farthest point is at "
        rf"{far:.4g}.*x.double\(\).*model.double\(\).*Hyperbolic\(2, radius=4.5\)"
    )
    with pytest.raises(InputDataError, match=message):
        space.check(x.float())
    inside = Hyperbolic(2, radius=FLOAT32_RADIUS).random(50, generator=_gen())
    space.check(inside.float())
    with pytest.raises(ConfigurationError, match=r"cannot draw torch.float32 points.*4.5"):
        space.random(4, dtype=torch.float32)
    kernel = GeometricMaternKernel(space, nu=1.5).float()
    with pytest.raises(InputDataError, match=r"`x1` is torch.float32.*4.5"):
        kernel(x.float()).to_dense()
    with pytest.raises(InputDataError, match=r"`x2` is torch.float32.*4.5"):
        kernel(inside.float(), x.float()).to_dense()
    with pytest.raises(InputDataError, match=r"torch.float32.*4.5"):
        build_surrogate("matern", space, x.float(), x[:, :1].float())
    # a float32 model of data within 4.5: the optimiser's raw samples would reach 10
    with pytest.warns(InputDataWarning, match="float32"):
        model = build_surrogate("matern", space, inside.float(), inside[:, :1].float())
    with pytest.raises(ConfigurationError, match=r"cannot draw torch.float32 points.*4.5"):
        optimize_acqf_on_space(
            UpperConfidenceBound(model, beta=1.0), space, q=1, num_restarts=1, raw_samples=4
        )
    # a domain float32 resolves: its own float32 points pass
    small = Hyperbolic(3, radius=FLOAT32_RADIUS)
    small.check(small.random(2000, generator=_gen(), dtype=torch.float32))
    # float64 resolves the whole of the largest domain
    largest = Hyperbolic(3, radius=MAX_RADIUS)
    points = largest.random(4000, generator=_gen())
    boundary = torch.cat([points[:, :1] * 0 + math.cosh(MAX_RADIUS), points[:, 1:]], -1)
    largest.check(torch.cat([points, largest.project(boundary)]))
