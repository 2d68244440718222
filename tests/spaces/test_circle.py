"""Circle: refusals of angles off [0, 2π) with the advice that fits what arrived."""

import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.spaces import Circle


def test_angles_in_degrees_are_refused_with_the_conversion():
    # The advice was to wrap them, which turns 90 degrees into 2.035 rad, silently another angle.
    space = Circle()
    with pytest.raises(InputDataError, match=r"look like degrees.*deg2rad\(x\)` first"):
        space.check(torch.tensor([[90.0], [45.0]], dtype=torch.float64))
    with pytest.raises(InputDataError) as info:  # radians out of [0, 2π) are only wrapped
        space.check(torch.tensor([[7.0], [-0.5]], dtype=torch.float64))
    assert "degrees" not in str(info.value) and "torch.remainder(x, 2 * math.pi)" in str(info.value)
