"""Shared fixtures.

A fixed seed per test, a private cache directory, and the registry on the import path.
"""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Fundamental systems computed by the tests go to a temporary folder.

    They never go to the user's cache.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MANIBO_CACHE_DIR", str(tmp_path_factory.mktemp("manibo-cache")))
        yield


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def isolated_surrogates(monkeypatch):
    """Surrogates registered inside the test are forgotten after it (the coverage test of the
    surrogate contract sees only the real ones)."""
    from manibo.models import registry

    monkeypatch.setattr(registry.SURROGATES, "_objects", dict(registry.SURROGATES._objects))
