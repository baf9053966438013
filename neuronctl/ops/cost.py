"""`neuronctl cost` as an operation: cost per million tokens and per job, per instance type.

Cost per 1M tokens = (1e6 / throughput) * (hourly rate / 3600), exactly as AWS's Neuron benchmark
tables compute their cost columns. Prices come from `--price`, then `[tool.neuronctl.prices]`,
then the bundled table (neuronctl/data/prices.json: only rows with a public source and a date).
An instance with none of them is an error asking for `--price`: never an invented number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.data import bundled_text
from neuronctl.errors import InputError
from neuronctl.probes.target_run import printable
from neuronctl.records import asdict
from neuronctl.safety import open_regular

INSTANCE_ACCELERATORS: Mapping[str, int] = {
    "inf2.xlarge": 1, "inf2.8xlarge": 1, "inf2.24xlarge": 6, "inf2.48xlarge": 12,
    "trn1.2xlarge": 1, "trn1.32xlarge": 16, "trn1n.32xlarge": 16,
    "trn2.48xlarge": 16, "trn2u.48xlarge": 16,
}
"""Neuron chips per instance (AWS's instance pages, as collected in NEURON-FACTS.md); Trn3 and
trn2.3xlarge counts are not published there. GPU counts come with --price TYPE=USD:COUNT."""
INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]{0,30}\.[a-z0-9-]{1,30}")
MAX_USD_PER_HOUR = 100_000.0
MAX_ACCELERATORS = 4096
SMOKE_FILE_CAP = 4 * 1024 * 1024
FORMULA = "usd_per_million_tokens = (1e6 / tokens_per_s) * (usd_per_hour / 3600)"


class Price(Struct, frozen=True):
    """One instance type's hourly price, its kind of rate and where it came from."""

    instance: str
    usd_per_hour: float
    rate: str
    """"RI-effective" for the bundled rows (AWS's benchmark tables), "given" for yours."""
    source: str
    """A URL for a bundled row; "--price" or "config FILE" for yours."""
    published: str | None = None
    accelerators: int | None = None
    """From --price TYPE=USD:COUNT or the config; else the instance table's count."""


def check_instance_type(name: str, where: str) -> str:
    """An EC2 instance type such as trn2.48xlarge (lower-cased), or exit 2 naming `where`."""
    value = name.strip().lower()
    if not INSTANCE_TYPE.fullmatch(value):
        raise InputError(f"{where}: {name[:80]!r} is not an instance type such as trn2.48xlarge")
    return value


def _usd(value: object, where: str) -> float:
    # Compare before any float conversion: math.isfinite(10**400) raises OverflowError.
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not 0 < value <= MAX_USD_PER_HOUR or not math.isfinite(value)):
        raise InputError(f"{where}: the price must be a number of USD per hour above 0 and at most "
                         f"{MAX_USD_PER_HOUR:,.0f}; got {str(value)[:40]!r}")
    return float(value)


