"""One check and one error for the outputs a posterior is asked for."""

import numpy as np
import pytest
import torch

from manibo.exceptions import InputDataError
from manibo.models.outputs import check_output_indices


def test_valid_indices_are_returned_as_ints():
    assert check_output_indices(None, 3) == [0, 1, 2]
    assert check_output_indices([2, 0], 3) == [2, 0]
    assert check_output_indices((np.int64(1),), 2) == [1]
    # as BoTorch's ModelList.subset_output took them before manibo's check (a review found
    # np.array([0, 2]) and range(2) refused after it)
    assert check_output_indices(np.array([0, 2]), 3) == [0, 2]
    assert check_output_indices(range(2), 3) == [0, 1]
    assert check_output_indices(torch.tensor([1]), 2) == [1]


@pytest.mark.parametrize(
    "bad", [[1], [-1], [0, 0], [], [True], ["0"], 0, [0.0], np.array([0.0]), np.array([[0]])]
)
def test_invalid_indices_raise_one_error(bad):
    with pytest.raises(InputDataError, match="output_indices"):
        check_output_indices(bad, 1)
