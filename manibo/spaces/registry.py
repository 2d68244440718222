"""Spaces by short spec, for the command line: ``sphere2``, ``so3``, ``torus3``, ``sphere2*circle``.

A spec is a registered name (``circle``, ``so3``), a family name with its integer parameter
(``sphere`` + 2, ``box`` + 4), a name with a file argument (``graph:roads.txt``,
``mesh:part.obj``; ``graph:roads.txt?eigenpairs=5000`` also sets the eigenpairs kept), or several
of those joined by ``*`` (their product). A name or family member may be followed by the options
its builder takes, ``?name=value`` joined by ``&``: ``box2?bounds=0:5,-1:1``,
``spd3?eigenvalues=100:2000``, ``hyperbolic2?radius=3``. ``register_space`` adds a space or a
family of spaces (plug-ins included); ``available_spaces()`` lists the specs.
"""

from __future__ import annotations

import ast
import inspect
import math
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from manibo._stack import user_stacklevel
from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.registry import (
    FamilyEntry,
    Registry,
    check_family_name,
    family_listing,
    resolve_member,
)
from manibo.spaces.base import Space
from manibo.spaces.box import Box
from manibo.spaces.categorical import Categorical
from manibo.spaces.circle import Circle
from manibo.spaces.graph import Graph
from manibo.spaces.grassmann import Grassmann
from manibo.spaces.hyperbolic import Hyperbolic
from manibo.spaces.integers import Integers
from manibo.spaces.mesh import Mesh
from manibo.spaces.product import ProductSpace, Torus
from manibo.spaces.projective import RealProjectiveSpace
from manibo.spaces.se3 import SE3
from manibo.spaces.spd import SymmetricPositiveDefinite
from manibo.spaces.special_orthogonal import SpecialOrthogonal
from manibo.spaces.special_unitary import SpecialUnitary
from manibo.spaces.sphere import Sphere

PRODUCT = "*"
"""Joins the specs of the factors of a product space (``sphere2*circle``)."""


@dataclass(frozen=True)
class SpaceEntry(FamilyEntry):
    """A space builder: no argument, a family's integer parameter, or a text argument.

    Attributes:
        build: makes the space; called with no argument, with the family's integer, or with the
            text after ``:``.
        parameter, minimum: as for :class:`~manibo.registry.FamilyEntry`.
        argument: for a space that takes a text argument (``graph:FILE``), what it is, for
            listings (``"FILE"``); None otherwise.
        description: one line for listings.
        options: the names of the keyword arguments of ``build`` that a spec may set
            (``?name=value``; the builder receives the value as text).
    """

    argument: str | None = None
    description: str = ""
    options: tuple[str, ...] = ()

    def label(self, name: str) -> str:
        """``name:ARGUMENT`` for a space that takes a text argument, else as for a family."""
        return f"{name}:{self.argument}" if self.argument else super().label(name)


SPACES: Registry[SpaceEntry] = Registry(
    "space", advice="register your own with @manibo.spaces.register_space('name')"
)


def register_space(
    name: str,
    parameter: str | None = None,
    minimum: int = 1,
    argument: str | None = None,
    description: str = "",
    options: tuple[str, ...] = (),
) -> Callable[[Callable[..., Space]], Callable[..., Space]]:
    """Decorator: register a space builder under ``name``.

    Args:
        name: the spec (or, for a family, the spec without its integer).
        parameter: for a family, the name of its integer parameter (the spec is ``name<value>``).
        minimum: the smallest value of the parameter.
        argument: for a space that takes a text argument (``name:TEXT``), what the text is.
        description: one line for ``manibo run --help``.
        options: keyword arguments of the builder that a spec may set after the name, as
            ``name<value>?option=text`` (several joined by ``&``; the text holds no ``*`` or
            ``&``); the builder receives each as the text written, except that a text made only
            of numbers separated by ``,`` and ``:`` is rewritten in one spelling (``05`` and
            ``5.0`` are ``5``). Not with ``argument``.

    Raises:
        ConfigurationError: ``name`` is taken or holds ``:``, ``*`` or ``?``; a family's
            ``name`` ends with a digit; both ``parameter`` and ``argument`` are given, or both
            ``argument`` and ``options``; an option is not a keyword of the builder.
    """
    SPACES.check_name(name)
    check_family_name("space", name, parameter)
    if isinstance(name, str) and any(mark in name for mark in (":", PRODUCT, OPTIONS)):
        raise ConfigurationError(
            f"a space name must not hold ':', '{PRODUCT}' or '{OPTIONS}' (they separate "
            f"arguments, factors and options in a spec), got {name!r}."
        )
    if parameter is not None and argument is not None:
        raise ConfigurationError(
            f"space {name!r}: give `parameter` (an integer appended to the name) or `argument` "
            "(a text after ':'), not both."
        )
    options = tuple(options)
    if options and argument is not None:
        raise ConfigurationError(
            f"space {name!r}: `options` go with a name or a family (name<value>?option=...), "
            "not with a text `argument`, which may hold any character."
        )

    def decorate(build: Callable[..., Space]) -> Callable[..., Space]:
        takes = 0 if parameter is None and argument is None else 1
        SPACES.check_builder(name, build, "a builder of the space", takes)
        _check_option_keywords(name, build, options)
        entry = SpaceEntry(build, parameter, int(minimum), argument, description, options)
        SPACES.register(name, entry)
        return build

    return decorate


