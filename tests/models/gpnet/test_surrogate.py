"""The features of the networks build_network gives, against independent computations: harmonic
features reproduce the prior truncated to whole levels, random-phase features are their closed form
through explicit eigenfunctions and unbiased, random Fourier features follow the spectral recipe and
are unbiased; only the map's own draws train, and the prior shares no tensor with the network."""

import math

import pytest
import torch
from feature_closed_forms import addition_theorem_features
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from registry import SPACES

from manibo.exceptions import ConfigurationError
from manibo.kernels import GeometricMaternKernel
from manibo.kernels.feature_protocol import point_generator
from manibo.models.gpnet import build_network, default_kernel
from manibo.spaces import Box

NAMES = ["sphere2", "torus2", "so3", "graph"]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _prior(base, lengthscale, outputscale=1.7):
    prior = ScaleKernel(base).double()
    base.lengthscale = torch.as_tensor(lengthscale, dtype=torch.float64)
    prior.outputscale = torch.tensor(outputscale, dtype=torch.float64)
    return prior


def _trainable(network):
    return {name for name, p in network.features.named_parameters() if p.requires_grad}


def _shares_nothing(network, prior):
    return not {id(p) for p in prior.parameters()} & {id(p) for p in network.parameters()}


@pytest.mark.parametrize("name", NAMES)
def test_harmonic_features_are_the_prior_truncated_to_whole_levels(name, device="cpu"):
    space = SPACES[name]()
    prior = _prior(default_kernel(space, 2.5), 0.6).to(device)  # automatic truncation: > 30
    network = build_network("harmonic", space, prior, max_features=30)
    levels = 1
    multiplicities = space.levels(prior.base_kernel.levels_for(prior.base_kernel.lengthscale))[1]
    while levels < len(multiplicities) and multiplicities[: levels + 1].sum() <= 30:
        levels += 1
    truncated = _prior(GeometricMaternKernel(space, nu=2.5, num_levels=levels), 0.6).to(device)
    x = space.random(9, generator=_gen()).to(device)
    y = space.random(5, generator=_gen(1)).to(device)
    with torch.no_grad():
        phi_x, phi_y = network.features(x), network.features(y)
        expected = truncated(x, y).to_dense()  # the space's addition theorem
    assert network.num_features == int(multiplicities[:levels].sum()) <= 30
    assert torch.allclose(phi_x @ phi_y.T, expected, rtol=0, atol=1e-12)
    assert not _trainable(network) and _shares_nothing(network, prior)


@pytest.mark.parametrize("name", NAMES)
def test_random_phase_features_are_their_closed_form_and_train_their_points(name):
    space = SPACES[name]()
    prior = _prior(default_kernel(space, 2.5, max_features=200), 0.8)  # eigenfunctions: cheap
    network = build_network("random-phase", space, prior, num_phases=6, seed=3)
    points = space.random(6, generator=point_generator(3))  # the seed's points (hashed)
    x = space.random(7, generator=_gen(1))
    weights = prior.base_kernel.level_weights().detach()
    expected = math.sqrt(1.7) * addition_theorem_features(space, weights, points, x)
    with torch.no_grad():
        assert torch.allclose(network.features(x), expected, rtol=0, atol=1e-12)
    assert _trainable(network) == (set() if space.is_discrete else {"base.raw_points"})
    assert _shares_nothing(network, prior)


def test_random_phase_features_are_unbiased_for_the_prior():
    space = SPACES["sphere2"]()
    prior = _prior(GeometricMaternKernel(space, nu=1.5, num_levels=6), 0.8)
    x = space.random(8, generator=_gen())
    with torch.no_grad():
        exact = prior(x).to_dense()
        grams = []
        for seed in range(16):
            phi = build_network("random-phase", space, prior, num_phases=500, seed=seed).features(x)
            grams.append(phi @ phi.T)
        grams = torch.stack(grams)
    one, mean = (grams[0] - exact).abs().max(), (grams.mean(0) - exact).abs().max()
    assert float(mean) < 0.03 * float(exact.diagonal().max()) and float(mean) < float(one) / 2


