"""Each setting is declared once, in its row of the settings table (neuronctl.settings_table), and
the CLI builds its flag from that row (neuronctl.cli.setting_options): the row names the commands
that take the flag and `with_settings` gives it to them, every command's option that spells a
table setting is built from the row (help, choices, metavar, old spellings), each command gets its
settings as one argument and reads none back through click's context, a row added to the table is
at once a flag, an environment variable, a config key and a documented row, every flag a command
takes is read by its typed settings, and the installer engine's flag is `--engine` (`--backend`
still works, with the project's note)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path

import click
import msgspec
import pytest
from click.testing import CliRunner
from msgspec.structs import replace
from support.setting_reads import commands as _commands

from neuronctl import settings_table
from neuronctl.cli import docs_gen
from neuronctl.cli.setting_options import (
    CommandSettings,
    SettingOption,
    setting_option,
    settings_command,
    with_settings,
)
from neuronctl.errors import InputError
from neuronctl.settings_rules import whole_number
from neuronctl.settings_table import BY_NAME, SPECS, Spec

REPO = Path(__file__).resolve().parents[2]

SAME_SPELLING_OTHER_IDEA = {
    ("coverage", "--device"): "cpu or neuron, default cpu: where coverage runs one model's step",
    ("coverage", "--model"): "the model coverage classifies (no config key: smoke's is `model`)",
    ("coverage", "--strict"): "exit 1 on a CPU fallback, not doctor's warnings",
    ("cost", "--from"): "a smoke report to read, not where release data comes from",
    ("setup", "--lock"): "a name inside the Dockerfile's build context (its default, config `lock` "
                         "from there, else pylock.toml)",
    ("fleet npd-config", "--timeout"): "whole seconds written into NPD's config, in NPD's range",
}
"""Options that share a table setting's spelling but not its idea: each says why it is not the
setting (the test fails on an entry no longer needed, so the list cannot rot)."""


def _table_spellings() -> dict[str, list[Spec]]:
    """The settings' flags (an old spelling is another idea's now: `--python` is an interpreter;
    where a command still takes one, it is its setting's hidden SettingOption)."""
    spellings: dict[str, list[Spec]] = {}
    for s in SPECS:
        if s.flag:
            spellings.setdefault(s.flag, []).append(s)
    return spellings


def _check_setting_option(path: str, command: click.Command, option: SettingOption) -> None:
    spec = option.spec
    assert settings_command(command.callback) == path, (path, "not under with_settings")
    if option.old is not None:  # an old spelling: hidden, no help, the row lists it
        assert option.hidden and option.opts == [option.old] and option.old in spec.old_flags
        assert option.name == f"old_{spec.name}"
        return
    assert option.opts == [spec.flag] and option.name == spec.name, (path, option.opts)
    assert option.help == spec.help_for(path) and option.help, (path, spec.name)
    assert "{default}" not in option.help
    assert option.multiple == spec.multiple and option.is_flag == spec.is_flag
    if spec.metavar:
        assert option.metavar == spec.metavar
    if spec.choices is not None:
        assert isinstance(option.type, click.Choice)
        assert tuple(option.type.choices) == spec.choices
    assert path in spec.commands, (path, spec.name, spec.commands)  # the row says where it is


def test_every_option_spelled_as_a_setting_is_built_from_its_row() -> None:
    spellings, used, seen_other = _table_spellings(), set(), set()
    for path, command in _commands():
        for param in command.params:
            if isinstance(param, SettingOption):
                _check_setting_option(path, command, param)
                used.add(param.spec.name)
                continue
            for opt in getattr(param, "opts", []):
                if opt in spellings:
                    assert (path, opt) in SAME_SPELLING_OTHER_IDEA, (
                        f"`neuronctl {path}` declares {opt} itself: build it with "
                        f"setting_option({spellings[opt][0].name!r})")
                    seen_other.add((path, opt))
    assert seen_other == set(SAME_SPELLING_OTHER_IDEA)
    # every row with a flag is some command's flag: the table holds no dead row
    assert used == {s.name for s in SPECS if s.flag}