def available_spaces() -> list[str]:
    """Space specs for listings (``sphere<d>``, ``graph:FILE``, ...), plug-ins included, sorted."""
    return family_listing(SPACES)


def describe_spaces() -> list[tuple[str, str]]:
    """``(spec, description)`` of every registered space, sorted by spec."""
    entries = [(name, SPACES.get(name)) for name in SPACES.names()]
    return sorted((entry.label(name), entry.description) for name, entry in entries)


def make_space(spec: str) -> Space:
    """The space a spec names.

    Args:
        spec: e.g. ``"sphere2"``, ``"so3"``, ``"torus3"``, ``"box4"``, ``"graph:roads.txt"``,
            ``"sphere2*circle"``, ``"sphere2*box1"`` (a product: the factors' points one after
            the other).

    Raises:
        ConfigurationError: the spec is unknown (the message lists the known ones), lacks or
            has a needless argument, or a product factor cannot be a factor.
        InputDataError: a file named by the spec cannot be read as what it should hold.
    """
    factors = normal_spec(spec).split(PRODUCT)
    if len(factors) == 1:
        return _make_one(factors[0])
    spaces = [_make_one(factor) for factor in factors]
    try:
        return ProductSpace(*spaces)
    except ConfigurationError as err:
        raise ConfigurationError(f"space {spec!r}: {err}") from err


