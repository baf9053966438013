"""Entry point: global options, lazy command loading, and the one place errors become exit codes.

Commands are imported only when invoked, so `neuronctl --version` and `--help` stay fast
(no rich tables, requests or torch at start-up).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from neuronctl._version import __version__
from neuronctl.cli.app import App, TerminalStream, terminal_text
from neuronctl.cli.output import JsonError, command_name, error_kind, finish_json
from neuronctl.cli.setting_options import with_settings
from neuronctl.cli.settings_types import ManifestSettings
from neuronctl.errors import EXIT_FAILED, EXIT_USAGE, Interrupted, NeuronctlError, TerminateSignal

# name -> (module, attribute, one-line help shown by `neuronctl --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "cache": ("neuronctl.cli.cmd_cache", "cache", "Show or prune the Neuron compile caches."),
    "bundle": ("neuronctl.cli.cmd_bundle", "bundle",
               "Collect one redacted archive for a support case."),
    "download": ("neuronctl.cli.cmd_download", "download",
                 "Fetch a lock's files into a verified wheelhouse for offline installs."),
    "doctor": ("neuronctl.cli.cmd_doctor", "doctor",
               "Check a PyTorch-on-Neuron environment; CI-grade verdict."),
    "coverage": ("neuronctl.cli.cmd_coverage", "coverage",
                 "Which operators a model runs, and which fall back to CPU on Neuron."),
    "cost": ("neuronctl.cli.cmd_cost", "cost", "Cost per million tokens and per job, per instance type."),
    "detect": ("neuronctl.cli.cmd_detect", "detect", "Show the Neuron hardware on this machine."),
    "env": ("neuronctl.cli.cmd_env", "env", "Dump the environment for a bug report."),
    "fleet": ("neuronctl.cli.cmd_fleet", "fleet",
              "Doctor every Slurm node in one step; drift report; NPD config."),
    "init": ("neuronctl.cli.cmd_init", "init", "Write [tool.neuronctl] into ./pyproject.toml."),
    "install": ("neuronctl.cli.cmd_install", "install",
                "Install a pinned, verified Neuron PyTorch stack into an environment."),
    "lock": ("neuronctl.cli.cmd_lock", "lock",
             "Resolve a Neuron release into a hashed PEP 751 pylock.toml."),
    "migrate": ("neuronctl.cli.cmd_migrate", "migrate",
                "Find XLA-era code and pins; say what each becomes on TorchNeuron; --fix."),
    "probe": ("neuronctl.cli.cmd_probe", "probe", "Run the device probe tiers alone."),
    "releases": ("neuronctl.cli.cmd_releases", "releases",
                 "Show what each Neuron release pins; import AWS manifests."),
    "setup": ("neuronctl.cli.cmd_setup", "setup", "Plan or apply the Neuron system layer; Dockerfiles."),
    "smoke": ("neuronctl.cli.cmd_smoke", "smoke",
              "Run your model on the device, timed and checked against CPU."),
}


def _set_global(name: str) -> Any:
    """A callback that stores a global option given after the command, as users type it
    (`neuronctl doctor -q`), on the same App the group's own options fill."""

    def store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        app = ctx.find_object(App)
        if app is None:
            return
        app.command = command_name(ctx) or app.command
        if not value:
            return
        if name == "verbose":
            app.printer.verbose += int(value)
        elif name == "quiet":
            app.printer.quiet = True
        elif name == "no_color":
            app.printer.no_color = True
        elif name == "config":
            app.config_path = value

    return store