def test_each_table_flag_is_on_the_commands_the_row_names() -> None:
    commands = dict(_commands())
    with_settings_on = {path for path, command in commands.items()
                        if settings_command(command.callback) is not None}
    for spec in SPECS:
        assert bool(spec.commands) == bool(spec.flag), (
            f"row {spec.name}: a row with a flag names the commands that take it "
            f"(commands=(\"lock\", ...)); a row without one names none")
        for path in spec.commands:
            known = ", ".join(sorted(repr(p) for p in commands))
            assert path in commands, (f"row {spec.name} names `neuronctl {path}`: no such command "
                                      f"(known: {known})")
            assert path in with_settings_on, (
                f"row {spec.name} names `neuronctl {path}`, which takes no settings yet: put "
                f"@with_settings({path!r}, ItsSettings) on top of it (docs/maintaining.md)")
        on = {path for path, command in commands.items() for p in command.params
              if isinstance(p, SettingOption) and p.spec is spec and p.old is None}
        assert on == set(spec.commands), spec.name


def test_a_spelling_twice_on_one_command_is_refused_where_it_is_built(new_row, monkeypatch) -> None:
    """Two rows (or a row and the command's own option) with one spelling on one command: click
    would list both and give the value to one of them, silently."""
    twice = replace(NEW, name="demo_again", key=None, env=None)
    monkeypatch.setattr(settings_table, "SPECS", (*settings_table.SPECS, twice))
    monkeypatch.setitem(settings_table.BY_NAME, twice.name, twice)
    with pytest.raises(ValueError, match=r"row demo_depth: `neuronctl demo` already has --demo-depth"):
        _demo()
    monkeypatch.setattr(settings_table, "SPECS", tuple(s for s in settings_table.SPECS if s is not twice))
    with pytest.raises(ValueError, match=r"row demo_depth: `neuronctl demo` already has --demo-depth"):
        @click.command("demo")
        @with_settings("demo")
        @click.option("--demo-depth")
        def clash(settings: CommandSettings, demo_depth: str) -> None: ...


def test_no_command_takes_a_setting_as_a_parameter_or_reads_one_from_the_context() -> None:
    """The body gets one `settings` argument; no setting flag (nor its old spelling) reaches it
    as a parameter, and nothing in cli/ reads a flag's source or value back through click's
    context but the one place that builds the settings."""
    for path, command in _commands():
        options = [p for p in command.params if isinstance(p, SettingOption)]
        if not options:
            continue
        body = inspect.unwrap(command.callback)  # type: ignore[arg-type]
        names = set(inspect.signature(body).parameters)
        assert "settings" in names, path
        assert not names & {str(p.name) for p in options}, (path, names)
    allowed_meta = {"app.py": "the notes said once an invocation",
                    "cmd_cache.py": "the cache group's --python/--keep for its subcommands"}
    for source in sorted((REPO / "neuronctl" / "cli").glob("*.py")):
        if source.name == "setting_options.py":
            continue
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr != "get_parameter_source", (source.name, node.lineno)
                assert not (node.attr == "params" and isinstance(node.value, ast.Name)
                            and node.value.id == "ctx"), (source.name, node.lineno)
                if node.attr == "meta":
                    assert source.name in allowed_meta, (source.name, node.lineno)
            if isinstance(node, ast.ImportFrom) and node.module == "neuronctl.cli.options":
                assert not {a.name for a in node.names} & {"typed", "resolve", "given_values",
                                                           "renamed"}, source.name


def test_every_commands_settings_class_can_cache_a_typed_field() -> None:
    """docs/maintaining.md says a new typed field is a cached_property: every command's settings
    class holds an instance __dict__ to cache it in (a Struct without one raised "No '__dict__'
    attribute ... to cache" as an internal error on the first read of the new flag)."""
    import importlib

    from neuronctl.cli.settings_types import Typed

    for name in ("settings_types", "host_settings_types", "stack_settings_types",
                 "fetch_settings_types"):
        importlib.import_module(f"neuronctl.cli.{name}")
    found, pending = [], [Typed]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    assert len(found) > 15  # every module's classes were reached
    lacking = [c.__qualname__ for c in found if not c.__struct_config__.dict]
    assert not lacking, f"give these dict=True (or Typed's): {lacking}"


# -- one row: a flag, a variable, a config key and a documented row --------------------------------

NEW = Spec("demo_depth", "--demo-depth", "NEURONCTL_DEMO_DEPTH", "demo_depth", (int,),
           "a whole number", "how deep the demo goes", whole_number(0, 99), 3,
           metavar="N", commands=("demo",),
           help="How deep the demo goes [{default}].", help_words=(("", "config demo_depth, "
                                                                     "else 3"),))
