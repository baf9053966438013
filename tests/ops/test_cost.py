"""`neuronctl cost`: AWS's cost formula against hand-computed figures, sourced prices only."""

import json

import pytest
from support.sysroots import write

from neuronctl.errors import InputError
from neuronctl.ops.cost import (
    CostRequest,
    cost_per_million_tokens,
    estimate,
    job_cost,
    load_bundled_prices,
    parse_price_flag,
)


@pytest.fixture(autouse=True)
def no_instance_host(tmp_path, monkeypatch):
    """A host whose DMI names no instance type (so IMDS is not asked either)."""
    root = tmp_path / "sysroot"
    write(root, "/sys/class/dmi/id/product_name", "ThinkPad\n")
    monkeypatch.setenv("NEURONCTL_SYSROOT", str(root))
    return root


def cost_json(cli, *args):
    result = cli("cost", "--json", *args)
    return result, json.loads(result.out)


def test_formula_against_hand_computed_figures():
    # 1,000 tokens/s: 1,000 s per million tokens; 8.197 USD/h = 0.00227694 USD/s -> 2.27694 USD
    assert cost_per_million_tokens(1000, 8.197) == pytest.approx(2.2769444, rel=1e-7)
    # 2,000 tokens/s on 0.512 USD/h: 500 s * 0.000142222 USD/s
    assert cost_per_million_tokens(2000, 0.512) == pytest.approx(0.0711111, rel=1e-6)
    job = job_cost(2000, 0.512, tokens=36_000_000)  # 18,000 s = 5 h
    assert (job.hours, job.usd) == (pytest.approx(5.0), pytest.approx(2.56))
    job = job_cost(500, 55.04, hours=2)
    assert (job.tokens, job.usd) == (pytest.approx(3_600_000), pytest.approx(110.08))


def test_bundled_prices_are_the_sourced_rows_only():
    prices = {p.instance: p for p in load_bundled_prices()}
    assert {k: p.usd_per_hour for k, p in prices.items()} == {
        "trn1.2xlarge": 0.512, "trn1.32xlarge": 8.197, "inf2.xlarge": 0.328,
        "inf2.8xlarge": 0.850, "inf2.24xlarge": 2.804, "inf2.48xlarge": 5.608}
    for p in prices.values():
        assert p.rate == "RI-effective" and p.published == "2024-09-16"
        assert p.source.startswith("https://github.com/aws-neuron/aws-neuron-sdk/blob/")
    unsourced = '{"schema": 1, "prices": [{"instance": "trn2.48xlarge", "usd_per_hour": 1.0}]}'
    with pytest.raises(InputError, match="without a source URL and a date"):
        load_bundled_prices(unsourced)


def test_side_by_side_with_a_gpu_price_and_its_accelerator_count(cli):
    result, doc = cost_json(cli, "--throughput", "500", "--instance", "trn1.32xlarge",
                            "--instance", "p5.48xlarge", "--price", "p5.48xlarge=55.04:8", "--hours", "2")
    assert result.code == 0, result.err
    trn1, p5 = doc["cost"]["instances"]
    assert doc["command"] == "cost" and doc["cost"]["host_instance"] is None
    assert trn1["accelerators"] == 16 and trn1["rate"] == "RI-effective"
    assert trn1["usd_per_million_tokens"] == pytest.approx(2000 * 8.197 / 3600)
    assert trn1["usd_per_million_tokens_all_accelerators"] == pytest.approx(2000 * 8.197 / 3600 / 16)
    assert p5["source"] == "--price" and p5["rate"] == "given" and p5["accelerators"] == 8
    assert p5["usd_per_million_tokens"] == pytest.approx(30.577778, rel=1e-6)  # 2000 s * 55.04/3600
    assert p5["usd_per_million_tokens_all_accelerators"] == pytest.approx(3.822222, rel=1e-6)
    assert p5["job"] == {"tokens": pytest.approx(3.6e6), "hours": 2.0, "usd": pytest.approx(110.08)}
    assert p5["job_all_accelerators"]["tokens"] == pytest.approx(28.8e6)


