"""Every setting neuronctl reads, declared once (flag, environment variable, config key, type,
what it bounds), and the one rule that resolves it: a flag the user typed > the environment >
`[tool.neuronctl]` > the default. Each resolved value keeps its source, so a message can say
where it came from ("release 2.33.1 (from pyproject.toml)").

Two settings are layered data rather than one value, and say so in the table: the indexes
(bundled < the user's config < the project's < NEURONCTL_INDEX_<NAME> < a lock's recorded
indexes < --index, each index on its own; neuronctl.ops.index_routing) and the lists that add
up (doctor's `skip`, cost's `prices`: config and flags together). Within each layer the
environment still beats the config.

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

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from msgspec import Struct

from neuronctl.settings_rules import MAX_SECONDS, _text, _texts, choice, seconds, secure_url
from neuronctl.settings_table import (
    BY_KEY,
    BY_NAME,
    ENGINES,
    OLD_KEYS,
    SPECS,
    Spec,
    from_environment,
    meaning,
    precedence_table,
)

# The table's names, where they were before the table had a module of its own.
__all__ = ["BY_KEY", "BY_NAME", "DEFAULT", "ENGINES", "MAX_SECONDS", "OLD_KEYS", "SPECS", "Flag",
           "Resolver", "Setting", "Source", "Spec", "choice", "flag_or_environment",
           "from_environment", "precedence_table", "secure_url", "seconds", "untrusted_note"]

if TYPE_CHECKING:
    from neuronctl.config import Config

T = TypeVar("T")

SourceKind = Literal["flag", "env", "config", "default"]

class Source(Struct, frozen=True):
    """Where a value came from: the flag as typed, the variable, the config file, or the default."""

    kind: SourceKind
    name: str
    """"--release", "NEURONCTL_ENGINE", the config file's path, or "default"."""
    key: str | None = None
    """The config key read (an old name, a shared key), where the value came from a config."""

    @property
    def label(self) -> str:
        if self.kind != "config":
            return self.name
        try:  # ./pyproject.toml reads as pyproject.toml; elsewhere, the whole path
            relative = os.path.relpath(self.name)
        except ValueError:
            return self.name
        return relative if not relative.startswith("..") else self.name

    @property
    def named(self) -> str:
        """Who named a value, as an error says it: the flag as typed, the variable, `config KEY
        (FILE)`, or "default"."""
        return f"config {self.key} ({self.name})" if self.kind == "config" else self.name


DEFAULT = Source("default", "default")


class Setting(Struct, Generic[T], frozen=True):
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


class Flag(Struct, frozen=True):
    """A flag's value as the user typed it, and the spelling they used (an old one, too)."""

    value: object
    spelled: str


class Resolver(Struct, frozen=True):
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
        typed = flag_or_environment(name, flag, self.environ)
        if typed is not None:
            return typed
        for config in self._configs(s):
            found = self._from_config(s, config)
            if found is not None:
                return found
        return Setting(s.default, DEFAULT)

    def _configs(self, s: Spec[Any]) -> tuple[Config, ...]:
        """The config files `s` may be read from, in order: the project's unless `s` is a trust
        root or the run acts on its node (then a value there is named in a note, not used)."""
        project: tuple[Config, ...] = (self.config,)
        if (s.trust_root or self.for_node) and self._is_project(self.config):
            written = [k for k in (s.key, s.old_key, s.shared_key) if k and self.config.get(k) is not None]
            if written:  # the note names the key the file sets (`timeout` for check_timeout too)
                self.note(untrusted_note(s, self.config, self.for_node, written[0]))
            project = ()
        return project + ((self.user,) if self.user is not None else ())

    def _from_config(self, s: Spec[Any], config: Config) -> Setting[Any] | None:
        for key in (s.key, s.old_key, s.shared_key) if s.key else ():
            value = None if key is None else config.get(key)
            if value is None:
                continue
            where = config.source or "pyproject.toml"
            self._in_project(s, config, value, key)
            if key == s.shared_key:
                self.note(f"{where}: `{key}` ({meaning(BY_KEY[str(key)])}) is used for `{s.key}` "
                          f"too, as that key is absent; set `{s.key}` to give it its own value")
            return Setting(s.parse(value, _said(key, config), config.base_dir),
                           Source("config", where, key))
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

    def _is_project(self, config: Config) -> bool:
        """`config` is the project's: ./pyproject.toml, found where neuronctl runs, not a file
        the user named."""
        return config is self.config and not config.named

    def _in_project(self, s: Spec[Any], config: Config, value: object, key: str | None) -> None:
        """A project's value of a path setting that must stay in the project (Spec.in_project),
        refused where it leads out."""
        if s.in_project and self._is_project(config):
            _inside_project(value, _said(key, config), config.base_dir)

    def config_tables(self, name: str) -> list[tuple[Mapping[str, Any], str, bool]]:
        """A layered table setting's tables, each with its file and whether it is the project's
        (./pyproject.toml, not a file the user named), from the lowest layer up: the user's own
        config, then the project's. Each entry is its own value, so a project's table replaces
        the user's entries it names and no others (an empty one replaces none)."""
        s = BY_NAME[name]
        layers = []
        for config in reversed(self._configs(s)):
            value = config.get(s.key) if s.key else None
            if isinstance(value, Mapping):
                layers.append((value, config.source or "config", self._is_project(config)))
        return layers

    def config_entries(self, name: str) -> tuple[Mapping[str, Any], str]:
        """A layered setting's config table and the file it is in, for its own resolution."""
        value, config = self._raw(name)
        return (value or {}), (config.source or "config")

    def config_place(self, name: str) -> str | None:
        """Where a path setting's config value points, spelled for messages: as written where it
        is absolute (`~` too) or its file's folder is the working directory, else from that folder
        (docs/config.md: relative paths in a file are taken from its folder; a command that
        writes there writes where every other reads)."""
        from neuronctl.safety import expand_user

        value, config = self._raw(name)
        s = BY_NAME[name]
        if value is None:
            return None
        self._in_project(s, config, value, s.key)
        text = _text(value, _said(s.key, config), config.base_dir)
        if expand_user(text, _said(s.key, config)).is_absolute() or _same_folder(config.base_dir):
            return text
        return str(config.base_dir / text)

    def config_list(self, name: str) -> tuple[str, ...]:
        """A list setting's config entries (the lists that add up to the flags)."""
        value, config = self._raw(name)
        key = BY_NAME[name].key
        return () if value is None else _texts(value, _said(key, config), config.base_dir)

    def config_file(self, name: str) -> tuple[str, Path]:
        """The config file a setting's value comes from and the folder its relative paths start
        in (a model factory's module): the project's where neither file sets it."""
        _value, config = self._raw(name)
        return config.source or "pyproject.toml", config.base_dir


