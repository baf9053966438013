"""The settings table: every setting neuronctl reads, declared once. One row gives its flag (with
what click needs to build it: help, metavar, repeatable, on/off, old spellings, the commands a
shared spelling belongs to), its environment variable, its `[tool.neuronctl]` key, the TOML types
that key accepts, its parse rule (a choice's values come from the rule) and its default. The CLI
builds each option from its row (neuronctl.cli.setting_options), the config checks its keys
against it (neuronctl.config), the docs print it (neuronctl.cli.docs_gen), and neuronctl.settings
resolves it. A core module of its own, importing nothing of neuronctl but errors, devices and the
parse rules (neuronctl.settings_rules), so that the config and the cache paths read it without an
import cycle."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from msgspec import Struct

from neuronctl.devices import DEVICES
from neuronctl.settings_rules import (
    Choice,
    _any,
    _flag,
    _one,
    _path,
    _text,
    _texts,
    _torch,
    choice,
    seconds,
    secure_url,
)

T = TypeVar("T")

ENGINES = ("auto", "pip", "uv")
"""The installer engines `--engine` (config `engine`, NEURONCTL_ENGINE) chooses among."""

Parse = Callable[[object, str, Path], Any]
"""(raw value, where it came from for errors, the folder a relative path starts in) -> value."""


class Spec(Struct, Generic[T], frozen=True):
    """One setting: how each source spells it, its type, its default, and what it bounds."""

    name: str
    flag: str | None
    env: str | None
    key: str | None
    """The `[tool.neuronctl]` key."""
    types: tuple[type, ...]
    """The TOML types the config key accepts (neuronctl.config validates them)."""
    description: str
    """What a config value must be, for its error."""
    what: str
    """What the setting means or bounds, for the docs."""
    parse: Parse
    default: T
    shared_key: str | None = None
    """Another setting's config key, read (with a one-line note) when this one's key is absent:
    it keeps its own meaning for its own setting, so the note never says to rename it."""
    layered: bool = False
    """Not one value: resolved in layers (see neuronctl.settings), documented here only."""
    in_project: bool = False
    """A path that, from a project's file, must stay inside the project (what `lock` writes and
    doctor reads): a checkout's file never makes neuronctl write, or read and show, the user's
    other files. The user's own config, the environment and a flag name any path."""
    trust_root: bool = False
    """Only the user sets it (a flag, the environment, the user's config), never a project file:
    it decides where trust comes from or what happens to the node (see neuronctl.settings)."""
    old_env: str | None = None
    """The variable's old name, still read where the new one is unset (compatibility)."""
    old_key: str | None = None
    """The config key's old name, still read where the new one is absent (compatibility)."""
    # -- what click needs to build the flag (neuronctl.cli.setting_options) --
    metavar: str | None = None
    multiple: bool = False
    """Repeatable: the values given, in order."""
    is_flag: bool = False
    """An on/off flag (no value)."""
    path: Literal["file", "dir"] | None = None
    """A path flag: a file or a folder."""
    old_flags: tuple[str, ...] = ()
    """The flag's old spellings, still accepted (hidden) with a one-line note."""
    old_why: str | None = ""
    """The note's reason after the new spelling; None: only the commands that had the old
    spelling accept it, each with its own reason (`old_whys`)."""
    old_whys: tuple[tuple[str, str], ...] = ()
    """(command, the note's reason there), where `old_why` is None."""
    commands: tuple[str, ...] = ()
    """The commands that take the flag, as users type them ("" the `neuronctl` group itself,
    "releases show" a subcommand): `with_settings` gives each its flag, so a new row is a flag
    where it names. Where two settings share a spelling, each names its own commands."""
    required_on: tuple[str, ...] = ()
    """The commands that cannot run without the flag (download's --lock)."""
    help: str = ""
    """The flag's help, with `{default}` where each command says its own default."""
    help_words: tuple[tuple[str, str], ...] = ()
    """(command, its words for `{default}`); command "": any other command's."""

    def help_for(self, command: str) -> str:
        """The flag's help as `command` shows it (its words for `{default}`, else the row's)."""
        words = dict(self.help_words)
        return self.help.replace("{default}", words.get(command, words.get("", "")))

    @property
    def shown_default(self) -> str | None:
        """The default as the help and the docs say it (`30`, `auto`), where it is one plain value;
        None where it is none, a list, a flag's False or worked out where it is read."""
        value = self.default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return None
        return f"{value:g}" if isinstance(value, float) else str(value)

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The values a choice setting allows, from its parse rule."""
        return self.parse.allowed if isinstance(self.parse, Choice) else None


def _spec(name: str, flag: str | None, env: str | None, key: str | None, types: tuple[type, ...],
          description: str, what: str, parse: Parse, default: Any = None,
          **extra: Any) -> Spec[Any]:
    return Spec(name, flag, env, key, types, description, what, parse, default, **extra)


_SECONDS = "a number of seconds"
_WHERE = dict(metavar="TAG", multiple=True)
SPECS: tuple[Spec[Any], ...] = (
    _spec("release", "--release", "NEURONCTL_RELEASE", "release", (str,),
          "a Neuron release version string",
          "the Neuron release (lock, install, doctor, init)", _text, metavar="V",
          help="Neuron release: a version, latest (newest fully published) or newest "
               "({default}).",
          help_words=(
                ("", "default: NEURONCTL_RELEASE, else config release, else the newest native one"),
                ("init", "default: NEURONCTL_RELEASE, else kept, else the newest native one"),
                ("setup", "default: NEURONCTL_RELEASE, else latest, the newest fully published")),
          commands=("lock", "install", "doctor", "init", "setup")),
    _spec("torch", "--torch", "NEURONCTL_TORCH", "torch", (str,),
          "a torch version string such as \"2.14\"",
          "the PyTorch line of the stack (lock, install, init)", _torch,
          help="PyTorch line, e.g. 2.14 ({default}).",
          help_words=(
                ("", "default: NEURONCTL_TORCH, else config torch, else the release's own"),
                ("init", "default: NEURONCTL_TORCH, else kept, else the release's own")),
          commands=("lock", "install", "init")),
    _spec("python_versions", "--python-version", None, "python", (str, list),
          "a Python version or a list of them", "the platform targets' Python versions (lock, "
          "init, download; `--python` is always an interpreter)", _texts, (), metavar="X.Y",
          multiple=True, old_flags=("--python",),
          old_why=" (a target version; --python is an interpreter)",
          help="Target Python version (repeatable; {default}; once --python, still "
               "accepted).",
          help_words=(
                ("lock", "default: config python, else the release's lowest"),
                ("init", "default: kept"),
                ("download", "only the files for it; default: every target the lock records, all of "
                            "their wheels")),
          commands=("lock", "init", "download")),
    _spec("platforms", "--platform", None, "platform", (str, list),
          "a platform tag or a list of them", "the platform targets' platform tags", _texts, (),
          **_WHERE,
          help="Target platform tag (repeatable; {default}).",
          help_words=(
                ("", "default: config platform, else manylinux_2_28_x86_64"),
                ("init", "default: kept"),
                ("download", "with --python-version; default manylinux_2_28_x86_64")),
          commands=("lock", "init", "download")),
    _spec("requirements", "--with", None, "with", (list,), "a list of requirement strings",
          "your own requirements, locked and installed with the stack", _texts, (),
          metavar="REQ", multiple=True,
          help="Your own requirement, e.g. 'transformers>=4.50' (repeatable).",
          commands=("lock", "install")),
    _spec("manifest", "--manifest", "NEURONCTL_MANIFEST", "manifest", (str,),
          "a path to a neuronctl manifest", "the release data (default: the stored, else the "
          "bundled)", _path, trust_root=True, path="file",
          help="Use this neuronctl manifest instead of the bundled release data.",
          commands=("", "doctor", "releases", "releases show")),
    _spec("manifest_url", "--from", "NEURONCTL_MANIFEST_URL", "manifest_url", (str,),
          "the URL `neuronctl releases update` fetches release data from",
          "where `releases update` fetches release data", secure_url, trust_root=True,
          metavar="URL|FILE",
          help="Where to fetch the manifest, https or a file (default: "
               "NEURONCTL_MANIFEST_URL, else `manifest_url` in your own ~/.config/neuronctl/config.toml, "
               "never a project's; else AWS's n2-manifest.json on GitHub).",
          commands=("releases update",)),
    _spec("engine", "--engine", "NEURONCTL_ENGINE", "engine", (str,), "one of auto, pip, uv",
          "the installer engine (auto: uv when installed, else the target's pip; NEURONCTL_BACKEND "
          "and config `backend`, its old names, still count where the new ones are unset)",
          choice(*ENGINES), "auto", old_env="NEURONCTL_BACKEND", old_key="backend",
          old_flags=("--backend",), old_why=" (the installer engine)",
          help="Installer engine (once --backend, still accepted) [NEURONCTL_ENGINE, else "
               "config engine, else auto].",
          commands=("install",)),
    _spec("indexes", "--index", "NEURONCTL_INDEX_<NAME>", "indexes", (dict,),
          "a table of index name = URL", "package indexes, by name (layered)", _any,
          layered=True, metavar="NAME=URL", multiple=True,
          help="Replace or add an index (also NEURONCTL_INDEX_<NAME>, config `indexes`).",
          commands=("lock", "install")),
    _spec("routes", "--route", None, "routes", (dict,), "a table of package = index name",
          "which index a package comes from (layered with the indexes)", _any, layered=True,
          metavar="PKG=NAME", multiple=True,
          help="Look PKG up on index NAME only (config `routes`).",
          commands=("lock", "install")),
    _spec("device", "--device", "NEURONCTL_DEVICE", "device", (str,), "one of auto, neuron, cuda, cpu",
          "the device the environment is for: what doctor and smoke probe, the lock install "
          "picks (with --lock)", choice(*DEVICES), "auto",
          help="The device this environment is for: {default} [NEURONCTL_DEVICE, else config "
               "device, else auto].",
          help_words=(
                ("doctor", "what the probe tiers use"),
                ("probe", "what the tiers probe"),
                ("smoke", "what the model runs on"),
                ("install", "as doctor's and smoke's --device; with --lock it picks the lock. auto: the "
                           "Neuron lock where there are Neuron devices, else pylock.cuda.toml beside it "
                           "where there is an NVIDIA GPU; neuron, cuda, cpu: that device's lock. A lock "
                           "recording a fallback device installs only where the hardware has that "
                           "device, or with --device naming it; NEURONCTL_DEVICE and config device "
                           "count only with --lock")),
          commands=("doctor", "install", "probe", "smoke")),
    _spec("timeout", "--timeout", "NEURONCTL_TIMEOUT", "timeout", (int, float), _SECONDS,
          "each network request's time limit (lock, install, download)", seconds, 30.0,
          commands=("lock", "install", "download"),
          help="Each network request's time limit in seconds [NEURONCTL_TIMEOUT, else config "
               "timeout, else 30]."),
    _spec("check_timeout", "--check-timeout", "NEURONCTL_CHECK_TIMEOUT", "check_timeout",
          (int, float), _SECONDS,
          "each doctor check's time limit (install's doctor afterwards too), and probe's and "
          "env's run in the target (default: "
          "the level's budget; where this key is absent, config `timeout` bounds these too)",
          seconds, None, shared_key="timeout", old_flags=("--timeout",), old_why=None,
          old_whys=(("doctor", " (each check's time limit)"),
                    ("probe", " (the probe's time limit)"), ("env", " (collect_env's time limit)")),
          help="Seconds: {default}.",
          help_words=(
                ("doctor", "each check's time limit (once --timeout, still accepted) "
                          "[NEURONCTL_CHECK_TIMEOUT, else config check_timeout, else the level's "
                          "budget]"),
                ("install", "each check's time limit in the doctor afterwards "
                           "[NEURONCTL_CHECK_TIMEOUT, else config check_timeout, else the level's "
                           "budget]"),
                ("probe", "before the probe is killed (once --timeout, still accepted) "
                         "[NEURONCTL_CHECK_TIMEOUT, else config check_timeout, else 120]"),
                ("env", "torch's collect_env in the target (once --timeout, still accepted) "
                       "[NEURONCTL_CHECK_TIMEOUT, else config check_timeout, else 60]")),
          commands=("doctor", "env", "install", "probe")),
    _spec("run_timeout", "--timeout", None, None, (), "",
          "a whole run's time limit, flag only (smoke's run and coverage's model run [600], "
          "`fleet doctor`'s srun step [120]); not a request's nor a check's", seconds,
          commands=("smoke", "coverage", "fleet doctor"),
          help="Seconds {default}.",
          help_words=(
                ("smoke", "before the whole run is killed [600]"),
                ("coverage", "before a single model's run is killed [600]"),
                ("fleet doctor", "for the whole srun step, every node's doctor run (Slurm's --time) "
                                "[120]"))),
    _spec("strict", "--strict", None, "strict", (bool,), "true or false",
          "doctor: warnings fail too", _flag, False, is_flag=True,
          help="Warnings fail too [config strict].",
          commands=("doctor",)),
    _spec("skip", "--skip", None, "skip", (list,), "a list of check ids",
          "doctor checks not run (config and flags add up)", _texts, (), layered=True,
          metavar="ID", multiple=True,
          help="Skip these checks or groups (repeatable; as --only).",
          commands=("doctor",)),
    _spec("drain_on", "--drain-on", None, "drain_on", (str,),
          "what `doctor --slurm-drain` drains for: drain, fail or warn",
          "what `doctor --slurm-drain` drains for", choice("drain", "fail", "warn"), "drain",
          trust_root=True,
          help="What --slurm-drain drains for: drain = outcomes of severity drain "
               "(hardware errors, no driver, devices missing), fail = any failure, warn = any failure or "
               "warning [drain_on in your own config, never a project's; else drain].",
          commands=("doctor",)),
    _spec("system_repo", "--repo", None, "system_repo", (str,),
          "a mirror of the Neuron apt/yum repository `neuronctl setup` plans with",
          "the Neuron apt/yum repository `setup` plans with", secure_url, trust_root=True,
          metavar="URL",
          help="A mirror of the Neuron apt/yum repository, https or file:// "
               "[`system_repo` in your own ~/.config/neuronctl/config.toml, never a project's]; its key "
               "is checked all the same.",
          commands=("setup",)),
    _spec("lock", "--lock", None, "lock", (str,), "a path to a pylock.toml",
          "the lock file: what `lock` writes (its -o), what doctor checks against", _path,
          path="file", in_project=True,
          help="{default}",
          help_words=(
                ("doctor", "Also check installed versions against this pylock.toml."),
                ("install", "Install exactly what this pylock.toml selects for the target."),
                ("download", "The pylock.toml whose files to fetch.")),
          commands=("doctor", "install", "download"),
          required_on=("download",)),
    _spec("model", "--model", None, "model", (str,),
          "a model factory MODULE:FACTORY for `neuronctl smoke`, e.g. \"pkg.mod:make\"",
          "the model smoke (and doctor at level 3) runs", _text, metavar="MODULE:FACTORY",
          help="A function returning (model, example_inputs[, tokens_per_step]) (default: "
               "config `model`, else the built-in reference model).",
          commands=("smoke",)),
    _spec("prices", "--price", None, "prices", (dict,),
          "a table of instance type = USD per hour (or {usd_per_hour, accelerators}); "
          "checked by `neuronctl cost`", "instance prices for `cost` (config and flags add up)",
          _any, layered=True, metavar="TYPE=USD_PER_HOUR[:ACCELERATORS]", multiple=True,
          help="Hourly price (and accelerator count) of an instance type (repeatable).",
          commands=("cost",)),
    _spec("sysroot", "--sysroot", "NEURONCTL_SYSROOT", None, (), "",
          "the root hardware facts are read under (default /)", _path, path="dir",
          help="{default}",
          help_words=(
                ("", "Read hardware facts under this root (default: / or NEURONCTL_SYSROOT)."),
                ("setup", "Plan for the captured tree under this root (default: / or NEURONCTL_SYSROOT).")),
          commands=("bundle", "cost", "detect", "doctor", "env", "install", "setup")),
    _spec("sysroot_tools", None, "NEURONCTL_SYSROOT_TOOLS", None, (), "",
          "1: run the programs found under a --sysroot tree (they are that tree's code: off "
          "unless you say so, e.g. for a host mounted at /host)", _one, False),
    _spec("cache_dir", None, "NEURONCTL_CACHE_DIR", None, (), "",
          "neuronctl's HTTP and data cache", _path),
)

BY_NAME: dict[str, Spec[Any]] = {s.name: s for s in SPECS}
BY_KEY: dict[str, Spec[Any]] = {s.key: s for s in SPECS if s.key is not None}
OLD_KEYS: dict[str, Spec[Any]] = {s.old_key: s for s in SPECS if s.old_key is not None}
"""The config keys' old names: still accepted (neuronctl.config), read where the new is absent."""


def from_environment(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """A setting that only the environment sets (NEURONCTL_CACHE_DIR), read where it is needed,
    before any config is: its variable as its spec parses it (bad input names the variable),
    else its default."""
    s = BY_NAME[name]
    env = os.environ if environ is None else environ
    for var in (s.env, s.old_env):
        if var is not None and env.get(var):
            return s.parse(env[var], var, Path())
    return s.default


def meaning(spec: Spec[Any]) -> str:
    """What a setting bounds, without the docs' parenthesis."""
    return spec.what.split(" (")[0]


def precedence_table(specs: Sequence[Spec[Any]] | None = None
                     ) -> list[tuple[str, str, str, str, str]]:
    """(setting, flag, environment variable, config key, what it is) for the docs; an old name
    still accepted follows the new one after a `|`."""
    def both(new: str | None, old: str | None) -> str:
        return f"{new}|{old}" if new and old else (new or "")

    return [(s.name, s.flag or "", both(s.env, s.old_env), both(s.key, s.old_key), s.what)
            for s in (SPECS if specs is None else specs)]
