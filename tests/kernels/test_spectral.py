"""The spectral Matérn/heat kernel.

Tests of values, normalisation, truncation choice, gradients and errors.
"""

import math
import re
import warnings

import numpy as np
import pytest
import scipy.special as sp
import torch
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError, TruncationWarning
from manibo.kernels import GeometricHeatKernel, GeometricMaternKernel
from manibo.spaces import Box, Circle, ProductSpace, SpecialOrthogonal, Sphere, Torus


def _independent_sphere_matern(x1, x2, dim, nu, lengthscale, levels):
    """Per-level Matérn on S^dim written from the formula with SciPy's Gegenbauer.

    It uses no manibo code.
    """
    t = np.clip(x1 @ x2.T, -1, 1)
    alpha = (dim - 1) / 2
    lam = np.array([n * (n + dim - 1) for n in range(levels)], dtype=float)
    mult = np.array(
        [1] + [sp.comb(n + dim, n) - sp.comb(n + dim - 2, n - 2) for n in range(1, levels)]
    )
    if math.isinf(nu):
        s = np.exp(-0.5 * lengthscale**2 * lam)
    else:
        s = (2 * nu / lengthscale**2 + lam) ** (-nu - dim / 2)
    w = s / np.sum(s * mult)
    return sum(w[n] * (n + alpha) / alpha * sp.eval_gegenbauer(n, alpha, t) for n in range(levels))


@pytest.mark.parametrize(
    "dim,nu,ls",
    # S^135 and up: multiplicities in the scan of levels pass float64's range (an OverflowError
    # stopped the kernel); the levels it uses are exact
    [
        (2, 1.5, 1.0),
        (2, 0.5, 0.3),
        (5, 2.5, 0.8),
        (5, math.inf, 0.5),
        (135, 2.5, 1.0),
        (200, math.inf, 0.5),
    ],
)
def test_matern_equals_independent_per_level_computation(dim, nu, ls):
    space = Sphere(dim)
    gen = torch.Generator().manual_seed(3)
    x = space.random(30, generator=gen)
    kernel = GeometricMaternKernel(space, nu=nu, num_levels=25).double()
    kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
    with torch.no_grad():
        ours = kernel(x).to_dense().numpy()
    ref = _independent_sphere_matern(x.numpy(), x.numpy(), dim, nu, ls, 25)
    assert np.max(np.abs(ours - ref)) < 1e-11
    assert np.allclose(np.diag(ours), 1.0, atol=1e-12)


def test_heat_weights_match_geometric_kernels_worked_example():
    kernel = GeometricHeatKernel(Sphere(2), num_levels=25).double()
    kernel.lengthscale = 1.0
    w = kernel.level_weights().detach()
    expected = [0.42188095625, 0.15520133042, 2.1004216012e-2, 1.0457383386e-3, 1.9153365782e-5]
    assert torch.allclose(w[:5], torch.tensor(expected, dtype=torch.float64), rtol=1e-9)


