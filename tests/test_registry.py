"""The one registry helper: names, duplicates, unknown names and entry-point plug-ins."""

import importlib.metadata
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import manibo.registry as registry_module
from manibo.cli import main
from manibo.exceptions import ConfigurationError
from manibo.registry import Entry, FamilyEntry, PluginError, Registry

ROOT = Path(__file__).parents[1]


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


def test_entries_with_equal_fields_are_one_registration_and_messages_name_their_build():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Flagged(Entry):
        flag: bool = False

    reg = Registry("widget")
    reg.register("a", Flagged(len))
    reg.register("a", Flagged(len))  # equal fields: the same registration (a decorator run twice)
    with pytest.raises(ConfigurationError, match=r"'a' is already registered \(builtins.len\); "):
        reg.register("a", Flagged(len, flag=True))
    with pytest.raises(
        ConfigurationError, match=r"already registered \(builtins.len\); builtins.abs"
    ):
        reg.register("a", Flagged(abs))
    assert reg.get("a") == Flagged(len)


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


def test_a_single_name_cannot_replace_a_family_member_nor_a_family_a_single_name():
    reg = Registry("widget")
    reg.register("sphere", FamilyEntry(len, "d"))
    reg.register("so", FamilyEntry(len, "n", minimum=2))
    with pytest.raises(
        ConfigurationError,
        match=r"a widget named 'sphere2' would replace a member of the widget family "
        r"'sphere<d>' \(builtins.len\); builtins.abs cannot take its name. Choose",
    ):
        reg.register("sphere2", FamilyEntry(abs))
    with pytest.raises(ConfigurationError, match="family 'sphere<d>'"):
        reg.register("sphere02", FamilyEntry(abs))  # resolves to sphere + 2 as well
    reg.register("so1", FamilyEntry(abs))  # below the family's minimum: no member has the name
    reg.register("sphere2x", FamilyEntry(abs))  # not a member's name
    reg.register("orientation-so3", FamilyEntry(abs))
    with pytest.raises(
        ConfigurationError,
        match=r"family 'orientation-so<n>' from 1 would replace the widget 'orientation-so3' "
        r"already registered \(builtins.abs\); builtins.len cannot take its members' names. "
        "Choose another name, or a minimum above 3.",
    ):
        reg.register("orientation-so", FamilyEntry(len, "n"))
    reg.register("orientation-so", FamilyEntry(len, "n", minimum=4))  # as the built-in problems
    assert reg.names() == ["orientation-so", "orientation-so3", "so", "so1", "sphere", "sphere2x"]


def test_a_plugin_cannot_replace_a_built_in_space_or_problem_member():
    from manibo.problems import make_problem, register_problem
    from manibo.spaces import Sphere, make_space, register_space

    with pytest.raises(ConfigurationError, match="family 'sphere<d>'"):
        register_space("sphere2")(lambda: Sphere(3))
    with pytest.raises(ConfigurationError, match="family 'ackley-sphere<d>'"):
        register_problem("ackley-sphere2")(lambda noise_std=0.0: None)
    with pytest.raises(ConfigurationError, match="family 'so<n>'"):
        register_space("so3")(lambda: Sphere(3))
    assert repr(make_space("sphere2")) == "Sphere(2)"
    assert type(make_problem("ackley-sphere2")).__name__ == "AckleySphere"


class _FakeEntryPoint:
    def __init__(self, name, value, load):
        self.name, self.value, self._load, self.dist = name, value, load, None

    def load(self):
        return self._load()


@pytest.fixture
def fresh_plugins(monkeypatch):
    monkeypatch.setattr(registry_module, "_plugins_state", "unloaded")
    monkeypatch.setattr(registry_module, "_plugin_failures", [])
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


def test_a_plugin_refused_by_a_registry_is_reported_in_whole_sentences(fresh_plugins):
    def load():
        reg = Registry("widget")
        reg.register("a", len)
        reg.register("a", abs)

    fresh_plugins.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [_FakeEntryPoint("clash", "clash.mod", load)],
    )
    with pytest.raises(PluginError) as info:
        Registry("widget").get("anything")
    assert (
        "Choose another name. Its names are not registered; fix the plug-in or uninstall its "
        in (str(info.value))
    )
    assert ".." not in str(info.value)


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