def _accelerators(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ACCELERATORS:
        raise InputError(f"{where}: the accelerator count must be a whole number from 1 to "
                         f"{MAX_ACCELERATORS}; got {str(value)[:40]!r}")
    return value


def parse_price_flag(text: str) -> Price:
    """--price TYPE=USD_PER_HOUR[:ACCELERATORS], e.g. p5.48xlarge=55.04:8."""
    where = f"--price {text[:120]}"
    name, sep, rest = text.partition("=")
    if not sep:
        raise InputError(f"{where}: expected TYPE=USD_PER_HOUR[:ACCELERATORS], e.g. trn2.48xlarge=40.5:16")
    usd_text, colon, count_text = rest.partition(":")
    try:
        usd = float(usd_text)
        count = int(count_text) if colon else None
    except ValueError:
        raise InputError(f"{where}: expected TYPE=USD_PER_HOUR[:ACCELERATORS] with numbers, "
                         "e.g. trn2.48xlarge=40.5:16") from None
    return Price(check_instance_type(name, where), _usd(usd, where), "given", "--price",
                 accelerators=None if count is None else _accelerators(count, where))


def prices_from_config(table: Mapping[str, Any], source: str) -> tuple[Price, ...]:
    """[tool.neuronctl.prices]: TYPE = USD_PER_HOUR, or TYPE = {usd_per_hour, accelerators}."""
    prices = []
    for name, value in table.items():
        where = f"{source}: prices.{str(name)[:80]}"
        instance = check_instance_type(str(name), where)
        if isinstance(value, dict):
            extra = set(value) - {"usd_per_hour", "accelerators"}
            if extra or "usd_per_hour" not in value:
                raise InputError(f"{where}: expected a number, or a table with usd_per_hour "
                                 "(and optionally accelerators)")
            count = value.get("accelerators")
            prices.append(Price(instance, _usd(value["usd_per_hour"], where), "given", f"config {source}",
                                accelerators=None if count is None else _accelerators(count, where)))
        else:
            prices.append(Price(instance, _usd(value, where), "given", f"config {source}"))
    return tuple(prices)


def load_bundled_prices(text: str | None = None) -> tuple[Price, ...]:
    """The bundled table (or `text` in its format), every row checked: source URL and date."""
    if text is None:
        text = bundled_text("prices.json")
    data = json.loads(text)
    rows = data.get("prices") if isinstance(data, dict) and data.get("schema") == 1 else None
    if not isinstance(rows, list):
        raise InputError("prices.json: expected schema 1 with a list of prices")
    prices = []
    for row in rows:
        fields = {"instance", "usd_per_hour", "rate", "published", "source"}
        if (not isinstance(row, dict) or set(row) != fields
                or not str(row["source"]).startswith("https://")
                or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(row["published"]))):
            raise InputError(f"prices.json: a row without a source URL and a date: {str(row)[:120]}")
        where = f"prices.json: {row['instance']}"
        prices.append(Price(check_instance_type(str(row["instance"]), where),
                            _usd(row["usd_per_hour"], where), str(row["rate"]), str(row["source"]),
                            str(row["published"])))
    return tuple(prices)


def cost_per_million_tokens(tokens_per_s: float, usd_per_hour: float) -> float:
    """AWS's own formula: (1e6 / throughput) * (hourly rate / 3600)."""
    return (1e6 / tokens_per_s) * (usd_per_hour / 3600)


class Job(Struct, frozen=True):
    """A job of a given size at one price: its tokens, hours and dollars."""

    tokens: float
    hours: float
    usd: float


def job_cost(tokens_per_s: float, usd_per_hour: float, *, tokens: float | None = None,
             hours: float | None = None) -> Job:
    """A job of `tokens` tokens, or of `hours` hours, at this throughput and rate."""
    if tokens is not None:
        hours = tokens / tokens_per_s / 3600
    elif hours is not None:
        tokens = tokens_per_s * hours * 3600
    else:
        raise ValueError("a job needs tokens or hours")
    return Job(tokens, hours, hours * usd_per_hour)


class CostRow(Struct, frozen=True):
    """What one instance type costs per million tokens (and per job) at the throughput given."""

    price: Price
    accelerators: int | None
    usd_per_million_tokens: float
    """At the throughput as given (taken as the whole instance's)."""
    usd_per_million_tokens_all: float | None
    """If the throughput is one accelerator's and every accelerator runs a copy at it."""
    job: Job | None
    job_all: Job | None

    def to_json(self) -> dict[str, Any]:
        price = asdict(self.price)
        price.pop("accelerators")
        return {**price, "accelerators": self.accelerators,
                "usd_per_million_tokens": self.usd_per_million_tokens,
                "usd_per_million_tokens_all_accelerators": self.usd_per_million_tokens_all,
                "job": None if self.job is None else asdict(self.job),
                "job_all_accelerators": None if self.job_all is None else asdict(self.job_all)}


_NEURON_FAMILY = re.compile(r"(trn|inf)\d")
_GPU_FAMILY = re.compile(r"(p|g)\d")
DEVICE_WORDS = {"neuron": "Neuron device", "cuda": "NVIDIA GPU", "cpu": "CPU"}


