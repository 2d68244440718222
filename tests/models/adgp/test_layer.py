"""The activated GP layer against independent computations: K_uu from explicit spherical harmonics
and the reference table (ReLU grows with L, softplus converges), the GP-conditional mean equals the
network layer, the marginal variance equals the dense SVGP formula and is clamped at 0, sampled
marginals, the whitened KL against torch.distributions, and errors."""

import math

import pytest
import torch
from torch.distributions import MultivariateNormal, kl_divergence

from manibo.exceptions import ConfigurationError
from manibo.harmonics import harmonic_level_index, spherical_harmonics
from manibo.kernels import ArcCosineKernel, ChordalMaternKernel
from manibo.models.adgp import ActivatedGPLayer, ReLU, Softplus


def _layer(input_dim=4, output_dim=2, units=6, dtype=torch.float64, device="cpu", **kwargs):
    gen = torch.Generator().manual_seed(0)
    return ActivatedGPLayer(
        input_dim, output_dim, units, generator=gen, dtype=dtype, device=device, **kwargs
    )


def _inputs(n, dim, dtype=torch.float64, device="cpu", seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, dim, generator=gen, dtype=torch.float64).to(device, dtype)


def _randomise_posterior(layer, seed=2):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        shape = layer.scale_offdiag.shape
        layer.scale_offdiag.copy_(0.3 * torch.randn(shape, generator=gen, dtype=torch.float64))
        layer.raw_scale_diag.copy_(torch.randn(shape[:2], generator=gen, dtype=torch.float64))