"""A row as a newcomer adds it: its rule, its default, its help and the commands that take it."""


@pytest.fixture
def new_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Spec:
    """The table with one row more, as a newcomer would add it (nothing else is touched)."""
    monkeypatch.setattr(settings_table, "SPECS", (*SPECS, NEW))
    monkeypatch.setitem(settings_table.BY_NAME, NEW.name, NEW)
    monkeypatch.setitem(settings_table.BY_KEY, str(NEW.key), NEW)
    monkeypatch.chdir(tmp_path)
    return NEW


def _demo() -> click.Command:
    @click.command("demo")
    @with_settings("demo")  # the flag comes from the row, which names "demo"
    def demo(settings: CommandSettings) -> None:
        click.echo(settings.resolve("demo_depth").said())

    return demo


def test_a_new_row_is_a_flag_a_variable_a_config_key_and_a_docs_row(new_row, tmp_path) -> None:
    demo, runner = _demo(), CliRunner()
    shown = runner.invoke(demo, ["--help"])
    assert "--demo-depth N" in shown.output and "How deep the demo goes [config demo_depth, " \
        "else 3]." in " ".join(shown.output.split())
    assert runner.invoke(demo, []).output == "3\n"
    (tmp_path / "pyproject.toml").write_text("[tool.neuronctl]\ndemo_depth = 5\n")
    assert runner.invoke(demo, []).output == "5 (from pyproject.toml)\n"
    env = {"NEURONCTL_DEMO_DEPTH": "6"}
    assert runner.invoke(demo, [], env=env).output == "6 (from NEURONCTL_DEMO_DEPTH)\n"
    assert runner.invoke(demo, ["--demo-depth", "7"], env=env).output == "7 (from --demo-depth)\n"
    for typed in ("deep", "100", "\u0663", "1_0"):  # the flag is checked by the row's rule too
        bad = runner.invoke(demo, ["--demo-depth", typed])
        assert bad.exit_code == 2 and "expected a whole number, 0 to 99" in bad.output, typed
    for bad_env in ("deep", "\u00b2", "9" * 5000, "-1"):
        bad = runner.invoke(demo, [], env={"NEURONCTL_DEMO_DEPTH": bad_env})
        assert isinstance(bad.exception, InputError), bad_env
        assert "NEURONCTL_DEMO_DEPTH: expected a whole number, 0 to 99" in str(bad.exception)
    from neuronctl.config import validate

    with pytest.raises(InputError, match="demo_depth: expected a whole number"):
        validate({"demo_depth": "five"}, "pyproject.toml")
    assert "| demo_depth | `--demo-depth` | `NEURONCTL_DEMO_DEPTH` | `demo_depth` | how deep the " \
           "demo goes |" in docs_gen.settings_table()
    assert "| `demo_depth` | number | a whole number |" in docs_gen.config_page()


def test_without_the_row_the_flag_and_the_key_are_unknown(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyError):
        setting_option("demo_depth")
    from neuronctl.config import validate

    with pytest.raises(InputError, match="unknown key 'demo_depth'"):
        validate({"demo_depth": 5}, "pyproject.toml")
    assert "demo_depth" not in docs_gen.settings_table()


# -- the installer engine: --engine, once --backend ------------------------------------------------

