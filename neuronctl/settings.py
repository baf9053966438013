"""Every setting neuronctl reads, declared once (flag, environment variable, config key, type,
what it bounds), and the one rule that resolves it: a flag the user typed > the environment >
`[tool.neuronctl]` > the default. Each resolved value keeps its source, so a message can say
where it came from ("release 2.33.1 (from pyproject.toml)").

Two settings are layered data rather than one value, and say so in the table: the indexes
(bundled < config < NEURONCTL_INDEX_<NAME> < a lock's recorded indexes < --index, each index
on its own; neuronctl.ops.index_routing) and the lists that add up (doctor's `skip`, cost's
`prices`: config and flags together). Within each layer the environment still beats the config.

Two config files: the project's (`[tool.neuronctl]` in ./pyproject.toml, or `--config FILE`) and
the user's own ($XDG_CONFIG_HOME/neuronctl/config.toml, else ~/.config/neuronctl/); the project's
beats the user's. A file the user names with `--config` is theirs too (`Config.named`): only
./pyproject.toml, found by where neuronctl happens to run, is a project's. A **trust root**
(`Spec.trust_root`: where release data and system packages come from, what a health check does to
its node) is never read from the project's file, whoever's checkout it is: only a flag, the
environment or the user's own config set it. A project file that sets one gets a one-line note
naming the file and the key, and its value is not used. A run that acts on its node (`doctor
--slurm-drain`, `--exit-on`: a scheduler's health check) is the same rule for every setting: it
reads no project file at all (`Resolver.for_node`).

The CLI tells a typed flag from a default (click's ParameterSource) and resolves each command's
settings once; operations get the typed values, never the Config.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from neuronctl.devices import DEVICES
from neuronctl.errors import InputError

if TYPE_CHECKING:
    from neuronctl.config import Config

T = TypeVar("T")

SourceKind = Literal["flag", "env", "config", "default"]

MAX_SECONDS = 86400.0
"""A day: longer is a typo (1e300), and would overflow the clocks that deadlines are built on."""

ENGINES = ("auto", "pip", "uv")
"""The installer engines `--backend` (config `backend`, NEURONCTL_BACKEND) chooses among."""


@dataclass(frozen=True)
class Source:
    """Where a value came from: the flag as typed, the variable, the config file, or the default."""

    kind: SourceKind
    name: str
    """"--release", "NEURONCTL_BACKEND", the config file's path, or "default"."""

    @property
    def label(self) -> str:
        if self.kind != "config":
            return self.name
        try:  # ./pyproject.toml reads as pyproject.toml; elsewhere, the whole path
            relative = os.path.relpath(self.name)
        except ValueError:
            return self.name
        return relative if not relative.startswith("..") else self.name


