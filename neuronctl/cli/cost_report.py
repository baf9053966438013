"""Renderers of `neuronctl cost`: the cost table and the bundled prices (text and JSON;
registered in cli/render.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from msgspec import Struct

from neuronctl.cli.output import print_table
from neuronctl.ops.cost import FORMULA, CostOutcome, Price

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer


class PriceList(Struct, frozen=True):
    """`neuronctl cost --prices`: the bundled prices."""

    prices: tuple[Price, ...]


def prices_json(view: PriceList, printer: Printer) -> None:
    printer.json({"prices": [{k: v for k, v in msgspec.structs.asdict(p).items() if k != "accelerators"}
                             for p in view.prices]})


def print_prices(view: PriceList, printer: Printer) -> None:
    from rich.text import Text

    console = printer.console()
    rows = [[Text(c) for c in (p.instance, f"{p.usd_per_hour:.3f}", p.rate, p.published or "-",
                               p.source)] for p in view.prices]
    # Instance names, prices and URLs are never split; a price never without its rate and source.
    print_table(console, ["instance", "USD/hour", "rate", "published", "source"], rows,
                title="bundled prices (trn2, trn3 and GPU instances: give --price)")


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:,.2f}" if value >= 100 else f"${value:.4g}"


def _short_source(price: Price) -> str:
    """A bundled row's file name and date (its full URL: --json, --prices), or --price/config."""
    if not price.published:
        return price.source
    return f"{price.source.rsplit('/', 1)[-1]} ({price.published})"


def costs_json(outcome: CostOutcome, printer: Printer) -> None:
    printer.json({"cost": outcome.to_json()})


def print_costs(outcome: CostOutcome, printer: Printer) -> None:
    from rich.markup import escape
    from rich.text import Text

    console, quiet = printer.console(), printer.quiet
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
    # Instance names and prices are never split ($0.00916|3 read as $0.00916), and a price is
    # never shown without its rate (on-demand, reserved, user-given) and source: where the table
    # does not fit, every row is a line (print_table).
    print_table(console, [*columns, "price source"], rows)
    for warning in outcome.warnings:  # with -q too: it changes what the numbers mean
        console.print(f"[yellow]warn[/]: {escape(warning)}")
    if not quiet:
        console.print(f"[dim]{FORMULA}; 'x accelerators': the throughput taken as one accelerator's, "
                      "with a copy running on each (data parallel)[/]")
