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
