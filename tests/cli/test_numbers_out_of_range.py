"""Numbers from a file or a flag that no float holds are bad input (exit 2 naming them), never an
internal error."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_numbers.py)

BIG = "9" * 401


def test_a_401_digit_throughput_in_a_smoke_report_is_exit_2(cli, isolated_env) -> None:
    report = isolated_env / "smoke.json"
    report.write_text('{"schema": 1, "smoke": {"ok": true, "tokens_per_s": ' + BIG + "}}")
    result = cli("cost", "--from", str(report), "--instance", "inf2.xlarge")
    assert result.code == 2, result.err
    assert f"--from {report}: smoke.tokens_per_s 999" in result.err
    assert "internal error" not in result.err and len(result.err.strip().splitlines()) <= 2


def test_a_401_digit_config_price_is_exit_2(cli, isolated_env) -> None:
    (isolated_env / "pyproject.toml").write_text(f'[tool.neuronctl.prices]\n"trn2.48xlarge" = {BIG}\n')
    result = cli("cost", "--throughput", "1000", "--instance", "trn2.48xlarge")
    assert result.code == 2, result.err
    assert "prices.trn2.48xlarge: the price must be a number" in result.err


@pytest.mark.parametrize("args", [("--tokens", BIG), ("--tokens", "10000000000000000000"),
                                  ("--hours", "1e400"), ("--hours", "0"), ("--hours", "nan")])
def test_job_size_out_of_range_is_exit_2(cli, args: tuple[str, str]) -> None:
    result = cli("cost", "--throughput", "1000", "--instance", "inf2.xlarge", *args)
    assert result.code == 2, result.err
    assert args[0] in result.err and "internal error" not in result.err


def test_a_large_job_still_costs(cli) -> None:
    result = cli("cost", "--json", "--throughput", "1000", "--instance", "inf2.xlarge",
                 "--tokens", str(10**18))
    assert result.code == 0, result.err
    assert json.loads(result.out)["cost"]["job"]["tokens"] == 10**18


def _dist_record(tmp_path, text: str):
    info = tmp_path / "site" / "bad-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text(text)
    return info


@pytest.mark.parametrize("record", [
    "bad/a.py,sha256=x,²\n",                 # isdigit() but not int()
    "bad/a.py,sha256=x," + "9" * 5000 + "\n",  # past int()'s digit limit
    "bad/\x00nul.py,,\n",                      # a NUL in a path: ValueError from the os
    "x" * 200_000 + ",,\n",                    # a field past csv's field limit
])
def test_a_hostile_record_never_fails_lock_drift(tmp_path, record: str) -> None:
    from neuronctl.ops.doctor.checks_lock import record_size

    size = record_size(_dist_record(tmp_path, record))
    assert size is None or size == 0


def test_a_fifo_record_is_size_unknown_without_blocking(tmp_path) -> None:
    import os

    from neuronctl.ops.doctor.checks_lock import record_size

    info = tmp_path / "fifo-1.0.dist-info"
    info.mkdir()
    os.mkfifo(info / "RECORD")
    assert record_size(info) is None
