"""Every kernel refuses inputs whose trailing size is not one point's with manibo's
InputDataError (naming the argument, the expected shape and the shape that arrived) before
GPyTorch's ``Kernel.__call__`` raises its own RuntimeError ("x1_ and x2_ must have the same number
of dimensions!"): every kernel class of the registry, the contract's kernel on every registered
space (matrix spaces take flattened matrices, product spaces concatenated factor points), the
coordinate kernels of the Euclidean baselines, and a surrogate's posterior."""

import re

import pytest
import torch
from gpytorch.kernels import MaternKernel
from registry import KERNEL_CASES, SPACES, make_kernel

import manibo.spaces as spaces
from manibo.exceptions import InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.models import ChartKernel, EmbeddingKernel, build_surrogate


def _space_case(name):
    def make():
        space = SPACES[name]()
        return space, make_kernel(space, "matern12")

    return make


CASES = {
    **{f"class-{name}": make for name, make in KERNEL_CASES.items()},
    **{f"space-{name}": _space_case(name) for name in SPACES},
    "class-ChartKernel": lambda: (
        s := spaces.Sphere(2),
        ChartKernel(s, MaternKernel(nu=2.5, ard_num_dims=2)),
    ),
    "class-EmbeddingKernel": lambda: (
        s := spaces.Sphere(2),
        EmbeddingKernel(s, MaternKernel(nu=2.5, ard_num_dims=3)),
    ),
}


def _message(name, size, got):
    return rf"`{name}` must have shape \(\*batch, {size}\) .*got {re.escape(str(got))}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_trailing_size_is_refused_with_manibo_message(case):
    space, kernel = CASES[case]()
    kernel = kernel.double()
    (size,) = space.point_shape
    x = space.random(4, generator=0)
    wrong = torch.randn(3, size + 1, dtype=torch.float64)
    for args, name, got in [
        ((x, wrong), "x2", (3, size + 1)),
        ((wrong, x), "x1", (3, size + 1)),
        ((wrong,), "x1", (3, size + 1)),
        ((x, wrong.expand(2, 3, size + 1)), "x2", (2, 3, size + 1)),
    ]:
        with pytest.raises(InputDataError, match=_message(name, size, got)):
            kernel(*args).to_dense()
    with pytest.raises(InputDataError, match=_message("x1", size, (3, size + 1))):
        kernel(wrong, diag=True)
    if size != 1:  # one point without its point dimension: GPyTorch reads it as `size` points
        for args, name in [((x, x[0]), "x2"), ((x[0], x), "x1")]:
            with pytest.raises(InputDataError, match=rf"`{name}`.*got \({size},\).*unsqueeze"):
                kernel(*args).to_dense()


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: spaces.SpecialOrthogonal(3), (3, 3)),
        (lambda: spaces.SymmetricPositiveDefinite(2, eigenvalue_bounds=(0.1, 10.0)), (2, 2)),
        (lambda: spaces.Grassmann(2, 4), (4, 2)),
    ],
)
def test_matrix_points_must_be_flattened(make, shape):
    """Points of matrix spaces reach kernels flattened row-major; unflattened matrices are refused
    as x1 or x2, with the flattened size in the message."""
    space = make()
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    x = space.random(4, generator=0)
    matrices = x.reshape(4, *shape)
    size = space.point_shape[0]
    with pytest.raises(InputDataError, match=_message("x2", size, (4, *shape))):
        kernel(x, matrices).to_dense()
    with pytest.raises(InputDataError, match=_message("x1", size, (4, *shape))):
        kernel(matrices).to_dense()


def test_product_points_are_the_factors_points_concatenated():
    space = spaces.ProductSpace(spaces.Sphere(2), spaces.Circle())
    kernel = make_kernel(space, "matern52").double()
    x = space.random(4, generator=0)
    with pytest.raises(
        InputDataError, match=r"\(\*batch, 4\) for points of ProductSpace.*got \(4, 3\)"
    ):
        kernel(x, x[:, :3]).to_dense()


@pytest.mark.parametrize("surrogate", ["matern", "euclidean"])
def test_surrogate_posterior_with_wrong_trailing_size_gets_manibo_message(surrogate):
    space = spaces.Sphere(2)
    X = space.random(8, generator=0)
    Y = X[:, :1].sin()
    model = build_surrogate(surrogate, space, X, Y)
    with pytest.raises(InputDataError, match=r"`X` must have shape \(\*batch, 3\)"):
        model.posterior(torch.randn(2, 5, 4, dtype=torch.float64))


def test_active_dims_and_one_dimensional_inputs_are_left_to_gpytorch_and_forward():
    """With ``active_dims`` the kernel reads selected coordinates (checked by ``forward``); a
    one-dimensional input is read by GPyTorch as points of one coordinate."""
    space = spaces.Circle()
    kernel = GeometricMaternKernel(space, nu=2.5, active_dims=[1]).double()
    x = torch.rand(4, 2, dtype=torch.float64)
    assert kernel(x).to_dense().shape == (4, 4)
    flat = GeometricMaternKernel(space, nu=2.5).double()
    assert flat(torch.rand(4, dtype=torch.float64)).to_dense().shape == (4, 4)