def normal_spec(spec: str) -> str:
    """The one spelling of a space spec: no blanks around factors, around ``:`` or at the ends of
    the text after it (which is kept as it is otherwise: a file's name, ``grassmann``'s ``K,N``),
    and family parameters as plain integers (``" so3 * box02 "`` is ``"so3*box2"``), so that two
    spellings of one space name one run.

    Raises:
        ConfigurationError: the spec is empty, a product has an empty factor, or a factor is
            unknown (as :func:`make_space`).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError(
            f"a space spec must be a non-empty string such as 'sphere2', got {spec!r}; known: "
            f"{', '.join(available_spaces())}."
        )
    factors = [factor.strip() for factor in spec.split(PRODUCT)]
    if not all(factors):
        raise ConfigurationError(
            f"space {spec!r}: a product has an empty factor; join space specs with {PRODUCT}, "
            f"e.g. sphere2{PRODUCT}circle."
        )
    normal = []
    for before, factor in zip([None, *factors], factors, strict=False):
        try:
            normal.append(_normal_factor(factor))
        except ConfigurationError as err:
            joined = f"{before.partition(':')[2]}{PRODUCT}{factor}" if before else ""
            if before is None or ":" not in before or not os.path.exists(joined):
                raise
            raise ConfigurationError(
                f"{err} {PRODUCT!r} joins the factors of a product, so {before}{PRODUCT}{factor} "
                f"was read as two factors: a file named in a space spec cannot have {PRODUCT!r} "
                "in its name; rename the file."
            ) from err
    return PRODUCT.join(normal)


def _argument_spec(spec: str) -> bool:
    """Whether ``spec`` is ``name:ARGUMENT`` (``graph:roads.txt?eigenpairs=50``), not a name with
    options whose values hold ``:`` (``box2?bounds=0:5``)."""
    return ":" in spec.partition(OPTIONS)[0]


def _normal_factor(spec: str) -> str:
    name, sep, text = spec.partition(":")
    if _argument_spec(spec):
        path, option, value = text.strip().rpartition(EIGENPAIRS_OPTION)
        if option and value.strip().isascii() and value.strip().isdigit():
            text = f"{path.strip()}{EIGENPAIRS_OPTION}{int(value)}"  # ?eigenpairs=050 is 50
        return f"{name.strip()}:{text.strip()}"
    name, _, written = spec.partition(OPTIONS)
    registered, value = resolve_member(SPACES, name.strip())
    member = registered if value is None else f"{registered}{value}"
    options = _spec_options(spec, SPACES.get(registered), written)
    if not options:
        return member
    return member + OPTIONS + "&".join(f"{key}={text}" for key, text in sorted(options.items()))


def _make_one(spec: str) -> Space:
    name, sep, text = spec.partition(":")
    if _argument_spec(spec):
        registered, value = resolve_member(SPACES, name)
        entry = SPACES.get(registered)
        if entry.argument is None:
            written = entry.label(name) if value is None else name
            options = f"; its options go after '{OPTIONS}'" if entry.options else ""
            raise ConfigurationError(
                f"space {name!r} takes no ':' argument, got {spec!r}; write {written!r}"
                f"{options}. {_OPTIONS_ADVICE}"
            )
        if not text:
            raise ConfigurationError(f"space {spec!r} needs its {entry.argument} after ':'.")
        return _built(registered, entry.build(text))
    name, _, written = spec.partition(OPTIONS)
    registered, value = resolve_member(SPACES, name)
    entry = SPACES.get(registered)
    if entry.argument is not None:
        raise ConfigurationError(
            f"space {name!r} needs its {entry.argument}: write '{name}:{entry.argument}'."
        )
    options = _spec_options(spec, entry, written)
    return _built(
        registered, entry.build(**options) if value is None else entry.build(value, **options)
    )


OPTIONS = "?"
"""Starts the options of a space spec: ``box2?bounds=0:5,-1:1``."""

_OPTIONS_ADVICE = (
    "Bounds are options of the specs that have them (box<d>?bounds=0:5,-1:1, "
    "se3?bounds=..., spd<n>?eigenvalues=100:2000, hyperbolic<d>?radius=3); for other spaces, "
    "register one with your settings (manibo.spaces.register_space, in the objective's module "
    "for `manibo run`)."
)

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _spec_options(spec: str, entry: SpaceEntry, written: str) -> dict[str, str]:
    """The options ``written`` after ``?`` in ``spec`` (``bounds=0:5&...``), each value as
    :func:`_option_spelling` writes it.

    Raises:
        ConfigurationError: an option is malformed, given twice, or not one of the entry's.
    """
    options: dict[str, str] = {}
    if not written.strip() and OPTIONS not in spec:
        return options
    known = ", ".join(entry.options) or "none"
    for part in written.split("&"):
        key, equals, value = (text.strip() for text in part.partition("="))
        if not (equals and key and value):
            raise ConfigurationError(
                f"space {spec.strip()!r}: options are written '?name=value' (several joined by "
                f"'&'), got {part.strip()!r}; this space's options: {known}."
            )
        if key not in entry.options:
            raise ConfigurationError(
                f"space {spec.strip()!r} has no option {key!r}; its options: {known}."
                + ("" if entry.options else f" {_OPTIONS_ADVICE}")
            )
        if key in options:
            raise ConfigurationError(f"space {spec.strip()!r} sets {key!r} twice.")
        options[key] = _option_spelling(value)
    return options


def _option_spelling(value: str) -> str:
    """``value`` in one spelling where it is numbers separated by ``,`` and ``:`` (``0:5.0, -1:1``
    is ``0:5,-1:1``); any other text as it is written (a typo such as ``0:5.0.0`` reaches the
    builder, which refuses it, and a plug-in's text option is never rewritten)."""
    parts = re.split(r"([,:])", value)
    numbers = parts[::2]
    if not all(_NUMBER.fullmatch(part.strip()) for part in numbers):
        return value
    parts[::2] = [_number_spelling(part.strip()) for part in numbers]
    return "".join(parts)


def _number_spelling(text: str) -> str:
    """``text``, a number, as the shortest text of its float value (``5.0`` is ``5``)."""
    value = float(text)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _check_option_keywords(name: str, build: Callable, options: tuple[str, ...]) -> None:
    """Refuse options that ``build`` cannot take as keyword arguments."""
    if not options:
        return
    try:
        parameters = inspect.signature(build).parameters
    except (TypeError, ValueError):  # no signature to read: checked when called
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    keywords = {
        key
        for key, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    missing = [option for option in options if option not in keywords]
    if missing:
        raise ConfigurationError(
            f"space {name!r}: the builder takes no keyword argument {missing[0]!r}, which "
            f"`options` names; its signature is {inspect.signature(build)}."
        )


def _intervals(text: str, what: str, count: int | None = None) -> list[tuple[float, float]]:
    """The intervals ``lower:upper`` that ``text`` lists, separated by commas.

    Args:
        text: e.g. ``"0:5,-1:1"``.
        what: the option, for messages (``"box2?bounds"``).
        count: the number of intervals expected; one interval then stands for all ``count``.

    Raises:
        ConfigurationError: a part is not two finite numbers with ``lower < upper``, or there
            are neither one nor ``count`` intervals.
    """
    intervals = []
    for part in text.split(","):
        lower, colon, upper = (piece.strip() for piece in part.partition(":"))
        numbers = colon and _NUMBER.fullmatch(lower) and _NUMBER.fullmatch(upper)
        pair = (float(lower), float(upper)) if numbers else None  # not float()'s 1_0 or nan
        if pair is None or not all(map(math.isfinite, pair)) or not pair[0] < pair[1]:
            raise ConfigurationError(
                f"{what}: each interval is 'lower:upper', two finite numbers with lower < upper, "
                f"got {part!r} in {text!r}."
            )
        intervals.append(pair)
    if count is not None and len(intervals) == 1:
        return intervals * count
    if count is not None and len(intervals) != count:
        raise ConfigurationError(
            f"{what}: give one interval for all {count} coordinates or one per coordinate "
            f"({count}), got {len(intervals)} in {text!r}."
        )
    return intervals


def _built(name: str, space: object) -> Space:
    """``space``, refused unless the builder registered as ``name`` returned a :class:`Space`."""
    if not isinstance(space, Space):
        raise ConfigurationError(
            f"the builder registered as space {name!r} must return a manibo space (a "
            f"manibo.spaces.Space), got {type(space).__name__} {space!r:.60}."
        )
    return space


# ---------------------------------------------------------------------------- built-in spaces
register_space("sphere", parameter="d", description="the unit sphere S^d in R^(d+1)")(Sphere)
register_space("circle", description="the circle, angles in [0, 2 pi)")(Circle)
register_space("torus", parameter="n", description="the flat torus, n angles")(Torus)
register_space(
    "so", parameter="n", minimum=2, description="rotations SO(n), n x n matrices flattened"
)(SpecialOrthogonal)
register_space(
    "su",
    parameter="n",
    minimum=2,
    description="SU(n), n x n complex matrices flattened as real and imaginary parts",
)(SpecialUnitary)
register_space("rp", parameter="d", description="the real projective space RP^d (lines)")(
    RealProjectiveSpace
)


@register_space(
    "grassmann",
    argument="K,N",
    description="the Grassmann manifold Gr(k, n): k-dimensional subspaces of R^n, orthonormal "
    "n x k frames flattened",
)
def _grassmann(text: str) -> Grassmann:
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(part.isascii() and part.isdigit() for part in parts):
        raise ConfigurationError(
            f"space 'grassmann:{text}': give the subspace and ambient dimensions as two integers "
            "'K,N', e.g. 'grassmann:2,4'."
        )
    return Grassmann(int(parts[0]), int(parts[1]))


@register_space(
    "hyperbolic",
    parameter="d",
    minimum=2,
    description="hyperbolic space H^d, a geodesic ball of radius 2; 'hyperbolic2?radius=3' sets "
    "the radius",
    options=("radius",),
)
def _hyperbolic(d: int, radius: str | None = None) -> Hyperbolic:
    if radius is None:
        return Hyperbolic(d)
    if not _NUMBER.fullmatch(radius.strip()):  # not float()'s 1_0, inf or nan
        raise ConfigurationError(
            f"space 'hyperbolic{d}?radius={radius}': the radius is a number, e.g. 3."
        )
    return Hyperbolic(d, radius=float(radius))


@register_space(
    "spd",
    parameter="n",
    description="symmetric positive definite n x n matrices (eigenvalues in [1e-3, 5]), flattened; "
    "random points with eigenvalues uniform on that box; 'spd3?eigenvalues=100:2000' sets it, "
    "'&sampling=log-eigenvalues' draws their logarithms uniformly (or 'volume')",
    options=("eigenvalues", "sampling"),
)
def _bo_spd(
    n: int, eigenvalues: str | None = None, sampling: str | None = None
) -> SymmetricPositiveDefinite:
    bounds = (1e-3, 5.0)
    if eigenvalues is not None:
        intervals = _intervals(eigenvalues, f"space 'spd{n}?eigenvalues'")
        if len(intervals) != 1 or intervals[0][0] <= 0:
            raise ConfigurationError(
                f"space 'spd{n}?eigenvalues={eigenvalues}': give one interval 'lower:upper' of "
                "positive numbers, the range of every eigenvalue, e.g. 100:2000."
            )
        (bounds,) = intervals
    if sampling is not None and sampling not in SymmetricPositiveDefinite.SAMPLINGS:
        raise ConfigurationError(
            f"space 'spd{n}?sampling={sampling}': the sampling is one of "
            f"{', '.join(SymmetricPositiveDefinite.SAMPLINGS)} (see SymmetricPositiveDefinite)."
        )
    # volume-uniform designs would almost all be nearly singular (see SymmetricPositiveDefinite)
    return SymmetricPositiveDefinite(
        n, eigenvalue_bounds=bounds, sampling=sampling or "eigenvalues"
    )


@register_space(
    "se3",
    description="poses: a position in the unit cube, then a rotation (3 + 9); "
    "'se3?bounds=-1:1,-1:1,0:2' sets the position's box",
    options=("bounds",),
)
def _se3(bounds: str | None = None) -> SE3:
    lower, upper = _box_corners(bounds, 3, "se3?bounds")
    return SE3(lower, upper)


@register_space(
    "box",
    parameter="d",
    description="the unit cube [0, 1]^d; 'box2?bounds=0:5,-1:1' sets each coordinate's interval "
    "(one interval: all of them)",
    options=("bounds",),
)
def _box(d: int, bounds: str | None = None) -> Box:
    return Box(*_box_corners(bounds, d, f"box{d}?bounds"))


def _box_corners(bounds: str | None, d: int, what: str) -> tuple[Tensor, Tensor]:
    """The lower and upper corners ``(d,)`` of the box that ``bounds`` lists (``0:5,-1:1``);
    the unit cube when it is None."""
    if bounds is None:
        return torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)
    corners = torch.tensor(_intervals(bounds, f"space '{what}'", count=d), dtype=torch.float64)
    return corners[:, 0], corners[:, 1]


@register_space(
    "integers",
    description="the integers low .. high, an ordinal setting: 'integers?range=1:8' (a path graph "
    "whose lengthscale is in units of the range)",
    options=("range",),
)
def _integers(range: str | None = None) -> Integers:  # the option is named range
    example = "integers?range=1:8"
    if range is None:
        raise ConfigurationError(f"space 'integers' needs its range, e.g. '{example}'.")
    ends = range.split(":")
    if len(ends) != 2 or not all(re.fullmatch(r"[-+]?\d+", end.strip()) for end in ends):
        raise ConfigurationError(
            f"space 'integers?range={range}': the range is two integers 'low:high', e.g. "
            f"'{example}'."
        )
    low, high = (int(end) for end in ends)
    if not low < high:
        raise ConfigurationError(
            f"space 'integers?range={range}': the range needs low < high (at least two values), "
            f"e.g. '{example}'."
        )
    return Integers(low, high)


@register_space(
    "categorical",
    parameter="k",
    minimum=2,
    description="k unordered choices 0 .. k-1 (the nodes of a complete graph): 'so3*categorical3' "
    "pairs a rotation with one of three choices",
)
def _categorical(k: int) -> Categorical:
    return Categorical(k)


@register_space(
    "icosphere",
    parameter="k",
    minimum=0,
    description="a mesh of the sphere, the icosahedron subdivided k times (k <= 7)",
)
def _icosphere(k: int) -> Mesh:
    return Mesh.icosphere(k)


@register_space(
    "graph",
    argument="FILE",
    description="the nodes of a graph: an edge list 'i j [weight]' per line (blanks or commas; "
    "nodes counted from 0), or an adjacency matrix in a .npy file; 'graph:FILE?eigenpairs=K' "
    "keeps K eigenpairs (default: all up to 2000 nodes, else 500)",
)
def _graph_from_file(argument: str) -> Graph:
    path, num_eigenpairs = _file_and_eigenpairs(argument, "graph")
    file = _existing(path, "graph")
    if file.suffix == ".npy":
        try:
            adjacency = np.load(file, allow_pickle=False)
        except ValueError:  # not an .npy file, or an object array (pickled data)
            raise InputDataError(
                f"space 'graph:{path}': cannot read it as a numeric .npy adjacency matrix (it is "
                "not a .npy file, or holds Python objects); save one with numpy.save(path, "
                "matrix), a float array of shape (n, n), or give an edge list as text."
            ) from None
        return _with_eigenpairs(
            "graph", argument, lambda: Graph(adjacency, num_eigenpairs=num_eigenpairs)
        )
    try:
        text = file.read_text(encoding="utf-8-sig")  # utf-8-sig: a BOM of Windows editors
    except UnicodeDecodeError as err:
        raise InputDataError(
            f"space 'graph:{path}': cannot read the edge list as text ({err}); "
            f"{_EDGE_LIST_ADVICE}, in plain text."
        ) from None
    table = _edge_table(path, text)
    _check_node_count(path, table[:, :2])
    _warn_of_edge_list_pitfalls(path, table[:, :2])
    return _with_eigenpairs(
        "graph",
        argument,
        lambda: Graph.from_edges(
            table[:, :2],
            int(table[:, :2].max()) + 1,
            weights=table[:, 2],
            num_eigenpairs=num_eigenpairs,
        ),
    )


EIGENPAIRS_OPTION = "?eigenpairs="
"""Appended to the file of a ``graph:FILE`` or ``mesh:FILE`` spec, sets the eigenpairs kept:
``graph:roads.txt?eigenpairs=5000``."""


def _file_and_eigenpairs(text: str, name: str) -> tuple[str, int | None]:
    """The file of a ``graph:`` or ``mesh:`` spec's ``text`` and its ``?eigenpairs=K`` (None
    where the spec has none; a file whose own name holds ``?eigenpairs=`` is read as named).

    Raises:
        ConfigurationError: ``K`` is not a positive integer.
    """
    path, sep, value = text.rpartition(EIGENPAIRS_OPTION)
    if not sep or os.path.exists(text):
        return text, None
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ConfigurationError(
            f"space '{name}:{text}': `eigenpairs` must be a positive integer (the eigenpairs of "
            f"the Laplacian kept), got {value!r}; write e.g. '{name}:{path.strip()}"
            f"{EIGENPAIRS_OPTION}5000'."
        )
    return path.strip(), int(value)


def _with_eigenpairs(name: str, text: str, build: Callable[[], Space]) -> Space:
    """``build()``, its errors about ``num_eigenpairs`` told in the spec's terms."""
    try:
        return build()
    except (InputDataError, ConfigurationError) as err:
        if "`num_eigenpairs`" not in str(err):
            raise
        raise type(err)(f"space '{name}:{text}': {_in_spec_terms(str(err))}") from None


def _in_spec_terms(message: str) -> str:
    """A message of a graph or mesh about ``num_eigenpairs``, told as a spec sets it."""
    return (
        message.replace(
            "`num_eigenpairs`", f"`eigenpairs` ('{EIGENPAIRS_OPTION}K' after the file)", 1
        )
        .replace("`num_eigenpairs`", "`eigenpairs`")
        .replace("Leave it as None", "Leave it out")
    )


_EDGE_LIST_ADVICE = "write one edge per line as 'i j' or 'i j weight' (node indices from 0)"


def _edge_table(path: str, text: str) -> np.ndarray:
    """The edges of an edge list, ``(E, 3)``: node, node, weight (1 where a line gives none).

    Fields are separated by blanks or commas (a CSV file); blank lines and everything after
    ``#`` are ignored, and so is a first line of names (``source,target,weight``, as pandas
    writes it). A third field may be networkx's dictionary of edge data (``{'weight': 2.0}``, as
    ``networkx.write_edgelist`` writes it), whose ``weight`` is the weight.

    Raises:
        InputDataError: a line that is not two or three numbers, or no edge at all.
    """
    rows, first = [], True
    for number, line in enumerate(text.splitlines(), start=1):
        fields = _edge_fields(line.split("#", 1)[0])
        if not fields:
            continue
        values = _numbers(fields)
        if values is None and first and all(f.isidentifier() for f in fields):
            first = False
            continue  # a header of column names
        first = False
        if (
            values is None
            or len(values) not in (2, 3)
            or not all(math.isfinite(v) for v in values[:2])
        ):
            raise InputDataError(
                f"space 'graph:{path}': line {number} ({line.strip()!r}) is not two or three "
                f"numbers separated by spaces or commas, finite node indices first (names of "
                f"nodes are not read: number them from 0); {_EDGE_LIST_ADVICE}."
            )
        _check_edge_line(path, number, line, values)
        rows.append(values + [1.0] * (3 - len(values)))
    if not rows:
        raise InputDataError(
            f"space 'graph:{path}': the edge list holds no edge; {_EDGE_LIST_ADVICE}."
        )
    return np.array(rows)


def _edge_fields(text: str) -> list[str]:
    """The fields of one line of an edge list: its first two blank- or comma-separated fields,
    then the rest (a networkx dictionary of edge data is one field)."""
    fields = [f for f in re.split(r"[\s,]+", text.strip(), maxsplit=2) if f]
    if len(fields) == 3 and fields[2].startswith("{"):
        try:
            data = ast.literal_eval(fields[2])
        except (ValueError, SyntaxError):
            return fields
        if isinstance(data, dict):
            return fields[:2] + ([str(data["weight"])] if "weight" in data else [])
    return [f for f in re.split(r"[\s,]+", text.strip()) if f]


def _numbers(fields: list[str]) -> list[float] | None:
    """``fields`` as numbers, or None when one is not a number."""
    try:
        return [float(field) for field in fields]
    except ValueError:
        return None


def _check_edge_line(path: str, number: int, line: str, values: list[float]) -> None:
    """Raise ``InputDataError`` naming line ``number`` of an edge list whose node indices are not
    integers from 0 or whose weight is not finite and positive."""
    where = f"space 'graph:{path}': line {number} ({line.strip()!r})"
    for value in values[:2]:
        if value != round(value) or value < 0:
            raise InputDataError(
                f"{where} has the node index {value:g}; node indices are integers counted from 0. "
                f"{_EDGE_LIST_ADVICE[0].upper()}{_EDGE_LIST_ADVICE[1:]}."
            )
    if len(values) == 3 and not (math.isfinite(values[2]) and values[2] > 0):
        raise InputDataError(
            f"{where} has the weight {values[2]:g}; a weight is a finite positive similarity. "
            "Leave out absent edges instead of giving them weight 0 or less."
        )


def _check_node_count(path: str, pairs: np.ndarray) -> None:
    """Raise ``InputDataError`` when most nodes ``0 .. max`` of an edge list ``pairs`` ``(E, 2)``
    touch no edge: its numbers are identifiers, not indices, and each untouched node would be a
    graph component of its own (a dense spectrum of ``n`` eigenpairs, or a sparse one whose
    eigenvalue 0 alone exceeds the eigenpairs kept)."""
    num_nodes = int(pairs.max()) + 1
    touched = len(np.unique(pairs))
    isolated = num_nodes - touched
    if isolated > max(touched, 1):
        raise InputDataError(
            f"space 'graph:{path}': the edges touch {touched} distinct nodes but the largest "
            f"node index is {num_nodes - 1}, so {isolated} of the {num_nodes} nodes 0 .. "
            f"{num_nodes - 1} would have no edge. Node indices count 0 .. n-1; if the file holds "
            "identifiers, renumber them, e.g. with numpy.unique(pairs, return_inverse=True)."
        )


def _warn_of_edge_list_pitfalls(path: str, pairs: np.ndarray) -> None:
    """Warn of an edge list that leaves nodes ``0 .. max`` without an edge (each is an isolated
    node that the optimiser may propose: node 0 of a file counted from 1, or the nodes of a gap
    in the numbering) or lists an edge more than once, in either direction (the weights add up,
    which changes the spectrum and so what a lengthscale means)."""
    n = int(pairs.max()) + 1
    isolated = np.setdiff1d(np.arange(n), pairs)
    if isolated.size:
        named = ", ".join(str(int(i)) for i in isolated[:5]) + (
            ", ..." if isolated.size > 5 else ""
        )
        if isolated.tolist() == [0]:
            has = "an isolated node 0"
            advice = "If the file counts from 1, subtract 1 from its indices."
        else:
            has = f"{isolated.size} isolated nodes"
            advice = (
                "If the numbers that touch no edge are not meant as nodes, renumber the nodes "
                "0 .. n-1 without gaps, e.g. with numpy.unique(pairs, return_inverse=True)"
                + (" (a file that counts from 1 also needs it)." if isolated[0] == 0 else ".")
            )
        warnings.warn(
            f"space 'graph:{path}': no edge touches node(s) {named} ({isolated.size} of the {n} "
            f"nodes 0 .. {n - 1}), so the graph has {has} that the optimiser may propose; nodes "
            f"are counted from 0, and every number up to the largest index is a node. {advice}",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )
    edges = [(int(min(i, j)), int(max(i, j))) for i, j in pairs]
    repeated = len(edges) - len(set(edges))
    if repeated:
        warnings.warn(
            f"space 'graph:{path}': {repeated} line(s) repeat an edge listed before (as i j or as "
            "j i); each line adds its weight to the undirected edge, so those count twice. List "
            "each edge once.",
            ManiboWarning,
            stacklevel=user_stacklevel(),
        )


@register_space(
    "mesh",
    argument="FILE",
    description="the vertices of a triangle mesh in a Wavefront .obj file; "
    "'mesh:FILE?eigenpairs=K' keeps K eigenpairs (default: all up to 2000 vertices, else 500)",
)
def _mesh_from_obj(argument: str) -> Mesh:
    path, num_eigenpairs = _file_and_eigenpairs(argument, "mesh")
    file = _existing(path, "mesh")
    vertices, faces, sources = [], [], []  # sources: (line number, line, its indices) per face
    face_lines = []  # the line of each triangle (a polygon of k corners makes k - 2)
    try:
        text = file.read_text(encoding="utf-8-sig")  # utf-8-sig: a BOM of Windows editors
    except UnicodeDecodeError as err:
        raise InputDataError(
            f"space 'mesh:{path}': cannot read it as a text Wavefront .obj file ({err}); export "
            "the mesh as .obj text (lines 'v x y z' and 'f i j k')."
        ) from None
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        try:
            if words[:1] == ["v"]:
                if len(words) < 4:
                    raise ValueError(f"a vertex needs 3 coordinates, got {len(words) - 1}")
                vertices.append([float(w) for w in words[1:4]])
            elif words[:1] == ["f"]:  # "f 1 2 3" or "f 1/1/1 2/2/2 3/3/3", indices from 1
                # a negative index counts back from the last vertex read so far (-1 is the last)
                indices = [int(w.split("/")[0]) for w in words[1:]]
                if 0 in indices or len(indices) < 3:
                    raise ValueError("a face needs 3 or more vertex indices, none of them 0")
                corners = [i - 1 if i > 0 else len(vertices) + i for i in indices]
                sources.append((number, line.strip(), indices, corners))
                faces.extend(
                    [corners[0], a, b] for a, b in zip(corners[1:-1], corners[2:], strict=True)
                )
                face_lines.extend([number] * (len(corners) - 2))
        except ValueError as err:
            raise InputDataError(
                f"space 'mesh:{path}': line {number} ({line.strip()!r}) is not a vertex or face "
                f"({err})."
            ) from err
    for number, line, indices, corners in sources:  # a face may name a vertex read after it
        outside = [i for i, c in zip(indices, corners, strict=True) if not 0 <= c < len(vertices)]
        if outside:
            raise InputDataError(
                f"space 'mesh:{path}': line {number} ({line!r}) names vertex {outside[0]}, but the "
                f"file has {len(vertices)} vertices; .obj faces count vertices from 1, and a "
                "negative index counts back from the last vertex read before the face."
            )
    for what, count, line in (
        ("vertex", len(vertices), "v x y z"),
        ("face", len(faces), "f i j k"),
    ):
        if not count:
            raise InputDataError(
                f"space 'mesh:{path}': the file has no {what} lines ('{line}'); export the mesh "
                "as a Wavefront .obj text file."
            )
    mesh, error = None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mesh = Mesh(np.array(vertices), np.array(faces), num_eigenpairs=num_eigenpairs)
        except (InputDataError, ConfigurationError) as err:
            error = err
    for warning in caught:  # the mesh's warnings, told as the file counts faces and vertices
        message = str(warning.message)
        if issubclass(warning.category, ManiboWarning):
            message = f"space 'mesh:{path}': {_in_file_terms(message, face_lines)}"
        warnings.warn(message, warning.category, stacklevel=user_stacklevel())
    if error is not None:
        message = _in_file_terms(_in_spec_terms(str(error)), face_lines)
        raise type(error)(f"space 'mesh:{argument}': {message}")
    return mesh


def _in_file_terms(message: str, face_lines: list[int]) -> str:
    """A message of :class:`~manibo.spaces.Mesh` about the faces and vertices of an .obj file,
    told as the file counts them: a triangle by the line of its face, vertices from 1."""

    def face_in_file_terms(match: re.Match) -> str:
        k, *corners = (int(g) for g in match.groups())
        return (
            f"the face of line {face_lines[k]} (vertices "
            f"{', '.join(str(c + 1) for c in corners)}, counted from 1 as in the file)"
        )

    message = re.sub(r"\bface (\d+) = \((\d+), (\d+), (\d+)\)", face_in_file_terms, message)
    unused = re.search(r"used by no face, e\.g\. \[([\d, ]+)\]", message)
    if unused:
        numbers = ", ".join(str(int(i) + 1) for i in unused.group(1).split(","))
        message = message.replace(
            unused.group(0), f"used by no face, e.g. vertices {numbers} (counted from 1)"
        ).replace("Drop them and re-index `faces`.", "Delete the loose vertices and edges.")
    if "keeps no whole eigenspace" in message:
        message += (
            " On a mesh the eigenvalue 0 has one copy per separate part: a mesh whose triangles "
            "do not share their vertices (an STL export) falls apart into one part per "
            "triangle; merge duplicate vertices first."
        )
    return message


def _existing(path: str, name: str) -> Path:
    file = Path(path).expanduser()
    if not file.exists():
        raise InputDataError(f"space '{name}:{path}': no such file {str(file)!r}.")
    if not file.is_file():  # a folder, a FIFO, a device: "no such file" misled
        kind = "a folder" if file.is_dir() else "not a regular file"
        raise InputDataError(f"space '{name}:{path}': {str(file)!r} is {kind}; name a file.")
    return file
