"""The doctor's inspection after an install starts with the engine (probes/held_inspection.py):
its interpreter is up before the install ends, it reads the distributions the install put there,
and where the install changed what an interpreter reads as it starts (a .pth file, a
sitecustomize module), or the site directories are not the ones it was told, the answer comes
from a fresh interpreter instead. Real venvs, a real pip installing a real wheel."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from support.held import dist_folder, held_and_up, log_starts, starts
from support.wheels import build_wheel, find_python, make_venv, pip_install, site_packages

from neuronctl.probes.held_inspection import venv_site_dirs


def test_it_starts_at_once_and_reads_what_the_install_put_there(tmp_path):
    py = make_venv(tmp_path / "venv")
    log = tmp_path / "starts.log"
    held = held_and_up(tmp_path / "venv", log)
    started = starts(log)  # up before anything asked for its result
    pip_install(py, [build_wheel(tmp_path / "w", "late-arrival", "2.0")])
    after_install = starts(log)
    env = held.result()
    assert env.get("late-arrival") is not None and env.get("late-arrival").version == "2.0"
    assert starts(log) == after_install  # the held interpreter answered: no new one started
    assert started[0] in after_install


def test_a_pth_file_the_install_adds_is_read_as_a_new_interpreter_reads_it(tmp_path):
    make_venv(tmp_path / "venv")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "extra", "via-pth")
    (site_packages(tmp_path / "venv") / "extra.pth").write_text(str(tmp_path / "extra") + "\n")
    assert held.result().get("via-pth") is not None
    assert len(starts(tmp_path / "starts.log")) == 2  # a new interpreter answered


def test_a_sitecustomize_the_install_adds_is_run_as_a_new_interpreter_runs_it(tmp_path):
    # pyenv's CPython runs a venv's sitecustomize; Debian's python3 has its own in the standard
    # library, ahead of site-packages, and never does. The held answer is what a new one sees.
    python = make_venv(tmp_path / "venv", find_python("3.11"))
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "extra", "via-customize")
    (site_packages(tmp_path / "venv") / "sitecustomize.py").write_text(
        f"import sys; sys.path.append({str(tmp_path / 'extra')!r})\n")
    extra = str(tmp_path / "extra")
    fresh = subprocess.run([str(python), "-c", f"import sys; sys.exit({extra!r} not in sys.path)"],
                           capture_output=True, check=False).returncode == 0
    assert (held.result().get("via-customize") is not None) is fresh
    assert fresh or find_python("3.11").startswith("/usr/")  # pyenv's runs it: the case that matters
    assert len(starts(tmp_path / "starts.log")) == 2  # a new interpreter answered


def test_a_folder_an_unchanged_pth_names_that_the_install_creates_is_added_as_at_a_new_start(tmp_path):
    """site.py adds a .pth path line's folder only if it exists as the interpreter starts."""
    make_venv(tmp_path / "venv")
    (site_packages(tmp_path / "venv") / "later.pth").write_text(str(tmp_path / "later") + "\n")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "later", "in-later")
    assert held.result().get("in-later") is not None


def test_a_module_an_unchanged_pth_imports_that_the_install_changes_is_run_as_at_a_new_start(tmp_path):
    site = site_packages(make_venv(tmp_path / "venv").parent.parent)
    (site / "hook.pth").write_text("import zz_hook\n")
    (site / "zz_hook.py").write_text("")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "extra", "via-hook")
    (site / "zz_hook.py").write_text(f"import sys; sys.path.append({str(tmp_path / 'extra')!r})\n")
    assert held.result().get("via-hook") is not None


def test_start_up_code_that_closes_stdin_cannot_make_it_answer_before_the_install(tmp_path):
    """A .pth that points stdin at /dev/null reads as a release: without neuronctl's token the
    held interpreter reports nothing, and a new one answers."""
    make_venv(tmp_path / "venv")
    (site_packages(tmp_path / "venv") / "zz_stdin.pth").write_text(
        "import os; os.dup2(os.open(os.devnull, os.O_RDONLY), 0)\n")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    _wait_exited(starts(tmp_path / "starts.log")[0])  # it took the EOF and went on at once
    dist_folder(site_packages(tmp_path / "venv"), "late-arrival")
    assert held.result().get("late-arrival") is not None


