"""Contract checks every space, kernel and surrogate must pass.

Shipped so that users test their own spaces, kernels and surrogates too:
:func:`check_space_contract` and :func:`check_kernel_contract` (:mod:`manibo.testing.contracts`),
and the surrogate suite of :mod:`manibo.testing.model_contract` (:class:`SurrogateCase`,
:func:`run_model_check`, :func:`run_acquisition_check`), with :func:`covered` for the test that
fails when a new space, kernel or surrogate has no contract case.
"""

from manibo.testing.contracts import check_kernel_contract, check_space_contract
from manibo.testing.model_contract import (
    ACQUISITIONS,
    BATCH_SIZES,
    MODEL_CHECKS,
    TOLERANCES,
    AcquisitionSpec,
    SurrogateCase,
    acquisition_features,
    covered,
    run_acquisition_check,
    run_model_check,
)

__all__ = [
    "ACQUISITIONS",
    "BATCH_SIZES",
    "MODEL_CHECKS",
    "TOLERANCES",
    "AcquisitionSpec",
    "SurrogateCase",
    "acquisition_features",
    "check_kernel_contract",
    "check_space_contract",
    "covered",
    "run_acquisition_check",
    "run_model_check",
]