@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_kuu_equals_gram_of_explicit_harmonic_features(activation):
    """K_uu[m, m'] = <g_m, g_m'>_H
    = sum_nk |w_m||w_m'| sigma_n^2 / (s^2 lambda_n) Y_nk(w_m) Y_nk(w_m')."""
    layer = _layer(input_dim=2, units=7, activation=activation, num_levels=8)
    layer.set_variance(0.7)
    d = 3
    sigma = layer.activation.coefficients(d, 8, torch.float64, None)
    lam = ArcCosineKernel.eigenvalues(ArcCosineKernel(layer.kernel.sphere), 8)
    keep = torch.tensor([not (n >= 3 and n % 2) for n in range(8)])
    weight = torch.where(keep, sigma**2 / torch.where(keep, lam, 1), torch.zeros_like(sigma)) / 0.7
    w = layer.weights.detach()
    norms = w.norm(dim=-1)
    Y = spherical_harmonics(w / norms[:, None], 8)  # (M, sum N(3, n))
    features = norms[:, None] * Y * weight[harmonic_level_index(d, 8)].sqrt()
    with torch.no_grad():
        kuu = layer.inducing_covariance()
    assert torch.allclose(kuu, features @ features.T, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kuu_is_symmetric_positive_definite(dtype, device="cpu"):
    for activation in ("softplus", "relu"):
        layer = _layer(input_dim=5, units=40, dtype=dtype, device=device, activation=activation)
        with torch.no_grad():
            kuu = layer.inducing_covariance()
        assert kuu.dtype == dtype and kuu.device.type == torch.device(device).type
        assert torch.equal(kuu, kuu.T)
        assert float(torch.linalg.eigvalsh(kuu.double()).min()) > 0


def _unit_diagonal(activation, d, num_levels):
    layer = _layer(input_dim=d - 1, units=3, activation=activation, num_levels=num_levels)
    with torch.no_grad():
        layer.weights.copy_(layer.weights / layer.weights.norm(dim=-1, keepdim=True))
        return layer.inducing_covariance().diagonal()


def test_kuu_diagonal_grows_with_levels_for_relu_and_converges_for_softplus():
    """Reference table (unit w, sigma_k = 1): ReLU on S^4 (d = 5) gives 7.5, 50, 732 at L = 5, 10,
    20; d = 3 gives 3, 8, 193/6 (the table rounds it to 32). Softplus(beta=1) on d = 5
    converges to ||softplus||_H^2 = 2.035."""
    for d, table in ((5, {5: 7.5, 10: 50.0, 20: 732.0}), (3, {5: 3.0, 10: 8.0, 20: 193 / 6})):
        for levels, value in table.items():
            diag = _unit_diagonal(ReLU(), d, levels)
            assert torch.allclose(diag, torch.full_like(diag, value), rtol=1e-12), (d, levels)
    relu = [float(_unit_diagonal(ReLU(), 9, L)[0]) for L in (4, 8, 16, 24)]
    assert all(b > 2 * a for a, b in zip(relu, relu[1:], strict=False))
    soft = [float(_unit_diagonal(Softplus(1.0), 5, L)[0]) for L in (4, 8, 16, 24)]
    assert abs(soft[-1] - 2.035) < 1e-3
    assert abs(soft[2] - soft[3]) < 1e-12 * soft[3] and abs(soft[1] - soft[3]) < 1e-6 * soft[3]
    sharp = [float(_unit_diagonal(Softplus(3.0), 14, L)[0]) for L in (12, 20, 28)]
    assert abs(sharp[1] - sharp[2]) < 1e-7 * sharp[2]  # the default L = 20 in d = 14: 1.2e-8


def _network_layer(layer, h):
    """The network layer written out (no manibo code): relu(x W^T) V, or the zonal softplus."""
    lifted = torch.cat([h, layer.bias.detach().expand(h.shape[0], 1)], dim=-1)
    w, v = layer.weights.detach(), layer.readout.detach()
    if isinstance(layer.activation, ReLU):
        return torch.relu(lifted @ w.T) @ v
    r, s = lifted.norm(dim=-1, keepdim=True), w.norm(dim=-1)
    beta = layer.activation.beta
    return (r * s * torch.log1p(torch.exp(beta * (lifted @ w.T) / (r * s))) / beta) @ v


@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_gp_conditional_mean_equals_the_network_layer(activation):
    """K_fu K_uu^{-1} m_u with the whitened init m_u = L_uu m_v, m_v = L_uu^T V: 1e-8 in float64."""
    layer = _layer(input_dim=5, output_dim=3, units=32, activation=activation)
    layer.set_variance(0.3)
    h = _inputs(50, 5)
    with torch.no_grad():
        state = layer.state()
        m_v = state.chol.T @ layer.readout
        m_u = state.chol @ m_v
        kuu = state.chol @ state.chol.T
        gp_mean = layer.features(h) @ torch.linalg.solve(kuu, m_u)
        mean, _ = layer.marginal(h, state)
    reference = _network_layer(layer, h)
    assert torch.allclose(gp_mean, reference, atol=1e-8, rtol=0)
    assert torch.allclose(mean, reference, atol=1e-12, rtol=0)


def test_marginal_variance_equals_the_dense_svgp_formula():
    """k(x,x) - k_u^T K^-1 k_u + k_u^T K^-1 S K^-1 k_u with S = L R R^T L^T (unwhitened)."""
    layer = _layer(input_dim=3, output_dim=2, units=12, activation="softplus")
    layer.set_variance(0.5)
    _randomise_posterior(layer)
    h = _inputs(9, 3)
    with torch.no_grad():
        state = layer.state()
        _, variance = layer.marginal(h, state)
        kuu = state.chol @ state.chol.T
        kfu = layer.features(h)
        kff = 0.5 * (h.pow(2).sum(-1) + layer.bias**2)  # arc-cosine: kappa(1) = 1
        proj = torch.linalg.solve(kuu, kfu.T)  # (M, n)
        for j in range(2):
            S = state.chol @ state.scale_tril[j] @ state.scale_tril[j].T @ state.chol.T
            dense = kff - (kfu.T * proj).sum(0) + (proj * (S @ proj)).sum(0)
            assert torch.allclose(variance[:, j], dense, atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_variance_is_clamped_non_negative(dtype, device="cpu"):
    """ReLU truncated at L = 2 makes Q_ff exceed K_ff (the exact activation in K_uf is outside the
    truncated RKHS): the raw conditional variance is negative somewhere, the returned one is not."""
    layer = _layer(
        input_dim=2,
        output_dim=1,
        units=8,
        activation="relu",
        num_levels=2,
        dtype=dtype,
        device=device,
    )
    h = _inputs(200, 2, dtype, device)
    with torch.no_grad():
        state = layer.state()
        features, whitened, residual = layer.conditional_variance(h, state)
        raw = layer.prior_variance(h) - whitened.pow(2).sum(-1)
        _, variance = layer.marginal(h, state)
    assert float(raw.min()) < -1e-3
    assert float(residual.min()) >= 0 and float(variance.min()) >= 0
    assert torch.isfinite(variance).all()


def test_samples_have_the_marginal_moments():
    layer = _layer(input_dim=3, output_dim=2, units=10)
    layer.set_variance(0.8)
    _randomise_posterior(layer, seed=3)
    h = _inputs(4, 3)
    S = 40_000
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        state = layer.state()
        mean, variance = layer.marginal(h, state)
        eps_u = torch.randn(S, 2, 10, generator=gen, dtype=torch.float64)
        eps_f = torch.randn(S, 4, 2, generator=gen, dtype=torch.float64)
        samples = layer.sample(h, state, eps_u, eps_f)
    assert samples.shape == (S, 4, 2)
    err = (variance / S).sqrt()
    assert ((samples.mean(0) - mean).abs() < 5 * err).all()
    assert ((samples.var(0) / variance - 1).abs() < 5 * math.sqrt(2 / S)).all()


def test_batched_samples_and_marginals_equal_the_per_entry_formulas():
    """Broadcast shapes as the posterior uses them: inputs (b, n, D), one draw of u per sample
    (eps_u of shape (S, 1, P, M)) shared by the b entries; every (sample, entry) equals the
    unbatched f = K_fu (V + L^-T R eps_u) + sqrt(K_ff - Q_ff) eps_f, computed by triangular
    solves, and the batched marginal equals the marginal of each entry alone."""
    layer = _layer(input_dim=3, output_dim=2, units=7)
    _randomise_posterior(layer, seed=6)
    gen = torch.Generator().manual_seed(7)
    h = torch.randn(5, 4, 3, generator=gen, dtype=torch.float64)
    eps_u = torch.randn(6, 1, 2, 7, generator=gen, dtype=torch.float64)
    eps_f = torch.randn(6, 5, 4, 2, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        state = layer.state()
        samples = layer.sample(h, state, eps_u, eps_f)
        mean, variance = layer.marginal(h, state)
        assert samples.shape == (6, 5, 4, 2) and mean.shape == variance.shape == (5, 4, 2)
        for b in range(5):
            kfu = layer.features(h[b])  # (n, M)
            proj = torch.linalg.solve_triangular(state.chol, kfu.T, upper=False)  # L^-1 K_uf
            residual = (layer.prior_variance(h[b]) - proj.pow(2).sum(0)).clamp_min(0)
            alone_mean, alone_variance = layer.marginal(h[b], state)
            assert torch.allclose(mean[b], alone_mean, rtol=1e-12, atol=1e-12)
            assert torch.allclose(variance[b], alone_variance, rtol=1e-12, atol=1e-12)
            for s in range(6):
                for j in range(2):
                    u_shift = torch.linalg.solve_triangular(
                        state.chol.T,
                        (state.scale_tril[j] @ eps_u[s, 0, j]).unsqueeze(-1),
                        upper=True,
                    ).squeeze(-1)
                    expected = kfu @ (layer.readout[:, j] + u_shift)
                    expected = expected + residual.sqrt() * eps_f[s, b, :, j]
                    assert torch.allclose(samples[s, b, :, j], expected, rtol=1e-9, atol=1e-10)


def test_kl_matches_torch_distributions():
    layer = _layer(input_dim=3, output_dim=2, units=5)
    _randomise_posterior(layer, seed=5)
    with torch.no_grad():
        state = layer.state()
        kl = layer.kl_divergence(state)
        prior = MultivariateNormal(torch.zeros(5, dtype=torch.float64), torch.eye(5).double())
        reference = sum(
            kl_divergence(
                MultivariateNormal(
                    state.chol.T @ layer.readout[:, j], scale_tril=state.scale_tril[j]
                ),
                prior,
            )
            for j in range(2)
        )
    assert torch.allclose(kl, reference, rtol=1e-10)


def test_other_zonal_kernels_and_their_gradients():
    """A chordal Matérn kernel (all levels positive) works; its lengthscale gets a gradient."""
    layer = _layer(input_dim=3, units=6, kernel=lambda s: ChordalMaternKernel(s, nu=2.5))
    h = _inputs(5, 3)
    state = layer.state()
    mean, variance = layer.marginal(h, state)
    (variance.sum() + layer.kl_divergence(state)).backward()
    assert torch.isfinite(layer.kernel.raw_lengthscale.grad).all()
    assert float(variance.detach().min()) >= 0


def test_errors():
    with pytest.raises(ConfigurationError, match="not in the kernel's RKHS"):
        _layer(activation="relu", kernel=lambda s: ArcCosineKernel(s, order=0))
    with pytest.raises(ConfigurationError, match="must build a ZonalKernel"):
        _layer(kernel=lambda s: torch.nn.Linear(2, 2))
    with pytest.raises(ConfigurationError, match="`num_units` must be an integer"):
        _layer(units=0)
    with pytest.raises(ConfigurationError, match="`bias` must be > 0"):
        _layer(bias=0.0)
