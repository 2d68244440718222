"""Every registered space passes the geometry contract, in float32 and float64."""

import pytest
import torch
from registry import SPACES

from manibo.testing import check_space_contract


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(SPACES))
def test_space_contract(name, dtype):
    check_space_contract(SPACES[name](), dtype, "cpu")


def test_fingerprints_identify_spaces_by_content():
    """Rebuilding a space gives its fingerprint again; different spaces have different ones."""
    prints = {name: make().fingerprint() for name, make in SPACES.items()}
    assert all(make().fingerprint() == prints[name] for name, make in SPACES.items())
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in prints.values())
    assert len(set(prints.values())) == len(prints)
