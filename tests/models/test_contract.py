"""Every registered surrogate honours BoTorch's model contract on S², T² and SO(3), and works with
every acquisition of the suite at q = 1 and 3 (``manibo.testing.model_contract``)."""

import runpy
from pathlib import Path

import pytest
from registry import CONTRACT_SPACES, SPACES, SURROGATES

from manibo.models import available_surrogates, register_surrogate, unsupported_reason
from manibo.testing.model_contract import (
    ACQUISITIONS,
    BATCH_SIZES,
    MODEL_CHECKS,
    SurrogateCase,
    covered,
    run_acquisition_check,
    run_model_check,
)

_CASES: dict[tuple[str, str], SurrogateCase] = {}


def _case(name: str, space: str) -> SurrogateCase:
    """One case per (surrogate, space) and test process: its fitted models are reused."""
    if (name, space) not in _CASES:
        _CASES[name, space] = SurrogateCase(name, SPACES[space](), **SURROGATES[name])
    return _CASES[name, space]


PAIRS = [
    (name, space)
    for name in sorted(SURROGATES)
    for space in CONTRACT_SPACES
    if unsupported_reason(name, SPACES[space]()) is None
]
RUNS = [
    (q, a) for a, spec in ACQUISITIONS.items() for q in BATCH_SIZES if q == 1 or not spec.analytic
]


@pytest.mark.parametrize("check", list(MODEL_CHECKS))
@pytest.mark.parametrize(("name", "space"), PAIRS)
def test_model_contract(name, space, check):
    run_model_check(_case(name, space), check)


@pytest.mark.parametrize(("q", "acquisition"), RUNS)
@pytest.mark.parametrize(("name", "space"), PAIRS)
def test_acquisition_contract(name, space, acquisition, q):
    run_acquisition_check(_case(name, space), acquisition, q)


def test_every_registered_surrogate_is_covered():
    covered(available_surrogates(), SURROGATES, "registered surrogates")


def test_a_surrogate_registered_without_a_case_fails_the_coverage_test(isolated_surrogates):
    @register_surrogate("uncovered-test-surrogate")
    def uncovered(space, train_X, train_Y, **options):
        raise AssertionError("never built")

    with pytest.raises(AssertionError, match="uncovered-test-surrogate"):
        test_every_registered_surrogate_is_covered()


def test_docs_tables_are_generated_from_the_suite_and_current():
    docs = Path(__file__).parents[2] / "docs"
    generator = runpy.run_path(str(docs / "make_surrogate_table.py"))
    page = (docs / "concepts.md").read_text()
    assert page == generator["render_page"](page), (
        "the surrogate tables of docs/concepts.md are stale: run "
        "`python docs/make_surrogate_table.py` and commit the result."
    )