def test_automatic_truncation_meets_tolerance_and_warns_at_cap():
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = 0.5
    levels = kernel.levels_for(kernel.lengthscale)
    x = space.random(20, generator=torch.Generator().manual_seed(0))
    generous = GeometricMaternKernel(space, nu=2.5, num_levels=levels + 100).double()
    generous.lengthscale = 0.5
    with torch.no_grad():
        gap = (kernel(x).to_dense() - generous(x).to_dense()).abs().max()
    assert gap < 1e-5
    shorter = GeometricMaternKernel(space, nu=2.5, num_levels=levels // 2).double()
    shorter.lengthscale = 0.5
    with torch.no_grad():
        assert (shorter(x).to_dense() - generous(x).to_dense()).abs().max() > gap
    rough = GeometricMaternKernel(space, nu=0.5).double()
    rough.lengthscale = 1.0
    assert rough.levels_for(rough.lengthscale, warn=False) == rough.max_levels  # quietly
    with pytest.warns(TruncationWarning, match="max_levels") as caught:  # still due
        rough(x).to_dense()
    assert caught[0].filename == __file__  # at the caller's line, not inside GPyTorch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rough(x).to_dense()  # warned once per kernel, not at every call


def test_truncation_warns_again_when_the_neglected_mass_grows_tenfold():
    # One kernel, ever shorter lengthscales (a user's own fit): it warned once, of 1.1e-3, and
    # stayed silent at 0.005, where the cap neglects 0.80 and entries are off by 0.5.
    space = SpecialOrthogonal(3)
    kernel = GeometricMaternKernel(space, nu=math.inf).double()
    x = space.random(5, generator=torch.Generator().manual_seed(0))
    told = []
    for lengthscale in (0.02, 0.02, 0.015, 0.01, 0.005, 0.005):
        kernel.lengthscale = torch.tensor(lengthscale, dtype=torch.float64)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel(x).to_dense()
        told.append([re.search(r"neglected mass is (\S+)\.", str(w.message))[1] for w in caught])
    assert told == [["1.13e-03"], [], ["2.93e-02"], [], ["8.01e-01"], []]


def _jumps(kernel, x, grid):
    """Largest change of K across the lengthscales where the number of levels changes."""
    counts = [kernel.levels_for(ls.reshape(1, 1)) for ls in grid]
    largest = 0.0
    for i in range(len(grid) - 1):
        if counts[i] == counts[i + 1]:
            continue
        low, high = float(grid[i]), float(grid[i + 1])
        while high - low > 1e-10 * high:  # the transition
            mid = 0.5 * (low + high)
            same = kernel.levels_for(torch.tensor([[mid]], dtype=torch.float64)) == counts[i]
            low, high = (mid, high) if same else (low, mid)
        values = []
        with torch.no_grad():
            for ls in (low, high):
                kernel.lengthscale = torch.tensor(ls, dtype=torch.float64)
                values.append(kernel(x).to_dense())
        largest = max(largest, float((values[1] - values[0]).abs().max()))
    return largest


@pytest.mark.parametrize("space,low,high", [(Sphere(2), 0.15, 1.5), (Torus(3), 1.8, 4.0)], ids=str)
def test_automatic_truncation_is_continuous_in_the_lengthscale(space, low, high, monkeypatch):
    """Levels fade in as the lengthscale shrinks: K does not jump where a level is added. With a
    hard cut it jumps (by up to the tolerance, 1e-4 here), and marginal-likelihood fits stall."""
    kernel = GeometricMaternKernel(space, nu=2.5, truncation_tol=1e-4).double()
    x = space.random(8, generator=torch.Generator().manual_seed(0))
    grid = torch.linspace(low, high, 40, dtype=torch.float64)
    assert _jumps(kernel, x, grid) < 1e-8  # the lengthscales differ by 1e-10 relative
    hard = kernel._truncation
    monkeypatch.setattr(kernel, "_truncation", lambda ls, warn=True: (hard(ls, warn)[0], None))
    assert _jumps(kernel, x, grid) > 1e-6


def test_smaller_lengthscale_needs_more_levels():
    kernel = GeometricMaternKernel(Sphere(2), nu=2.5).double()
    counts = [
        kernel.levels_for(torch.tensor([[ls]], dtype=torch.float64)) for ls in (2.0, 0.5, 0.2)
    ]
    assert counts[0] < counts[1] < counts[2]


def test_batched_lengthscales():
    space = Sphere(2)
    kernel = GeometricMaternKernel(
        space, nu=1.5, num_levels=20, batch_shape=torch.Size([3])
    ).double()
    kernel.lengthscale = torch.tensor([0.3, 0.7, 1.5], dtype=torch.float64).reshape(3, 1, 1)
    x = space.random(6, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        K = kernel(x).to_dense()
    assert K.shape == (3, 6, 6)
    for i, ls in enumerate((0.3, 0.7, 1.5)):
        single = GeometricMaternKernel(space, nu=1.5, num_levels=20).double()
        single.lengthscale = ls
        with torch.no_grad():
            assert torch.allclose(K[i], single(x).to_dense(), atol=1e-12)


def test_point_gradients_are_finite_at_coincident_points():
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=30).double()
    x = space.random(4, generator=torch.Generator().manual_seed(0))
    x = torch.cat([x, x[:1]]).requires_grad_(True)
    kernel(x).to_dense().sum().backward()
    assert torch.isfinite(x.grad).all()


def test_float32_agrees_with_float64():
    space = Sphere(2)
    x = space.random(50, generator=torch.Generator().manual_seed(0))
    k64 = GeometricMaternKernel(space, nu=1.5, num_levels=40).double()
    k32 = GeometricMaternKernel(space, nu=1.5, num_levels=40).float()
    with torch.no_grad():
        gap = (k32(x.float()).to_dense().double() - k64(x).to_dense()).abs().max()
    assert gap < 1e-5


@pytest.mark.parametrize("dim, ls", [(32, 0.1), (50, 0.1), (50, 0.2)])
def test_float32_on_spheres_whose_multiplicities_pass_its_range(dim, ls):
    """On S^32 level 199 has 4.5e38 harmonics, past float32's largest number: the float32
    kernel was inf or NaN everywhere at short lengthscales."""
    space = Sphere(dim)
    x = space.random(8, generator=torch.Generator().manual_seed(0))
    k64 = GeometricMaternKernel(space, nu=2.5, num_levels=200).double()
    k32 = GeometricMaternKernel(space, nu=2.5, num_levels=200).float()
    k64.lengthscale, k32.lengthscale = ls, ls
    K64 = k64(x).to_dense().detach()
    K32 = k32(x.float()).to_dense()
    assert K32.dtype == torch.float32
    assert (K32.detach().double() - K64).abs().max() < 1e-5
    K32.sum().backward()
    assert torch.isfinite(k32.raw_lengthscale.grad).all()


@pytest.mark.parametrize("space", [Sphere(2), SpecialOrthogonal(3)], ids=["sphere2", "so3"])
def test_points_a_little_off_the_space_have_the_prior_variance(space):
    """A unit vector of norm 1 + 1e-6 (which the sphere accepts) had k(x, x) = 1.0013 at
    lengthscale 0.05: the series was evaluated past t = 1, where its slope is about 1/l^2."""
    x = space.random(5, generator=torch.Generator().manual_seed(0))
    off = x * (1 + 4e-7)
    space.check(off)
    kernel = GeometricMaternKernel(space, nu=2.5, num_levels=150).double()
    kernel.lengthscale = 0.1
    with torch.no_grad():
        assert (kernel(off, diag=True) - 1).abs().max() < 1e-9
        assert (kernel(off).to_dense() - kernel(x).to_dense()).abs().max() < 1e-3


def test_bad_input():
    space = Sphere(2)
    with pytest.raises(ConfigurationError, match="nu"):
        GeometricMaternKernel(space, nu=0.0)
    with pytest.raises(ConfigurationError, match="nu"):
        GeometricMaternKernel(space, nu=-1.5)
    with pytest.raises(ConfigurationError, match="compact space"):
        GeometricMaternKernel("sphere")
    with_box = ProductSpace(Sphere(2), Box([0.0], [1.0]))  # the message once named ProductSpace
    with pytest.raises(ConfigurationError, match=r"non-compact factor.*matern_kernel\(space\)"):
        GeometricHeatKernel(with_box)
    kernel = GeometricMaternKernel(space).double()
    x = space.random(3)
    with pytest.raises(InputDataError, match="norms must be 1"):
        kernel(2 * x).to_dense()
    bad = x.clone()
    bad[1, 2] = float("nan")
    with pytest.raises(InputDataError, match="NaN"):
        kernel(bad).to_dense()
    with pytest.raises(InputDataError, match="dtype"):
        kernel(x, x.float()).to_dense()
    with pytest.raises(InputDataError, match=r"kernel.to\(x\)"):
        GeometricMaternKernel(space).float()(x).to_dense()


@pytest.mark.parametrize("nu", [2.5, math.inf])
def test_a_zero_lengthscale_is_refused_rather_than_giving_a_nan_gram_matrix(nu):
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=nu).double()
    kernel.lengthscale = 0.0
    with pytest.raises(ConfigurationError, match=r"lengthscales must be positive, got \[0\.0\]"):
        kernel(space.random(3)).to_dense()
    with pytest.raises(ConfigurationError, match="max_levels"):
        GeometricMaternKernel(space, max_levels=0)


