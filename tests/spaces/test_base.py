"""The Space base class: what every space's ``random`` accepts as its ``generator``."""

import numpy as np
import pytest
import torch
from registry import OTHER_SPACES, SPACES

from manibo.exceptions import ConfigurationError

ALL_SPACES = {**SPACES, **OTHER_SPACES}


@pytest.mark.parametrize("name", sorted(ALL_SPACES))
def test_an_integer_seed_draws_as_a_cpu_generator_seeded_with_it(name):
    space = ALL_SPACES[name]()
    expected = space.random(3, generator=torch.Generator().manual_seed(7))
    for seed in (7, np.int64(7)):
        assert torch.equal(space.random(3, generator=seed), expected)
    assert not torch.equal(space.random(3, generator=8), expected)


@pytest.mark.parametrize("name", sorted(ALL_SPACES))
@pytest.mark.parametrize("bad", ["0", 1.5, True, -1, 2**64, np.random.default_rng(0)])
def test_a_generator_that_is_neither_a_torch_generator_nor_a_seed_is_refused(name, bad):
    with pytest.raises(ConfigurationError, match=r"`generator` must be .*torch.Generator.*got"):
        ALL_SPACES[name]().random(3, generator=bad)
