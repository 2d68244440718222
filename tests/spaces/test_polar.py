"""The polar factor: values against the SVD, derivatives against finite differences, and on the
group itself (where autograd through the SVD gives NaN) the tangent projection in closed form."""

import pytest
import torch

from manibo.spaces import SpecialOrthogonal, SpecialUnitary
from manibo.spaces._polar import polar_factor


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_values_are_the_nearest_orthogonal_matrix_and_rotation():
    m = torch.randn(6, 4, 4, generator=_gen(), dtype=torch.float64)
    u, _, vh = torch.linalg.svd(m)
    assert torch.allclose(polar_factor(m), u @ vh, atol=1e-12)
    q = polar_factor(m, rotation=True)
    assert torch.allclose(torch.linalg.det(q), torch.ones(6, dtype=torch.float64), atol=1e-12)
    eye = torch.eye(4, dtype=torch.float64)
    assert torch.allclose(q.mT @ q, eye.expand(6, 4, 4), atol=1e-12)


@pytest.mark.parametrize("rotation", [False, True])
def test_derivative_matches_finite_differences(rotation):
    m = torch.randn(3, 3, 3, generator=_gen(1), dtype=torch.float64)
    m[0] = -m[0] if torch.linalg.det(m[0]) > 0 else m[0]  # one with det < 0: the sign fix
    m.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: polar_factor(a, rotation), (m,))


def test_complex_derivative_matches_finite_differences():
    m = torch.randn(2, 3, 3, generator=_gen(2), dtype=torch.complex128).requires_grad_(True)
    assert torch.autograd.gradcheck(polar_factor, (m,))


def test_on_the_rotation_group_the_derivative_is_the_tangent_projection():
    space = SpecialOrthogonal(3)
    x = space.random(5, generator=_gen(3)).requires_grad_(True)
    g = torch.randn(x.shape, generator=_gen(4), dtype=torch.float64)
    (grad,) = torch.autograd.grad((space.project(x) * g).sum(), x)
    assert torch.isfinite(grad).all()  # through torch.linalg.svd: NaN (equal singular values)
    assert torch.allclose(grad, space.to_tangent(x.detach(), g), atol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
def test_special_unitary_projection_is_differentiable_on_the_group(n):
    space = SpecialUnitary(n)
    x = space.random(4, generator=_gen(5))
    (grad,) = torch.autograd.grad(space.project(x.requires_grad_(True)).square().sum(), x)
    assert torch.isfinite(grad).all()
    near = x.detach() + 0.05 * torch.randn(x.shape, generator=_gen(6), dtype=x.dtype)
    assert torch.autograd.gradcheck(space.project, (near.requires_grad_(True),))
