"""Points that a membership check accepts but that lie off their space by up to its tolerance:
every kernel series reads them as the nearest point of the space (``Space.snap``), not as points
an angle of about the square root of the tolerance away from themselves."""

import math

import pytest
import torch
from registry import SPACES

from manibo.exceptions import InputDataError
from manibo.kernels import ArcCosineKernel, ChordalMaternKernel, GeometricMaternKernel
from manibo.spaces import CompactSpace, Grassmann, SpecialOrthogonal, Sphere

CONTINUOUS = sorted(
    name
    for name, make in SPACES.items()
    if isinstance(make(), CompactSpace) and not make().is_discrete
)


def off_the_space(space, dtype, n=6, seed=0):
    """``n`` random points moved off ``space`` along a random ambient direction, by the largest
    step (within a factor 1.5) that ``space.check`` still accepts in ``dtype``."""
    points = space.random(n, generator=seed)
    direction = torch.randn(points.shape, generator=torch.Generator().manual_seed(seed + 1))
    step = 1e-2
    while True:
        moved = (points + step * direction.to(points)).to(dtype)
        try:
            space.check(moved)
            return moved
        except InputDataError:
            step /= 1.5


@pytest.mark.filterwarnings("ignore::manibo.exceptions.TruncationWarning")
@pytest.mark.parametrize("name", CONTINUOUS)
def test_kernel_reads_accepted_points_as_their_projection(name):
    # the kernel at accepted points off the space against the kernel at their projection (SVD,
    # QR or division by the norm: computed independently of the Newton-Schulz steps of `snap`);
    # before `snap`, float64 points off by 1e-6 moved the kernel by 4e-5 to 3e-4 at lengthscale 0.1
    space = SPACES[name]()
    moved = off_the_space(space, torch.float64)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = 0.1
    on_space = space.project(moved)
    with torch.no_grad():
        K = kernel(moved, moved).to_dense()
        expected = kernel(on_space, on_space).to_dense()
    assert (K - expected).abs().max() < 1e-9


@pytest.mark.parametrize("name", CONTINUOUS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_snap_moves_accepted_points_onto_the_space(name, dtype):
    space = SPACES[name]()
    moved = off_the_space(space, dtype)
    snapped = space.snap(moved)
    assert snapped.shape == moved.shape and snapped.dtype == dtype
    # the nearest point of the space, to rounding: the projection computed in float64 (on a
    # Grassmannian the same plane, whose frame `project` may choose otherwise)
    nearest = space.project(moved.double())
    if isinstance(space, Grassmann):
        snapped, nearest = plane_projector(space, snapped.double()), plane_projector(space, nearest)
    assert (snapped.double() - nearest).abs().max() < 30 * torch.finfo(dtype).eps


def plane_projector(space, frames):
    """The orthogonal projection matrices ``F Fᵀ`` of frames ``(*batch, n*k)``, flattened."""
    f = frames.reshape(*frames.shape[:-1], space.n, space.k)
    return (f @ f.transpose(-1, -2)).flatten(-2)


@pytest.mark.parametrize("name", CONTINUOUS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_snap_leaves_points_on_the_space_bit_for_bit(name, dtype):
    space = SPACES[name]()
    points = space.random(50, generator=3, dtype=dtype)
    assert torch.equal(space.snap(points), points)


@pytest.mark.filterwarnings("ignore::manibo.exceptions.TruncationWarning")
@pytest.mark.parametrize("name", CONTINUOUS)
def test_kernel_gradients_at_points_of_the_space_are_those_through_the_projection(name):
    # the derivative of `snap` at a point of the space is the projection onto its tangent space:
    # gradients equal those through `project` (an SVD, QR or norm with its own derivative) and
    # agree with finite differences, which step off the space
    space = SPACES[name]()
    x, y = space.random(4, generator=5), space.random(3, generator=6)
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    kernel.lengthscale = 0.3
    weights = torch.randn(4, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)

    def gradient(inputs):
        inputs = inputs.clone().requires_grad_(True)
        (kernel(inputs, y).to_dense() * weights).sum().backward()
        return inputs.grad

    direct = gradient(x)
    points = x.clone().requires_grad_(True)
    (kernel(space.project(points), y).to_dense() * weights).sum().backward()
    assert (direct - points.grad).abs().max() < 1e-8 * max(1.0, float(direct.abs().max()))
    # steps of 1e-7: within the membership check's tolerance of 1e-6
    assert torch.autograd.gradcheck(
        lambda a: (kernel(a, y).to_dense() * weights).sum(),
        (x.clone().requires_grad_(True),),
        eps=1e-7,
    )


@pytest.mark.parametrize("kernel_class", [ChordalMaternKernel, ArcCosineKernel])
def test_zonal_kernels_read_accepted_vectors_as_unit_vectors(kernel_class):
    # float32 unit vectors off by 4.5e-5 in norm: k(x, x) of the chordal Matérn kernel at
    # lengthscale 0.05 was 0.945 before `snap`
    sphere = Sphere(2)
    points = sphere.random(8, generator=0)
    moved = (points * (1 - 4.5e-5)).float()
    sphere.check(moved)
    kernel = kernel_class(sphere).float()
    if kernel.has_lengthscale:
        kernel.lengthscale = 0.05
    with torch.no_grad():
        K = kernel(moved, moved).to_dense().double()
        diag = kernel(moved, moved, diag=True).double()
        expected = kernel.double()(points, points).to_dense()
    assert (K - expected).abs().max() < 1e-4
    assert (diag - expected.diagonal()).abs().max() < 1e-4


def test_feature_maps_read_accepted_points_as_their_projection():
    # the eigenfunctions behind explicit features (VISH, GPNet) see the snapped points too
    sphere = Sphere(2)
    moved = off_the_space(sphere, torch.float64)
    kernel = GeometricMaternKernel(sphere, nu=2.5, num_levels=20).double()
    kernel.lengthscale = 0.1
    with torch.no_grad():
        phi = kernel.feature_map(moved)
        expected = kernel.feature_map(sphere.project(moved))
    assert (phi - expected).abs().max() < 1e-9


def test_points_far_off_the_space_are_left_as_they_are():
    # two Newton-Schulz steps from 1.8 R gave a matrix of determinant -0.03, and a spectral sum at
    # 2 R a negative k(x, x); a zero vector's normalisation was NaN. No check accepts such points,
    # but the spaces' spectral_sum and eigenfunctions take them where a caller skips the check
    rotation = SpecialOrthogonal(3).random(2, generator=0)
    for scale in (1.5, 1.8, 2.0, 3.0):
        assert torch.equal(SpecialOrthogonal(3).snap(scale * rotation), scale * rotation)
    far = torch.tensor([[0.0, 0.0, 0.0], [math.inf, 0.0, 0.0], [2.0, 0.0, 0.0]])
    assert torch.equal(Sphere(2).snap(far), far)
    points = far.clone().requires_grad_(True)
    Sphere(2).snap(points).sum().backward()
    assert torch.equal(points.grad, torch.ones_like(far))  # no NaN from the unused branch


@pytest.mark.parametrize("dtype", [torch.float16])
def test_half_precision_points_within_the_check_are_snapped(dtype):
    # sixteen machine epsilons (0.016 in float16, 0.125 in bfloat16) exceed the check's tolerance
    # of 1e-2 there, so no accepted point was moved
    sphere = Sphere(2)
    points = (sphere.random(20, generator=0) * (1 - 4e-3)).to(dtype)
    sphere.check(points)
    norms = sphere.snap(points).double().norm(dim=-1)
    assert (norms - 1).abs().max() < 3 * torch.finfo(dtype).eps
