"""The API reference covers every public name, each with a docstring, and is up to date."""

import importlib
import inspect
import runpy
from pathlib import Path

DOCS = Path(__file__).parents[1] / "docs"
generator = runpy.run_path(str(DOCS / "make_api_reference.py"))


def _public_objects():
    for module_name in generator["public_modules"]():
        module = importlib.import_module(module_name)
        for name in generator["public_names"](module):
            yield module_name, name, getattr(module, name)


def test_every_public_name_has_a_heading_and_a_docstring():
    page = (DOCS / "api.md").read_text()
    missing, undocumented = [], []
    for module_name, name, obj in _public_objects():
        if f"### `{module_name}.{name}`" not in page:
            missing.append(f"{module_name}.{name}")
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj):
            undocumented.append(f"{module_name}.{name}")
    assert not missing, f"not in docs/api.md (run python docs/make_api_reference.py): {missing}"
    assert not undocumented, f"public objects without a docstring: {undocumented}"


def test_public_methods_have_docstrings():
    undocumented = []
    for module_name, name, obj in _public_objects():
        if inspect.isclass(obj) and obj.__module__.startswith("manibo"):
            for method, member in generator["_public_methods"](obj):
                target = member.fget if isinstance(member, property) else getattr(obj, method)
                if not inspect.getdoc(target):
                    undocumented.append(f"{module_name}.{name}.{method}")
    assert not undocumented, f"public methods without a docstring: {undocumented}"


def test_committed_page_is_current():
    assert (DOCS / "api.md").read_text() == generator["render"](), (
        "docs/api.md is stale: run `python docs/make_api_reference.py` and commit the result."
    )
