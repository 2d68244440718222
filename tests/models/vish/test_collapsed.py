"""The collapsed bound against the dense N x N Titsias bound, Kff - Qff >= 0, the posterior against
dense SGPR algebra and against the exact GP when the features cover a kernel's whole spectrum."""

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import ScaleKernel

from manibo.kernels import (
    ArcCosineKernel,
    ChordalMaternKernel,
    GeometricMaternKernel,
    HomogeneousLiftKernel,
    ZonalKernel,
)
from manibo.models.vish import VISHModel, VISHPrior, collapsed_bound, gather_statistics
from manibo.models.vish.collapsed import _CollapsedBound
from manibo.spaces import Sphere


def _case(name, n):
    g = torch.Generator().manual_seed(3)
    if name == "geometric-s2":
        X = Sphere(2).random(n, generator=g)
        prior = VISHPrior(ScaleKernel(GeometricMaternKernel(Sphere(2), nu=1.5, num_levels=30)), 100)
    elif name == "chordal-s3":
        X = Sphere(3).random(n, generator=g)
        prior = VISHPrior(ScaleKernel(ChordalMaternKernel(Sphere(3), nu=2.5)), 91)
    else:  # lifted arc-cosine in R^4
        X = torch.randn(n, 4, generator=g, dtype=torch.float64)
        lift = HomogeneousLiftKernel(ArcCosineKernel(Sphere(4), order=1), 4, bias=0.6)
        prior = VISHPrior(ScaleKernel(lift), 100)
    prior.covar_module.outputscale = 1.4
    y = torch.sin(2 * X[:, 0]) * X[:, 1] + 0.2 * torch.randn(n, generator=g, dtype=torch.float64)
    return prior, X, y


CASES = ["geometric-s2", "chordal-s3", "lifted-arccos"]


@pytest.mark.parametrize("name", CASES)
@torch.no_grad()
def test_cached_bound_equals_dense_titsias(name, reference):
    prior, X, y = _case(name, 1500)
    noise = torch.tensor(0.07, dtype=torch.float64)
    stats = gather_statistics(prior.features, X, y, chunk_size=512)
    bound = collapsed_bound(stats, prior.scale(), noise, prior.residual_variance())
    Phi = prior.features.harmonics(X)
    Kff_diag = prior.covar_module(X, diag=True)
    dense = reference["titsias"](Kff_diag, Phi, prior.scale() ** 2, y, noise)
    assert abs(float(bound - dense)) < 1e-8, (float(bound), float(dense))


@pytest.mark.parametrize("name", CASES)
@torch.no_grad()
def test_kff_minus_qff_is_psd(name):
    prior, X, _ = _case(name, 400)
    Phi = prior.features.harmonics(X)
    K = prior.covar_module(X).to_dense()
    Q = Phi @ torch.diag(prior.scale() ** 2) @ Phi.T
    eigenvalues = torch.linalg.eigvalsh(K - Q)
    assert float(eigenvalues.min()) > -1e-10 * float(K.diagonal().max())
    assert float(prior.residual_variance()) >= 0