def test_the_cap_is_reported_only_when_it_neglects_more_than_twice_the_tolerance():
    """The neglected share at the cap, computed here from the spectrum of an uncapped kernel,
    decides: between tol and 2 tol no warning, above 2 tol one."""
    space = Sphere(2)
    x = space.random(8, generator=torch.Generator().manual_seed(0))
    tol, cap = 1e-4, 12
    generous = GeometricMaternKernel(space, nu=1.5, num_levels=2000).double()  # no truncation
    _, multiplicities = space.levels(2000)

    def neglected(ls):  # share of the normalised spectral mass in levels >= cap
        lengthscale = torch.tensor([[ls]], dtype=torch.float64)
        mass = generous.level_weights(lengthscale).reshape(-1) * multiplicities
        return float(mass[cap:].sum() / mass.sum())

    def lengthscale_neglecting(share):  # bisection: the share falls as the lengthscale grows
        low, high = 0.01, 5.0
        for _ in range(60):
            mid = (low * high) ** 0.5
            low, high = (mid, high) if neglected(mid) > share else (low, mid)
        return high

    for share, warns in ((1.5 * tol, False), (3 * tol, True)):
        kernel = GeometricMaternKernel(space, nu=1.5, truncation_tol=tol, max_levels=cap).double()
        kernel.lengthscale = lengthscale_neglecting(share)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel(x).to_dense()
        assert any(issubclass(w.category, TruncationWarning) for w in caught) == warns, share