@pytest.fixture
def engine_seen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The engine install's one rule chose, and from where, said as its error (the install stops
    there: nothing is planned, nothing installed)."""
    def chosen(value, where, *args, **kwargs):
        raise InputError(f"engine {value} from {where}")

    monkeypatch.setattr("neuronctl.backend.choose.choose_engine", chosen)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEURONCTL_ENGINE", raising=False)
    monkeypatch.delenv("NEURONCTL_BACKEND", raising=False)
    return tmp_path


def _install_offline(cli, *args: str):
    return cli("install", "--python", sys.executable, "--offline", *args)


def test_backend_still_works_with_its_note_and_engine_is_the_flag(cli, engine_seen) -> None:
    new = _install_offline(cli, "--engine", "pip")
    assert new.code == 2 and "engine pip from --engine" in new.err and "note:" not in new.err
    old = _install_offline(cli, "--backend", "pip")
    assert old.code == 2 and "engine pip from --backend" in old.err
    assert "neuronctl: note: --backend is now --engine (the installer engine); the old spelling " \
           "still works" in old.err
    same = _install_offline(cli, "--backend", "pip", "--engine", "pip")  # one request, spelled twice
    assert same.code == 2 and "engine pip from --engine" in same.err
    both = _install_offline(cli, "--backend", "uv", "--engine", "pip")  # two values: neither silently wins
    assert both.code == 2 and "from --" not in both.err  # stopped before the engine is chosen
    assert "--backend and --engine are one setting given two values (--backend is the old " \
           "spelling): give one" in both.err and "Traceback" not in both.err
    bad = _install_offline(cli, "--backend", "conda")
    assert bad.code == 2 and "'conda' is not one of 'auto', 'pip', 'uv'" in bad.err


def test_engine_is_the_documented_flag(cli) -> None:
    shown = cli("install", "--help")
    assert "--engine [auto|pip|uv]" in shown.out and "--backend" not in shown.out.replace(
        "once --backend", "")
    section = docs_gen.cli_page().split("### neuronctl install\n", 1)[1].split("\n### ", 1)[0]
    assert "`--engine`" in section and "`--backend`" not in section
    install_md = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
    assert "--engine" in install_md


def test_the_engine_variable_and_key_with_their_old_names(cli, engine_seen, monkeypatch) -> None:
    """NEURONCTL_BACKEND and config `backend` still count (compatibility); the new names win
    where both are set, and the source is named as it was written."""
    monkeypatch.setenv("NEURONCTL_BACKEND", "uv")
    assert "engine uv from NEURONCTL_BACKEND" in _install_offline(cli).err
    monkeypatch.setenv("NEURONCTL_ENGINE", "pip")
    assert "engine pip from NEURONCTL_ENGINE" in _install_offline(cli).err
    monkeypatch.delenv("NEURONCTL_ENGINE")
    monkeypatch.delenv("NEURONCTL_BACKEND")
    (engine_seen / "pyproject.toml").write_text('[tool.neuronctl]\nbackend = "uv"\n')
    assert "engine uv from config backend" in _install_offline(cli).err
    (engine_seen / "pyproject.toml").write_text('[tool.neuronctl]\nbackend = "uv"\n'
                                                'engine = "pip"\n')
    assert "engine pip from config engine" in _install_offline(cli).err
    (engine_seen / "pyproject.toml").write_text('[tool.neuronctl]\nbackend = "conda"\n')
    bad = _install_offline(cli)
    assert bad.code == 2 and f"config backend ({engine_seen / 'pyproject.toml'}) 'conda': expected one " \
        "of auto, pip, uv" in bad.err


# -- the two --timeout settings, and the sysroot through the one rule -----------------------------

def test_the_two_timeouts_say_whose_flag_each_is() -> None:
    request, run = BY_NAME["timeout"], BY_NAME["run_timeout"]
    assert request.flag == run.flag == "--timeout"
    assert not set(request.commands) & set(run.commands)
    assert request.help_for("lock") != run.help_for("smoke")
    assert run.help_for("smoke") == "Seconds before the whole run is killed [600]."


def test_sysroot_is_the_settings_rule_flag_over_variable(tmp_path) -> None:
    from probes.sysroot import SysRoot
    from probes.tools import sysroot_tools_allowed

    flag_root, env_root = tmp_path / "flag", tmp_path / "env"
    for root in (flag_root, env_root):
        (root / "proc").mkdir(parents=True)
    env = {"NEURONCTL_SYSROOT": str(env_root)}
    assert SysRoot.from_env(None, env).root == env_root
    assert SysRoot.from_env(flag_root, env).root == flag_root
    assert SysRoot.from_env(None, {}).is_host
    with pytest.raises(InputError, match="NEURONCTL_SYSROOT"):
        SysRoot.from_env(None, {"NEURONCTL_SYSROOT": str(tmp_path / "missing")})
    with pytest.raises(InputError, match="--sysroot"):
        SysRoot.from_env(tmp_path / "missing", env)
    tree = SysRoot.from_env(flag_root, {})
    assert not sysroot_tools_allowed(tree, {})
    assert not sysroot_tools_allowed(tree, {"NEURONCTL_SYSROOT_TOOLS": "0"})
    with pytest.raises(InputError, match=r"NEURONCTL_SYSROOT_TOOLS: expected 1 \(on\) or 0 \(off\), got 'yes'"):
        sysroot_tools_allowed(tree, {"NEURONCTL_SYSROOT_TOOLS": "yes"})  # once silently off
    assert sysroot_tools_allowed(tree, {"NEURONCTL_SYSROOT_TOOLS": "1"})
    assert BY_NAME["sysroot_tools"].env == "NEURONCTL_SYSROOT_TOOLS"


def test_the_old_spellings_note_keeps_each_commands_reason() -> None:
    spec = BY_NAME["check_timeout"]
    assert spec.old_why is None and dict(spec.old_whys)["doctor"] == " (each check's time limit)"
    assert replace(spec, old_whys=()).old_flags == ("--timeout",)


def _imports(module: str) -> set[str]:
    """Every neuronctl module `module` imports: at the top, inside functions, under
    TYPE_CHECKING (an import cycle counts whichever way it is written)."""
    path = REPO / Path(*module.split(".")).with_suffix(".py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("group", [
    ("neuronctl.config", "neuronctl.settings", "neuronctl.settings_table", "neuronctl.cache_dir"),
    ("neuronctl.cli.app", "neuronctl.cli.options", "neuronctl.cli.setting_options"),
], ids=["settings-core", "cli-options"])
def test_the_settings_modules_import_each_other_one_way(group) -> None:
    edges = {m: {o for o in group if o != m and o in _imports(m)} for m in group}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for other in edges[module]:
            visit(other, (*path, module))
        done.add(module)

    for module in group:
        visit(module, ())


def test_the_defaults_the_help_states_are_the_ones_the_commands_use() -> None:
    """The table's help says each command's default in words: they are the constants the
    commands fall back to (a changed constant fails here, not silently in the help)."""
    from neuronctl.cli.cmd_fleet import FLEET_RUN_S
    from neuronctl.ops.env import TORCH_TIMEOUT_S
    from neuronctl.ops.smoke import DEFAULT_TIMEOUT

    check, run = BY_NAME["check_timeout"], BY_NAME["run_timeout"]
    assert check.help_for("env").endswith(f"else {TORCH_TIMEOUT_S:g}].")
    assert check.help_for("probe").endswith("else 120].")
    assert run.help_for("smoke").endswith(f"[{DEFAULT_TIMEOUT:g}].")
    assert run.help_for("fleet doctor").endswith(f"[{FLEET_RUN_S:g}].")
    assert f"else {BY_NAME['timeout'].default:g}]" in BY_NAME["timeout"].help


def _help_source_faults(spec: Spec) -> list[tuple[str, str]]:
    """(command, what is wrong) for each place where the flag's help names a source that is not
    its row's: another variable, another config key, or a default its row does not have."""
    keys = {k for k in (spec.key, spec.shared_key) if k}
    shown = spec.shown_default
    faults = []
    for command in spec.commands or ("",):
        words = spec.help_for(command)
        faults += [(command, f"variable {v}") for v in re.findall(r"\bNEURONCTL_[A-Z_<>]+", words)
                   if v != spec.env]
        faults += [(command, f"key {k}") for k in re.findall(r"\bconfig `?([a-z_]+)", words)
                   if k not in keys]
        chain = re.search(r"\belse ([^\],;]+)\]", words)
        if shown is not None and chain and chain.group(1) != shown:
            faults.append((command, f"default {chain.group(1)}, the row's is {shown}"))
    return faults


