"""uv (`uv pip`), aimed at the target interpreter with --python."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from neuronctl.backend.engine import UrlOf, nothing, to_restore
from neuronctl.locked_file import LockedFile


class UvEngine(Struct, frozen=True):
    """The uv engine: argv for `uv pip` on the target, from a PEP 751 lock of exactly the files."""

    uv: str
    name: str = "uv"

    def install(self, python: str, requirements: Path, *, offline: bool = False) -> list[str]:
        # A PEP 751 lock of exactly these files (not a requirements file of direct URLs: for those
        # uv resolves, reading each wheel's metadata with range requests first, so the bytes of a
        # wheel's zip directory are served twice; from a pylock it fetches each file once).
        return [self.uv, "pip", "install", "--python", python, "--no-deps", "--no-index",
                "--require-hashes", "--no-config", *(["--offline"] if offline else []),
                "-r", str(requirements)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [self.uv, "pip", "uninstall", "--python", python, "--no-config", *names]

    @property
    def venv_has_pip(self) -> bool:
        # `uv venv --seed` would fetch pip from PyPI: an index outside the routing, and a network
        # call that breaks offline installs. The caller seeds pip from the base Python's own
        # bundled wheel instead, in the same install step.
        return False

    @property
    def input_name(self) -> str:
        return "pylock.toml"

    @property
    def rereads_local_files(self) -> bool:
        return False  # it hashes a local wheel as it unpacks it, from one open file

    @property
    def has_offline_cache(self) -> bool:
        return True

    @property
    def needs_target_pip(self) -> bool:
        return False

    def render_input(self, files: Sequence[LockedFile], url_of: UrlOf) -> str:
        """A PEP 751 lock of exactly `files`, one wheel each."""
        from neuronctl.toml_emit import dumps  # only an install that runs the engine writes one

        packages = [{"name": f.name, "version": f.version,
                     "wheels": [{"name": f.filename, "url": url_of(f),
                                 "hashes": {"sha256": f.sha256}}]} for f in files]
        return dumps({"lock-version": "1.0", "created-by": "neuronctl", "packages": packages},
                     arrays_of_tables=("packages",))

    def cleanup(self, environment: str) -> Callable[[], None]:
        """uv takes its lock on an environment through an empty `.lock` file at its root, which it
        leaves there; where there was none before, a failed step takes it away again, so that the
        environment is as it was, byte for byte."""
        path = Path(environment) / ".lock"
        if path.exists() or path.is_symlink():
            return nothing

        def drop() -> None:
            try:
                if not path.is_symlink() and path.is_file() and path.stat().st_size == 0:
                    path.unlink()
            except OSError:
                pass

        return drop

    def restore_commands(self, python: str, before: Mapping[str, str], after: Mapping[str, str],
                         index_url_for: Callable[[str], str]) -> list[list[str]]:
        # `uv pip`, as this install ran: a venv uv made has no pip to run. --no-config: only the
        # index named here, none merged in from a uv.toml.
        restore = to_restore(before, after, index_url_for)
        cmds = [[self.uv, "pip", "install", "--python", python, "--no-deps", "--no-config",
                 "--index-url", url, *pins] for url, pins in restore.reinstall]
        if restore.remove:
            cmds.append(self.uninstall(python, restore.remove))
        return cmds

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [self.uv, "venv", "--python", base_python, "--no-python-downloads", "--no-config",
                str(dest)]