def test_text_table(cli):
    result = cli("cost", "--throughput", "2000", "--instance", "trn1.2xlarge", "--tokens", "36000000")
    assert result.code == 0
    row = next(line for line in result.out.splitlines() if "trn1.2xlarge" in line)
    for cell in ("0.512", "RI-effective", "$0.07111", "5.00", "$2.56", "trn1_instance_prices.csv"):
        assert cell in row
    assert "(1e6 / tokens_per_s) * (usd_per_hour / 3600)" in result.out


def test_no_known_price_is_exit_2_asking_for_price(cli):
    result, doc = cost_json(cli, "--throughput", "1000", "--instance", "trn2.48xlarge")
    assert result.code == 2
    assert doc["error"]["kind"] == "input"
    assert doc["error"]["message"] == ("no known price for trn2.48xlarge: give --price "
                                       "trn2.48xlarge=USD_PER_HOUR (or [tool.neuronctl.prices])")
    assert "neuronctl cost --prices" in doc["error"]["hint"]
    assert "cost" not in doc  # no row, no number made up


def test_prices_from_config_and_the_host_from_the_hardware_probe(cli, isolated_env, no_instance_host):
    write(no_instance_host, "/sys/class/dmi/id/product_name", "trn1.2xlarge\n")
    (isolated_env / "pyproject.toml").write_text(
        '[tool.neuronctl.prices]\n"trn2.48xlarge" = {usd_per_hour = 40.0, accelerators = 16}\n'
        '"trn3.48xlarge" = 50\n')
    result, doc = cost_json(cli, "--throughput", "1000")
    assert result.code == 0, result.err
    cost = doc["cost"]
    assert cost["host_instance"] == "trn1.2xlarge" and cost["host_instance_source"] == "DMI product_name"
    rows = {row["instance"]: row for row in cost["instances"]}
    assert list(rows) == ["trn1.2xlarge", "trn2.48xlarge", "trn3.48xlarge"]
    assert rows["trn1.2xlarge"]["usd_per_hour"] == 0.512
    assert rows["trn2.48xlarge"]["usd_per_million_tokens"] == pytest.approx(40 / 3.6)
    assert rows["trn2.48xlarge"]["source"].startswith("config ")
    assert rows["trn3.48xlarge"]["accelerators"] is None  # not published: never guessed
    assert rows["trn3.48xlarge"]["usd_per_million_tokens_all_accelerators"] is None
    # --price wins over the config and the bundled table
    _, doc = cost_json(cli, "--throughput", "1000", "--instance", "trn2.48xlarge",
                       "--price", "trn2.48xlarge=20")
    assert doc["cost"]["instances"][0]["usd_per_hour"] == 20.0


def test_the_host_is_read_under_sysroot_and_the_flag_wins_over_the_variable(cli, tmp_path):
    """`cost --sysroot` is the settings table's row, as on every command that reads the host:
    the flag beats NEURONCTL_SYSROOT (the fixture's root, whose DMI names no instance), and a
    root that is not one is exit 2 even where no host is read."""
    trn1 = tmp_path / "trn1"
    write(trn1, "/sys/class/dmi/id/product_name", "trn1.2xlarge\n")
    result, doc = cost_json(cli, "--throughput", "1000", "--sysroot", str(trn1))
    assert result.code == 0, result.err
    assert doc["cost"]["host_instance"] == "trn1.2xlarge"
    missing = cli("cost", "--throughput", "1000", "--instance", "trn1.2xlarge",
                  "--sysroot", str(tmp_path / "none"))
    assert missing.code == 2 and "--sysroot" in missing.err and "no such directory" in missing.err
    listing = cli("cost", "--prices", "--sysroot", str(tmp_path / "none"))
    assert listing.code == 2 and "no such directory" in listing.err


