"""Every registered space passes the geometry contract, in float32 and float64; every space class
that manibo.spaces exports is registered."""

import inspect

import pytest
import torch
from registry import OTHER_SPACES, SPACES

import manibo.spaces
from manibo.spaces import Space
from manibo.testing import check_space_contract, covered

ALL_SPACES = {**SPACES, **OTHER_SPACES}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(ALL_SPACES))
def test_space_contract(name, dtype):
    check_space_contract(ALL_SPACES[name](), dtype, "cpu")


def exported_space_classes() -> list[str]:
    """The concrete space classes that ``manibo.spaces`` exports."""
    return [
        name
        for name in manibo.spaces.__all__
        if inspect.isclass(cls := getattr(manibo.spaces, name))
        and issubclass(cls, Space)
        and not inspect.isabstract(cls)
    ]


def test_every_exported_space_class_is_covered():
    registered = {type(make()).__name__ for make in ALL_SPACES.values()}
    covered(exported_space_classes(), registered, "space classes exported by manibo.spaces")


def test_fingerprints_identify_spaces_by_content():
    """Rebuilding a space gives its fingerprint again; different spaces have different ones."""
    prints = {name: make().fingerprint() for name, make in ALL_SPACES.items()}
    assert all(make().fingerprint() == prints[name] for name, make in ALL_SPACES.items())
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in prints.values())
    assert len(set(prints.values())) == len(prints)


def _unit_tangents(space, x, generator):
    """Random tangent vectors at ``x`` of norm 1 (zero where the tangent space is, as at a box's
    corner)."""
    v = space.to_tangent(x, torch.randn(x.shape, generator=generator, dtype=x.dtype))
    norm = v.flatten(1).norm(dim=-1).clamp_min(1e-12)
    return v / norm.reshape(-1, *[1] * (v.dim() - 1))


@pytest.mark.parametrize(
    "name", sorted(name for name, make in ALL_SPACES.items() if not make().is_discrete)
)
def test_float32_retraction_stays_on_the_space_for_long_and_many_steps(name):
    """A step of 1000 and 200 steps of 300 (the lengths an L-BFGS line search tries) in float32
    land on the space within its own `check` tolerance (SO(n) and SU(n) drifted to 5e-3)."""
    space = ALL_SPACES[name]()
    gen = torch.Generator().manual_seed(0)
    x = space.random(16, generator=gen, dtype=torch.float32)
    space.check(space.retract(x, 1000.0 * _unit_tangents(space, x, gen)), "one long step")
    for _ in range(200):
        x = space.retract(x, 300.0 * _unit_tangents(space, x, gen))
    space.check(x, "after 200 steps")