@pytest.mark.parametrize("name", CASES)
@torch.no_grad()
def test_posterior_equals_dense_sgpr(name, reference):
    prior, X, y = _case(name, 500)
    X_test = X[:7] * 0.9 if name == "lifted-arccos" else X[:7]
    stats = gather_statistics(prior.features, X, y)
    model = VISHModel(prior, stats)
    model.likelihood.noise = 0.05
    mean, cov = model.latent(X_test)
    K_test = prior.covar_module(X_test).to_dense()
    Phi, Phi_test = prior.features.harmonics(X), prior.features.harmonics(X_test)
    d_mean, d_cov = reference["projected_process"](
        K_test, Phi, Phi_test, prior.scale() ** 2, y, 0.05
    )
    assert torch.allclose(mean, d_mean, atol=1e-9)
    assert torch.allclose(cov, d_cov, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@torch.no_grad()
def test_posterior_equals_exact_gp_for_finite_spectra(dtype):
    g = torch.Generator().manual_seed(5)
    # a Matérn kernel truncated at 6 levels on S² (36 harmonics), and a lifted polynomial zonal
    # kernel on S³ with levels 0..2 only (1 + 4 + 9 = 14 harmonics): the features span the RKHS
    sphere_X = Sphere(2).random(80, generator=g)
    poly = ZonalKernel(Sphere(3), lambda t: ((1 + t) / 2) ** 2, num_levels=3)
    cases = [
        (GeometricMaternKernel(Sphere(2), nu=2.5, num_levels=6), 36, sphere_X, sphere_X[:5]),
        (
            HomogeneousLiftKernel(poly, 3, bias=1.0),
            14,
            torch.randn(80, 3, generator=g).double(),
            torch.randn(5, 3, generator=g).double(),
        ),
    ]
    for kernel, budget, X, X_test in cases:
        prior = VISHPrior(ScaleKernel(kernel), budget)
        assert prior.features.num_features == budget and float(prior.residual_variance()) < 1e-12
        prior.covar_module.outputscale = 0.8
        y = torch.cos(2 * X[:, 0]) + 0.1 * torch.randn(80, generator=g, dtype=torch.float64)
        model = VISHModel(prior, gather_statistics(prior.features, X, y))
        model.likelihood.noise = 0.02
        gp = SingleTaskGP(X, y[:, None], covar_module=prior.covar_module, outcome_transform=None)
        gp.likelihood.noise = 0.02
        gp.eval()
        exact = gp.posterior(X_test)
        vish = model.posterior(X_test.to(dtype))
        assert vish.mean.dtype == dtype
        tol = 1e-9 if dtype == torch.float64 else 1e-4  # stated float32 tolerance (inputs only)
        assert torch.allclose(vish.mean.double(), exact.mean, atol=tol)
        assert torch.allclose(vish.covariance_matrix.double(), exact.covariance_matrix, atol=tol)


def test_closed_form_gradient_of_the_bound():
    """The hand-written backward against finite differences (gradcheck), and the bound with its
    gradient in the hyperparameters against the dense Gaussian log-density
    log N(y | 0, Φ S² Φᵀ + σ² I) − residual Σr² / 2σ², differentiated by autograd."""
    g = torch.Generator().manual_seed(5)
    m = 7
    Phi = torch.randn(40, m, generator=g, dtype=torch.float64)
    y = torch.randn(40, generator=g, dtype=torch.float64)
    inputs = [
        Phi.T @ Phi,
        y @ Phi,
        y @ y,
        torch.tensor(52.0, dtype=torch.float64),  # sum of r^2
        torch.tensor(40.0, dtype=torch.float64),
        torch.rand(m, generator=g, dtype=torch.float64) + 0.2,  # scale
        torch.tensor([0.3], dtype=torch.float64),  # noise, shape (1,) as GPyTorch's
        torch.tensor(0.05, dtype=torch.float64),  # residual variance
    ]
    inputs = [t.clone().requires_grad_(True) for t in inputs]

    def symmetric(gram, *rest):  # the factorisation reads one triangle: perturb symmetrically
        return _CollapsedBound.apply(0.5 * (gram + gram.T), *rest)

    assert torch.autograd.gradcheck(symmetric, inputs)

    bound = _CollapsedBound.apply(*inputs)
    scale, noise, residual, radius_squared = inputs[5], inputs[6], inputs[7], inputs[3]
    covariance = (Phi * scale**2) @ Phi.T + noise * torch.eye(40, dtype=torch.float64)
    dense = torch.distributions.MultivariateNormal(
        torch.zeros(40, dtype=torch.float64), covariance
    ).log_prob(y) - 0.5 * residual * radius_squared / noise.reshape(())
    assert torch.allclose(bound, dense, rtol=1e-12)
    hyper = [scale, noise, residual, radius_squared]
    got = torch.autograd.grad(bound, hyper)
    expected = torch.autograd.grad(dense, hyper)
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)
