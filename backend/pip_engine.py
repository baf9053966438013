"""pip, the target environment's own (`<python> -m pip`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from neuronctl.backend.engine import UrlOf, nothing, to_restore
from neuronctl.locked_file import LockedFile


class PipEngine(Struct, frozen=True):
    """The pip engine: argv for the target's own pip, hashes required, no index, no deps."""

    name: str = "pip"

    def install(self, python: str, requirements: Path, *, offline: bool = False) -> list[str]:
        # pip has no offline mode; --offline installs through it only from local files.
        return [python, "-m", "pip", "install", "--no-deps", "--no-index", "--require-hashes",
                "--no-cache-dir", "--force-reinstall", "--disable-pip-version-check", "--no-input",
                "-r", str(requirements)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [python, "-m", "pip", "uninstall", "--yes", "--disable-pip-version-check", *names]

    @property
    def venv_has_pip(self) -> bool:
        return True  # the stdlib venv runs ensurepip: the interpreter's bundled pip, no network

    @property
    def input_name(self) -> str:
        return "requirements.txt"

    @property
    def rereads_local_files(self) -> bool:
        return True  # it hashes a file: requirement, then opens the path again to install it

    @property
    def has_offline_cache(self) -> bool:
        return False

    @property
    def needs_target_pip(self) -> bool:
        return True

    def render_input(self, files: Sequence[LockedFile], url_of: UrlOf) -> str:
        """A requirements file of `name @ URL --hash=sha256:...` lines (with --require-hashes)."""
        return "\n".join(f.requirement(url_of(f)) for f in files) + "\n"

    def cleanup(self, environment: str) -> Callable[[], None]:
        return nothing  # pip leaves nothing of its own in an environment

    def restore_commands(self, python: str, before: Mapping[str, str], after: Mapping[str, str],
                         index_url_for: Callable[[str], str]) -> list[list[str]]:
        restore = to_restore(before, after, index_url_for)
        cmds = [[python, "-m", "pip", "install", "--no-deps", "--index-url", url, *pins]
                for url, pins in restore.reinstall]
        if restore.remove:
            cmds.append([python, "-m", "pip", "uninstall", "--yes", *restore.remove])
        return cmds

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [base_python, "-m", "venv", str(dest)]
