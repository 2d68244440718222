"""The surrogate registry: names, the factory signature, errors, custom registration."""

import dataclasses
import functools
import warnings

import pytest
import torch
from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models import (
    available_surrogates,
    build_surrogate,
    register_surrogate,
    surrogate_entry,
)
from manibo.spaces import Graph, Sphere


def test_builtin_surrogates_fit_and_predict():
    space = Sphere(2)
    X = space.random(20, generator=torch.Generator().manual_seed(0))
    Y = X[:, :1] ** 2
    assert {"matern", "heat", "euclidean", "chart"} <= set(available_surrogates())
    for name in ("matern", "heat", "euclidean", "chart"):
        model = build_surrogate(name, space, X, Y)
        with torch.no_grad():
            mean = model.posterior(X).mean
        assert float((mean - Y).abs().max()) < 0.05, name


def test_errors_and_registration(isolated_surrogates):
    space = Sphere(2)
    X = space.random(5)
    graph = Graph(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    graph_X = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    with pytest.raises(ConfigurationError, match="unknown surrogate 'nope'; choose one of"):
        build_surrogate("nope", space, X, X[:, :1])
    with pytest.raises(ConfigurationError, match=r"'Matern' \(did you mean 'matern'\?\)"):
        build_surrogate("Matern", space, X, X[:, :1])
    # a misspelt option: Python's TypeError, with a note of the options the factory takes
    with pytest.raises(TypeError, match="num_feature") as info:
        build_surrogate("vish", space, X, X[:, :1], num_feature=3)
    assert "takes num_features, nu, maxiter, chunk_size" in "".join(info.value.__notes__)
    with pytest.raises(TypeError, match="fit_iteration") as info:  # several outputs too
        build_surrogate("matern", space, X, X[:, :2], fit_iteration=3)
    assert "per_factor and passes other options on" in "".join(info.value.__notes__)
    # factories that are a functools.partial or an instance with __call__ are named too (reading
    # their __qualname__ raised AttributeError in place of the user's TypeError)
    from manibo.models.exact_gp import geometric_matern_gp
    from manibo.models.registry import factory_options

    register_surrogate("test-partial")(functools.partial(geometric_matern_gp, nu=1.5))

    class Factory:
        def __call__(self, space, train_X, train_Y, **options):
            return geometric_matern_gp(space, train_X, train_Y, **options)

    register_surrogate("test-instance")(Factory())
    with pytest.raises(TypeError, match="bogus") as info:
        build_surrogate("test-partial", space, X, X[:, :1], bogus=1)
    assert "manibo.models.exact_gp.geometric_matern_gp, takes nu" in info.value.__notes__[0]
    assert "Factory, takes no option of its own and passes" in factory_options("test-instance")
    with pytest.raises(InputDataError, match=r"shape \(5, m\)"):
        build_surrogate("matern", space, X, X[:4, :2])
    with pytest.raises(ConfigurationError, match="points of Graph.* are indices"):
        build_surrogate("euclidean", graph, graph_X, graph_X)
    with pytest.raises(InputDataError, match="NaN"):
        build_surrogate("matern", space, X, torch.full((5, 1), float("nan"), dtype=torch.float64))
    for name, who in (("adgp", "the activated deep GP"), ("vish", "VISH")):
        with pytest.raises(
            InputDataError, match=f"{who} needs at least 2 observations, got 1; evaluate another"
        ):
            build_surrogate(name, space, X[:1], X[:1, :1])

    @register_surrogate("test-constant")
    def constant(space, train_X, train_Y, **options):
        assert "previous_model" not in options
        return build_surrogate("euclidean", space, train_X, train_Y)

    assert "test-constant" in available_surrogates()
    # a factory without a `previous_model` parameter never receives one (it would go to **options)
    previous = build_surrogate("test-constant", space, X, X[:, :1])
    build_surrogate("test-constant", space, X, X[:, :1], previous_model=previous)
    with pytest.raises(ConfigurationError, match="already registered"):
        register_surrogate("test-constant")(lambda *a, **k: None)


def test_unsupported_spaces_are_refused_before_any_data(isolated_surrogates):
    from manibo.loop import BayesianOptimizer
    from manibo.models import check_surrogate_supports, unsupported_reason
    from manibo.spaces import Torus

    graph = Graph(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert unsupported_reason("matern", Torus(2)) is None
    assert unsupported_reason("vish", Sphere(3)) is None
    assert "needs a Sphere of dimension >= 2" in unsupported_reason("vish", Torus(2))
    assert "use 'matern'" in unsupported_reason("vish", Sphere(1))
    with pytest.raises(ConfigurationError, match="are indices"):
        check_surrogate_supports("euclidean", graph)
    # integers are no indices, but the coordinate surrogates do not model them either
    from manibo.spaces import Categorical, Integers, ProductSpace

    with pytest.raises(ConfigurationError, match="Integers.* are integers or choices of a finite"):
        check_surrogate_supports("adgp", ProductSpace(Sphere(2), Integers(0, 3)))
    with pytest.raises(ConfigurationError, match="Categorical.* are integers or choices"):
        check_surrogate_supports("euclidean", ProductSpace(Sphere(2), Categorical(3)))
    # a finite factor of a product too: the vertex index was read as a coordinate (vertices 7
    # and 8 of an icosphere at distance 1, 7 and 30 at 23; on the sphere 1.09 and 2.73)
    from manibo.spaces import make_space

    mixed = make_space("icosphere1*box1")
    for name in ("euclidean", "adgp"):
        with pytest.raises(
            ConfigurationError, match=r"points of Mesh\(.*\), a factor of ProductSpace.* indices"
        ):
            BayesianOptimizer(mixed, surrogate=name)
    assert unsupported_reason("euclidean", make_space("sphere2*box1")) is None
    with pytest.raises(ConfigurationError, match="unknown surrogate 'nope'"):
        unsupported_reason("nope", Sphere(2))
    # the loop refuses at construction, not after spending the initial design
    with pytest.raises(ConfigurationError, match="needs a Sphere"):
        BayesianOptimizer(Torus(3), surrogate="vish")

    @register_surrogate(
        "test-spheres-only", unsupported=lambda s: None if isinstance(s, Sphere) else "spheres only"
    )
    def spheres_only(space, train_X, train_Y, **options):
        return build_surrogate("matern", space, train_X, train_Y)

    with pytest.raises(ConfigurationError, match="spheres only"):
        build_surrogate("test-spheres-only", Torus(1), torch.zeros(3, 1), torch.zeros(3, 1))


def test_declared_features_are_reported_and_checked(isolated_surrogates):
    from manibo.models import (
        FEATURES,
        check_surrogate_supports,
        surrogate_entry,
        unsupported_feature,
    )

    declared = {
        (name, f)
        for name in available_surrogates()
        for f in FEATURES
        if unsupported_feature(name, f)
    }
    assert declared == {(name, "train_Yvar") for name in ("adgp", "gpnet", "vish")}
    assert surrogate_entry("vish").multi_output is False and surrogate_entry("adgp").multi_output
    with pytest.raises(ConfigurationError, match="unknown feature"):
        register_surrogate("test-bad-feature", unsupported_features={"telepathy": "no"})
    with pytest.raises(ConfigurationError, match="unknown feature"):
        unsupported_feature("matern", "telepathy")

    @register_surrogate(
        "test-no-tensor-noise",
        unsupported_features={
            "observation_noise_tensor": "its noise is learned per point; pass True."
        },
    )
    def learned(space, train_X, train_Y, **options):
        return build_surrogate("matern", space, train_X, train_Y)

    check_surrogate_supports("test-no-tensor-noise", Sphere(2), ("fantasize",))
    with pytest.raises(ConfigurationError, match="offers no known noise levels.*learned per point"):
        check_surrogate_supports("test-no-tensor-noise", Sphere(2), ("observation_noise_tensor",))


# short training for the network surrogates: the advice comes from where data enter a model
# (gpnet's exact-GP pretraining), not from how many steps train it
SHORT_TRAINING = {
    "gpnet": {"num_iterations": 10},
    "adgp": {"network_epochs": 10, "elbo_epochs": 10},
}


def _advice(name, X, Y) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=OptimizationWarning)  # float32 line searches
        build_surrogate(name, Sphere(2), X, Y, **SHORT_TRAINING.get(name, {}))
    return [w for w in caught if issubclass(w.category, InputDataWarning)]


@pytest.mark.parametrize(
    ("name", "outputs", "advised"),
    [(name, outputs, 1) for name in ("matern", "heat", "chart", "euclidean") for outputs in (1, 2)]
    + [("gpnet", 1, 1), ("adgp", 1, 0), ("vish", 1, 0)],  # gpnet pretrains an exact GP
)
def test_float32_data_bring_botorchs_advice_for_float64_at_most_once_per_call(
    name, outputs, advised
):
    X = Sphere(2).random(10, generator=0, dtype=torch.float32)
    Y = torch.cat([X[:, :1] ** 2, X[:, 1:2]], dim=-1)[:, :outputs]
    advice = _advice(name, X, Y)
    assert len(advice) == advised, [str(w.message) for w in advice]
    if advised:
        assert "float32" in str(advice[0].message) and advice[0].filename == __file__
    assert not _advice(name, X.double(), Y.double())


def test_the_loop_checks_its_configuration_with_the_surrogates_check_options(isolated_surrogates):
    """The build at construction trains a network surrogate for one step instead of hundreds
    (1.5 s of thrown-away training for 'adgp', 1.4 s for 'gpnet'); the user's options win, and the
    fits of the run use the defaults."""
    from manibo.loop import BayesianOptimizer
    from manibo.models import surrogate_entry

    built = []

    @register_surrogate("test-trained", check_options={"steps": 1})
    def trained(space, train_X, train_Y, steps=100, **options):
        built.append(steps)
        return build_surrogate("matern", space, train_X, train_Y, **options)

    BayesianOptimizer(Sphere(2), surrogate="test-trained", initial_design=3, seed=0)
    options = {"steps": 7}
    BayesianOptimizer(Sphere(2), surrogate="test-trained", surrogate_options=options, seed=0)
    opt = BayesianOptimizer(Sphere(2), surrogate="test-trained", initial_design=2, seed=0)
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, [float(x[0, 0])])
    assert built == [1, 7, 1, 100]
    # the built-in check options are options of their surrogates, and a wrong option of the user
    # is still refused at construction
    X = Sphere(2).random(6, generator=0)
    for name in ("matern", "heat", "euclidean", "chart", "adgp", "gpnet", "vish"):
        cheap = surrogate_entry(name).check_options
        assert cheap, name
        model = build_surrogate(name, Sphere(2), X, X[:, :1], **cheap)
        with torch.no_grad():
            assert torch.isfinite(model.posterior(X).mean).all(), name
        with pytest.raises(ConfigurationError, match="unknown option|unexpected keyword"):
            BayesianOptimizer(Sphere(2), surrogate=name, surrogate_options={"epochz": 1})


