"""The exact geometric GP.

A geometric kernel beats ambient coordinates on a function of geodesic distance, and fitting
recovers from a numerical failure.
"""

import warnings

import pytest
import torch
from linear_operator.utils.errors import NotPSDError

from manibo.exceptions import ConfigurationError, ManiboWarning, TruncationWarning
from manibo.models import build_surrogate, fit_with_retries
from manibo.spaces import Sphere


@pytest.mark.parametrize(
    "failure",
    [
        NotPSDError("simulated Cholesky failure"),
        # what GPyTorch raises when L-BFGS drives a lengthscale to 0 (seen on Ackley on S², heat)
        ValueError("Expected value argument to be within the support of LogNormalPrior()"),
    ],
)
def test_fit_retries_after_numerical_failure(monkeypatch, failure):
    space = Sphere(2)
    X = space.random(12, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("matern", space, X, X[:, :1], fit=False)
    import manibo.models.exact_gp as module

    calls = []
    real_fit = module.fit_gpytorch_mll

    def failing_once(mll, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise failure
        return real_fit(mll, **kwargs)

    monkeypatch.setattr(module, "fit_gpytorch_mll", failing_once)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_with_retries(model)
    assert len(calls) == 2


def test_a_programming_error_in_fitting_surfaces_at_once_with_its_traceback():
    """A shape error (here a two-output SingleTaskGP around an unbatched kernel, whose fit BoTorch
    refuses with "shape '[2, 1]' is invalid for input of size 1") was caught as a numerical
    failure: three attempts, then 'fitting failed 3 times; keeping the initial hyperparameters'
    and an unfitted model."""
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import ScaleKernel

    from manibo.kernels import GeometricMaternKernel

    space = Sphere(2)
    X = space.random(10, generator=0)
    two_outputs = torch.cat([X[:, :1], X[:, 1:2]], -1)
    model = SingleTaskGP(X, two_outputs, covar_module=ScaleKernel(GeometricMaternKernel(space)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManiboWarning)
        with pytest.raises(RuntimeError, match=r"shape '\[2, 1\]' is invalid"):
            fit_with_retries(model)


def test_per_factor_lengthscales_on_a_compact_product_fit_a_function_anisotropic_in_its_factors():
    """On S² × S² the 'matern' surrogate had one lengthscale for both spheres: on a function of
    the first sphere at frequency 4 and of the second at 0.1 its held-out RMSE was 0.62 (std of
    the function about 0.7); per_factor=True gives each sphere its own."""
    from manibo.kernels import FactorProductKernel
    from manibo.spaces import ProductSpace

    space = ProductSpace(Sphere(2), Sphere(2))
    generator = torch.Generator().manual_seed(0)
    X, X_test = space.random(60, generator=generator), space.random(200, generator=generator)

    def f(x):
        return (torch.sin(4 * x[..., 2]) + 0.1 * x[..., 5]).unsqueeze(-1)

    rmse = {}
    for per_factor in (False, True):
        with warnings.catch_warnings():
            # the product manifold's series needs 284 levels at the fitted lengthscale, more
            # than its cap of 33, and says so; the kernels of the factors need no such warning
            if not per_factor:
                warnings.filterwarnings("ignore", "Geometric.*per_factor=True", TruncationWarning)
            model = build_surrogate("matern", space, X, f(X), per_factor=per_factor)
        with torch.no_grad():
            rmse[per_factor] = float(
                (model.posterior(X_test).mean - f(X_test)).pow(2).mean().sqrt()
            )
    kernel = model.covar_module.base_kernel
    assert isinstance(kernel, FactorProductKernel)
    fast, slow = (float(k.lengthscale.detach()) for k in kernel.factor_kernels)
    assert fast < slow / 2  # 1.07 and 4.72
    assert rmse[True] < 0.5 * rmse[False]  # 0.27 against 0.62
    with pytest.raises(ConfigurationError, match="per_factor"):
        build_surrogate("matern", space, X, f(X), per_factor="yes")


def test_a_scaled_kernel_is_not_wrapped_twice():
    # exact_gp(kernel=ScaleKernel(k)) gave ScaleKernel(ScaleKernel(k)): two outputscales
    from gpytorch.kernels import ScaleKernel

    from manibo.kernels import GeometricMaternKernel
    from manibo.models.exact_gp import exact_gp

    space = Sphere(2)
    X = space.random(8, generator=0)
    scaled = ScaleKernel(GeometricMaternKernel(space))
    model = exact_gp(space, X, X[:, :1], scaled, fit=False)
    assert model.covar_module is scaled
    assert sum(name.endswith("raw_outputscale") for name, _ in model.named_parameters()) == 1


def test_a_lengthscale_outside_the_prior_support_falls_back_with_a_warning():
    """The real error, not a simulated one: the lengthscale prior rejects a lengthscale of 0."""
    space = Sphere(2)
    X = space.random(12, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("heat", space, X, X[:, :1], fit=False)
    kernel = model.covar_module.base_kernel
    kernel.raw_lengthscale.data.fill_(-800.0)  # softplus underflows: lengthscale exactly 0
    assert float(kernel.lengthscale.detach()) == 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_with_retries(model)  # no exception escapes: the loop goes on with this model
    failures = [w for w in caught if issubclass(w.category, ManiboWarning)]
    assert any("fitting failed 3 times" in str(w.message) for w in failures)


def test_geometric_gp_predicts_held_out_points():
    space = Sphere(2)
    gen = torch.Generator().manual_seed(1)
    X, Xt = space.random(40, generator=gen), space.random(200, generator=gen)
    pole = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)

    def f(x):
        return torch.cos(3 * space.distance(x, pole)).unsqueeze(-1)

    model = build_surrogate("matern", space, X, f(X))
    with torch.no_grad():
        err = (model.posterior(Xt).mean - f(Xt)).abs().mean()
    assert err < 0.1


def test_truncation_is_reported_for_the_fitted_lengthscale_only(monkeypatch):
    import pytest

    import manibo.models.exact_gp as module
    from manibo.exceptions import TruncationWarning

    space = Sphere(2)
    X = space.random(6, generator=torch.Generator().manual_seed(0))

    def fit_visiting_a_tiny_lengthscale(final):
        def fit(mll, **kwargs):  # a line search that tries 1e-3 rad on its way to `final`
            kernel = mll.model.covar_module.base_kernel
            kernel.lengthscale = 1e-3
            kernel(X, X).to_dense()  # needs ~10^5 levels > max_levels: the cap binds here
            kernel.lengthscale = final

        return fit

    monkeypatch.setattr(module, "fit_gpytorch_mll", fit_visiting_a_tiny_lengthscale(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        build_surrogate("matern", space, X, X[:, :1])  # fitted at 0.5 rad: nothing to report
    monkeypatch.setattr(module, "fit_gpytorch_mll", fit_visiting_a_tiny_lengthscale(1e-3))
    with pytest.warns(TruncationWarning, match="lengthscale 0.001"):
        build_surrogate("matern", space, X, X[:, :1])


@pytest.mark.parametrize("name", ["matern", "heat"])
def test_max_levels_named_by_the_truncation_warning_is_an_option_of_the_surrogate(name):
    from manibo.spaces import Torus

    space = Torus(2)
    X = space.random(5, generator=torch.Generator().manual_seed(0))
    model = build_surrogate(name, space, X, X[:, :1].cos(), max_levels=40)
    assert model.covar_module.base_kernel.max_levels == 40


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("matern", {"fit": "no"}, "`fit` must be True or False, got 'no'"),
        ("matern", {"nu": True}, "`nu` must be a real number > 0 .*got True"),
        ("matern", {"truncation_tol": "x"}, "`truncation_tol` must be a finite real number"),
        ("matern", {"outcome_transform": "x"}, "`outcome_transform` must be a BoTorch"),
        ("heat", {"nu": 1.5}, "takes no `nu`.*use surrogate 'matern'"),
    ],
)
def test_options_of_the_wrong_type_are_refused_not_converted(name, options, message):
    # fit="no" fitted anyway, nu=True built nu = 1.0, the others failed deep inside with a
    # TypeError or AttributeError
    from manibo.exceptions import ConfigurationError

    space = Sphere(2)
    X = space.random(6, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError, match=message):
        build_surrogate(name, space, X, X[:, :1], **options)


def test_the_size_refusal_names_only_surrogates_that_take_the_space():
    """On a box it named 'vish', which refuses every space but a sphere."""
    from manibo.exceptions import ConfigurationError
    from manibo.models import build_surrogate
    from manibo.models.exact_gp import MAX_EXACT_POINTS
    from manibo.spaces import Box

    space = Box([0.0, 0.0], [1.0, 1.0])
    X = space.random(MAX_EXACT_POINTS + 1, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ConfigurationError) as refusal:
        build_surrogate("matern", space, X, X[:, :1])
    assert "'gpnet'" in str(refusal.value) and "vish" not in str(refusal.value)


@pytest.mark.parametrize("name", ["matern", "heat", "euclidean", "chart"])
def test_an_exact_gp_refuses_more_points_than_its_kernel_matrices_can_hold(name):
    """10⁵ points filled 12 GB in 33 s before the allocator failed; the refusal comes first."""
    import time

    from manibo.exceptions import ConfigurationError
    from manibo.models import build_surrogate
    from manibo.models.exact_gp import MAX_EXACT_POINTS

    space = Sphere(2)
    X = space.random(MAX_EXACT_POINTS + 1, generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    with pytest.raises(ConfigurationError, match=r"50,001 observations needs 20 GB .* 'vish'"):
        build_surrogate(name, space, X, X[:, :1])
    assert time.perf_counter() - start < 10


def test_batched_or_empty_training_data_is_refused_for_what_it_is():
    """A batch of data sets was refused because 'a surrogate needs at least one observation'."""
    from manibo.exceptions import InputDataError
    from manibo.models import build_surrogate

    space = Sphere(2)
    X = space.random(20, generator=torch.Generator().manual_seed(0)).reshape(2, 10, 3)
    with pytest.raises(InputDataError, match=r"got \(2, 10, 3\); .* build one per set"):
        build_surrogate("matern", space, X, X[..., :1])
    with pytest.raises(InputDataError, match=r"got \(0, 3\); a surrogate needs at least one"):
        build_surrogate("matern", space, X[0, :0], X[0, :0, :1])
    with pytest.raises(InputDataError, match=r"got \(3,\); one point is a batch of one"):
        build_surrogate("matern", space, X[0, 0], X[0, :1, :1])


@pytest.mark.parametrize("name", ["vish", "gpnet", "adgp"])
def test_fit_with_retries_refuses_the_surrogates_fitted_when_built(name):
    # an activated deep GP gave gpytorch's "Likelihood must be Gaussian for exact inference"
    X = Sphere(2).random(12, generator=torch.Generator().manual_seed(0))
    fast = {"gpnet": {"num_iterations": 2}, "adgp": {"network_epochs": 1, "elbo_epochs": 1}}
    fast = fast.get(name, {})
    model = build_surrogate(name, Sphere(2), X, X[:, :1], **fast)
    with pytest.raises(ConfigurationError, match="fitted when build_surrogate builds them"):
        fit_with_retries(model)


def test_a_mesh_in_other_units_gets_the_same_gp():
    """The lengthscale prior (median 1) took every mesh to be about a unit across: a 1000 m
    terrain looked like noise to the GP (30 evaluations did no better than random search), and
    the same file in km found the optimum. Its median is now the mesh's length unit."""
    from manibo.spaces import Mesh

    base = Mesh.icosphere(2)
    X = torch.randperm(base.num_points, generator=torch.Generator().manual_seed(0))[:20]
    X = X.double().reshape(-1, 1)
    vertices = torch.as_tensor(base.vertices, dtype=torch.float64)
    peak = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    Y = torch.exp(-3 * (vertices[X.long().reshape(-1)] - peak).square().sum(-1)).reshape(-1, 1)
    every = torch.arange(base.num_points, dtype=torch.float64).reshape(-1, 1)
    means, lengthscales = [], []
    for scale in (1.0, 1e3, 1e-3):  # metres, millimetres, kilometres
        mesh = Mesh(base.vertices * scale, base.faces)
        model = build_surrogate("matern", mesh, X, Y)
        with torch.no_grad():
            means.append(model.posterior(every).mean.reshape(-1))
        lengthscales.append(float(model.covar_module.base_kernel.lengthscale.detach()) / scale)
    for mean in means[1:]:
        assert float((mean - means[0]).abs().max()) < 1e-4  # measured 7.5e-7
    assert lengthscales == pytest.approx([lengthscales[0]] * 3, rel=1e-4)  # 0.965
    assert mesh.length_unit == pytest.approx(0.9905e-3, rel=1e-4)  # area 4π·0.981 at scale 1