def instance_device(instance: str) -> str | None:
    """The device an instance type's price buys: neuron (trn*, inf*), cuda (p*, g*), else
    unknown (None: no claim made about it)."""
    family = instance.partition(".")[0]
    if _NEURON_FAMILY.match(family):
        return "neuron"
    return "cuda" if _GPU_FAMILY.match(family) else None


def device_warnings(measured_on: str | None, instances: Sequence[str]) -> tuple[str, ...]:
    """A throughput priced on an instance whose device it was not measured on is not that
    instance's cost: said once per instance (`--throughput` given by hand: measured_on None)."""
    if measured_on is None:
        return ()
    warnings = []
    for instance in instances:
        device = instance_device(instance)
        if device is not None and device != measured_on:
            warnings.append(f"{instance}: throughput measured on "
                            f"{DEVICE_WORDS.get(measured_on, measured_on)}, not on its "
                            f"{DEVICE_WORDS[device]}: not what the model costs there (measure "
                            f"there: neuronctl smoke -o FILE)")
    return tuple(warnings)


class CostRequest(Struct, frozen=True):
    """What `neuronctl cost` was asked: the throughput, instances, prices, job size."""

    tokens_per_s: float
    throughput_source: str
    instances: tuple[str, ...]
    """Instance types to cost, already checked; empty: this host's and every priced one."""
    flag_prices: tuple[Price, ...] = ()
    config_prices: tuple[Price, ...] = ()
    tokens: int | None = None
    hours: float | None = None
    measured_on: str | None = None
    """The device a smoke report's throughput was measured on (neuron, cuda, cpu); None: given."""


class CostOutcome(Struct, frozen=True):
    """The cost table for the throughput given, one row per instance type."""

    tokens_per_s: float
    throughput_source: str
    tokens: int | None
    hours: float | None
    rows: tuple[CostRow, ...]
    host: str | None
    """This host's instance type, when the rows include it because no --instance was given."""
    host_source: str | None = None
    measured_on: str | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"formula": FORMULA, "tokens_per_s": self.tokens_per_s,
                "throughput_source": self.throughput_source, "measured_on": self.measured_on,
                "warnings": list(self.warnings),
                "job": {"tokens": self.tokens, "hours": self.hours}
                if self.tokens is not None or self.hours is not None else None,
                "host_instance": self.host, "host_instance_source": self.host_source,
                "instances": [row.to_json() for row in self.rows]}


def check_throughput(value: float, where: str) -> float:
    if not math.isfinite(value) or not 0 < value <= 1e15:
        raise InputError(f"{where}: throughput must be a positive number of tokens per second; "
                         f"got {value!r}")
    return value


def _price_for(instance: str, request: CostRequest, bundled: Sequence[Price]) -> Price:
    for source in (request.flag_prices, request.config_prices, bundled):
        found = [p for p in source if p.instance == instance]
        if found:
            return found[-1]
    raise InputError(f"no known price for {instance}: give --price {instance}=USD_PER_HOUR "
                     f"(or [tool.neuronctl.prices])",
                     hint="bundled prices, each with its source: neuronctl cost --prices")


def _check_finite(row: CostRow, request: CostRequest) -> None:
    """Every number a row shows is finite and a job's is above 0: a throughput as small as
    1e-320 passes its own check but makes the cost per token infinite (and --json print
    Infinity, which no JSON parser takes)."""
    numbers = [row.usd_per_million_tokens, row.usd_per_million_tokens_all]
    for job in (row.job, row.job_all):
        if job is not None:
            numbers += [job.tokens, job.hours, job.usd]
    if all(n is None or (math.isfinite(n) and n >= 0) for n in numbers):
        return
    given = f"{request.tokens_per_s!r} tokens/s"
    raise InputError(f"{request.throughput_source}: {given} at {row.price.instance}'s price gives costs "
                     "out of range (not a finite number); give a throughput of a realistic size")


