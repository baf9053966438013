"""The options several commands share, declared once, and the one way a command turns its flags,
the environment and the config into resolved settings (neuronctl.settings: a flag the user typed
> environment > config > default; click's ParameterSource tells a typed flag from a default)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from neuronctl.devices import DEVICES
from neuronctl.settings import Flag, Resolver, Setting

if TYPE_CHECKING:
    from neuronctl.ops.lock.stack_settings import StackSettings

F = TypeVar("F", bound=Callable[..., Any])

DEVICE_CHOICE = click.Choice(DEVICES)

_RENAMED = "neuronctl.renamed"
"""ctx.meta's table: the values typed under an old spelling, by the new option's parameter."""


# -- resolving -----------------------------------------------------------------------------------

_NOTED = "neuronctl.noted"
"""ctx.meta's set of the notes said already: each says itself once an invocation."""


def note(line: str) -> None:
    """A one-line note on stderr (an old spelling accepted, an old config key read, a project
    file's trust root not used), once per invocation."""
    ctx = click.get_current_context(silent=True)
    said: set[str] = ctx.find_root().meta.setdefault(_NOTED, set()) if ctx else set()
    if line in said:
        return
    said.add(line)
    click.echo(f"neuronctl: note: {line}", err=True)


def resolver(*, for_node: bool = False) -> Resolver:
    """The rule over this invocation's config files (each read once) and environment;
    `for_node`: the run acts on its node (no project file is read)."""
    from neuronctl.cli.app import get_app

    app = get_app()
    return Resolver.of(app.config(), note, user=app.user_config(), for_node=for_node)


def typed(param: str) -> Flag | None:
    """The option `param` of the running command as the user typed it (under its own spelling or
    an old one), else None: its default is the resolver's last resort, not a flag."""
    ctx = click.get_current_context()
    if ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE:
        option = next(p for p in ctx.command.params if p.name == param)
        return Flag(ctx.params[param], max(option.opts, key=len))
    found: Flag | None = ctx.meta.get(_RENAMED, {}).get(param)
    return found


def resolve(name: str, param: str | None = None, rules: Resolver | None = None) -> Setting[Any]:
    """Setting `name` for the running command (`param`: its option's parameter, if not `name`)."""
    return (rules or resolver()).resolve(name, typed(param or name))


def renamed(old: str, new: str, param: str, why: str = "", **kwargs: Any) -> Callable[[F], F]:
    """`old`, the spelling option `new` (parameter `param`) had, still accepted and hidden from
    help; using it prints a one-line note. `typed(param)` returns its value."""

    def keep(ctx: click.Context, option: click.Parameter, value: Any) -> Any:
        if option.name and ctx.get_parameter_source(option.name) is ParameterSource.COMMANDLINE:
            note(f"{old} is now {new}{why}; the old spelling still works")
            ctx.meta.setdefault(_RENAMED, {})[param] = Flag(value, old)
        return value

    return click.option(old, f"renamed_{param}", hidden=True, expose_value=False, callback=keep,
                        **kwargs)


# -- shared options ------------------------------------------------------------------------------

def json_option(f: F) -> F:
    """`--json` as every command spells it (`as_json`). The error boundary notices it given (on
    any command: cli/main.py watches every `--json` and `--format`), and then writes one JSON
    document on failure too; a command emits its own through `output.emit_json`."""
    return click.option("--json", "as_json", is_flag=True, help="Versioned JSON output on stdout "
                        "(one document, on failure too; where there is --format, the same as "
                        "--format json).")(f)


def interpreter_option(role: str, default: str = "else neuronctl's own") -> Callable[[F], F]:
    """`--python`: always the target interpreter (platform targets are `--python-version`);
    `role`: what the command does with it."""
    return click.option("--python", "python", metavar="PATH",
                        help=f"Interpreter (or venv directory) {role}; default: the active "
                             f"VIRTUAL_ENV, else ./.venv, {default}.")


python_option = interpreter_option("to inspect")


def sysroot_option(f: F) -> F:
    return click.option("--sysroot", type=click.Path(path_type=Path, file_okay=False),
                        help="Read hardware facts under this root (default: / or "
                             "NEURONCTL_SYSROOT).")(f)


def device_option(default_help: str) -> Callable[[F], F]:
    """`--device`: the device the environment is for (config `device`, else auto)."""
    return click.option("--device", type=DEVICE_CHOICE, default=None,
                        help=f"The device this environment is for: {default_help} "
                             "[config device, else auto].")


