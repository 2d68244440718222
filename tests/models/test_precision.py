"""The single-precision advice: silenced inside, given at most once by the outermost context."""

import warnings

import pytest
import torch
from botorch.exceptions.warnings import InputDataWarning

from manibo.models.precision import Float64AdviceOnce


def _botorchs_advice():
    message = "The model inputs are of type torch.float32. Use double."
    warnings.warn(message, InputDataWarning, stacklevel=2)


def _advice(build) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
    return [str(w.message) for w in caught]


def test_nested_contexts_give_the_advice_once_at_the_outermost():
    def build():
        with Float64AdviceOnce():
            for _ in range(3):
                with Float64AdviceOnce(torch.float32):
                    _botorchs_advice()
                    _botorchs_advice()

    (advice,) = _advice(build)
    assert advice.startswith("The model inputs are of type torch.float32: ")
    assert "X.double()" in advice


@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_no_advice_without_a_single_precision_model_inside(dtype):
    def build():
        with Float64AdviceOnce(), Float64AdviceOnce(dtype):
            _botorchs_advice()  # silenced: the context's own dtype decides

    assert _advice(build) == []


def test_no_advice_when_the_build_fails():
    def build():
        with pytest.raises(RuntimeError), Float64AdviceOnce(torch.float32):
            raise RuntimeError("fit failed")

    assert _advice(build) == []
