"""Configuration files: the project's (`[tool.neuronctl]` in ./pyproject.toml, or the file
`--config` names) and the user's own (~/.config/neuronctl/config.toml; the only file a trust root
is read from, see neuronctl.settings)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from neuronctl import settings_table
from neuronctl.errors import InputError
from neuronctl.tomlfile import MAX_CONFIG_BYTES, read_toml


def schema() -> dict[str, tuple[tuple[type, ...], str]]:
    """key -> (accepted Python types, human description): the config column of the one settings
    table, read when a file is checked (an old key, still read where the new one is absent, is
    checked as the new one is)."""
    table = settings_table
    keys = {key: (spec.types, spec.description) for key, spec in table.BY_KEY.items()}
    return keys | {old: (spec.types, f"{spec.description} (the old name of `{spec.key}`, read "
                                     "where it is absent)")
                   for old, spec in table.OLD_KEYS.items()}


class Config(Struct, frozen=True):
    """The user's configuration values, where they came from, and the folder relative paths start in."""

    values: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    named: bool = False
    """A file the user named (`--config FILE`, their own config): theirs, so its trust roots
    count; ./pyproject.toml, found by where neuronctl runs, is a project's (neuronctl.settings)."""

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def path(self, key: str) -> Path | None:
        value = self.values.get(key)
        if value is None:
            return None
        from neuronctl.safety import expand_user

        p = expand_user(value, f"config {key} ({self.source or 'pyproject.toml'})")
        return p if p.is_absolute() else self.base_dir / p

    def list(self, key: str) -> list[str]:
        value = self.values.get(key)
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)


def validate(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    known = schema()
    for key, value in table.items():
        if key not in known:
            raise InputError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
        types, description = known[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise InputError(f"{where}: {key}: expected {description}, got {value!r}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise InputError(f"{where}: {key}: expected {description}, got {value!r}")
        # prices hold numbers (and tables): `neuronctl cost` checks each, naming the file and row
        strings_only = key != "prices"
        if isinstance(value, dict) and strings_only and not all(isinstance(v, str) for v in value.values()):
            raise InputError(f"{where}: {key}: expected {description}, got {value!r}")
        out[key] = value
    return out


def _named_file(path: Path) -> Config:
    """A config file named outright: its `[tool.neuronctl]` table, else its top level."""
    try:
        data = read_toml(path, "config file", MAX_CONFIG_BYTES)
    except InputError as exc:  # a model's config.json given as coverage's old --config
        if path.suffix.lower() != ".json" or exc.hint:
            raise
        raise InputError(exc.message, hint="--config names neuronctl's own config, a TOML file; "
                         "a model's config.json is coverage's --model-config") from None
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "neuronctl" in tool:
        table, where = tool["neuronctl"], f"{path}: [tool.neuronctl]"
    else:
        table, where = data, str(path)
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table")
    return Config(validate(table, where), str(path), path.resolve().parent, named=True)


def load_user_config(path: Path | None = None) -> Config:
    """The user's own config file (neuronctl.cache_dir.user_config_file), or an empty Config
    when there is none; checked against the same table as a project's."""
    from neuronctl.cache_dir import user_config_file
    from neuronctl.safety import is_file_here

    path = path or user_config_file()
    if not is_file_here(path, "your config file (XDG_CONFIG_HOME)"):
        return Config(base_dir=path.parent)
    return _named_file(path)


def load_config(explicit: Path | None, cwd: Path | None = None) -> Config:
    if explicit is not None:
        return _named_file(explicit)
    base = cwd or working_directory()
    pyproject = base / "pyproject.toml"
    if not pyproject.is_file():
        return Config(base_dir=base)
    data = read_toml(pyproject, "config file", MAX_CONFIG_BYTES)
    tool = data.get("tool", {})
    table = tool.get("neuronctl") if isinstance(tool, dict) else None
    if table is None:
        return Config(base_dir=base)
    where = f"{pyproject}: [tool.neuronctl]"
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table")
    return Config(validate(table, where), str(pyproject), base)


def working_directory() -> Path:
    """The working directory, where the project's file is looked for; one removed under the
    shell (`rm -rf` of the folder it stands in) is bad input, not an internal error."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise InputError("the working directory no longer exists (removed while this shell "
                         "stood in it)", hint="cd to a folder that exists") from None