@pytest.mark.parametrize("nu", [math.inf, 1.5])
def test_rff_features_follow_the_spectral_recipe_and_are_unbiased(nu, device="cpu"):
    box = Box([0.0, -1.0, 2.0], [1.0, 3.0, 4.0])
    base = RBFKernel(ard_num_dims=3) if math.isinf(nu) else MaternKernel(nu=nu, ard_num_dims=3)
    lengthscale = torch.tensor([[0.4, 0.9, 1.3]], dtype=torch.float64)
    prior = _prior(base, lengthscale).to(device)
    network = build_network("rff", box, prior, max_features=64, seed=5)
    generator = _gen(5)  # the recipe: normal columns, divided by sqrt(chi2_{2nu} / 2nu) for Matérn
    omega = torch.randn(3, 32, generator=generator, dtype=torch.float64)
    if not math.isinf(nu):
        chi2 = torch.randn(3, 32, generator=generator, dtype=torch.float64).square().sum(0)
        omega = omega / (chi2 / 3).sqrt()
    x = box.random(6, generator=_gen(1))
    projection = (x / lengthscale) @ omega
    expected = math.sqrt(1.7 / 32) * torch.cat([projection.cos(), projection.sin()], -1)
    with torch.no_grad():
        assert torch.allclose(network.features(x.to(device)).cpu(), expected, rtol=0, atol=1e-12)
        exact = prior(x.to(device)).to_dense()
        grams = []
        for seed in range(32):
            phi = build_network("rff", box, prior, max_features=1000, seed=seed).features(
                x.to(device)
            )
            grams.append(phi @ phi.T)
    assert float((torch.stack(grams).mean(0) - exact).abs().max()) < 0.05
    assert _trainable(network) == {"base.frequencies", "base.log_lengthscale"}
    assert _shares_nothing(network, prior)


def test_rff_networks_need_a_euclidean_prior():
    space = SPACES["sphere2"]()
    with pytest.raises(ConfigurationError, match="'rff' network needs"):
        build_network("rff", space, ScaleKernel(default_kernel(space)))


def test_a_manifold_times_a_box_is_refused_by_the_registry_with_the_reason():
    # the surrogate table said 'yes' for products (S²×S¹) and boxes, while S²×box failed only in
    # the factory; the registry now says why before anything is fitted
    from manibo.models.registry import unsupported_reason
    from manibo.spaces import Box, ProductSpace, Sphere

    space = ProductSpace(Sphere(2), Box([0.0], [1.0]))
    reason = unsupported_reason("gpnet", space)
    assert reason is not None and "compact spaces and boxes" in reason and "'matern'" in reason
    assert unsupported_reason("gpnet", ProductSpace(Sphere(2), Sphere(1))) is None


def test_the_default_kernel_of_a_mesh_is_in_its_length_unit():
    """GPNet's prior kernel started at lengthscale 0.69 with a prior of median 1 whatever the
    units of the mesh: on the same icosphere in millimetres both were 1000 times too short."""
    from manibo.spaces import Mesh

    base = Mesh.icosphere(1)
    scaled = Mesh(base.vertices * 1000, base.faces)
    kernels = [default_kernel(mesh) for mesh in (base, scaled)]
    starts = [
        float(k.lengthscale.detach()) / m.length_unit
        for k, m in zip(kernels, (base, scaled), strict=True)
    ]
    assert starts == pytest.approx([0.6931] * 2, rel=1e-4)
    medians = [float(k.lengthscale_prior.loc.exp()) for k in kernels]
    assert medians[1] == pytest.approx(1000 * medians[0], rel=1e-6)  # float32 parameters
    assert medians[0] == pytest.approx(base.length_unit, rel=1e-6)