def _wait_exited(pid: int) -> None:
    """Until `pid` has exited (a zombie, not yet reaped, counts)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return
        except OSError:
            return
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} still running")


def test_site_dirs_it_was_not_told_of_mean_a_fresh_interpreter(tmp_path):
    """Told the wrong folders, it cannot know the .pth below changed anything: the interpreter's
    own site dirs (in its answer) are not among them, so a new one is asked."""
    make_venv(tmp_path / "venv")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log", [str(tmp_path / "elsewhere")])
    dist_folder(tmp_path / "extra", "via-pth")
    (site_packages(tmp_path / "venv") / "extra.pth").write_text(str(tmp_path / "extra") + "\n")
    assert held.result().get("via-pth") is not None


def test_cancel_ends_the_held_interpreter(tmp_path):
    make_venv(tmp_path / "venv")
    log = tmp_path / "starts.log"
    held = held_and_up(tmp_path / "venv", log)
    held.cancel()
    assert not _signalable(starts(log)[0])


def test_neuronctl_releases_with_the_token_the_script_waits_for():
    """The held script imports nothing of neuronctl's: the two copies of the token must agree."""
    from neuronctl.probes import target_run
    from neuronctl.probes.scripts import inspect_hold

    assert target_run.RELEASE == inspect_hold.RELEASE


def test_a_venvs_site_dirs_come_from_its_layout(tmp_path):
    make_venv(tmp_path / "venv")
    assert venv_site_dirs(str(tmp_path / "venv")) == [os.path.realpath(site_packages(tmp_path / "venv"))]
    assert venv_site_dirs(str(tmp_path / "none")) == []


def _signalable(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_install_into_an_existing_venv_starts_the_target_twice_and_its_doctor_sees_the_stack(
        cli, uni, locked, tmp_path):
    """The plan's inspection and the doctor's, held from the engine's start: two interpreter
    starts, not three, and the doctor after the install reads what the engine installed."""
    py = make_venv(tmp_path / "venv", find_python("3.12"))
    log = tmp_path / "starts.log"
    log_starts(tmp_path / "venv", log)
    r = cli("install", "--lock", str(locked), "--python", str(py), "--engine", "uv")
    assert r.code == 0, r.err
    assert "PASS" in r.out and "packages.torch-neuronx" in r.out, r.out
    assert len(starts(log)) == 2


def _inspections_of(python: Path) -> list[int]:
    """The inspection scripts running in `python` now, from /proc."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == str(python).encode() and any(a.endswith(b"inspect_env.py") for a in argv):
            found.append(int(pid))
    return found


def test_a_failed_install_leaves_no_held_interpreter(cli, uni, locked, tmp_path, engines_fail_fast):
    py = make_venv(tmp_path / "venv", find_python("3.12"))
    last = next(e.filename for e in uni.pypi.projects["typing-extensions"] if "4.12.2" in e.filename)
    uni.pypi.stall[f"/files/{last}"] = (2.0, 1000)  # the held interpreter is up by then ...
    uni.pypi.cut_after[last] = 300  # ... and the engine fails
    seen: list[int] = []
    watch = threading.Thread(target=lambda: [seen.extend(_inspections_of(py)) or time.sleep(0.05)
                                             for _ in range(40)], daemon=True)
    watch.start()
    r = cli("install", "--lock", str(locked), "--python", str(py), "--engine", "uv")
    watch.join()
    assert r.code == 1 and "install failed, nothing changed" in r.err, r.err
    assert seen  # it was there while the engine ran
    assert _inspections_of(py) == [] and not any(_signalable(pid) for pid in set(seen))
