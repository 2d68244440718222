"""Points that a membership check accepts but that lie off their space by up to its tolerance:
every kernel series reads them as the nearest point of the space (``Space.snap``), not as points
an angle of about the square root of the tolerance away from themselves."""

import pytest
import torch
from registry import SPACES

from manibo.exceptions import InputDataError
from manibo.kernels import ArcCosineKernel, ChordalMaternKernel, GeometricMaternKernel
from manibo.spaces import CompactSpace, Grassmann, Sphere

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
    points = space.random(50, generator=3, dtype=dtype).requires_grad_(True)
    snapped = space.snap(points)
    assert torch.equal(snapped, points)
    # and their gradients: a kernel's gradient at points of the space is what it was before
    weights = torch.randn(points.shape, generator=torch.Generator().manual_seed(4), dtype=dtype)
    (snapped * weights).sum().backward()
    assert torch.equal(points.grad, weights)


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
