"""One registry helper for every kind of plug-in: surrogates, acquisitions, problems, planners.

A :class:`Registry` maps names to objects (factories, classes), refuses a second object under a name
already taken, and answers an unknown name with the names it knows. A user's package reaches the
registries, and through them the ``manibo`` command, by declaring an entry point in the group
``manibo.plugins`` whose target is a module that registers its objects on import::

    # pyproject.toml of the user's package
    [project.entry-points."manibo.plugins"]
    mypkg = "mypkg.manibo_plugin"

Plug-ins are imported once, the first time any registry is asked for a name it does not hold or
for the list of its names.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import inspect
import os
import re
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from manibo.exceptions import ConfigurationError

T = TypeVar("T")

PLUGIN_GROUP = "manibo.plugins"
_plugins_state = "unloaded"  # then "loading" while the plug-ins import, then "loaded"
_plugin_failures: list[PluginError] = []
_registries: weakref.WeakSet[Registry] = weakref.WeakSet()  # every registry, for withdrawals


class PluginError(ConfigurationError):
    """A plug-in declared in the ``manibo.plugins`` entry-point group failed to import.

    Attributes:
        entry_point: the name of the failed plug-in's entry point, quoted.
    """

    def __init__(self, message: str, entry_point: str = "") -> None:
        super().__init__(message)
        self.entry_point = entry_point


def load_plugins() -> list[str]:
    """Import every module declared in the ``manibo.plugins`` entry-point group, once.

    Each plug-in is imported on its own: one that fails does not keep the others out, and the
    names that its module, or a module whose import failed with it, registered before it failed
    are withdrawn, so that no half-imported plug-in is used.

    Returns:
        The names of the entry points loaded by this call (empty after the first call).

    Raises:
        PluginError: a plug-in failed to import, at this call and at every later one (the
            registries hold the names of the others); the original error is chained, with its
            traceback.
    """
    loaded = _import_plugins()
    raise_plugin_failure()
    return loaded


def _import_plugins() -> list[str]:
    """Import the plug-ins the first time (see :func:`load_plugins`), recording failures."""
    global _plugins_state
    if _plugins_state != "unloaded":
        return []
    # "loading" first: a plug-in that looks a name up while it imports must not recurse
    _plugins_state = "loading"
    loaded = []
    try:
        for entry_point in importlib.metadata.entry_points(group=PLUGIN_GROUP):
            before = {registry: dict(registry._objects) for registry in list(_registries)}
            try:
                entry_point.load()
            except Exception as error:
                _withdraw(before, entry_point.value.partition(":")[0].strip())
                _plugin_failures.append(_plugin_failure(entry_point, error))
            else:
                loaded.append(entry_point.name)
    finally:
        _plugins_state = "loaded"
    return loaded


def raise_plugin_failure() -> None:
    """Raise the :class:`PluginError` of the plug-ins that failed to import, if any did: a name
    that no registry holds may be one of theirs.

    Raises:
        PluginError: naming the first failed plug-in (and the others), its error chained.
    """
    if _plugin_failures:
        first = _plugin_failures[0]
        others = [f.entry_point for f in _plugin_failures[1:]]
        also = f" The plug-in(s) {', '.join(others)} failed too." if others else ""
        raise PluginError(f"{first}{also}", first.entry_point) from first.__cause__


def _withdraw(before: dict[Registry, dict[str, Any]], module: str) -> None:
    """Undo what a failed plug-in registered since ``before``: the names registered by its
    module ``module`` (and its submodules) and by every module whose import failed with it
    (Python drops those from ``sys.modules``). Names registered by modules that it imported in
    full (a healthy plug-in, of its own namespace package or not) stay."""
    for registry, objects in before.items():
        for name, obj in list(registry._objects.items()):
            if objects.get(name) is obj:
                continue
            by = registry._registrars.get(name)
            if by is not None and by in sys.modules and not _within(by, module):
                continue
            if name in objects:
                registry._objects[name] = objects[name]
            else:
                del registry._objects[name]


def _within(name: str, module: str) -> bool:
    """Whether the module ``name`` is ``module`` or one of its submodules."""
    return name == module or name.startswith(f"{module}.")


def _registering_module() -> str | None:
    """The module whose code registers: that of the first caller that is no registering function
    (``register``, ``register_surrogate``, their decorators); None where it is manibo's own."""
    frame = sys._getframe(1)
    while frame is not None and _in_registering_function(frame):
        frame = frame.f_back
    name = "" if frame is None else frame.f_globals.get("__name__", "")
    return None if _within(name, "manibo") else name


