"""The exact geometric GP.

A geometric kernel beats ambient coordinates on a function of geodesic distance, and fitting
recovers from a numerical failure.
"""

import warnings

import torch
from linear_operator.utils.errors import NotPSDError

from manibo.models import build_surrogate, fit_with_retries
from manibo.spaces import Sphere


def test_fit_retries_after_numerical_failure(monkeypatch):
    space = Sphere(2)
    X = space.random(12, generator=torch.Generator().manual_seed(0))
    model = build_surrogate("matern", space, X, X[:, :1], fit=False)
    import manibo.models.exact_gp as module

    calls = []
    real_fit = module.fit_gpytorch_mll

    def failing_once(mll, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise NotPSDError("simulated Cholesky failure")
        return real_fit(mll, **kwargs)

    monkeypatch.setattr(module, "fit_gpytorch_mll", failing_once)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_with_retries(model)
    assert len(calls) == 2


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