def test_the_sources_a_flags_help_names_are_its_own_rows() -> None:
    """A flag's help says its sources in words (`[NEURONCTL_TIMEOUT, else config timeout, else
    30]`): each variable and config key it names is its row's own, and where the row's default is
    a plain value, the help's last `else` is that value. A renamed variable or key, or a changed
    default, fails here instead of leaving the help saying the old one."""
    assert {spec.name: _help_source_faults(spec) for spec in SPECS if _help_source_faults(spec)} == {}


@pytest.mark.parametrize(("change", "fault"), [
    ({"env": "NEURONCTL_NET_TIMEOUT"}, "variable NEURONCTL_TIMEOUT"),
    ({"key": "net_timeout"}, "key timeout"),
    ({"default": 45.0}, "default 30, the row's is 45"),
])
def test_a_renamed_variable_or_key_or_a_new_default_is_a_help_fault(change, fault) -> None:
    changed = replace(BY_NAME["timeout"], **change)
    assert _help_source_faults(changed) == [(c, fault) for c in ("lock", "install", "download")]


# -- each command's settings: one typed, frozen object, read by field -------------------------------

_SETTINGS_MODULES = {"setting_options.py", "settings_types.py", "stack_settings_types.py",
                     "fetch_settings_types.py", "host_settings_types.py"}