def _in_registering_function(frame) -> bool:
    """Whether ``frame`` runs one of manibo's registering functions or their decorators."""
    name = frame.f_code.co_name
    return _within(frame.f_globals.get("__name__", ""), "manibo") and (
        name.startswith("register") or name == "decorate"
    )


def _plugin_failure(entry_point: importlib.metadata.EntryPoint, error: Exception) -> PluginError:
    failure = PluginError(
        f"the manibo plug-in {entry_point.name!r} ({entry_point.value}, declared by the "
        f"package {_distribution_name(entry_point)}) failed to import: "
        f"{type(error).__name__}: {str(error).rstrip('.')}. Its names are not registered; fix "
        "the plug-in or uninstall its package.",
        repr(entry_point.name),
    )
    failure.__cause__ = error
    return failure


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return dist.metadata["Name"] if dist is not None else "unknown"


@dataclass(frozen=True)
class Entry:
    """A registered builder together with the options it was registered with.

    Registries whose objects carry options (a surrogate's unsupported spaces, an acquisition's
    analytic flag) hold subclasses with more fields. Two entries with equal fields are one
    registration; messages about an entry name its ``build``.

    Attributes:
        build: the factory, builder or class registered.
    """

    build: Callable[..., Any]


def _a(kind: str) -> str:
    """``kind`` with its indefinite article: "a surrogate", "an acquisition"."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _origin(obj: object) -> str:
    if isinstance(obj, Entry):
        obj = obj.build
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"


def _same(a: object, b: object) -> bool:
    """``a`` is ``b``; or both are entries of one class with equal fields; or ``b`` is ``a``'s
    definition executed again (a module reloaded, a notebook cell re-run): a top-level function
    or class of the same module and name, registered with the same options."""
    if a is b or (isinstance(a, Entry) and type(a) is type(b) and a == b):
        return True
    if isinstance(a, Entry) and type(a) is type(b):
        return _redefined(a.build, b.build) and dataclasses.replace(a, build=b.build) == b
    return not isinstance(a, Entry) and _redefined(a, b)


def _redefined(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are top-level definitions of one module and name (or of one file
    imported under two names: a script run as ``__main__`` that imports itself)."""
    qualname = getattr(a, "__qualname__", None)
    return (
        isinstance(qualname, str)
        and "<" not in qualname  # not a lambda or a function defined inside another
        and qualname == getattr(b, "__qualname__", None)
        and _module_file(a) == _module_file(b)
    )


def _module_file(obj: object) -> str | None:
    """The resolved path of the file of ``obj``'s module; its module name where it has no file."""
    name = getattr(obj, "__module__", None)
    path = getattr(sys.modules.get(name), "__file__", None)
    return os.path.realpath(path) if path else name