def test_an_exact_gps_fit_iterations_cap_its_fit():
    from gpytorch.mlls import ExactMarginalLogLikelihood

    X = Sphere(2).random(12, generator=1)
    Y = (X[:, :1] * 3).sin()

    def fitted(**options):
        model = build_surrogate("matern", Sphere(2), X, Y, **options)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        model.train()
        with torch.no_grad():
            value = float(mll(model(*model.train_inputs), model.train_targets))
            return value, float(model.covar_module.base_kernel.lengthscale)

    (short, short_scale), (full, full_scale) = fitted(fit_iterations=1), fitted()
    assert short < full - 1e-3 and abs(short_scale - full_scale) > 1e-3
    with pytest.raises(ConfigurationError, match="fit_iterations"):
        build_surrogate("matern", Sphere(2), X, Y, fit_iterations=0)


def test_a_factory_is_checked_when_registered_and_what_it_returns_when_called(
    isolated_surrogates,
):
    space = Sphere(2)
    with pytest.raises(ConfigurationError, match="decorates a factory.*got int 42"):
        register_surrogate("test-not-callable")(42)
    with pytest.raises(ConfigurationError, match=r"on a factory `\(space, train_X, train_Y"):
        register_surrogate("test-two-arguments")(lambda train_X, train_Y: None)
    assert "test-not-callable" not in available_surrogates()
    register_surrogate("test-keywords-only-after")(lambda space, X, Y, *, nu=2.5: None)

    @register_surrogate("test-returns-none")
    def returns_none(space, train_X, train_Y, **options):
        return None

    X = space.random(4, generator=torch.Generator().manual_seed(0))
    for Y in (X[:, :1], X[:, :2]):  # one column, and one model per column
        with pytest.raises(ConfigurationError, match="returned NoneType, not a BoTorch Model"):
            build_surrogate("test-returns-none", space, X, Y)


