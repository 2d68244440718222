"""The one registry helper: names, duplicates, unknown names and entry-point plug-ins."""

import importlib.metadata
import sys
import types

import pytest

import manibo.registry as registry_module
from manibo.exceptions import ConfigurationError
from manibo.registry import PluginError, Registry


def test_register_as_decorator_and_directly():
    reg = Registry("widget")

    @reg.register("a")
    def make_a():
        return "a"

    reg.register("b", str.upper)
    assert reg.get("a") is make_a
    assert reg.get("b") is str.upper
    assert reg.names() == ["a", "b"]
    assert "a" in reg and "c" not in reg
    assert list(reg) == ["a", "b"] and len(reg) == 2


def test_same_object_twice_is_a_noop_and_another_object_is_refused():
    reg = Registry("widget")
    reg.register("a", len)
    reg.register("a", len)
    with pytest.raises(ConfigurationError, match=r"already registered \(builtins.len\)"):
        reg.register("a", abs)
    assert reg.get("a") is len


@pytest.mark.parametrize("name", ["", "two words", None, 3])
def test_bad_names_are_refused(name):
    with pytest.raises(ConfigurationError, match="non-empty string"):
        Registry("widget").register(name, len)


def test_unknown_name_lists_known_names_and_advice():
    reg = Registry("widget", advice="register one with @register_widget")
    reg.register("zeta", len)
    reg.register("alpha", abs)
    with pytest.raises(
        ConfigurationError, match=r"unknown widget 'beta'; choose one of alpha, zeta;"
    ):
        reg.get("beta")


class _FakeEntryPoint:
    def __init__(self, name, value, load):
        self.name, self.value, self._load, self.dist = name, value, load, None

    def load(self):
        return self._load()


@pytest.fixture
def fresh_plugins(monkeypatch):
    monkeypatch.setattr(registry_module, "_plugins_loaded", False)
    return monkeypatch


def test_plugins_register_on_first_miss_and_load_once(fresh_plugins):
    reg = Registry("widget")
    calls = []

    def load():
        calls.append(1)
        reg.register("from-plugin", len)
        return types.ModuleType("plugin")

    fresh_plugins.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [_FakeEntryPoint("p", "p.mod", load)] if group == "manibo.plugins" else [],
    )
    assert reg.get("from-plugin") is len
    assert reg.names() == ["from-plugin"]
    assert calls == [1]


def test_a_broken_plugin_surfaces_with_its_error_chained(fresh_plugins):
    def load():
        raise NameError("name 'undefined_thing' is not defined")

    fresh_plugins.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [_FakeEntryPoint("broken", "broken.mod", load)],
    )
    with pytest.raises(PluginError, match=r"'broken' \(broken.mod.*NameError") as info:
        Registry("widget").get("anything")
    assert isinstance(info.value.__cause__, NameError)


def test_plugin_module_is_imported_by_name(fresh_plugins, tmp_path):
    (tmp_path / "manibo_test_plugin_mod.py").write_text(
        "from manibo.registry import Registry\n"
        "import tests_registry_target as t\n"
        "t.REG.register('plugged', len)\n"
    )
    target = types.ModuleType("tests_registry_target")
    target.REG = Registry("widget")
    fresh_plugins.setitem(sys.modules, "tests_registry_target", target)
    fresh_plugins.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint(
        name="plug", value="manibo_test_plugin_mod", group="manibo.plugins"
    )
    fresh_plugins.setattr(importlib.metadata, "entry_points", lambda group: [point])
    assert target.REG.get("plugged") is len