class Registry(Generic[T]):
    """Names to objects of one kind of plug-in.

    Args:
        kind: what the objects are, for messages (``"surrogate"``, ``"acquisition"``, ...).
        advice: how a user adds one, appended to the error for an unknown name
            (for example ``"register your own with @manibo.models.register_surrogate('name')"``).
    """

    def __init__(self, kind: str, advice: str = "") -> None:
        self.kind = kind
        self.advice = advice
        self._objects: dict[str, T] = {}
        self._registrars: dict[str, str | None] = {}  # name -> module, while plug-ins import
        _registries.add(self)

    def check_name(self, name: object) -> None:
        """Refuse a name that is not a non-empty string without white space; a function in its
        place is a decorator written without its parentheses (``@register_surrogate`` instead
        of ``@register_surrogate('name')``), which would register nothing.

        Raises:
            ConfigurationError: naming the fix.
        """
        if callable(name):
            raise ConfigurationError(
                f"{_a(self.kind)} is registered under a name given first: write "
                f"@register_{self.kind}('my-{self.kind}') with the parentheses; got {name!r} "
                "where the name goes."
            )
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise ConfigurationError(
                f"{_a(self.kind)} name must be a non-empty string without spaces, got {name!r}."
            )

    def check_builder(self, name: str, builder: object, expected: str, arguments: int) -> None:
        """Refuse, when it is registered, a builder that is not callable or cannot take
        ``arguments`` positional arguments.

        Args:
            name: the name it is registered under.
            builder: the decorated object.
            expected: what it should be, for the message (``"a factory `(space, ...)`"``).
            arguments: the positional arguments it is called with.

        Raises:
            ConfigurationError: naming what arrived.
        """
        if not callable(builder):
            raise ConfigurationError(
                f"register_{self.kind}({name!r}) decorates {expected}, got "
                f"{type(builder).__name__} {builder!r}."
            )
        try:
            signature = inspect.signature(builder)
        except (TypeError, ValueError):  # a builtin without a signature: checked when called
            return
        try:
            signature.bind_partial(*[None] * arguments)
        except TypeError as err:
            raise ConfigurationError(
                f"the {self.kind} {name!r} must be registered on {expected}, but its signature "
                f"is {signature} ({err})."
            ) from err

    def register(self, name: str, obj: T | None = None) -> Callable[[T], T] | T:
        """Register ``obj`` under ``name``; without ``obj``, a decorator that does so.

        Registering the same object (or an :class:`Entry` with the same fields) twice under one
        name is a no-op, and the same top-level definition executed again (its module reloaded)
        replaces the first; a different object under a taken name is refused.

        Raises:
            ConfigurationError: ``name`` is not a non-empty string without white space, or is
                already taken by another object.
        """
        self.check_name(name)

        def decorate(target: T) -> T:
            module = None if _plugins_state == "loaded" else _registering_module()
            if _plugins_state == "unloaded" and module is not None:
                # your own name meets the plug-ins' at once, whatever is looked up first; a
                # broken plug-in is reported at the next lookup, not here
                _import_plugins()
            existing = self._objects.get(name)
            if existing is not None and not _same(existing, target):
                raise ConfigurationError(
                    f"{_a(self.kind)} named {name!r} is already registered ({_origin(existing)}); "
                    f"{_origin(target)} cannot take its name. Choose another name."
                )
            if existing is None and isinstance(target, FamilyEntry):
                _check_no_shadowing(self, name, target)
            self._objects[name] = target
            if _plugins_state == "loading":  # who registered it, should its plug-in fail
                self._registrars[name] = module
            return target

        return decorate if obj is None else decorate(obj)

    def get(self, name: str) -> T:
        """The object registered as ``name`` (plug-ins are loaded first when it is missing).

        Raises:
            ConfigurationError: ``name`` is unknown; the message lists the known names.
        """
        if name not in self._objects:
            _import_plugins()
        if name not in self._objects:
            raise_plugin_failure()  # the name may be one of a plug-in that failed
            advice = f"; {self.advice}" if self.advice else ""
            raise ConfigurationError(
                f"unknown {self.kind} {name!r}{_did_you_mean(self, name)}; choose one of "
                f"{', '.join(self.names())}{advice}."
            )
        return self._objects[name]

    def names(self) -> list[str]:
        """Every registered name, sorted (plug-ins included)."""
        load_plugins()
        return sorted(self._objects)

    def __contains__(self, name: object) -> bool:
        if name not in self._objects:
            _import_plugins()  # a failed plug-in is raised where a missing name is an error
        return name in self._objects

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={list(self._objects)!r})"

    def __len__(self) -> int:
        return len(self.names())


# ------------------------------------------------------------------ families: a name and an integer
@dataclass(frozen=True)
class FamilyEntry(Entry):
    """An entry that is either single (``orientation-so3``, ``circle``) or a family with an integer
    parameter appended to its name (``ackley-sphere`` + 5, ``sphere`` + 2).

    Attributes:
        parameter: None for a single entry; for a family, the parameter's name in listings
            (``"d"`` lists as ``sphere<d>``).
        minimum: the smallest value of the parameter.
    """

    parameter: str | None = None
    minimum: int = 1

    def label(self, name: str) -> str:
        """How listings show the entry registered as ``name``: ``name``, or ``name<parameter>``
        for a family."""
        return name if self.parameter is None else f"{name}<{self.parameter}>"


_FAMILY_MEMBER = re.compile(r"(?P<family>.*\D)(?P<value>\d+)")


