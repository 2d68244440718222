"""Contract checks every space, kernel and surrogate must pass.

Shipped so that users test their own spaces, kernels and surrogates too:
:func:`check_space_contract` and :func:`check_kernel_contract` (:mod:`manibo.testing.contracts`),
and the surrogate suite of :mod:`manibo.testing.model_contract` (:class:`SurrogateCase`,
:func:`run_model_check` for each name in ``model_contract.MODEL_CHECKS``,
:func:`run_acquisition_check` for each name in ``model_contract.ACQUISITIONS`` and each ``q`` in
:data:`BATCH_SIZES`), with :func:`covered` for the test that fails when a new space, kernel or
surrogate has no contract case.
"""

from manibo.testing.contracts import check_kernel_contract, check_space_contract
from manibo.testing.model_contract import (
    BATCH_SIZES,
    TOLERANCES,
    AcquisitionSpec,
    SurrogateCase,
    acquisition_features,
    covered,
    run_acquisition_check,
    run_model_check,
)

__all__ = [
    "BATCH_SIZES",
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