def test_a_module_lists_the_partials_of_its_own_functions(isolated_surrogates):
    import functools

    def factory(space, train_X, train_Y, nu=2.5, **options):
        return build_surrogate("matern", space, train_X, train_Y, nu=nu)

    register_surrogate("test-partial-rough")(functools.partial(factory, nu=0.5))
    register_surrogate("test-direct")(factory)
    assert available_surrogates(module=__name__) == ["test-direct", "test-partial-rough"]


def test_declarations_are_checked_when_a_surrogate_is_registered(isolated_surrogates):
    def factory(space, train_X, train_Y, **options):
        return build_surrogate("matern", space, train_X, train_Y)

    with pytest.raises(ConfigurationError, match=r"with the parentheses; got <function"):
        register_surrogate(factory)  # @register_surrogate without ('name')
    with pytest.raises(ConfigurationError, match="`unsupported` .* got 'only spheres'"):
        register_surrogate("test-bad-unsupported", "only spheres")(factory)
    with pytest.raises(ConfigurationError, match="maps feature names to reasons"):
        register_surrogate("test-list", unsupported_features=["fantasize"])(factory)
    for reason in (True, "", "  "):
        with pytest.raises(ConfigurationError, match="must be a sentence"):
            register_surrogate("test-reason", unsupported_features={"fantasize": reason})(factory)
    assert not {"test-bad-unsupported", "test-list", "test-reason"} & set(available_surrogates())