DEFAULT = Source("default", "default")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One resolved value and where it came from."""

    value: T
    source: Source

    @property
    def given(self) -> bool:
        """Set by the user (a flag, the environment or the config), not the default."""
        return self.source.kind != "default"

    def said(self, shown: object = None) -> str:
        """The value as a message shows it: `2.33.1 (from pyproject.toml)`; the default bare."""
        text = str(self.value if shown is None else shown)
        return text if not self.given else f"{text} (from {self.source.label})"


Parse = Callable[[object, str, Path], Any]
"""(raw value, where it came from for errors, the folder a relative path starts in) -> value."""


@dataclass(frozen=True)
class Spec(Generic[T]):
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
    """Not one value: resolved in layers (see the module docstring), documented here only."""
    trust_root: bool = False
    """Only the user sets it (a flag, the environment, the user's config), never a project file:
    it decides where trust comes from or what happens to the node (see the module docstring)."""


def _text(value: object, where: str, base: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def secure_url(value: object, where: str, base: Path | None = None) -> str:
    """A trust root's address: https, a file URL or a local path, never plain http (what comes
    over it can be changed on the way: release data, the repository a key is fetched from)."""
    text = _text(value, where, base or Path())
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "http":
        from neuronctl.redact import redact

        raise InputError(f"{where}: {redact(text[:120])!r} is plain http, which anyone on the way "
                         "can change; give an https:// URL or a local file")
    return text


def _path(value: object, where: str, base: Path) -> Path:
    p = Path(_text(str(value) if isinstance(value, Path) else value, where, base)).expanduser()
    return p if p.is_absolute() else base / p


def _texts(value: object, where: str, base: Path) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise InputError(f"{where}: expected a string or a list of strings, got {value!r}")
    return tuple(items)


def _flag(value: object, where: str, base: Path) -> bool:
    if isinstance(value, bool):
        return value
    raise InputError(f"{where}: expected true or false, got {value!r}")


def seconds(value: object, where: str, base: Path | None = None) -> float:
    """A finite number of seconds above 0 and at most a day (click parses 'nan' and 'inf' as
    floats, and the environment gives text: both are checked here)."""
    number: object = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = value
    if (not isinstance(number, int | float) or isinstance(number, bool) or not math.isfinite(number)
            or not 0 < number <= MAX_SECONDS):
        raise InputError(f"{where}: timeout must be a positive number of seconds, at most "
                         f"{MAX_SECONDS:g}; got {value!r}")
    return float(number)


def choice(*allowed: str) -> Parse:
    def parse(value: object, where: str, base: Path) -> str:
        if value not in allowed:
            raise InputError(f"{where} {value!r}: expected one of {', '.join(allowed)}")
        return str(value)
    return parse


def _any(value: object, where: str, base: Path) -> object:
    return value  # layered settings: their own modules check each entry, naming it


def _spec(name: str, flag: str | None, env: str | None, key: str | None, types: tuple[type, ...],
          description: str, what: str, parse: Parse, default: Any = None,
          **extra: Any) -> Spec[Any]:
    return Spec(name, flag, env, key, types, description, what, parse, default, **extra)


_SECONDS = "a number of seconds"
SPECS: tuple[Spec[Any], ...] = (
    _spec("release", "--release", None, "release", (str,), "a Neuron release version string",
          "the Neuron release (lock, install, doctor, init)", _text),
    _spec("torch", "--torch", None, "torch", (str,), "a torch version string such as \"2.14\"",
          "the PyTorch line of the stack (lock, install, init)", _text),
    _spec("python_versions", "--python-version", None, "python", (str, list),
          "a Python version or a list of them", "the platform targets' Python versions (lock, "
          "init, download; `--python` is always an interpreter)", _texts, ()),
    _spec("platforms", "--platform", None, "platform", (str, list),
          "a platform tag or a list of them", "the platform targets' platform tags", _texts, ()),
    _spec("requirements", "--with", None, "with", (list,), "a list of requirement strings",
          "your own requirements, locked and installed with the stack", _texts, ()),
    _spec("manifest", "--manifest", "NEURONCTL_MANIFEST", "manifest", (str,),
          "a path to a neuronctl manifest", "the release data (default: the stored, else the "
          "bundled)", _path, trust_root=True),
    _spec("manifest_url", "--from", "NEURONCTL_MANIFEST_URL", "manifest_url", (str,),
          "the URL `neuronctl releases update` fetches release data from",
          "where `releases update` fetches release data", secure_url, trust_root=True),
    _spec("engine", "--backend", "NEURONCTL_BACKEND", "backend", (str,), "one of auto, pip, uv",
          "the installer engine (auto: uv when installed, else the target's pip)",
          choice(*ENGINES), "auto"),
    _spec("indexes", "--index", "NEURONCTL_INDEX_<NAME>", "indexes", (dict,),
          "a table of index name = URL", "package indexes, by name (layered)", _any,
          layered=True),
    _spec("routes", "--route", None, "routes", (dict,), "a table of package = index name",
          "which index a package comes from (layered with the indexes)", _any, layered=True),
    _spec("device", "--device", None, "device", (str,), "one of auto, neuron, cuda, cpu",
          "the device the environment is for: what doctor and smoke probe, the lock install "
          "picks (with --lock)", choice(*DEVICES), "auto"),
    _spec("timeout", "--timeout", None, "timeout", (int, float), _SECONDS,
          "each network request's time limit (lock, install, download)", seconds, 30.0),
    _spec("check_timeout", "--check-timeout", None, "check_timeout", (int, float), _SECONDS,
          "each doctor check's time limit (install's doctor afterwards too), and probe's and "
          "env's run in the target (default: "
          "the level's budget; where this key is absent, config `timeout` bounds these too)",
          seconds, None, shared_key="timeout"),
    _spec("run_timeout", "--timeout", None, None, (), "",
          "a whole run's time limit, flag only (smoke's run [600], `fleet doctor`'s srun step "
          "[120], the doctor run `fleet npd-config` has NPD allow [120]); not a request's nor a "
          "check's", seconds),
    _spec("strict", "--strict", None, "strict", (bool,), "true or false",
          "doctor: warnings fail too", _flag, False),
    _spec("skip", "--skip", None, "skip", (list,), "a list of check ids",
          "doctor checks not run (config and flags add up)", _texts, (), layered=True),
    _spec("drain_on", "--drain-on", None, "drain_on", (str,),
          "what `doctor --slurm-drain` drains for: drain, fail or warn",
          "what `doctor --slurm-drain` drains for", choice("drain", "fail", "warn"), "drain",
          trust_root=True),
    _spec("system_repo", "--repo", None, "system_repo", (str,),
          "a mirror of the Neuron apt/yum repository `neuronctl setup` plans with",
          "the Neuron apt/yum repository `setup` plans with", secure_url, trust_root=True),
    _spec("lock", "--lock", None, "lock", (str,), "a path to a pylock.toml",
          "the lock file: what `lock` writes (its -o), what doctor checks against", _path),
    _spec("model", "--model", None, "model", (str,),
          "a model factory MODULE:FACTORY for `neuronctl smoke`, e.g. \"pkg.mod:make\"",
          "the model smoke (and doctor at level 3) runs", _text),
    _spec("prices", "--price", None, "prices", (dict,),
          "a table of instance type = USD per hour (or {usd_per_hour, accelerators}); "
          "checked by `neuronctl cost`", "instance prices for `cost` (config and flags add up)",
          _any, layered=True),
    _spec("sysroot", "--sysroot", "NEURONCTL_SYSROOT", None, (), "",
          "the root hardware facts are read under (default /)", _path),
    _spec("cache_dir", None, "NEURONCTL_CACHE_DIR", None, (), "",
          "neuronctl's HTTP and data cache", _path),
)

BY_NAME: dict[str, Spec[Any]] = {s.name: s for s in SPECS}
BY_KEY: dict[str, Spec[Any]] = {s.key: s for s in SPECS if s.key is not None}


@dataclass(frozen=True)
class Flag:
    """A flag's value as the user typed it, and the spelling they used (an old one, too)."""

    value: object
    spelled: str