def timeout_option(f: F) -> F:
    """`--timeout`: each network request's limit (config `timeout`)."""
    return click.option("--timeout", type=float,
                        help="Each network request's time limit in seconds [config timeout, "
                             "else 30].")(f)


def check_timeout_option(what: str, default: str = "the level's budget", *,
                         was_timeout: str | None = None) -> Callable[[F], F]:
    """`--check-timeout`: the time limit of work run in the target (config `check_timeout`);
    `what`: what it bounds; `was_timeout`: where it was once `--timeout`, the old spelling's note
    (still accepted)."""
    once = " (once --timeout, still accepted)" if was_timeout else ""

    def apply(f: F) -> F:
        if was_timeout:
            f = renamed("--timeout", "--check-timeout", "check_timeout", f" ({was_timeout})",
                        type=float)(f)
        return click.option("--check-timeout", type=float, default=None,
                            help=f"Seconds: {what}{once} [config check_timeout, else "
                                 f"{default}].")(f)

    return apply


def target_options(default_help: str, platform_help: str = "default: config platform, else "
                   "manylinux_2_28_x86_64") -> Callable[[F], F]:
    """The platform targets: `--python-version X.Y` (once `--python`, still accepted with a note)
    and `--platform TAG`."""

    def apply(f: F) -> F:
        f = click.option("--platform", "platforms", multiple=True, metavar="TAG",
                         help=f"Target platform tag (repeatable; {platform_help}).")(f)
        f = renamed("--python", "--python-version", "pythons",
                    " (a target version; --python is an interpreter)", multiple=True)(f)
        return click.option("--python-version", "pythons", multiple=True, metavar="X.Y",
                            help=f"Target Python version (repeatable; {default_help}; once "
                                 "--python, still accepted).")(f)

    return apply


def request_options(f: Any) -> Any:
    """The options lock and install share to say what stack to build."""
    options = [
        click.option("--release", help="Neuron release: a version, latest (newest fully published) or "
                                       "newest (default: config, else the newest native one)."),
        click.option("--torch", help="PyTorch line, e.g. 2.14 (default: the release's own)."),
        click.option("--with", "with_", multiple=True, metavar="REQ",
                     help="Your own requirement, e.g. 'transformers>=4.50' (repeatable)."),
        click.option("--index", "indexes", multiple=True, metavar="NAME=URL",
                     help="Replace or add an index (also NEURONCTL_INDEX_<NAME>, config `indexes`)."),
        click.option("--route", "routes", multiple=True, metavar="PKG=NAME",
                     help="Look PKG up on index NAME only (config `routes`)."),
        click.option("--latest", is_flag=True,
                     help="Newest builds within the release's lines instead of its exact versions."),
        click.option("--offline", is_flag=True, help="Only the HTTP cache and file:// indexes."),
        timeout_option,
        click.option("--allow-unsupported", is_flag=True,
                     help="Proceed where a documented rule (OS, support window, driver/runtime) "
                          "forbids the stack; the rule and its source are still named."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def stack_settings(rules: Resolver, *, latest: bool, fallback: str | None = None,
                   pythons: str = "pythons", platforms: str = "platforms") -> StackSettings:
    """The stack the running command's request options ask for, resolved; `pythons` and
    `platforms`: the parameters that hold the target (a command without them: "")."""
    from neuronctl.ops.index_routing import index_sources
    from neuronctl.ops.lock.stack_settings import StackSettings

    python = rules.resolve("python_versions", typed(pythons) if pythons else None)
    return StackSettings(
        rules.resolve("release", typed("release")), resolve("torch", rules=rules).value,
        python.value, _where(python, "python"),
        rules.resolve("platforms", typed(platforms) if platforms else None).value,
        resolve("requirements", "with_", rules).value,
        index_sources(rules, given_values("indexes"), given_values("routes")), latest, fallback)


def given_values(param: str) -> tuple[str, ...]:
    """A repeatable option's values as typed (under an old spelling too), else ()."""
    flag = typed(param)
    values = flag.value if flag is not None else ()
    return tuple(str(v) for v in values) if isinstance(values, tuple | list) else ()


def _where(setting: Setting[Any], key: str) -> str:
    """How an error names a setting's value: the flag as typed, the variable, `config KEY`."""
    kind = setting.source.kind
    return setting.source.name if kind in ("flag", "env") else f"config {key}"