def _watch_json_option(option: click.Option) -> None:
    """Have `--json` (or `--format`) tell the App that JSON was asked for and by which command,
    whatever module defines the option, so the error boundary writes a JSON document on failure
    too. The option's own callback, if any, still runs."""
    if getattr(option, "_neuronctl_watched", False):
        return
    inner = option.callback

    def watch(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        app = ctx.find_object(App)
        if app is not None:
            app.command = command_name(ctx) or app.command
            if value is True or value == "json":
                app.printer.json_wanted = True
        return inner(ctx, param, value) if inner is not None else value

    option.callback = watch
    option._neuronctl_watched = True  # type: ignore[attr-defined]


def asks_for_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON, read from its words: for a usage error, which
    click raises before any option's callback has run."""
    words = args[:args.index("--")] if "--" in args else args
    return any(w in ("--json", "--format=json") or (w == "--format" and nxt == "json")
               for w, nxt in zip(words, [*words[1:], ""], strict=True))


def _with_global_options(command: click.Command) -> click.Command:
    """Give a command (and its subcommands) the global options it does not define itself."""
    taken = {opt for p in command.params for opt in getattr(p, "opts", [])}
    extra = [
        click.Option(["-v", "--verbose"], count=True, expose_value=False, callback=_set_global("verbose"),
                     help="More detail; tracebacks on errors (also before the command)."),
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, callback=_set_global("quiet"),
                     help="Only the verdict and errors (also before the command)."),
        click.Option(["--no-color"], is_flag=True, expose_value=False, callback=_set_global("no_color"),
                     help="No colour (also before the command)."),
        click.Option(["--config"], type=click.Path(path_type=Path, dir_okay=False), expose_value=False,
                     callback=_set_global("config"), help="Config file (also before the command)."),
    ]
    for option in extra:
        if not taken & set(option.opts):
            command.params.append(option)
    for param in command.params:
        if isinstance(param, click.Option) and {"--json", "--format"} & set(param.opts):
            _watch_json_option(param)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _with_global_options(sub)
    return command


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = getattr(module, entry[1])
        if not getattr(command, "_neuronctl_globals", False):
            _with_global_options(command)
            command._neuronctl_globals = True  # type: ignore[attr-defined]
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            near = difflib.get_close_matches(name, list(COMMANDS), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise click.UsageError(f"no such command {name!r}{hint} "
                                   f"(commands: {', '.join(sorted(COMMANDS))})", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@with_settings("", ManifestSettings)
@click.version_option(__version__, "--version", prog_name="neuronctl",
                      message="%(prog)s %(version)s")
@click.option("-v", "--verbose", count=True, help="More detail; tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only the verdict and errors.")
@click.option("--no-color", is_flag=True, help="No colour (NO_COLOR is honoured too).")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Config file (default: [tool.neuronctl] in ./pyproject.toml).")
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool, no_color: bool,
        config_path: Path | None, settings: ManifestSettings) -> None:
    """neuronctl: get PyTorch onto AWS Trainium and keep it there."""
    app = ctx.ensure_object(App)
    printer = app.printer
    printer.verbose, printer.quiet = verbose, quiet
    printer.no_color = no_color  # NO_COLOR and the rest: the printer's one rule (colour_wanted)
    app.config_path = config_path
    app.manifest_path = settings.manifest


def _error(app: App, kind: str, message: str, hint: str | None = None) -> JsonError:
    # The single error boundary: whatever an exception's text carries (a URL with credentials
    # from a library's message, a token; a path or a value with escape sequences or newlines),
    # it is one line through the terminal sanitiser, redacted, before anyone sees it.
    label = app.printer.paint("neuronctl: error:", "red", err=True)
    click.echo(f"{label} {terminal_text(message, None)}", err=True)
    if hint:
        click.echo(f"hint: {terminal_text(hint, None)}", err=True)
    return JsonError.of(kind, message, hint)


def _traceback() -> None:
    import traceback

    click.echo(terminal_text(traceback.format_exc(), None, lines=True).rstrip("\n"), err=True)


def _click_message(exc: click.ClickException) -> str:
    """click's message in neuronctl's words: lower-case, and an unknown option's suggestion
    worded as every other 'did you mean' ('; did you mean '--json'?')."""
    if isinstance(exc, click.NoSuchOption):
        near = exc.possibilities or []
        return f"no such option: {exc.option_name}" + (
            f"; did you mean {near[0]!r}?" if len(near) == 1
            else f" (possible options: {', '.join(near)})" if near else "")
    message = exc.format_message().strip()
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]
    return message.removesuffix(".")


def _click_error(exc: click.ClickException, app: App, args: list[str]) -> JsonError:
    # One line and a hint, as every other error (click's own layout was three: usage, a "Try"
    # line, the error): the offending value click quotes back is made safe and redacted there.
    ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    hint = None
    if ctx is not None and ctx.parent is not None:  # the command is known (not 'no such command')
        app.command = command_name(ctx)
        app.printer.json_wanted = app.printer.json_wanted or asks_for_json(args)
        hint = f"see: {ctx.command_path} --help"
    elif isinstance(exc, click.UsageError):
        named = next((a for a in args if a in COMMANDS), None)
        hint = f"see: neuronctl {named} --help" if named else "see: neuronctl --help"
    if isinstance(exc, click.exceptions.NoArgsIsHelpError) and ctx is not None:
        # A group run without a command (click >= 8.2) raises its whole help as the error's
        # text: shown as help, not flattened into the error's one line; then what is missing.
        click.echo(ctx.get_help(), err=True)
        return _error(app, error_kind(exc), "no command given", hint)
    return _error(app, error_kind(exc), _click_message(exc), hint)