@dataclass(frozen=True)
class Resolver:
    """The rule, applied to one invocation's sources: a typed flag > the environment > the
    project's config > the user's config > the default; a trust root skips the project's config
    (and says so), and so does every setting `for_node`. `note` receives one-line notes (an old
    config key read, a project file's trust root not used)."""

    config: Config
    environ: Mapping[str, str]
    note: Callable[[str], None] = lambda line: None
    user: Config | None = None
    """The user's own config (~/.config/neuronctl/config.toml); None: none read."""
    for_node: bool = False
    """The run acts on its node (a scheduler's health check): no project file is read."""

    @classmethod
    def of(cls, config: Config, note: Callable[[str], None] | None = None,
           environ: Mapping[str, str] | None = None, *, user: Config | None = None,
           for_node: bool = False) -> Resolver:
        return cls(config, os.environ if environ is None else environ, note or (lambda line: None),
                   user, for_node)

    def resolve(self, name: str, flag: Flag | None = None) -> Setting[Any]:
        """`name`'s value and source; `flag` only when the user typed it (ParameterSource)."""
        s = BY_NAME[name]
        cwd = Path()  # a flag's or variable's relative path stays relative (to the working folder)
        if flag is not None and flag.value not in (None, ()):
            return Setting(s.parse(flag.value, flag.spelled, cwd), Source("flag", flag.spelled))
        if s.env is not None and not s.layered and self.environ.get(s.env):
            return Setting(s.parse(self.environ[s.env], s.env, cwd), Source("env", s.env))
        for config in self._configs(s):
            found = self._from_config(s, config)
            if found is not None:
                return found
        return Setting(s.default, DEFAULT)

    def _configs(self, s: Spec[Any]) -> tuple[Config, ...]:
        """The config files `s` may be read from, in order: the project's unless `s` is a trust
        root or the run acts on its node (then a value there is named in a note, not used)."""
        project: tuple[Config, ...] = (self.config,)
        if (s.trust_root or self.for_node) and not self.config.named:
            if any(self.config.get(k) is not None for k in (s.key, s.shared_key) if k):
                self.note(untrusted_note(s, self.config, self.for_node))
            project = ()
        return project + ((self.user,) if self.user is not None else ())

    def _from_config(self, s: Spec[Any], config: Config) -> Setting[Any] | None:
        for key in (s.key, s.shared_key) if s.key else ():
            value = None if key is None else config.get(key)
            if value is None:
                continue
            where = config.source or "pyproject.toml"
            if key != s.key:
                self.note(f"{where}: `{key}` ({_meaning(BY_KEY[str(key)])}) is used for `{s.key}` "
                          f"too, as that key is absent; set `{s.key}` to give it its own value")
            # a trust root comes from the user's own file: its errors name that file
            said = f"config {key} ({where})" if s.trust_root else f"config {key}"
            return Setting(s.parse(value, said, config.base_dir), Source("config", where))
        return None

    def value(self, name: str, flag: Flag | None = None) -> Any:
        return self.resolve(name, flag).value

    def _raw(self, name: str) -> tuple[Any, Config]:
        """A setting's config value as written, and the config file it is in (the first of
        `_configs` that sets it)."""
        s = BY_NAME[name]
        for config in self._configs(s):
            value = config.get(s.key) if s.key else None
            if value is not None:
                return value, config
        return None, self.config

    def config_entries(self, name: str) -> tuple[Mapping[str, Any], str]:
        """A layered setting's config table and the file it is in, for its own resolution."""
        value, config = self._raw(name)
        return (value or {}), (config.source or "config")

    def config_text(self, name: str) -> str | None:
        """A setting's config value as written (a path as the user spelled it, for messages)."""
        value, config = self._raw(name)
        key = BY_NAME[name].key
        return None if value is None else _text(value, f"config {key}", config.base_dir)

    def config_list(self, name: str) -> tuple[str, ...]:
        """A list setting's config entries (the lists that add up to the flags)."""
        value, config = self._raw(name)
        key = BY_NAME[name].key
        return () if value is None else _texts(value, f"config {key}", config.base_dir)

    def config_file(self, name: str) -> tuple[str, Path]:
        """The config file a setting's value comes from and the folder its relative paths start
        in (a model factory's module): the project's where neither file sets it."""
        _value, config = self._raw(name)
        return config.source or "pyproject.toml", config.base_dir