def _check_no_shadowing(registry: Registry, name: str, entry: FamilyEntry) -> None:
    """Refuse a single ``name`` that a registered family already resolves (``sphere2``), and a
    family whose members would take a registered single name (``orientation-so`` from 4 may
    join the single ``orientation-so3``, not from 3): one of the two would replace the other."""
    objects = registry._objects  # not registry.get: registering must not load the plug-ins
    if entry.parameter is None:
        member = _FAMILY_MEMBER.fullmatch(name)
        family = objects.get(member["family"]) if member else None
        if isinstance(family, FamilyEntry) and family.parameter is not None:
            if int(member["value"]) >= family.minimum:
                raise ConfigurationError(
                    f"{_a(registry.kind)} named {name!r} would replace a member of the "
                    f"{registry.kind} family {family.label(member['family'])!r} "
                    f"({_origin(family)}); {_origin(entry)} cannot take its name. Choose "
                    "another name."
                )
        return
    for single, other in objects.items():
        member = _FAMILY_MEMBER.fullmatch(single)
        if (
            member
            and member["family"] == name
            and isinstance(other, FamilyEntry)
            and other.parameter is None
            and int(member["value"]) >= entry.minimum
        ):
            raise ConfigurationError(
                f"{_a(registry.kind)} family {entry.label(name)!r} from {entry.minimum} would "
                f"replace the {registry.kind} {single!r} already registered ({_origin(other)}); "
                f"{_origin(entry)} cannot take its members' names. Choose another name, or a "
                f"minimum above {int(member['value'])}."
            )


def check_family_name(kind: str, name: str, parameter: str | None) -> None:
    """Refuse a family ``name`` that ends with a digit (its members' names could not be split).

    Raises:
        ConfigurationError: naming the fix.
    """
    if parameter is not None and isinstance(name, str) and name[-1:].isdigit():
        raise ConfigurationError(
            f"{_a(kind)} family's name must not end with a digit, got {name!r}: its members are "
            f"named by appending the {parameter!r} value. Add a separator, e.g. {name + '-'!r}."
        )


def family_listing(registry: Registry[FamilyEntry]) -> list[str]:
    """The registry's names for listings (each entry's :meth:`FamilyEntry.label`), sorted."""
    return sorted(registry.get(name).label(name) for name in registry.names())


def _did_you_mean(registry: Registry, name: object) -> str:
    """`` (did you mean 'so3'?)`` for a name that differs from a registered one in case or by a
    typo (``SO3``, ``integer``, ``spere2``: a family's integer is kept); empty when none is near."""
    if not isinstance(name, str):
        return ""
    member = _FAMILY_MEMBER.fullmatch(name)
    stem, digits = (member["family"], member["value"]) if member else (name, "")
    names = registry.names()
    match = next((n for n in names if n.lower() == stem.lower() and n != stem), None)
    if match is None:
        near = difflib.get_close_matches(stem.lower(), names, n=1, cutoff=0.8)
        match = near[0] if near else None
    if match is None:
        return ""
    parameter = getattr(registry.get(match), "parameter", None)
    if parameter is None:
        return f" (did you mean {match!r}?)"
    minimum = getattr(registry.get(match), "minimum", 1)
    return f" (did you mean '{match}{digits or max(minimum, 2)}'?)"


def resolve_member(registry: Registry[FamilyEntry], name: str) -> tuple[str, int | None]:
    """Split ``name`` into a registered name and a family parameter (None for a single entry).

    A single entry's name is matched first, so it may end with digits (``orientation-so3``).

    Raises:
        ConfigurationError: the name is unknown (the message lists the known ones, the
            registry's advice after them), names a family without its parameter, or a parameter
            below the family's minimum.
    """
    if isinstance(name, str) and name in registry:
        entry = registry.get(name)
        if entry.parameter is None:
            return name, None
        raise ConfigurationError(
            f"the {registry.kind} family {name!r} needs its {entry.parameter}: name a member "
            f"such as '{name}{max(entry.minimum, 2)}'."
        )
    member = _FAMILY_MEMBER.fullmatch(name) if isinstance(name, str) else None
    family = member["family"] if member and member["family"] in registry else None
    entry = None if family is None else registry.get(family)
    if entry is None or entry.parameter is None:
        listing = family_listing(registry)
        example = next((n.split("<")[0] + "2" for n in listing if "<" in n), None)
        hint = "" if example is None else f" (<...> stands for an integer, e.g. {example})"
        advice = f"; {registry.advice}" if registry.advice else ""
        raise ConfigurationError(
            f"unknown {registry.kind} {name!r}{_did_you_mean(registry, name)}; known: "
            f"{', '.join(listing)}{hint}{advice}."
        )
    value = int(member["value"])
    if value < entry.minimum:
        raise ConfigurationError(
            f"{registry.kind} {name!r}: {entry.parameter} must be at least {entry.minimum}, got "
            f"{value}; use e.g. '{family}{entry.minimum}'."
        )
    return family, value