@pytest.mark.parametrize("nu", [True, "2.5", None, math.nan, 0.0])
def test_every_matern_kernel_refuses_a_smoothness_that_is_not_a_positive_number(nu):
    # nu=True was read as 1.0 and nu="2.5" passed as a string (JSON from the command line)
    from manibo.kernels import BoxMaternKernel, ChordalMaternKernel, NoncompactMaternKernel
    from manibo.spaces import Hyperbolic

    builds = [
        lambda: GeometricMaternKernel(Sphere(2), nu=nu),
        lambda: NoncompactMaternKernel(Hyperbolic(2), nu=nu),
        lambda: BoxMaternKernel(Box([0.0], [1.0]), nu=nu),
        lambda: ChordalMaternKernel(Sphere(2), nu=nu),
    ]
    for build in builds:
        with pytest.raises(ConfigurationError, match=r"`nu` must be .*got " + repr(nu)[:3]):
            build()


def test_a_space_without_a_spectrum_is_told_every_space_class_that_has_one_and_where_to_go():
    # the message named six compact classes of ten and had no advice for a box
    with pytest.raises(ConfigurationError) as info:
        GeometricMaternKernel(Box([0.0], [1.0]))
    message = str(info.value)
    for name in ("Grassmann", "RealProjectiveSpace", "SpecialUnitary", "SymmetricPositiveDefinite"):
        assert name in message
    assert "On a box use `manibo.kernels.matern_kernel(space)`" in message