def _same_folder(base: Path) -> bool:
    try:
        return base.resolve() == Path.cwd().resolve()
    except OSError:  # the working directory is gone: nothing is spelled from it
        return False


def _inside_project(value: object, where: str, base: Path) -> None:
    """A project's path setting (Spec.in_project) names a file inside the project: not `~`, not
    an absolute path elsewhere, not `..` or a symlinked folder leading out."""
    from neuronctl.errors import InputError
    from neuronctl.safety import contained, expand_user

    text = _text(value, where, base)
    expand_user(text, where)  # a NUL, a name too long: said as such
    try:
        inside = not text.startswith("~") and contained(base, text) is not None
    except InputError:  # `..` or a link leading out, an absolute path elsewhere
        inside = False
    if not inside:
        raise InputError(f"{where}: {text[:120]!r} is outside the project ({base}); a project's "
                         "file names a path in it (a flag or your own config names any)")


def _said(key: str | None, config: Config) -> str:
    """A config value as its errors name it: the key and the file that sets it."""
    return f"config {key} ({config.source or 'pyproject.toml'})"


def flag_or_environment(name: str, flag: Flag | None = None,
                        environ: Mapping[str, str] | None = None) -> Setting[Any] | None:
    """The first two steps of the rule, for every setting: the flag the user typed, else its
    variable (its old name where the new one is unset); None where neither is set. A setting no
    config sets (`--sysroot` / NEURONCTL_SYSROOT) is resolved by this alone, before any config
    is read."""
    s = BY_NAME[name]
    env = os.environ if environ is None else environ
    cwd = Path()  # a flag's or variable's relative path stays relative (to the working folder)
    if flag is not None and flag.value not in (None, ()):
        return Setting(s.parse(flag.value, flag.spelled, cwd), Source("flag", flag.spelled))
    for var in (s.env, s.old_env) if not s.layered else ():
        if var is not None and env.get(var):
            return Setting(s.parse(env[var], var, cwd), Source("env", var))
    return None


def untrusted_note(s: Spec[Any], config: Config, for_node: bool = False,
                   key: str | None = None) -> str:
    """The one line a project file's trust root (or, for a node's health check, any of its
    settings) gets: the file, the key, that it is not used, and where the user sets it."""
    from neuronctl.cache_dir import user_config_file

    ways = " or ".join(w for w in (s.flag, s.env) if w)
    where = f"{ways}, or {user_config_file()}" if ways else str(user_config_file())
    why = ("a node's health check reads no project file" if for_node and not s.trust_root
           else f"{meaning(s)} is a trust root: only you set it")
    return (f"{config.source or 'pyproject.toml'}: `{key or s.key}` is not used ({why}; set it with "
            f"{where})")