def untrusted_note(s: Spec[Any], config: Config, for_node: bool = False) -> str:
    """The one line a project file's trust root (or, for a node's health check, any of its
    settings) gets: the file, the key, that it is not used, and where the user sets it."""
    from neuronctl.cache_dir import user_config_file

    ways = " or ".join(w for w in (s.flag, s.env) if w)
    where = f"{ways}, or {user_config_file()}" if ways else str(user_config_file())
    why = ("a node's health check reads no project file" if for_node and not s.trust_root
           else f"{_meaning(s)} is a trust root: only you set it")
    return (f"{config.source or 'pyproject.toml'}: `{s.key}` is not used ({why}; set it with {where})")


def from_environment(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """A setting that only the environment sets (NEURONCTL_CACHE_DIR), read where it is needed,
    before any config is: its variable as its spec parses it (bad input names the variable),
    else its default."""
    s = BY_NAME[name]
    env = os.environ if environ is None else environ
    if s.env is not None and env.get(s.env):
        return s.parse(env[s.env], s.env, Path())
    return s.default


def _meaning(spec: Spec[Any]) -> str:
    """What a setting bounds, without the docs' parenthesis."""
    return spec.what.split(" (")[0]


def precedence_table(specs: Sequence[Spec[Any]] = SPECS) -> list[tuple[str, str, str, str, str]]:
    """(setting, flag, environment variable, config key, what it is) for the docs."""
    return [(s.name, s.flag or "", s.env or "", s.key or "", s.what) for s in specs]