PLUGIN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "manibo-counted-plugin"
version = "0.1"

[project.entry-points."manibo.plugins"]
counted = "manibo_counted_plugin"

[tool.setuptools]
py-modules = ["manibo_counted_plugin"]
"""

PLUGIN_MODULE = '''\
"""A user's plug-in: a surrogate and an acquisition that log every build to a file."""
import os

from botorch.acquisition import qUpperConfidenceBound

from manibo.acquisitions import register_acquisition
from manibo.models import build_surrogate, register_surrogate
from manibo.spaces import Circle, register_space


def _log(kind):
    with open(os.environ["COUNTED_PLUGIN_LOG"], "a") as f:
        f.write(kind + "\\n")


@register_surrogate("counted-matern")
def counted_matern(space, train_X, train_Y, **options):
    _log("surrogate")
    return build_surrogate("matern", space, train_X, train_Y, **options)


@register_acquisition("counted-ucb")
def counted_ucb(model, data):
    _log("acquisition")
    return qUpperConfidenceBound(model, beta=1.0, X_pending=data.X_pending, sampler=data.sampler())


@register_space("plugged-circle", description="a circle from a plug-in")
def plugged_circle():
    return Circle()
'''


def _venv_seeing_this_environment(path: Path) -> Path:
    """A new virtual environment whose interpreter also imports what this one imports."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # the checkout under test first, then this interpreter's site-packages (pip, setuptools, torch)
    inherited = [str(ROOT), *(p for p in sys.path if p.endswith("site-packages"))]
    (Path(site_dir) / "inherited.pth").write_text("\n".join(inherited) + "\n")
    return python


@pytest.mark.slow
def test_an_installed_plugin_reaches_manibo_run_by_name(tmp_path, capsys):
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (package / "manibo_counted_plugin.py").write_text(PLUGIN_MODULE)
    python = _venv_seeing_this_environment(tmp_path / "venv")
    install = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    install += ["--no-build-isolation", "--disable-pip-version-check", str(package)]
    subprocess.run(install, check=True, cwd=tmp_path, capture_output=True, timeout=120)

    log, out = tmp_path / "calls.log", tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["COUNTED_PLUGIN_LOG"] = str(log)
    command = ["-m", "manibo", "run", "--problem", "ackley-sphere2", "--surrogate"]
    command += ["counted-matern", "--acquisition", "counted-ucb", "--budget", "4"]
    command += ["--initial-design", "3", "--out", str(out), "--quiet"]
    run = subprocess.run(
        [str(python), *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((out / "ackley-sphere2_counted-matern_counted-ucb_seed0.json").read_text())
    assert result["config"]["surrogate"] == "counted-matern" and len(result["observed"]) == 4
    # the constructor's trial build (options checked before the journal), then the proposal
    # after the three initial points: the plug-in's code built both of each; then the model of
    # the result, on all four evaluations, for the recommended point
    assert log.read_text().split() == ["surrogate", "acquisition"] * 2 + ["surrogate"]
    # --help lists the plug-in's names beside the built-in ones
    listing = subprocess.run(
        [str(python), "-m", "manibo", "run", "--help"], env=env, capture_output=True, text=True
    )
    assert listing.returncode == 0, listing.stderr[-3000:]
    for name in ("counted-matern", "counted-ucb", "plugged-circle  a circle from a plug-in"):
        assert name in listing.stdout

    # without the plug-in installed (as in this interpreter), the same command does not know
    # the names
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(command[2:])
    assert exit_info.value.code == 2
    assert "unknown surrogate 'counted-matern'" in capsys.readouterr().err


def test_the_repr_names_the_kind_and_the_entries_without_an_address():
    registry = Registry("widget")
    registry.register("a", 1)
    assert repr(registry) == "Registry('widget', names=['a'])"


def test_a_reloaded_module_registers_its_definitions_again(tmp_path, monkeypatch):
    """A notebook's autoreload or importlib.reload runs the decorators again on new function
    objects of the same module and name: they replace the first, and a different definition
    under the name is still refused."""
    import importlib

    from manibo.models import registry

    monkeypatch.setattr(registry.SURROGATES, "_objects", dict(registry.SURROGATES._objects))
    source = (
        "from manibo.models import build_surrogate, register_surrogate\n\n\n"
        "@register_surrogate('test-reloaded', unsupported_features={'fantasize': '{reason}'})\n"
        "def reloaded(space, train_X, train_Y, **options):\n"
        "    return build_surrogate('matern', space, train_X, train_Y)\n"
    )
    (tmp_path / "reloadplug.py").write_text(source.replace("{reason}", "none, use qlognei."))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("reloadplug")
    first = registry.surrogate_entry("test-reloaded").build
    module = importlib.reload(module)
    assert registry.surrogate_entry("test-reloaded").build is module.reloaded is not first
    (tmp_path / "reloadplug.py").write_text(source.replace("{reason}", "another reason."))
    with pytest.raises(ConfigurationError, match="'test-reloaded' is already registered"):
        importlib.reload(module)  # other options: another registration
    monkeypatch.delitem(sys.modules, "reloadplug")


def _entry_points(fresh_plugins, *points):
    fresh_plugins.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: list(points) if group == "manibo.plugins" else [],
    )


def test_a_broken_plugin_keeps_neither_the_others_out_nor_itself_quiet(fresh_plugins):
    reg = Registry("widget")

    def broken():
        raise ModuleNotFoundError("No module named 'aaabroken_missing'")

    def healthy():
        reg.register("healthy-name", len)

    _entry_points(
        fresh_plugins,
        _FakeEntryPoint("broken", "aaabroken_missing", broken),
        _FakeEntryPoint("healthy", "healthy.mod", healthy),
    )
    for _ in range(2):  # the cause, every time: not "unknown widget" at the second lookup
        with pytest.raises(PluginError, match=r"plug-in 'broken' \(aaabroken_missing") as info:
            reg.get("unknown-name")
        assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert reg.get("healthy-name") is len  # registered, though the broken plug-in came first


def _plugin_files(fresh_plugins, tmp_path, files, points):
    """Modules written to ``tmp_path`` (``{"pkg/mod.py": source}``) and entry points
    ``[(name, module)]`` declaring them, in that order; their registry is ``target.REG``."""
    for path, source in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    target = types.ModuleType("tests_registry_target")
    target.REG = Registry("widget")
    fresh_plugins.setattr(sys, "modules", dict(sys.modules))  # imported here, dropped after
    sys.modules["tests_registry_target"] = target
    fresh_plugins.syspath_prepend(str(tmp_path))
    entry_points = [
        importlib.metadata.EntryPoint(name=name, value=value, group="manibo.plugins")
        for name, value in points
    ]
    _entry_points(fresh_plugins, *entry_points)
    return target.REG


def test_a_plugin_that_fails_after_registering_leaves_none_of_its_names(fresh_plugins, tmp_path):
    # a lambda, a functools.partial and a class of another package name no module of the
    # plug-in's own: they are withdrawn all the same
    source = (
        "import functools\n"
        "from tests_registry_target import REG\n"
        "from manibo.spaces import Sphere\n"
        "REG.register('half-lambda', lambda: 1)\n"
        "REG.register('half-partial', functools.partial(max, 1))\n"
        "REG.register('half-class', Sphere)\n"
        "raise RuntimeError('failed after registering')\n"
    )
    reg = _plugin_files(fresh_plugins, tmp_path, {"mb_half.py": source}, [("half", "mb_half")])
    with pytest.raises(PluginError, match="RuntimeError: failed after registering"):
        reg.names()
    for name in ("half-lambda", "half-partial", "half-class"):
        assert name not in reg._objects
        with pytest.raises(PluginError, match="'half'"):
            reg.get(name)


def test_a_broken_plugin_withdraws_its_own_names_not_those_of_a_plugin_it_imported(
    fresh_plugins, tmp_path
):
    # two plug-ins of one namespace package; the broken one imports the healthy one first
    files = {
        "mb_acme/__init__.py": "",
        "mb_acme/good.py": "from tests_registry_target import REG\nREG.register('good', len)\n",
        "mb_acme/bad.py": (
            "import mb_acme.good\n"
            "from tests_registry_target import REG\n"
            "REG.register('bad', abs)\n"
            "raise RuntimeError('bad is broken')\n"
        ),
    }
    points = [("bad", "mb_acme.bad"), ("good", "mb_acme.good")]
    reg = _plugin_files(fresh_plugins, tmp_path, files, points)
    assert reg.get("good") is len
    with pytest.raises(PluginError, match=r"'bad' \(mb_acme.bad"):
        reg.get("bad")


def test_your_own_name_clashing_with_a_plugins_is_refused_before_anything_is_looked_up(
    fresh_plugins,
):
    reg = Registry("widget")

    def plugin():
        reg.register("shared-name", len)

    _entry_points(fresh_plugins, _FakeEntryPoint("p", "p.mod", plugin))

    def mine():
        return None

    with pytest.raises(ConfigurationError, match=r"'shared-name' is already registered \(builtins"):
        reg.register("shared-name", mine)
    assert reg.get("shared-name") is len


def test_a_script_that_imports_itself_registers_its_names_once(tmp_path):
    script = tmp_path / "selfreg.py"
    script.write_text(
        "from manibo.registry import Registry\n"
        "import builtins\n"
        "REG = builtins.__dict__.setdefault('_manibo_test_reg', Registry('widget'))\n"
        "def mine():\n"
        "    return 1\n"
        "REG.register('mine', mine)\n"
        "if __name__ == '__main__':\n"
        "    import selfreg  # the same file under its module name registers again\n"
        "    print(REG.get('mine').__module__)\n"
    )
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "selfreg"  # the second definition replaces the first


def test_a_broken_plugin_keeps_manibos_own_family_members_in_reach(fresh_plugins):
    from manibo.spaces import Sphere, make_space

    def broken():
        raise RuntimeError("b is broken")

    _entry_points(fresh_plugins, _FakeEntryPoint("bbb", "plug_b", broken))
    for _ in range(2):  # sphere2 is no key of the registry: it is looked up as a family member
        assert make_space("sphere2").fingerprint() == Sphere(2).fingerprint()
    with pytest.raises(PluginError, match="'bbb'"):
        make_space("no-such-space")


def test_a_failed_plugin_withdraws_the_names_of_its_submodules_and_of_modules_failing_with_it(
    fresh_plugins, tmp_path
):
    files = {
        # a helper module that registers and then fails, imported by the plug-in
        "mb_helper.py": (
            "from tests_registry_target import REG\n"
            "REG.register('helper', len)\n"
            "raise RuntimeError('helper broken')\n"
        ),
        "mb_bad2.py": "import mb_helper\n",
        # a package whose submodule registers in full before the package itself fails
        "mb_pkg/__init__.py": "import mb_pkg.sub\nraise RuntimeError('pkg broken')\n",
        "mb_pkg/sub.py": "from tests_registry_target import REG\nREG.register('sub', abs)\n",
    }
    points = [("bad2", "mb_bad2"), ("pkg", "mb_pkg")]
    reg = _plugin_files(fresh_plugins, tmp_path, files, points)
    # both failures are named, the first one first
    with pytest.raises(PluginError, match=r"^the manibo plug-in 'bad2' .*The plug-in\(s\) 'pkg' "):
        reg.names()
    assert "helper" not in reg._objects and "sub" not in reg._objects


def test_a_user_module_named_like_manibo_loads_the_plugins_when_it_registers(fresh_plugins):
    import manibo.registry as registry

    loaded = []
    fresh_plugins.setattr(registry, "_import_plugins", lambda: loaded.append(1) or [])
    code = compile("REG.register('from-contrib', len)", "manibo_contrib.py", "exec")
    exec(code, {"__name__": "manibo_contrib", "REG": Registry("widget")})
    assert loaded == [1]