def estimate(request: CostRequest, bundled: Sequence[Price], host: str | None = None,
             host_source: str | None = None) -> CostOutcome:
    """One row per instance type: `request.instances`, else `host` and every --price/config
    type. Pure: the host's type is found by the caller (`host_instance_type`)."""
    chosen = list(request.instances)
    if not chosen:
        named = [p.instance for p in (*request.flag_prices, *request.config_prices)]
        chosen = list(dict.fromkeys([host, *named] if host else named))
    if not chosen:
        raise InputError("no instance type to cost: this host's is unknown; give --instance TYPE "
                         "(or --price TYPE=USD_PER_HOUR)")
    rows = []
    for instance in chosen:
        price = _price_for(instance, request, bundled)
        count = price.accelerators or INSTANCE_ACCELERATORS.get(instance)
        rate, speed = price.usd_per_hour, request.tokens_per_s
        job = None
        if request.tokens is not None or request.hours is not None:
            job = job_cost(speed, rate, tokens=request.tokens, hours=request.hours)
        scaled = speed * count if count else None
        rows.append(CostRow(
            price, count, cost_per_million_tokens(speed, rate),
            cost_per_million_tokens(scaled, rate) if scaled else None, job,
            job_cost(scaled, rate, tokens=request.tokens, hours=request.hours)
            if scaled and job is not None else None))
    for row in rows:
        _check_finite(row, request)
    return CostOutcome(request.tokens_per_s, request.throughput_source, request.tokens,
                       request.hours, tuple(rows), None if request.instances else host,
                       None if request.instances else host_source, request.measured_on,
                       device_warnings(request.measured_on, chosen))


def throughput_from_smoke(path: Path) -> tuple[float, str, str | None]:
    """The tokens/s a `neuronctl smoke --json` (or `-o FILE`) run measured, what it was, and
    the device it ran on (neuron, cuda, cpu; None where the report names none of them)."""
    where = f"--from {path}"
    try:
        with open_regular(path) as fh:  # a FIFO or /dev/stdin is refused, never waited on
            raw = fh.read(SMOKE_FILE_CAP + 1)
    except OSError as exc:
        raise InputError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > SMOKE_FILE_CAP:
        raise InputError(f"{where}: larger than a smoke report can be ({SMOKE_FILE_CAP} bytes)")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise InputError(f"{where}: not JSON (expected `neuronctl smoke --json` output)") from None
    smoke = data.get("smoke") if isinstance(data, dict) and data.get("schema") == 1 else None
    if not isinstance(smoke, dict):
        raise InputError(f"{where}: not a neuronctl smoke report (schema 1 with a 'smoke' object)")
    if smoke.get("ok") is not True:
        raise InputError(f"{where}: that smoke run did not pass; it measured no throughput to cost")
    speed = smoke.get("tokens_per_s")
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise InputError(f"{where}: the smoke run has no tokens/s (its factory gave no tokens per "
                         "step); give --throughput TOKENS_PER_S")
    model, device = printable(str(smoke.get("model")), 120), printable(str(smoke.get("device")), 20)
    try:
        value = float(speed)
    except OverflowError:  # a 400-digit integer: no float holds it
        raise InputError(f"{where}: smoke.tokens_per_s {str(speed)[:20]}... is out of range; "
                         "expected a positive number of tokens per second") from None
    measured = smoke.get("device") if smoke.get("device") in DEVICE_WORDS else None
    return check_throughput(value, where), f"{path}: {model} on one {device} device", measured


def host_instance_type(sysroot: Path | None = None) -> tuple[str | None, str | None]:
    """This host's instance type and where it was read (DMI, sysfs, IMDSv2), if it is known."""
    from neuronctl.probes.hardware import detect_hardware
    from neuronctl.probes.sysroot import SysRoot

    report = detect_hardware(SysRoot.from_env(sysroot))
    value = report.instance_type
    if value is None or not INSTANCE_TYPE.fullmatch(value.strip().lower()):
        return None, None  # unknown, or nothing an instance type looks like: not ours to guess
    return value.strip().lower(), report.instance_type_source
