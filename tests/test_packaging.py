"""The distributions built from a fresh clone: the sdist carries its own tests; wheel metadata."""

import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import manibo

ROOT = Path(__file__).resolve().parents[1]


def tracked_files() -> list[str]:
    """The files git tracks in this checkout (what a fresh clone holds)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout of manibo")
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listing.split("\0") if name]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[list[str], Path, Path]:
    """``(tracked files, sdist, wheel)``, built by setuptools from a copy of the tracked files."""
    names = tracked_files()
    source = tmp_path_factory.mktemp("clone")
    for name in names:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    build = (
        "import sys; from setuptools import build_meta as b; out = sys.argv[1]; "
        "b.build_sdist(out); b.build_wheel(out)"  # setuptools rewrites sys.argv as it builds
    )
    subprocess.run(
        [sys.executable, "-c", build, str(dist)], cwd=source, check=True, capture_output=True
    )
    (sdist,), (wheel,) = dist.glob("*.tar.gz"), dist.glob("*.whl")
    return names, sdist, wheel


def test_the_sdist_holds_every_tracked_file(built):
    # it held 11 of the 30 entries of tests/ and no docs, examples or Makefile: its own test
    # suite could not be collected
    names, sdist, _ = built
    with tarfile.open(sdist) as archive:
        prefix = archive.getnames()[0].split("/")[0]
        held = {name.removeprefix(prefix + "/") for name in archive.getnames()}
    assert sorted(set(names) - held - {".gitignore"}) == []  # git's own settings aside
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in held)


def test_the_wheel_carries_the_licence_the_version_and_runtime_dependencies(built):
    _, _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        licences = [n for n in names if "/licenses/" in n]
    assert metadata["Version"] == manibo.__version__
    assert metadata["License-File"] == "LICENSE" and len(licences) == 1
    assert "manibo/py.typed" in names
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)
    # geomstats (and the NumPy cap it needs) serves the tests only
    runtime = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert not any(r.startswith(("geomstats", "numpy<")) for r in runtime), runtime


def test_manibo_runs_without_geomstats():
    # every module but the tests' adapter imports, and a minimisation runs, with geomstats blocked
    script = """
import pkgutil, importlib, sys
for name in ("geomstats", "pandas", "sklearn"):
    sys.modules[name] = None
import manibo
for module in pkgutil.walk_packages(manibo.__path__, "manibo."):
    if module.name not in ("manibo.__main__", "manibo.spaces._geomstats"):
        importlib.import_module(module.name)
from manibo.spaces import SpecialOrthogonal
result = manibo.minimize(lambda x: float(x[0]), SpecialOrthogonal(3), budget=7, seed=0,
                         progress=False)
assert result.best_y < -0.5, result.best_y
print("ok")
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr[-2000:]
