"""Problems by name: single problems and families with an integer parameter, in one registry."""

import pytest
import torch

from manibo.exceptions import ConfigurationError
from manibo.problems import SpaceProblem, available_problems, make_problem, register_problem
from manibo.problems.registry import PROBLEMS
from manibo.problems.sphere import AckleySphere
from manibo.spaces import Circle, Torus


def test_builtin_names_are_listed_and_every_listing_builds_a_problem_of_that_name():
    listed = available_problems()
    assert listed == sorted(listed)
    assert {"ackley-sphere<d>", "arm-torus<n>", "orientation-so3", "bumps-graph"} <= set(listed)
    for entry in listed:
        family, _, parameter = entry.partition("<")
        name = family + (str(max(PROBLEMS.get(family).minimum, 2)) if parameter else "")
        assert make_problem(name).name == name


def test_family_members_get_their_parameter_and_the_noise():
    problem = make_problem("ackley-sphere7", noise_std=0.25)
    assert isinstance(problem, AckleySphere)
    assert problem.space.dim == 7 and problem.noise_std == 0.25
    arm = make_problem("arm-torus12")
    assert repr(arm.space) == repr(Torus(12)) and arm.lengths.shape == (12,)


def test_bad_names_get_clear_errors():
    with pytest.raises(
        ConfigurationError, match=r"unknown problem 'ackley-cube'; known: .*ackley-sphere<d>"
    ):
        make_problem("ackley-cube")
    with pytest.raises(
        ConfigurationError, match=r"family 'ackley-sphere' needs its d.*ackley-sphere2"
    ):
        make_problem("ackley-sphere")
    with pytest.raises(ConfigurationError, match=r"'ackley-sphere0': d must be at least 1, got 0"):
        make_problem("ackley-sphere0")
    with pytest.raises(ConfigurationError, match="unknown problem 'bumps-mesh2'"):
        make_problem("bumps-mesh2")  # a single problem's name is not a family
    with pytest.raises(ConfigurationError, match=r"'orientation-so2': n must be at least 4"):
        make_problem("orientation-so2")  # orientation-so3 is its own problem, the family from 4


class _Flat(SpaceProblem):
    """f(θ) = period · (1 − cos θ) on the circle: minimum 0 at θ = 0."""

    optimal_value = 0.0

    def __init__(self, period: int = 1, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = f"test-flat{period}"
        self.period = period
        self.space = Circle()

    def evaluate_true(self, x):
        return self.period * (1 - torch.cos(x[..., 0]))

    @property
    def optimizers(self):
        return torch.zeros(1, 1, dtype=torch.float64)


def test_registering_single_problems_and_families(monkeypatch):
    monkeypatch.setattr(PROBLEMS, "_objects", dict(PROBLEMS._objects))  # registrations stay here
    register_problem("test-flat", parameter="k", minimum=2)(_Flat)
    register_problem("test-flat-one")(_Flat)
    assert {"test-flat<k>", "test-flat-one"} <= set(available_problems())
    assert make_problem("test-flat5").period == 5
    assert make_problem("test-flat-one", noise_std=0.1).noise_std == 0.1
    with pytest.raises(ConfigurationError, match="k must be at least 2, got 1"):
        make_problem("test-flat1")
    register_problem("test-flat", parameter="k", minimum=2)(_Flat)  # the same registration again
    with pytest.raises(ConfigurationError, match=r"'test-flat' is already registered \(.*_Flat\)"):
        register_problem("test-flat", parameter="n")(_Flat)
    with pytest.raises(ConfigurationError, match="must not end with a digit"):
        register_problem("test-flat2", parameter="k")(_Flat)


class _NoMinimum(SpaceProblem):
    name = "test-no-minimum"
    space = Torus(1)

    def evaluate_true(self, x):
        return (1 - torch.cos(x[..., 0])) + 0.3 * torch.sin(3 * x[..., 0])

    @property
    def optimizers(self):
        raise NotImplementedError


def test_a_problem_without_a_finite_minimum_is_refused_when_built(monkeypatch):
    monkeypatch.setattr(PROBLEMS, "_objects", dict(PROBLEMS._objects))
    register_problem("test-no-minimum")(_NoMinimum)
    with pytest.raises(ConfigurationError, match="`optimal_value` of problem `test-no-minimum`"):
        make_problem("test-no-minimum")
    register_problem("test-not-a-problem")(lambda noise_std: object())
    with pytest.raises(ConfigurationError, match="must return a SpaceProblem, got object"):
        make_problem("test-not-a-problem")


def test_a_class_that_is_not_a_problem_is_refused_when_it_is_registered(monkeypatch):
    monkeypatch.setattr(PROBLEMS, "_objects", dict(PROBLEMS._objects))
    with pytest.raises(ConfigurationError, match=r"got the class object, which is not a Space"):
        register_problem("test-not-a-problem")(object)
    assert "test-not-a-problem" not in PROBLEMS._objects
