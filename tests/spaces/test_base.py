"""The Space base class: what every space's ``random`` accepts as its ``generator``, and the checks
of coordinates that its geometry methods run."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from registry import OTHER_SPACES, SPACES

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces import (
    Box,
    Circle,
    Grassmann,
    Hyperbolic,
    ProductSpace,
    SpecialOrthogonal,
    Sphere,
    SymmetricPositiveDefinite,
    Torus,
)

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


def _spoilt(x, value):
    bad = x.clone()
    bad.view(-1)[0] = value
    return bad


@pytest.mark.parametrize("name", sorted(ALL_SPACES))
def test_geometry_refuses_non_finite_and_wrongly_shaped_points_and_keeps_empty_batches(name):
    """distance, log and project run the space's checks of coordinates first (NaN on SPD gave a
    Cholesky error, inf a distance of 690.8; on SO(3) project made a rotation of inf; on
    ProductSpace(Sphere(2), Box) a point of the wrong width had distance 0 and projected to a
    (3, 3) tensor); empty batches give empty results (SPD's and SU(n)'s project raised)."""
    space = ALL_SPACES[name]()
    x = space.random(3, generator=0)
    spoilt = {"nan": _spoilt(x, float("nan")), "inf": _spoilt(x, float("inf"))}
    spoilt["width"] = x[..., :-1] if x.shape[-1] > 1 else torch.cat([x, x], -1)
    methods = ["distance", "project"] + (["log"] if hasattr(space, "log") else [])
    for what, bad in spoilt.items():
        # NaN reaching LAPACK can kill the process: distance of NaN is the next test's, in a child
        for method in ["project"] if what == "nan" else methods:
            args = (bad,) if method == "project" else (bad, x[: bad.shape[0]])
            with pytest.raises(InputDataError, match="NaN or infinite|must have shape"):
                getattr(space, method)(*args)
            if method != "project":
                with pytest.raises(InputDataError, match="NaN or infinite|must have shape"):
                    getattr(space, method)(x, bad)
    assert space.project(x[:0]).shape == x[:0].shape
    assert space.distance(x[:0], x[:0]).shape == (0,)


def _eye(n: int) -> torch.Tensor:
    return torch.eye(n, dtype=torch.float64).reshape(n * n)


_F64 = {"dtype": torch.float64}
OFF_MANIFOLD_CALLS = {
    # what each call returned before it checked that its points lie on the manifold
    "hyperbolic off the sheet (0.693)": (
        lambda: Hyperbolic(2),
        "distance",
        (torch.tensor([1.0, 0.5, 0.5], **_F64), torch.tensor([1.0, 0.0, 0.0], **_F64)),
        "-x0\\^2 \\+ \\|x1..xd\\|\\^2 = -1",
    ),
    "hyperbolic lower sheet (-0.0)": (
        lambda: Hyperbolic(2),
        "distance",
        (torch.tensor([-1.0, 0.0, 0.0], **_F64), torch.tensor([1.0, 0.0, 0.0], **_F64)),
        "other sheet",
    ),
    "hyperbolic log off the sheet": (
        lambda: Hyperbolic(2),
        "log",
        (torch.tensor([1.0, 0.0, 0.0], **_F64), torch.tensor([1.0, 0.5, 0.5], **_F64)),
        "-x0",
    ),
    "hyperbolic pairwise_distance off the sheet (0.693)": (
        lambda: Hyperbolic(2),
        "pairwise_distance",
        (torch.tensor([[1.0, 0.5, 0.5]], **_F64), torch.tensor([[1.0, 0.0, 0.0]], **_F64)),
        "-x0",
    ),
    "hyperbolic chart of a wrong shape (a 4-vector)": (
        lambda: Hyperbolic(2),
        "chart",
        (torch.ones(5, **_F64),),
        "must have shape",
    ),
    "spd non-symmetric (0.364)": (
        lambda: SymmetricPositiveDefinite(2),
        "distance",
        (torch.tensor([1.0, 0.5, 0.0, 1.0], **_F64), _eye(2)),
        "symmetric",
    ),
    "spd indefinite (torch's LinAlgError)": (
        lambda: SymmetricPositiveDefinite(2),
        "distance",
        (torch.tensor([1.0, 0.0, 0.0, -1.0], **_F64), _eye(2)),
        "positive definite",
    ),
    "spd log of an indefinite matrix (LinAlgError)": (
        lambda: SymmetricPositiveDefinite(2),
        "log",
        (_eye(2), torch.tensor([1.0, 0.0, 0.0, -1.0], **_F64)),
        "positive definite",
    ),
    "spd chart of an indefinite matrix (NaN)": (
        lambda: SymmetricPositiveDefinite(2),
        "chart",
        (torch.tensor([1.0, 0.0, 0.0, -1.0], **_F64),),
        "positive definite",
    ),
    "so3 2I (0.0)": (
        lambda: SpecialOrthogonal(3),
        "distance",
        (2 * _eye(3), _eye(3)),
        "RᵀR = I",
    ),
    "so3 reflection (0.0)": (
        lambda: SpecialOrthogonal(3),
        "distance",
        (torch.diag(torch.tensor([1.0, 1.0, -1.0], **_F64)).reshape(9), _eye(3)),
        "reflections",
    ),
    "so3 chart of a reflection ([0, 0, 0])": (
        lambda: SpecialOrthogonal(3),
        "chart",
        (torch.diag(torch.tensor([1.0, 1.0, -1.0], **_F64)).reshape(9),),
        "reflections",
    ),
    "grassmann frame of the same subspace scaled by 2 (1.766, not 0)": (
        lambda: Grassmann(2, 4),
        "distance",
        (2 * Grassmann(2, 4).random(1, generator=0), Grassmann(2, 4).random(1, generator=0)),
        "orthonormal",
    ),
}


@pytest.mark.parametrize("case", sorted(OFF_MANIFOLD_CALLS))
def test_geometry_defined_on_the_manifold_refuses_points_off_it(case):
    make, method, args, message = OFF_MANIFOLD_CALLS[case]
    with pytest.raises(InputDataError, match=message):
        getattr(make(), method)(*args)


def test_geometry_ignores_the_bounds_of_a_domain():
    """Distances, logs and charts are the manifold's: a box's points, a hyperbolic ball's and an
    eigenvalue box's bounds do not restrict them (only the optimiser's domain)."""
    box = Box([0.0], [1.0])
    assert float(box.distance(torch.tensor([3.0], **_F64), torch.tensor([0.0], **_F64))) == 3.0
    ball = Hyperbolic(2, radius=2.0)
    far = torch.tensor([math.cosh(5.0), math.sinh(5.0), 0.0], **_F64)
    assert float(ball.distance(far, torch.tensor([1.0, 0.0, 0.0], **_F64))) == pytest.approx(5.0)
    spd = SymmetricPositiveDefinite(2, eigenvalue_bounds=(1e-3, 5.0))
    big = torch.tensor([100.0, 0.0, 0.0, 1.0], **_F64)
    assert float(spd.distance(big, _eye(2))) == pytest.approx(math.log(100.0))
    # any finite angle names a point of a circle (atan2 gives (-pi, pi]); the chart wraps it
    circle, torus = Circle(), Torus(2)
    a, b = torch.tensor([-0.1], **_F64), torch.tensor([0.1], **_F64)
    assert float(circle.distance(a, b)) == pytest.approx(0.2)
    assert float(circle.chart(a)) == pytest.approx(2 * math.pi - 0.1)
    angles = torch.tensor([-0.4636, 0.2915 + 4 * math.pi], **_F64)
    assert float(torus.distance(angles, torch.zeros(2, **_F64))) == pytest.approx(
        math.hypot(0.4636, 0.2915)
    )


@pytest.mark.parametrize("name", sorted(ALL_SPACES))
def test_geometry_refuses_mixed_dtypes(name):
    """One dtype per call (SO(3) raised torch's 'expected m1 and m2 to have the same dtype',
    SPD returned float32 and H^2 float64)."""
    space = ALL_SPACES[name]()
    x = space.random(2, generator=0)
    for method in ["distance"] + (["log"] if hasattr(space, "log") else []):
        with pytest.raises(InputDataError, match="does not mix dtypes"):
            getattr(space, method)(x, x.float())


NAN_SPACES = ["SpecialUnitary(2)", "SpecialOrthogonal(4)"]


def test_a_nan_point_is_refused_before_lapack_sees_it():
    """SU(2).distance of a NaN point killed the interpreter (SIGSEGV in MKL's ZGEBAL under
    torch.linalg.eigvals); SO(4) printed an MKL error. Run in a child process so that a crash
    fails the test instead of pytest; one child for every space (starting one takes seconds),
    which says which space it reached."""
    code = (
        "import torch\n"
        "from manibo.exceptions import InputDataError\n"
        f"from manibo.spaces import *\nfor name in {NAN_SPACES!r}:\n"
        "    S = eval(name)\n"
        "    x = S.random(3, generator=0); b = x.clone(); b[0, 0] = float('nan')\n"
        "    print('checking', name, flush=True)\n"
        "    try:\n        S.distance(b, x)\n    except InputDataError:\n"
        "        print('refused', name, flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    expected = "".join(f"checking {name}\nrefused {name}\n" for name in NAN_SPACES)
    assert run.returncode == 0 and run.stdout == expected, (run.returncode, run.stdout, run.stderr)
    assert "MKL ERROR" not in run.stdout + run.stderr


def test_a_product_checks_each_factor_once_and_its_internal_variants_check_nothing(monkeypatch):
    """A product's distance and chart check their points factor by factor once (the factors'
    own methods checked them a second time); ``_unchecked`` gives the same values without any
    check, for the library's calls on points it has checked."""
    sphere, spd = Sphere(2), SymmetricPositiveDefinite(2)
    space = ProductSpace(sphere, spd)
    x, y = space.random(4, generator=0), space.random(4, generator=1)
    calls = []
    for factor in (sphere, spd):
        original = factor._check_on_manifold
        monkeypatch.setattr(
            factor,
            "_check_on_manifold",
            lambda p, name, f=original, s=factor: (calls.append((repr(s), name)), f(p, name))[1],
        )
    distance = space.distance(x, y)
    assert len(calls) == 4  # x and y, two factors each
    calls.clear()
    space.chart(x)
    assert len(calls) == 2
    calls.clear()
    assert torch.equal(space._unchecked("distance")(x, y), distance)
    assert torch.equal(space._unchecked("chart")(x), space.chart(x))
    calls.clear()
    space._unchecked("chart")(x)
    spd._unchecked("distance")(x[..., 3:], y[..., 3:])
    assert calls == []
    with pytest.raises(InputDataError, match="positive definite"):
        space.distance(x, torch.cat([y[..., :3], -y[..., 3:]], -1))
