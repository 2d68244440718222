"""FactorProductKernel: a product of per-factor kernels on sliced coordinates, any batch shape."""

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import RBFKernel, ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import FactorProductKernel, GeometricHeatKernel, GeometricMaternKernel
from manibo.spaces import Circle, ProductSpace, Sphere, Torus

DTYPES = [torch.float32, torch.float64]


def _points(space, n, seed, dtype=torch.float64):
    return space.random(n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _circle_kernel(ls, dtype):
    kernel = GeometricMaternKernel(Circle(), nu=1.5, num_levels=60).to(dtype)
    kernel.lengthscale = ls
    return kernel


@pytest.mark.parametrize("dtype", DTYPES)
def test_product_of_circle_kernels_equals_elementwise_product(dtype):
    space = Torus(2)
    k1, k2 = _circle_kernel(0.5, dtype), _circle_kernel(1.2, dtype)
    kernel = FactorProductKernel(space, [k1, k2])
    x, y = _points(space, 9, 0, dtype), _points(space, 7, 1, dtype)
    with torch.no_grad():
        ours = kernel(x, y).to_dense()
        expected = k1(x[:, :1], y[:, :1]).to_dense() * k2(x[:, 1:], y[:, 1:]).to_dense()
        diag = kernel(x, diag=True)
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    assert ours.shape == (9, 7) and ours.dtype == dtype
    assert (ours - expected).abs().max() < tol
    assert (diag - 1).abs().max() < tol * 10
    assert (ours - kernel.forward(x, y)).abs().max() < tol


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_inputs_equal_a_loop(dtype):
    space = ProductSpace(Sphere(2), Circle())
    sphere_kernel = GeometricMaternKernel(Sphere(2), nu=2.5, num_levels=20).to(dtype)
    kernel = FactorProductKernel(space, [sphere_kernel, _circle_kernel(0.7, dtype)])
    xb, z = _points(space, 12, 2, dtype).reshape(4, 3, 4), _points(space, 5, 3, dtype)
    with torch.no_grad():
        batched = kernel(xb, z.expand(4, 5, 4)).to_dense()
        diag = kernel(xb, xb, diag=True)
        for i in range(4):
            assert torch.allclose(batched[i], kernel(xb[i], z).to_dense(), atol=1e-6)
    assert batched.shape == (4, 3, 5) and diag.shape == (4, 3)


def test_heat_product_equals_product_manifold_heat_kernel():
    # exp(-ℓ²(λ1 + λ2)/2) factorises, so with converged truncations the two constructions agree
    space = Torus(2)
    ls = torch.tensor(0.6, dtype=torch.float64)
    circles = [GeometricHeatKernel(Circle(), num_levels=30).double() for _ in range(2)]
    for k in circles:
        k.lengthscale = ls
    manifold = GeometricHeatKernel(space, num_levels=200).double()
    manifold.lengthscale = ls
    x = _points(space, 10, 4)
    with torch.no_grad():
        product = FactorProductKernel(space, circles)(x).to_dense()
        assert (product - manifold(x).to_dense()).abs().max() < 1e-12


def test_finite_nu_product_differs_from_product_manifold_matern():
    space = Torus(2)
    x = _points(space, 10, 5)
    manifold = GeometricMaternKernel(space, nu=2.5, num_levels=300).double()
    manifold.lengthscale = 0.5
    product = FactorProductKernel(space, [_circle_kernel(0.5, torch.float64) for _ in range(2)])
    with torch.no_grad():
        gap = (product(x).to_dense() - manifold(x).to_dense()).abs().max()
    assert gap > 1e-3


def test_gradients_reach_every_factor_and_botorch_fits():
    space = Torus(2)
    kernel = FactorProductKernel(space, [_circle_kernel(0.5, torch.float64), RBFKernel().double()])
    x = _points(space, 8, 6)
    kernel(x).to_dense().sum().backward()
    grads = [p.grad for p in kernel.parameters()]
    assert len(grads) == 2 and all(g is not None and torch.isfinite(g).all() for g in grads)
    y = torch.sin(x[:, :1]) * torch.cos(x[:, 1:])
    model = SingleTaskGP(
        x,
        y,
        covar_module=ScaleKernel(
            FactorProductKernel(
                space, [_circle_kernel(0.5, torch.float64), _circle_kernel(0.5, torch.float64)]
            )
        ),
    )
    candidates = _points(space, 6, 7).reshape(2, 3, 2).requires_grad_()
    posterior = model.posterior(candidates)
    posterior.mean.sum().backward()
    assert posterior.mean.shape == (2, 3, 1) and torch.isfinite(candidates.grad).all()


def test_bad_configuration_and_input_are_refused():
    space = Torus(2)
    with pytest.raises(ConfigurationError, match="one kernel per factor"):
        FactorProductKernel(space, [_circle_kernel(0.5, torch.float64)])
    with pytest.raises(ConfigurationError, match="kernel on Sphere"):
        FactorProductKernel(
            space, [GeometricMaternKernel(Sphere(2)), _circle_kernel(1.0, torch.float64)]
        )
    with pytest.raises(ConfigurationError, match="ProductSpace"):
        FactorProductKernel(Circle(), [_circle_kernel(1.0, torch.float64)])
    with pytest.raises(ConfigurationError, match="gpytorch Kernel"):
        FactorProductKernel(space, [_circle_kernel(1.0, torch.float64), math.cos])
    kernel = FactorProductKernel(space, [_circle_kernel(1.0, torch.float64) for _ in range(2)])
    with pytest.raises(InputDataError, match="space.project"):
        kernel(torch.tensor([[0.1, -1.0]], dtype=torch.float64)).to_dense()


def test_batch_index_gives_the_batch_members_kernel():
    # the batch is in the factor kernels (a ModuleList, which GPyTorch's indexing misses):
    # kernel(x)[0] was (2, 4, 4) and kernel[0].batch_shape stayed [2]
    batch = torch.Size([2])
    space = ProductSpace(Sphere(2), Circle())
    factors = [GeometricMaternKernel(f, nu=2.5, batch_shape=batch) for f in space.factors]
    kernel = FactorProductKernel(space, factors).double()
    factors[0].lengthscale = torch.tensor([0.6, 1.1], dtype=torch.float64).reshape(2, 1, 1)
    factors[1].lengthscale = torch.tensor([0.9, 0.3], dtype=torch.float64).reshape(2, 1, 1)
    x = _points(space, 4, 0)
    with torch.no_grad():
        full = kernel(x).to_dense()
        assert full.shape == (2, 4, 4)
        for i in range(2):
            member = kernel[i]
            assert member.batch_shape == torch.Size([])
            assert [k.batch_shape for k in member.factor_kernels] == [torch.Size([])] * 2
            assert torch.allclose(member(x).to_dense(), full[i], atol=1e-12)
            assert kernel(x)[i].to_dense().shape == (4, 4)
            assert torch.allclose(kernel(x)[i].to_dense(), full[i], atol=1e-12)