def test_acquisitions_spaces_and_problems_refuse_a_decorator_without_its_name():
    from manibo.acquisitions import register_acquisition
    from manibo.problems import register_problem
    from manibo.spaces import register_space

    for register in (register_acquisition, register_space, register_problem):
        with pytest.raises(ConfigurationError, match=r"with the parentheses"):
            register(lambda *args: None)
        with pytest.raises(ConfigurationError, match=r"decorates a builder.*got int 42"):
            register("test-not-callable")(42)
    with pytest.raises(ConfigurationError, match=r"registered on a builder `\(model, data\)"):
        register_acquisition("test-one-argument")(lambda model: None)
    with pytest.raises(ConfigurationError, match=r"registered on a builder of the space"):
        register_space("test-family", parameter="n")(lambda: None)
    with pytest.raises(
        ConfigurationError, match=r"a tuple of feature names, e.g. \('fantasize',\)"
    ):
        register_acquisition("test-string-features", required_features="fantasize")


def test_the_names_of_a_module_that_is_not_imported_are_refused_not_empty():
    with pytest.raises(ConfigurationError, match="'my_plugn' is not imported.*import my_plugn"):
        available_surrogates(module="my_plugn")
    assert "matern" in available_surrogates(module="manibo")


def test_a_check_option_the_factory_refuses_is_named_as_a_check_option(isolated_surrogates):
    from manibo.loop import BayesianOptimizer

    @register_surrogate("test-bad-check-option", check_options={"num_iterations": 1})
    def factory(space, train_X, train_Y, **options):
        return build_surrogate("matern", space, train_X, train_Y, **options)

    with pytest.raises(ConfigurationError, match=r"check_options \{'num_iterations': 1\} of its"):
        BayesianOptimizer(Sphere(2), surrogate="test-bad-check-option")


