"""Options several commands share to say what stack to build (lock and install), and the one
way they become a request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from neuronctl.cli.app import App
    from neuronctl.ops.lock.request import StackRequest


def request_options(f: Any) -> Any:
    """The options lock and install share to say what stack to build."""
    options = [
        click.option("--release", help="Neuron release (default: config, else the newest native one)."),
        click.option("--torch", help="PyTorch line, e.g. 2.14 (default: the release's own)."),
        click.option("--with", "with_", multiple=True, metavar="REQ",
                     help="Your own requirement, e.g. 'transformers>=4.50' (repeatable)."),
        click.option("--index", "indexes", multiple=True, metavar="NAME=URL",
                     help="Replace or add an index (also NEURONCTL_INDEX_<NAME>, config `indexes`)."),
        click.option("--route", "routes", multiple=True, metavar="PKG=NAME",
                     help="Look PKG up on index NAME only (config `routes`)."),
        click.option("--latest", is_flag=True,
                     help="Newest builds within the release's lines instead of its exact versions."),
        click.option("--offline", is_flag=True, help="Only the HTTP cache and file:// indexes."),
        click.option("--timeout", type=float, help="Per-request timeout in seconds (default 30)."),
        click.option("--allow-unsupported", is_flag=True,
                     help="Proceed where a documented rule (OS, support window, driver/runtime) "
                          "forbids the stack; the rule and its source are still named."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def make_request(app: App, *, release: str | None, torch: str | None, pythons: tuple[str, ...],
                 platforms: tuple[str, ...], with_: tuple[str, ...], indexes: tuple[str, ...],
                 routes: tuple[str, ...], latest: bool, fallback: str | None = None) -> StackRequest:
    """The stack request from these options, the config and the manifest (each read once);
    `fallback` (lock --fallback cuda[=VARIANT]|cpu) asks for a fallback lock's stack."""
    from neuronctl.ops.lock.request import build_request

    return build_request(app.config(), app.manifest(), release=release, torch=torch, pythons=pythons,
                         platforms=platforms, requirements=with_, index_flags=indexes,
                         route_flags=routes, latest=latest, fallback=fallback)
