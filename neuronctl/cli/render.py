"""The one render table: (outcome type, format) -> the renderer that writes it.

A command runs its operation and hands the frozen outcome to `printer.emit(outcome, fmt)`; the
renderer for that outcome's type and format writes it through the printer. Renderers live in
the render modules, one per command family (cli/*_report.py); they are named here as strings,
so that a command imports only its own (`neuronctl --help` and a level-1 doctor stay fast).
tests/cli/test_render_table.py checks that every entry names a real type and a real renderer.

`-o FILE` goes by the same rule: FILE_RENDERERS maps (outcome type, format) to the function that
makes the file's text, and `write_file` (printer.write_file) writes it whole or not at all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The printer calls this table (printer.emit), so the table names no Printer: it passes the
# printer through to the renderer, each of which takes the cli.printer.Printer it is handed.
Renderer = Callable[[Any, Any], None]
FileRenderer = Callable[[Any], str]
FileWriter = Callable[[Any, Path], None]

_CACHE = "neuronctl.cli.cache_report"
_COST = "neuronctl.cli.cost_report"
_COVERAGE = "neuronctl.cli.coverage_report"
_DOCTOR = "neuronctl.cli.doctor_report"
_FLEET = "neuronctl.cli.fleet_report"
_HARDWARE = "neuronctl.cli.hardware_report"
_INSTALL = "neuronctl.cli.install_render"
_LOCK = "neuronctl.cli.lock_report"
_MIGRATE = "neuronctl.cli.migrate_report"
_RELEASES = "neuronctl.cli.releases_report"
_SETUP = "neuronctl.cli.setup_report"
_ENV = "neuronctl.cli.env_report"
_PROMETHEUS = "neuronctl.cli.render_prometheus"

RENDERERS: dict[tuple[str, str], str] = {
    # (the outcome's type, as module.Class; the format): module:function(outcome, printer)
    ("neuronctl.cli.cache_report.CacheView", "text"): f"{_CACHE}:print_caches",
    ("neuronctl.cli.cache_report.CacheView", "json"): f"{_CACHE}:caches_json",
    ("neuronctl.cli.cache_report.PruneView", "text"): f"{_CACHE}:print_prune",
    ("neuronctl.cli.cache_report.PruneView", "json"): f"{_CACHE}:prune_json",
    ("neuronctl.ops.cost.CostOutcome", "text"): f"{_COST}:print_costs",
    ("neuronctl.ops.cost.CostOutcome", "json"): f"{_COST}:costs_json",
    ("neuronctl.cli.cost_report.PriceList", "text"): f"{_COST}:print_prices",
    ("neuronctl.cli.cost_report.PriceList", "json"): f"{_COST}:prices_json",
    ("neuronctl.cli.coverage_report.CoverageView", "text"): f"{_COVERAGE}:print_coverage",
    ("neuronctl.cli.coverage_report.CoverageView", "json"): f"{_COVERAGE}:coverage_json",
    ("neuronctl.cli.coverage_report.CoverageView", "markdown"): f"{_COVERAGE}:coverage_markdown",
    ("neuronctl.cli.coverage_report.SweepView", "text"): f"{_COVERAGE}:print_sweep",
    ("neuronctl.cli.coverage_report.SweepView", "json"): f"{_COVERAGE}:sweep_json",
    ("neuronctl.cli.coverage_report.SweepView", "markdown"): f"{_COVERAGE}:sweep_markdown",
    ("neuronctl.cli.coverage_report.TableView", "text"): f"{_COVERAGE}:print_table",
    ("neuronctl.cli.coverage_report.TableView", "json"): f"{_COVERAGE}:table_json",
    ("neuronctl.cli.doctor_report.DoctorView", "text"): f"{_DOCTOR}:print_view",
    ("neuronctl.cli.doctor_report.DoctorView", "json"): f"{_DOCTOR}:view_json",
    ("neuronctl.cli.doctor_report.DoctorView", "junit"): f"{_DOCTOR}:print_junit",
    ("neuronctl.cli.doctor_report.DoctorView", "github"): f"{_DOCTOR}:print_github",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "text"): f"{_FLEET}:print_text",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "json"): f"{_FLEET}:print_json",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "junit"): f"{_FLEET}:print_junit",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "markdown"): f"{_FLEET}:print_markdown",
    ("neuronctl.probes.hardware.HardwareReport", "text"): f"{_HARDWARE}:print_hardware",
    ("neuronctl.probes.hardware.HardwareReport", "json"): f"{_HARDWARE}:hardware_json",
    ("neuronctl.cli.hardware_report.ProbeView", "text"): f"{_HARDWARE}:print_probe",
    ("neuronctl.cli.hardware_report.ProbeView", "json"): f"{_HARDWARE}:probe_json",
    ("neuronctl.cli.hardware_report.SmokeView", "text"): f"{_HARDWARE}:print_smoke",
    ("neuronctl.cli.hardware_report.SmokeView", "json"): f"{_HARDWARE}:smoke_json",
    ("neuronctl.cli.hardware_report.BundleView", "text"): f"{_HARDWARE}:print_bundle",
    ("neuronctl.cli.hardware_report.BundleView", "json"): f"{_HARDWARE}:bundle_json",
    ("neuronctl.cli.env_report.EnvView", "text"): f"{_ENV}:print_env",
    ("neuronctl.cli.env_report.EnvView", "json"): f"{_ENV}:env_json",
    ("neuronctl.ops.install.outcome.InstallOutcome", "text"): f"{_INSTALL}:print_install",
    ("neuronctl.ops.install.outcome.InstallOutcome", "json"): f"{_INSTALL}:install_json",
    ("neuronctl.ops.wheelhouse.DownloadOutcome", "text"): f"{_INSTALL}:print_nothing",
    ("neuronctl.ops.wheelhouse.DownloadOutcome", "json"): f"{_INSTALL}:download_json",
    ("neuronctl.ops.init.InitOutcome", "text"): f"{_SETUP}:print_init",
    ("neuronctl.ops.init.InitOutcome", "json"): f"{_SETUP}:init_json",
    ("neuronctl.ops.lock.outcome.LockOutcome", "text"): f"{_LOCK}:print_lock",
    ("neuronctl.ops.lock.outcome.LockOutcome", "json"): f"{_LOCK}:lock_json",
    ("neuronctl.cli.lock_report.CheckView", "text"): f"{_LOCK}:print_check",
    ("neuronctl.cli.lock_report.CheckView", "json"): f"{_LOCK}:check_json",
    ("neuronctl.ops.migrate.run.MigrateOutcome", "text"): f"{_MIGRATE}:print_text",
    ("neuronctl.ops.migrate.run.MigrateOutcome", "json"): f"{_MIGRATE}:print_json",
    ("neuronctl.ops.migrate.run.MigrateOutcome", "github"): f"{_MIGRATE}:print_github",
    ("neuronctl.ops.migrate.run.MigrateOutcome", "sarif"): f"{_MIGRATE}:print_sarif",
    ("neuronctl.cli.releases_report.ReleaseList", "text"): f"{_RELEASES}:print_list",
    ("neuronctl.cli.releases_report.ReleaseList", "json"): f"{_RELEASES}:list_json",
    ("neuronctl.cli.releases_report.ReleaseView", "text"): f"{_RELEASES}:print_release",
    ("neuronctl.cli.releases_report.ReleaseView", "json"): f"{_RELEASES}:release_json",
    ("neuronctl.ops.releases.ReleasesImport", "text"): f"{_RELEASES}:print_import",
    ("neuronctl.ops.releases.ReleasesImport", "json"): f"{_RELEASES}:import_json",
    ("neuronctl.ops.releases.ReleasesImport", "manifest"): f"{_RELEASES}:import_manifest",
    ("neuronctl.ops.releases.ReleasesUpdate", "text"): f"{_RELEASES}:print_update",
    ("neuronctl.ops.releases.ReleasesUpdate", "json"): f"{_RELEASES}:update_json",
    ("neuronctl.cli.setup_report.PlanView", "text"): f"{_SETUP}:print_plan",
    ("neuronctl.cli.setup_report.PlanView", "sh"): f"{_SETUP}:print_sh",
    ("neuronctl.cli.setup_report.PlanView", "json"): f"{_SETUP}:plan_json",
    ("neuronctl.cli.setup_report.ApplyView", "text"): f"{_SETUP}:print_apply",
    ("neuronctl.cli.setup_report.ApplyView", "json"): f"{_SETUP}:apply_json",
    ("neuronctl.cli.setup_report.DockerfileView", "text"): f"{_SETUP}:print_dockerfile",
    ("neuronctl.cli.setup_report.DockerfileView", "json"): f"{_SETUP}:dockerfile_json",
}


FILE_RENDERERS: dict[tuple[str, str], str] = {
    # (the outcome's type; the format of -o FILE): module:function(outcome) -> the file's text
    ("neuronctl.cli.coverage_report.TableView", "json"): f"{_COVERAGE}:table_file",
    ("neuronctl.cli.doctor_report.DoctorView", "text"): f"{_DOCTOR}:plain_file",
    ("neuronctl.cli.doctor_report.DoctorView", "json"): f"{_DOCTOR}:json_file",
    ("neuronctl.cli.doctor_report.DoctorView", "junit"): f"{_DOCTOR}:junit_file",
    ("neuronctl.cli.doctor_report.DoctorView", "github"): f"{_DOCTOR}:github_file",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "text"): f"{_FLEET}:render_text",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "json"): f"{_FLEET}:json_file",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "junit"): f"{_FLEET}:render_junit",
    ("neuronctl.ops.fleet.aggregate.FleetReport", "markdown"): f"{_FLEET}:render_markdown",
    ("neuronctl.cli.hardware_report.SmokeView", "json"): f"{_HARDWARE}:smoke_file",
    ("neuronctl.cli.setup_report.PlanView", "text"): f"{_SETUP}:plan_file",
    ("neuronctl.cli.setup_report.PlanView", "sh"): f"{_SETUP}:sh_file",
    ("neuronctl.cli.setup_report.PlanView", "json"): f"{_SETUP}:plan_json_file",
    ("neuronctl.cli.setup_report.DockerfileView", "text"): f"{_SETUP}:dockerfile_file",
}
FILE_WRITERS: dict[tuple[str, str], str] = {
    # Files another library writes itself: module:function(outcome, path). prometheus_client
    # writes the textfile collector's file (its temp name, its rename).
    ("neuronctl.cli.doctor_report.DoctorView", "prometheus"): f"{_PROMETHEUS}:write_view",
}
EXECUTABLE_FORMATS = frozenset({"sh"})
"""Formats whose file is a script to run: written with mode 0755."""


def type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _lookup(table: dict[tuple[str, str], str], kind: type, fmt: str) -> Any:
    """The function `table` names for `kind` (or the nearest base class registered) in `fmt`."""
    for base in kind.__mro__:
        entry = table.get((type_name(base), fmt))
        if entry is not None:
            module, _, name = entry.partition(":")
            return getattr(importlib.import_module(module), name)
    return None


def renderer(kind: type, fmt: str) -> Renderer:
    """The renderer of `kind` (or of the nearest base class registered) in `fmt`."""
    found: Renderer | None = _lookup(RENDERERS, kind, fmt)
    if found is None:
        raise LookupError(f"no renderer for {type_name(kind)} in format {fmt!r} (cli/render.py)")
    return found


def render(outcome: object, fmt: str, printer: object) -> None:
    renderer(type(outcome), fmt)(outcome, printer)


def write_file(outcome: object, fmt: str, path: Path) -> None:
    """`outcome` in `fmt` to the file `path` (-o FILE), whole or not at all (cli/output.write_atomic)."""
    from neuronctl.cli.output import write_atomic

    writer: FileWriter | None = _lookup(FILE_WRITERS, type(outcome), fmt)
    if writer is not None:
        writer(outcome, path)
        return
    make: FileRenderer | None = _lookup(FILE_RENDERERS, type(outcome), fmt)
    if make is None:
        raise LookupError(f"no file renderer for {type_name(type(outcome))} in format {fmt!r} "
                          "(cli/render.py)")
    write_atomic(path, make(outcome))
    if fmt in EXECUTABLE_FORMATS:
        path.chmod(0o755)
