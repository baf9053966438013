"""`neuronctl cost`: tokens per dollar, per instance type, side by side."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import check_sysroot
from neuronctl.cli.host_settings_types import CostSettings
from neuronctl.cli.options import json_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.errors import InputError
from neuronctl.ops.cost import (
    CostRequest,
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
@with_settings("cost", CostSettings)
@click.option("--from", "from_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A `neuronctl smoke --json` (or -o) report: its tokens/s.")
@click.option("--throughput", type=float, metavar="TOKENS_PER_S", help="Tokens per second.")
@click.option("--instance", "instances", multiple=True, metavar="TYPE",
              help="Instance type to cost (repeatable; default: this host's and every priced one).")
@click.option("--tokens", type=TokenCount(), metavar="COUNT",
              help="A job of this many tokens (2000000000 or 2e9).")
@click.option("--hours", type=click.FloatRange(min=0, max=MAX_JOB_HOURS, min_open=True),
              help="A job of this many hours.")
@click.option("--prices", "list_prices", is_flag=True,
              help="List the bundled prices with their sources and dates.")
@json_option
def cost(settings: CostSettings, from_file: Path | None, throughput: float | None,
         instances: tuple[str, ...], tokens: int | None, hours: float | None, list_prices: bool) -> int:
    """Cost per million tokens and per job, for each instance type."""
    sysroot = check_sysroot(settings.sysroot)  # a bad root is exit 2 whether or not it is read
    app = get_app()
    bundled = load_bundled_prices()
    if list_prices:
        from neuronctl.cli.cost_report import PriceList

        app.printer.emit(PriceList(bundled))
        return 0
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
    prices = settings.prices
    table, where = settings.config_prices  # layered: --price rows beside these
    request = CostRequest(
        speed, source, tuple(dict.fromkeys(check_instance_type(i, "--instance") for i in instances)),
        tuple(parse_price_flag(p) for p in prices), prices_from_config(table, where), tokens, hours,
        measured)
    host, host_source = (None, None) if request.instances else host_instance_type(sysroot)
    app.printer.emit(estimate(request, bundled, host, host_source))
    return 0