# cheap options of the surrogates fitted column by column: the checks below compare a column's
# model with the same build on that column alone, whatever the length of the training
COLUMN_OPTIONS = {
    "matern": {"fit_iterations": 20},
    "euclidean": {"fit_iterations": 20},
    "vish": {"maxiter": 5, "num_features": 50},
    "gpnet": {"num_iterations": 5, "pretrain_points": 20},
}


@pytest.mark.parametrize("name", sorted(COLUMN_OPTIONS))
def test_each_column_fits_its_own_copy_of_the_outcome_transform(name):
    from botorch.models.transforms.outcome import Standardize

    space = Sphere(2)
    X = space.random(20, generator=0)
    Y = torch.stack([1000 + 100 * X[:, 0], 0.01 * X[:, 2] - 5], -1)
    options = COLUMN_OPTIONS[name]
    transform = Standardize(m=1)
    model = build_surrogate(name, space, X, Y, outcome_transform=transform, **options)
    test_X = space.random(5, generator=1)
    with torch.no_grad():
        posterior = model.posterior(test_X)
    for j in range(Y.shape[-1]):
        alone = build_surrogate(
            name, space, X, Y[:, j : j + 1], outcome_transform=Standardize(m=1), **options
        )
        with torch.no_grad():
            reference = alone.posterior(test_X)
        scale = float(Y[:, j].std())
        for moment, tol in (("mean", 1e-8 * scale), ("variance", 1e-8 * scale**2)):
            torch.testing.assert_close(
                getattr(posterior, moment)[:, j : j + 1],
                getattr(reference, moment),
                rtol=1e-8,
                atol=tol,
                msg=lambda m, j=j, moment=moment: f"output {j}'s {moment}: {m}",
            )
    assert all(column.outcome_transform is not transform for column in model.models)
    assert transform.training and not transform._is_trained  # the object passed is never fitted


def test_an_outcome_transform_of_several_outputs_is_refused_for_a_per_column_surrogate():
    from botorch.models.transforms.outcome import Standardize

    space = Sphere(2)
    X = space.random(20, generator=0)
    Y = torch.stack([X[:, 0], X[:, 2]], -1)
    with pytest.raises(
        ConfigurationError,
        match=r"Standardize of m=2 outputs.*'matern' surrogate fits each of the 2 columns.*"
        r"Standardize\(m=1\)",
    ):
        build_surrogate("matern", space, X, Y, outcome_transform=Standardize(m=2))
    # a transform for some outputs only was applied by every column's copy to that column: Log
    # of the outputs [0] logged the negative column 1 too (NaN data)
    from botorch.models.transforms.outcome import Log

    with pytest.raises(ConfigurationError, match=r"Log for the outputs \[0\] only.*OutcomeList"):
        build_surrogate("matern", space, X, Y, outcome_transform=Log(outputs=[0]))


def _marginal_log_likelihood(model) -> float:
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model.train()
    with torch.no_grad():
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        value = float(mll(model(*model.train_inputs), model.train_targets))
    model.eval()
    return value


