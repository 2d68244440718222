"""Every registered space passes the geometry contract, in float32 and float64."""

import pytest
import torch
from registry import SPACES

from manibo.testing import check_space_contract


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(SPACES))
def test_space_contract(name, dtype):
    check_space_contract(SPACES[name](), dtype, "cpu")