def _invoke(args: list[str], app: App) -> tuple[int, JsonError | None]:
    """Run the command; its exit code and, if it raised, what went wrong (already on stderr)."""
    try:
        with cli.make_context("neuronctl", list(args), obj=app) as ctx:
            result: Any = cli.invoke(ctx)
        return (result if isinstance(result, int) else 0), None
    except click.exceptions.Exit as exc:
        return exc.exit_code, None
    except click.exceptions.Abort:
        return EXIT_FAILED, _error(app, "failed", "aborted")
    except click.ClickException as exc:
        return exc.exit_code, _click_error(exc, app, args)
    except NeuronctlError as exc:
        if app.printer.verbose:
            _traceback()
        return exc.exit_code, _error(app, error_kind(exc), exc.message, exc.hint)
    except KeyboardInterrupt as signal:
        stopped = Interrupted.caused_by(signal)
        return stopped.exit_code, _error(app, error_kind(stopped), stopped.message)
    except BrokenPipeError:  # written past the guard (a binary stream): the command did not end
        app.printer.holds_json = app.printer.json_wanted = False  # stdout is gone: nothing more
        app.printer.held = None
        return EXIT_FAILED, None
    except Exception as exc:
        if app.printer.verbose:
            _traceback()
        return EXIT_FAILED, _error(app, "internal", f"internal error: {type(exc).__name__}: {exc} "
                                               "(run with -v for the traceback)")


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; never raises. A command run with --json (or
    --format json) leaves exactly one JSON document on stdout, whether it succeeded or failed."""
    args = list(sys.argv[1:] if argv is None else argv)
    app = App(holds_json=True)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalStream(sys.stdout), TerminalStream(sys.stderr)
    try:
        code, error = _invoke(args, app)
        document = finish_json(app.printer.held, app.printer.json_wanted, app.command, code, error)
        if document is not None:
            click.echo(document, nl=False)
        sys.stdout.flush()  # a reader gone away shows here, in the guard, not at exit
        sys.stderr.flush()
    finally:
        sys.stdout, sys.stderr = streams
    return code


def _raise_terminate(signum: int, frame: object) -> None:
    raise TerminateSignal()


def _stop_children() -> None:
    # A child still running in a worker thread (a doctor check left behind at its timeout, an
    # engine or tool that Ctrl-C/SIGTERM interrupted) dies with its whole process group now, not
    # after us. Every child is neuronctl.proc's; not loaded means none was started.
    proc = sys.modules.get("neuronctl.proc")
    if proc is not None:
        proc.kill_all()


COMPLETE_VAR = "_NEURONCTL_COMPLETE"


def _shell_complete(instruction: str) -> int:
    """click's shell completion (`eval "$(_NEURONCTL_COMPLETE=bash_source neuronctl)"`, docs/cli.md),
    which click runs only from Command.main: run() invokes the group itself, so it is asked here."""
    from click.shell_completion import shell_complete

    try:
        return shell_complete(cli, {}, "neuronctl", COMPLETE_VAR, instruction)
    except click.ClickException:  # the words so far name no command: nothing to offer
        return 0


def main() -> None:
    import signal

    instruction = os.environ.get(COMPLETE_VAR)
    if instruction:
        code = _shell_complete(instruction)
        sys.stdout.flush()
        os._exit(code)
    signal.signal(signal.SIGTERM, _raise_terminate)
    code = run()
    _stop_children()
    # Everything the command had to say is written; flush it and leave without the interpreter's
    # teardown of the ~450 modules an install loads (0.1-0.17 s on a 2-core host, measured as the
    # time from the last atexit handler to process exit). Nothing of ours runs at exit: files are
    # written atomically and closed, worker pools are shut down, and a doctor check that timed out
    # is meant to be left behind, not waited for.
    # A reader that closed the pipe early (`neuronctl doctor | head -3`) is not a failure: the
    # exit code stays the command's own, as the verdict it computed (git and pip leave quietly
    # on EPIPE too). Output that could not be written for any other reason (a full disk) is.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except OSError:
            code = code or EXIT_FAILED
    os._exit(code)


__all__ = ["EXIT_USAGE", "cli", "main", "run"]