def test_each_column_fits_its_own_copy_of_a_learnable_input_transform():
    from botorch.models.transforms.input import Warp

    from manibo.spaces import Box

    box = Box([0.0, 0.0], [1.0, 1.0])
    X = box.random(25, generator=0)
    Y = torch.stack([torch.sin(6 * X[:, 0] ** 3), X[:, 1]], -1)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    warp = Warp(d=2, indices=[0, 1], bounds=bounds)
    both = build_surrogate("matern", box, X, Y, input_transform=warp)
    alone = build_surrogate(
        "matern", box, X, Y[:, :1], input_transform=Warp(d=2, indices=[0, 1], bounds=bounds)
    )
    first, second = both.models
    for parameter in ("concentration0", "concentration1"):
        torch.testing.assert_close(
            getattr(first.input_transform, parameter),
            getattr(alone.input_transform, parameter),
            rtol=1e-8,
            atol=0,
            msg=lambda m, parameter=parameter: f"output 0's warp {parameter}: {m}",
        )
    assert _marginal_log_likelihood(first) == pytest.approx(
        _marginal_log_likelihood(alone), rel=1e-8
    )
    assert first.input_transform is not second.input_transform
    assert warp not in (first.input_transform, second.input_transform)


def test_known_noise_is_split_by_column_and_has_the_shape_of_train_y():
    space = Sphere(2)
    X = space.random(20, generator=0)
    Y = torch.stack([X[:, 0], X[:, 2]], -1)
    Yvar = torch.stack([torch.full((20,), 1e-6), torch.full((20,), 0.5)], -1).double()
    model = build_surrogate("matern", space, X, Y, train_Yvar=Yvar, fit_iterations=20)
    for j, column in enumerate(model.models):
        alone = build_surrogate(
            "matern", space, X, Y[:, j : j + 1], train_Yvar=Yvar[:, j : j + 1], fit_iterations=20
        )
        torch.testing.assert_close(column.likelihood.noise, alone.likelihood.noise)
    for wrong in (Yvar[:, :1], Yvar[:, 0], Yvar[:10]):
        with pytest.raises(InputDataError, match=r"shape of train_Y \(20, 2\), got shape"):
            build_surrogate("matern", space, X, Y, train_Yvar=wrong)
    with pytest.raises(InputDataError, match=r"shape of train_Y \(20, 1\), got shape \(20,\)"):
        build_surrogate("matern", space, X, Y[:, :1], train_Yvar=Yvar[:, 0])


@pytest.mark.parametrize("name", ["vish", "gpnet", "adgp"])
def test_surrogates_without_known_noise_refuse_train_yvar_before_building(name, monkeypatch):
    from manibo.models import registry

    space = Sphere(2)
    X = space.random(20, generator=0)
    Y = X[:, :1].clone()
    entry = registry.SURROGATES.get(name)

    def never(*args, **kwargs):
        raise AssertionError("built")

    monkeypatch.setitem(registry.SURROGATES._objects, name, dataclasses.replace(entry, build=never))
    with pytest.raises(
        ConfigurationError,
        match=rf"the '{name}' surrogate offers no known noise variances.*'matern', 'heat'",
    ):
        build_surrogate(name, space, X, Y, train_Yvar=torch.full_like(Y, 1e-4))


@pytest.mark.parametrize("name", ["matern", "vish"])
def test_an_input_transform_that_moves_points_off_the_space_is_named(name):
    from botorch.models.transforms import Normalize

    X = Sphere(2).random(12, generator=0)
    bounds = torch.tensor([[-1.0] * 3, [1.0] * 3], dtype=torch.float64)
    with pytest.raises(InputDataError, match=r"after `input_transform` \(Normalize\), which moves"):
        build_surrogate(name, Sphere(2), X, X[:, :1], input_transform=Normalize(d=3, bounds=bounds))


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
@pytest.mark.parametrize("name", ["matern", "heat", "euclidean", "chart", "adgp", "gpnet", "vish"])
def test_surrogates_are_fitted_inside_a_callers_no_grad(name, context):
    # `with torch.no_grad(): build_surrogate(...)` (or result.model read there) stopped in the
    # fit with "element 0 of tensors does not require grad" for every surrogate but vish
    with context():  # the data made there too: inference tensors cannot be saved for backward
        X = Sphere(2).random(6, generator=0)
        model = build_surrogate(name, Sphere(2), X, X[:, :1], **surrogate_entry(name).check_options)
        assert torch.isfinite(model.posterior(X).mean).all()