"""Where settings are read by name: the building block and the typed objects built on it."""

_BY_NAME_READS = {"value", "values", "resolve", "get", "config_place", "config_list",
                  "config_entries", "config_file"}


def _typed_settings_class(command: click.Command) -> type:
    body = inspect.unwrap(command.callback)  # type: ignore[arg-type]
    annotation = inspect.signature(body).parameters["settings"].annotation
    found = body.__globals__.get(annotation) if isinstance(annotation, str) else annotation
    assert isinstance(found, type), (body.__name__, annotation)
    return found


def test_each_command_gets_its_own_typed_frozen_settings() -> None:
    """The body's `settings` is a typed, frozen dataclass built by its `resolve` classmethod,
    not the generic object read by name (whose reads mypy cannot check)."""

    from neuronctl.cli import (
        fetch_settings_types,
        host_settings_types,
        settings_types,
        stack_settings_types,
    )

    seen = set()
    for path, command in _commands():
        if settings_command(command.callback) is None:
            continue
        kind = _typed_settings_class(command)
        assert kind is not CommandSettings, f"`neuronctl {path}` reads its settings by name"
        assert kind.__module__ in (settings_types.__name__, stack_settings_types.__name__,
                                   fetch_settings_types.__name__, host_settings_types.__name__), path
        assert issubclass(kind, msgspec.Struct) and kind.__struct_config__.frozen, path
        assert issubclass(kind, settings_types.Typed), path
        seen.add(kind)
    assert len(seen) >= 10  # one per command or family, not one for all


def _reads_by_name(source: Path) -> list[tuple[int, str]]:
    """Calls in `source` that read a table setting by its name: `x.value("release")`, a
    resolver's `config_place("lock")`, `given.get("engine")`."""
    text = source.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _BY_NAME_READS and node.args):
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and first.value in BY_NAME):
            continue
        receiver = ast.get_source_segment(text, node.func.value) or ""
        if node.func.attr == "get" and not any(w in receiver for w in ("given", "settings",
                                                                       "rules", "resolver")):
            continue  # a dict's own key that happens to share a setting's name
        found.append((node.lineno, f"{receiver}.{node.func.attr}({first.value!r})"))
    return found


def test_no_command_reads_a_setting_by_its_name() -> None:
    """Outside the settings modules nothing in cli/ reads a setting by a string name, nor
    reaches past the typed fields to what they are built from."""
    allowed = {("app.py", "self.resolver().resolve('manifest')"):
               "App.manifest: --manifest > NEURONCTL_MANIFEST > the user's config > stored data, "
               "with where it came from for a file that cannot be read"}
    seen = set()
    for source in sorted((REPO / "neuronctl" / "cli").glob("*.py")):
        if source.name in _SETTINGS_MODULES:
            continue
        for line, read in _reads_by_name(source):
            assert (source.name, read) in allowed, f"{source.name}:{line}: {read}"
            seen.add((source.name, read))
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            # what the typed fields are built from: theirs alone (a Setting's own `.given`,
            # set by the user or not, is a typed field and fine)
            assert node.attr not in ("invocation", "_rules"), (source.name, node.lineno)
            if node.attr in ("given", "rules"):
                assert not (isinstance(node.value, ast.Name) and node.value.id == "settings"), (
                    source.name, node.lineno, node.attr)
    assert seen == set(allowed)


def test_the_scan_finds_a_read_by_name(tmp_path) -> None:
    """The scan above is not blind: each way of reading by name is found."""
    body = tmp_path / "cmd_demo.py"
    body.write_text('def f(settings, given, d):\n'
                    '    settings.value("release")\n    settings.resolve("device")\n'
                    '    given.get("engine")\n    settings.rules.config_place("lock")\n'
                    '    d.get("device")\n    settings.value("not_a_setting")\n')
    assert [r for _, r in _reads_by_name(body)] == [
        "settings.value('release')", "settings.resolve('device')", "given.get('engine')",
        "settings.rules.config_place('lock')"]


