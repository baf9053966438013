"""`neuronctl cost`: tokens per dollar, per instance type, side by side."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.options import resolver
from neuronctl.cli.output import emit_json, fitted_table, print_fitted
from neuronctl.errors import InputError
from neuronctl.ops.cost import (
    FORMULA,
    CostOutcome,
    CostRequest,
    Price,
    check_instance_type,
    check_throughput,
    estimate,
    host_instance_type,
    load_bundled_prices,
    parse_price_flag,
    prices_from_config,
    throughput_from_smoke,
)

# Bounds that keep a job's arithmetic in float range (a 400-digit --tokens overflowed).
MAX_JOB_TOKENS = 10**18
MAX_JOB_HOURS = 1e6

if TYPE_CHECKING:
    from rich.console import Console


class TokenCount(click.ParamType[int, Any]):
    """A whole number of tokens from 1 to MAX_JOB_TOKENS, also in e-notation ("2e9", "1.5E6"):
    read as a decimal, never through a float, so "2e9" is exactly 2000000000 and "2.5e0" (not
    whole) or "1e400" (out of range) are refused rather than rounded."""

    name = "tokens"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = decimal.Decimal(value)
        else:
            text = str(value).strip()
            try:
                number = decimal.Decimal(text) if len(text) <= 40 else decimal.Decimal("nan")
            except decimal.InvalidOperation:
                number = decimal.Decimal("nan")
        if not number.is_finite() or number != number.to_integral_value() \
                or not 1 <= number <= MAX_JOB_TOKENS:
            self.fail(f"{str(value)[:40]!r} is not a whole number of tokens from 1 to "
                      f"{MAX_JOB_TOKENS:,} (2000000000 or 2e9)", param, ctx)
        return int(number)


@click.command()
@click.option("--from", "from_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A `neuronctl smoke --json` (or -o) report: its tokens/s.")
@click.option("--throughput", type=float, metavar="TOKENS_PER_S", help="Tokens per second.")
@click.option("--instance", "instances", multiple=True, metavar="TYPE",
              help="Instance type to cost (repeatable; default: this host's and every priced one).")
@click.option("--price", "prices", multiple=True, metavar="TYPE=USD_PER_HOUR[:ACCELERATORS]",
              help="Hourly price (and accelerator count) of an instance type (repeatable).")
@click.option("--tokens", type=TokenCount(), metavar="COUNT",
              help="A job of this many tokens (2000000000 or 2e9).")
@click.option("--hours", type=click.FloatRange(min=0, max=MAX_JOB_HOURS, min_open=True),
              help="A job of this many hours.")
@click.option("--prices", "list_prices", is_flag=True,
              help="List the bundled prices with their sources and dates.")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
def cost(from_file: Path | None, throughput: float | None, instances: tuple[str, ...],
         prices: tuple[str, ...], tokens: int | None, hours: float | None, list_prices: bool,
         as_json: bool) -> int:
    """Cost per million tokens and per job, for each instance type."""
    app = get_app()
    bundled = load_bundled_prices()
    if list_prices:
        return _list_prices(bundled, as_json, app.console())
    if (from_file is None) == (throughput is None):
        raise InputError("give one of --from smoke.json or --throughput TOKENS_PER_S")
    if tokens is not None and hours is not None:
        raise InputError("--tokens and --hours: give one of them")
    if hours is not None and not (0 < hours <= 1e6):
        raise InputError(f"--hours {hours!r}: expected a number of hours above 0, at most 1,000,000")
    measured: str | None = None
    if from_file is not None:
        speed, source, measured = throughput_from_smoke(from_file)
    else:
        assert throughput is not None
        speed, source = check_throughput(throughput, "--throughput"), "--throughput"
    table, where = resolver().config_entries("prices")  # layered: --price rows beside these
    request = CostRequest(
        speed, source, tuple(dict.fromkeys(check_instance_type(i, "--instance") for i in instances)),
        tuple(parse_price_flag(p) for p in prices), prices_from_config(table, where), tokens, hours,
        measured)
    host, host_source = (None, None) if request.instances else host_instance_type()
    outcome = estimate(request, bundled, host, host_source)
    if as_json:
        emit_json({"cost": outcome.to_json()})
    else:
        print_costs(outcome, app.console(), quiet=app.quiet)
    return 0


def _list_prices(bundled: tuple[Price, ...], as_json: bool, console: Console) -> int:
    if as_json:
        emit_json({"prices": [{k: v for k, v in p.__dict__.items() if k != "accelerators"}
                              for p in bundled]})
        return 0
    from rich.text import Text

    rows = [[Text(c) for c in (p.instance, f"{p.usd_per_hour:.3f}", p.rate, p.published or "-",
                               p.source)] for p in bundled]
    # Instance names, prices and URLs are never split: a narrow terminal drops columns instead.
    print_fitted(console, fitted_table(
        console, ["instance", "USD/hour", "rate", "published", "source"], rows,
        droppable=("source", "published", "rate"),
        title="bundled prices (trn2, trn3 and GPU instances: give --price)"))
    return 0


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:,.2f}" if value >= 100 else f"${value:.4g}"


def _short_source(price: Price) -> str:
    """A bundled row's file name and date (its full URL: --json, --prices), or --price/config."""
    if not price.published:
        return price.source
    return f"{price.source.rsplit('/', 1)[-1]} ({price.published})"


def print_costs(outcome: CostOutcome, console: Console, *, quiet: bool = False) -> None:
    from rich.markup import escape
    from rich.text import Text

    if not quiet:
        speed = f"{outcome.tokens_per_s:,.1f} tokens/s"
        console.print(f"throughput {speed} ({escape(outcome.throughput_source)})")
        if outcome.host:
            console.print(f"this host: {escape(outcome.host)} ({escape(outcome.host_source or '?')})")
    columns = ["instance", "accel.", "USD/hour", "rate", "$ per 1M tokens", "x accel."]
    if outcome.tokens is not None:
        columns += ["job hours", "job $", "job $ x accel."]
    elif outcome.hours is not None:
        columns += ["job tokens", "job $", "job tokens x accel."]
    rows = []
    for row in outcome.rows:
        cells = [row.price.instance, str(row.accelerators or "?"), f"{row.price.usd_per_hour:,.3f}",
                 row.price.rate, _usd(row.usd_per_million_tokens), _usd(row.usd_per_million_tokens_all)]
        if row.job is not None and outcome.tokens is not None:
            cells += [f"{row.job.hours:,.2f}", _usd(row.job.usd),
                      _usd(None if row.job_all is None else row.job_all.usd)]
        elif row.job is not None:
            cells += [f"{row.job.tokens:,.0f}", _usd(row.job.usd),
                      "-" if row.job_all is None else f"{row.job_all.tokens:,.0f}"]
        source = _short_source(row.price)
        rows.append([Text(c) for c in (*cells, source)])
    # Instance names and prices are never split ($0.00916|3 read as $0.00916): a narrow terminal
    # drops the least-needed columns instead, in this order.
    print_fitted(console, fitted_table(
        console, [*columns, "price source"], rows,
        droppable=("price source", "rate", "x accel.", "job $ x accel.", "job tokens x accel.",
                   "accel.")))
    for warning in outcome.warnings:  # with -q too: it changes what the numbers mean
        console.print(f"[yellow]warn[/]: {escape(warning)}")
    if not quiet:
        console.print(f"[dim]{FORMULA}; 'x accelerators': the throughput taken as one accelerator's, "
                      "with a copy running on each (data parallel)[/]")