@pytest.mark.parametrize("heat", [False, True])
def test_batch_index_gives_the_batch_members_kernel(heat):
    # GPyTorch's Kernel.__getitem__ indexed the level tables (10,000 entries) by the batch index:
    # kernel[0] and ScaleKernel(kernel)(x)[0] raised "shape '[16]' is invalid for input of size 1"
    space = Sphere(2)
    batch = torch.Size([2])
    cls = GeometricHeatKernel if heat else GeometricMaternKernel
    kernel = ScaleKernel(cls(space, batch_shape=batch), batch_shape=batch).double()
    kernel.base_kernel.lengthscale = torch.tensor([0.4, 1.1], dtype=torch.float64).reshape(2, 1, 1)
    kernel.outputscale = torch.tensor([0.5, 2.0], dtype=torch.float64)
    x = space.random(5, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = kernel(x).to_dense()
        for i in range(2):
            assert kernel[i].batch_shape == torch.Size([])
            assert torch.allclose(kernel[i](x).to_dense(), full[i], atol=1e-12)
            assert torch.allclose(kernel(x)[i].to_dense(), full[i], atol=1e-12)
            assert torch.allclose(kernel.base_kernel[i](x).to_dense() * (0.5, 2.0)[i], full[i])
    # the tables are shared, not cut or copied, and the state dict is unchanged
    member = kernel.base_kernel[1]
    assert member._eigenvalues is kernel.base_kernel._eigenvalues
    assert set(member.state_dict()) == set(kernel.base_kernel.state_dict())


def test_prior_mode_posterior_of_a_batched_multi_output_model():
    # a 3-output SingleTaskGP batches its kernel; its prior-mode posterior indexes the kernel
    # (it raised "shape '[16]' is invalid for input of size 1")
    import gpytorch
    from botorch.models import SingleTaskGP

    space, batch = Sphere(2), torch.Size([3])
    x = space.random(6, generator=torch.Generator().manual_seed(0))
    y = torch.randn(6, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    covar = ScaleKernel(GeometricMaternKernel(space, batch_shape=batch), batch_shape=batch)
    model = SingleTaskGP(x, y, covar_module=covar).eval()
    with torch.no_grad(), gpytorch.settings.prior_mode(True):
        posterior = model.posterior(space.random(4, generator=torch.Generator().manual_seed(2)))
    assert posterior.mean.shape == posterior.variance.shape == (4, 3)


@pytest.mark.parametrize("space", [Sphere(2), Torus(2)], ids=repr)
@pytest.mark.parametrize("cls", [GeometricMaternKernel, GeometricHeatKernel])
def test_ard_num_dims_is_refused_at_construction(space, cls):
    # it was accepted and then broke at the first evaluation: on Sphere(2) "shape '[58]' is
    # invalid for input of size 174", on Torus(2) a size mismatch in torus_images.py
    with pytest.raises(ConfigurationError, match="one lengthscale"):
        cls(space, ard_num_dims=space.dim + 1)


def test_feature_map_method_refuses_more_features_than_the_budget():
    # the method built every eigenfunction of the levels used; manibo.kernels.feature_map(kernel)
    # refused the same map at once (on SO(3) at the default lengthscale, 67 levels and 400 995
    # features per point, the method ran 240 s at 4 GB before being stopped)
    sphere = Sphere(2)
    kernel = GeometricMaternKernel(sphere, nu=2.5).double()
    kernel.lengthscale = 0.3  # 136 levels, 18 496 features per point
    x = sphere.random(2, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError, match=r"18496 features.*num_levels"):
        kernel.feature_map(x)
    assert kernel.feature_map(x, num_levels=10).shape == (2, 100)  # asked for: built
    rotations = GeometricMaternKernel(SpecialOrthogonal(3), nu=2.5).double()
    points = rotations.space.random(1, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError, match="400995 features"):
        rotations.feature_map(points)


@pytest.mark.parametrize("index", [(1,), (2, 0), (..., 1), (slice(0, 2),)], ids=repr)
def test_batch_index_of_two_batch_dimensions(index):
    # an Ellipsis spans batch dimensions only (GPyTorch's indexing applies the index to every
    # parameter, whose trailing (1, 1) an Ellipsis would reach)
    space = Sphere(2)
    kernel = GeometricMaternKernel(space, nu=2.5, batch_shape=torch.Size([3, 2])).double()
    kernel.lengthscale = torch.linspace(0.6, 1.6, 6, dtype=torch.float64).reshape(3, 2, 1, 1)
    x = space.random(4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = kernel(x).to_dense()[(*index, slice(None), slice(None))]
        member = kernel[index]
        assert member.batch_shape == full.shape[:-2]
        assert torch.allclose(member(x).to_dense(), full, atol=1e-12)


@pytest.mark.parametrize(
    ("weighted", "nu", "cases"),
    [
        (False, 2.5, ((1.0, True), (3.0, True), (10.0, True))),
        (True, 2.5, ((1.0, True), (3.0, True), (30.0, True))),  # weights e^N(0, 4): 4.9e-5 at 30
        (False, math.inf, ((1.0, True), (3.0, True), (30.0, False))),  # heat: 3.4e-5 at 3
    ],
)
def test_a_graph_that_keeps_only_its_lowest_eigenpairs_warns_of_the_mass_left_out(
    weighted, nu, cases
):
    """A graph of more than 2,000 nodes keeps its lowest ~500 eigenpairs; the kernel's own level
    cap never saw the rest, so 52% of the spectral mass went unreported at lengthscale 1 (Matérn
    on a grid). The warning states two bounds of the share lost; both are checked against the
    share computed from the full spectrum, and a share above twice the tolerance is reported
    (with the lower bound alone the weighted graph and the heat kernel went silent)."""
    import re

    from manibo.kernels.spectral import log_spectrum
    from manibo.spaces import Graph

    rows, cols = 30, 70
    index = np.arange(rows * cols).reshape(rows, cols)
    across = np.stack([index[:, :-1].ravel(), index[:, 1:].ravel()], 1)
    down = np.stack([index[:-1].ravel(), index[1:].ravel()], 1)
    edges = np.concatenate([across, down])
    weights = np.ones(len(edges))
    if weighted:
        weights = np.random.default_rng(0).lognormal(0.0, 2.0, len(edges))
    graph = Graph.from_edges(edges, rows * cols, weights=weights)
    full = Graph.from_edges(edges, rows * cols, weights=weights, num_eigenpairs=rows * cols)
    count = graph.dropped_spectrum[0]
    assert full.dropped_spectrum is None
    eigenvalues, multiplicities = full.levels(full.num_levels_available)
    kept_levels = int((multiplicities.cumsum(0) <= rows * cols - count).sum())
    x = graph.all_points()[:20]
    for lengthscale, warns in cases:
        ls = torch.tensor([[lengthscale]], dtype=torch.float64)
        log_mass = torch.log(multiplicities) + log_spectrum(eigenvalues, ls, nu, 0)[0]
        true_share = float(torch.exp(log_mass[kept_levels:].logsumexp(0) - log_mass.logsumexp(0)))
        kernel = GeometricMaternKernel(graph, nu=nu).double()
        kernel.lengthscale = lengthscale
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel(x, x).to_dense()
        messages = [str(w.message) for w in caught if w.category is TruncationWarning]
        assert bool(messages) == warns, (lengthscale, true_share, messages)
        if warns:
            found = re.search(r"hold between (\S+) and (\S+) of the spectral", messages[0])
            below, above = found.groups()
            assert float(below) <= true_share <= float(above), (lengthscale, true_share)
        else:
            assert true_share < 2 * kernel.truncation_tol
    whole = GeometricMaternKernel(full, nu=nu).double()
    whole.lengthscale = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        whole(x, x).to_dense()


def test_the_truncation_warning_on_a_product_names_the_cheaper_cure_first_with_its_cost():
    # raising max_levels on a product of three factors, as the warning advised, took one BO
    # proposal from 2 s to 31 s (300 levels) and past 90 s (2000 levels)
    space = ProductSpace(Circle(), Circle(), Sphere(1))
    kernel = GeometricMaternKernel(space, nu=2.5, max_levels=20).double()
    kernel.lengthscale = 0.3
    x = space.random(3, generator=0)
    with pytest.warns(
        TruncationWarning, match="per_factor=True.*a cheaper cure than raising `max_levels`"
    ):
        kernel(x, x).to_dense()


def test_the_mass_beyond_the_cap_is_kept_per_lengthscale_and_nu_and_read_in_inference_mode():
    # A circle scans 98,000 levels past its cap of 2000: their mass is kept for the last
    # lengthscales; changing nu must not reuse it, and inference mode (no gradient to take)
    # raised "element 0 of tensors does not require grad" on a new lengthscale.
    x = torch.linspace(0, 6, 7, dtype=torch.float64).unsqueeze(-1)
    kernel = GeometricMaternKernel(Circle(), nu=2.5).double()
    kernel.lengthscale = torch.tensor(0.3, dtype=torch.float64)
    with torch.no_grad():
        before = kernel(x).to_dense()
    kernel.lengthscale = torch.tensor(0.2, dtype=torch.float64)
    with torch.inference_mode():
        inferred = kernel(x).to_dense()
    with torch.no_grad():
        assert torch.allclose(inferred, kernel(x).to_dense(), atol=1e-14)
    kernel.lengthscale = torch.tensor(0.3, dtype=torch.float64)
    tail = kernel._log_tail(kernel.lengthscale)
    kernel.nu = 0.5
    fresh = GeometricMaternKernel(Circle(), nu=0.5).double()
    assert torch.allclose(kernel._log_tail(kernel.lengthscale), fresh._log_tail(kernel.lengthscale))
    assert not torch.allclose(tail, fresh._log_tail(kernel.lengthscale))
    kernel.nu = 2.5
    with torch.no_grad():
        assert torch.equal(kernel(x).to_dense(), before)