def test_typed_settings_are_frozen_and_typed_where_they_are_built(monkeypatch) -> None:
    from types import MappingProxyType

    from neuronctl.cli.host_settings_types import InitSettings, SysrootSettings
    from neuronctl.cli.setting_options import Given
    from neuronctl.cli.settings_types import checked
    from neuronctl.cli.stack_settings_types import InstallSettings
    from neuronctl.settings import Flag

    given = Given(MappingProxyType({"release": Flag("2.33.1", "--release"),
                                    "python_versions": Flag(("3.12", "3.11"), "--python"),
                                    "lock": Flag(Path("pylock.toml"), "--lock")}))
    init = InitSettings.resolve(CommandSettings.of(given))
    assert (init.release, init.torch, init.python_versions) == ("2.33.1", None, ("3.12", "3.11"))
    with pytest.raises(AttributeError, match="immutable"):
        init.release = "2.34"  # type: ignore[misc]
    install = InstallSettings.resolve(CommandSettings.of(given))
    assert install.lock == Path("pylock.toml") and install.typed.release == "2.33.1"
    assert install.sysroot is None and not install.targets
    # a value of another type than the field's is neuronctl's bug, named, never passed on
    wrong = Given(MappingProxyType({"sysroot": Flag("/host", "--sysroot")}))
    with pytest.raises(TypeError, match="setting sysroot: expected Path, got str"):
        SysrootSettings.resolve(CommandSettings.of(wrong))
    with pytest.raises(TypeError, match="setting timeout: expected float"):
        checked(30, float, "timeout")


@pytest.mark.parametrize("name", ["cli.stack_settings_types.LockSettings",
                                  "cli.fetch_settings_types.ReleasesUpdateSettings",
                                  "cli.host_settings_types.EnvSettings",
                                  "cli.host_settings_types.ProbeSettings",
                                  "cli.host_settings_types.RunSettings"])
def test_a_settings_class_that_adds_no_field_is_still_its_own_frozen_value(name: str) -> None:
    """The classes that add no field are plain subclasses of their base's record: still built by
    their own resolve, frozen, shown by their own name, equal only to their own kind."""
    import importlib
    from types import MappingProxyType

    from neuronctl.cli.setting_options import Given

    module, _, cls_name = name.rpartition(".")
    kind = getattr(importlib.import_module(f"neuronctl.{module}"), cls_name)
    base = kind.__mro__[1]
    assert kind.__struct_fields__ == base.__struct_fields__  # what this test is about
    invocation = CommandSettings.of(Given(MappingProxyType({})))
    one, two = kind.resolve(invocation), kind.resolve(invocation)
    assert type(one) is kind and repr(one).startswith(f"{cls_name}(invocation=")
    assert one == two and kind.__struct_config__.frozen
    as_base = base(*(getattr(one, f) for f in base.__struct_fields__))
    assert one != as_base  # equality compares the class too
    with pytest.raises(AttributeError, match="immutable"):
        one.invocation = invocation  # type: ignore[misc]


def test_a_setting_a_command_never_reads_is_not_its_error(cli, tmp_path, monkeypatch) -> None:
    """Typed settings resolve a field when the body reads it: a bad config value for a setting
    a command does not read (lock --check does not read `timeout`; `releases` reads none of
    them) is not that command's error; the commands that read it stop at it, naming it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.neuronctl]\ntimeout = 1e9\n")
    said = f"config timeout ({tmp_path / 'pyproject.toml'}): timeout must be a positive number of seconds"
    listed = cli("releases", "--json")
    assert listed.code == 0 and said not in listed.err
    locked = cli("lock", "--offline")
    assert locked.code == 2 and said in locked.err
    checked = cli("lock", "--check", "--offline")
    assert checked.code == 1 and said not in checked.err  # past the settings, to the lock
    assert "pylock.toml: no lock file" in checked.out + checked.err
    probed = cli("probe", "--python", sys.executable)
    assert probed.code == 2 and said in probed.err  # check_timeout falls back on `timeout`


def test_every_parameter_a_command_is_given_is_used_in_it() -> None:
    """A value a command's function is given and never reads was read some other way (back
    through click's context, as --json once was: the printer holds it now, and the option hands
    the body nothing)."""
    unused = []
    for path, command in _commands():
        body = inspect.unwrap(command.callback)  # type: ignore[arg-type]
        function = ast.parse(textwrap.dedent(inspect.getsource(body))).body[0]
        names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        unused += [f"neuronctl {path}: {p}" for p in inspect.signature(body).parameters
                   if p not in names]
    assert unused == []
