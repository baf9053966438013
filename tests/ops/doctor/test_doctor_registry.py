"""Issue 24: every doctor check is registered the same way, by `@check(...)` right above its
function (id, title, level, the facts it gathers, severity), and the doctor's list is read from
those records."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from neuronctl.ops.doctor import checks
from neuronctl.ops.doctor.registry import REGISTERED, check

DOCTOR = Path(checks.__file__).parent


def test_every_check_is_registered_above_its_own_function() -> None:
    assert len(checks.CHECKS) >= 20 and set(REGISTERED) == set(checks.CHECK_IDS)
    for spec in checks.CHECKS:
        lines, _ = inspect.getsourcelines(spec.run)
        head = "".join(lines[:lines.index(next(x for x in lines if x.startswith("def ")))])
        assert head.startswith("@check(") and f'"{spec.id}"' in head, spec.id


def test_no_module_builds_the_list_by_hand() -> None:
    for path in DOCTOR.glob("*.py"):
        if path.name == "registry.py":
            continue
        assert "CheckSpec(" not in path.read_text(encoding="utf-8"), path.name


def test_one_id_twice_is_refused() -> None:
    def another(_facts):  # type: ignore[no-untyped-def]
        raise AssertionError

    with pytest.raises(ValueError, match="registered twice"):
        check("python.version", "Python interpreter")(another)
    assert REGISTERED["python.version"].run is not another


def test_the_records_say_what_the_doctor_runs() -> None:
    spec = {s.id: s for s in checks.CHECKS}
    assert spec["hardware.errors"].severity == "drain"
    assert (spec["network.efa"].level, spec["network.efa"].gathers) == (2, {"hardware", "efa"})
    assert spec["model.smoke"].level == 3 and spec["python.version"].gathers == frozenset()
    assert checks.CHECK_IDS == checks.REPORT_ORDER