def test_unknown_host_and_no_instance_is_exit_2(cli):
    result = cli("cost", "--throughput", "1000")
    assert result.code == 2 and "this host's is unknown; give --instance TYPE" in result.err


@pytest.mark.parametrize(("args", "message"), [
    (("--throughput", "1000", "--price", "trn2.48xlarge"), "expected TYPE=USD_PER_HOUR"),
    (("--throughput", "1000", "--price", "trn2.48xlarge=-3"), "above 0"),
    (("--throughput", "1000", "--price", "trn2.48xlarge=nan"), "above 0"),
    (("--throughput", "1000", "--price", "p5.48xlarge=50:0"), "accelerator count"),
    (("--throughput", "1000", "--instance", "../etc"), "is not an instance type"),
    (("--throughput", "0", "--instance", "trn1.2xlarge"), "throughput must be a positive"),
    (("--throughput", "1000", "--from", "x.json"), "give one of --from"),
    (("--instance", "trn1.2xlarge",), "give one of --from"),
    (("--throughput", "1", "--tokens", "5", "--hours", "1"), "--tokens and --hours"),
])
def test_bad_input_is_exit_2(cli, args, message):
    result = cli("cost", *args)
    assert result.code == 2 and message in result.err, result.err


def test_bad_config_price_names_the_file_and_key(cli, isolated_env):
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl.prices]\n"trn2.48xlarge" = "cheap"\n')
    result = cli("cost", "--throughput", "1000", "--instance", "trn2.48xlarge")
    assert result.code == 2
    assert "pyproject.toml: prices.trn2.48xlarge: the price must be a number" in result.err


def test_prices_listing(cli):
    result = cli("cost", "--prices")
    assert result.code == 0
    for name in ("trn1.2xlarge", "trn1.32xlarge", "inf2.xlarge", "inf2.48xlarge", "2024-09-16"):
        assert name in result.out
    result = cli("cost", "--prices", "--json")
    rows = json.loads(result.out)["prices"]
    assert len(rows) == 6 and all(r["source"].startswith("https://") and r["published"] for r in rows)


def test_from_a_smoke_report(cli, isolated_env):
    report = isolated_env / "smoke.json"
    report.write_text(json.dumps({"schema": 1, "command": "smoke", "smoke": {
        "ok": True, "tokens_per_s": 1250.0, "model": "m:make", "device": "cpu"}}))
    result, doc = cost_json(cli, "--from", str(report), "--instance", "inf2.xlarge")
    assert result.code == 0
    assert doc["cost"]["tokens_per_s"] == 1250.0
    assert doc["cost"]["throughput_source"] == f"{report}: m:make on one cpu device"
    assert doc["cost"]["instances"][0]["usd_per_million_tokens"] == pytest.approx(800 * 0.328 / 3600)
    for smoke, message in [({"ok": False, "tokens_per_s": None}, "did not pass"),
                           ({"ok": True, "tokens_per_s": None}, "no tokens/s"),
                           ({"ok": True, "tokens_per_s": -1}, "throughput must be a positive")]:
        report.write_text(json.dumps({"schema": 1, "smoke": smoke}))
        result = cli("cost", "--from", str(report), "--instance", "inf2.xlarge")
        assert result.code == 2 and message in result.err
    report.write_text("{not json")
    assert "not JSON" in cli("cost", "--from", str(report), "--instance", "inf2.xlarge").err


def test_estimate_is_pure_and_keeps_the_order_given():
    request = CostRequest(100.0, "--throughput", ("inf2.48xlarge", "inf2.xlarge"),
                          flag_prices=(parse_price_flag("inf2.xlarge=1"),))
    outcome = estimate(request, load_bundled_prices(), host="trn1.2xlarge")
    assert [r.price.instance for r in outcome.rows] == ["inf2.48xlarge", "inf2.xlarge"]
    assert outcome.host is None  # --instance given: the host is not part of the answer
    assert outcome.rows[1].usd_per_million_tokens == pytest.approx(10000 / 3600)
    assert outcome.rows[0].accelerators == 12
