"""Where neuronctl keeps its cache (index pages, metadata, the install mutex's lock files) and its
user data (the release data `releases update` stores): a core module of its own so that taking an
install's turn loads nothing of the HTTP stack."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """NEURONCTL_CACHE_DIR (the setting `cache_dir`, neuronctl.settings_table), else
    $XDG_CACHE_HOME/neuronctl, else ~/.cache/neuronctl."""
    from neuronctl.settings_table import from_environment

    explicit: Path | None = from_environment("cache_dir")
    if explicit is not None:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuronctl"


def user_data_dir() -> Path:
    """$XDG_DATA_HOME/neuronctl, else ~/.local/share/neuronctl: where `releases update` keeps
    the release data it fetched."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return Path(base) / "neuronctl"


def user_config_file() -> Path:
    """$XDG_CONFIG_HOME/neuronctl/config.toml, else ~/.config/neuronctl/config.toml: the user's
    own settings, the one config file a trust root is read from (neuronctl.settings)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "neuronctl" / "config.toml"
