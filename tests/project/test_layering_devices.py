"""The device vocabulary (auto, neuron, cuda, cpu) is declared once, in neuronctl/devices.py:
the click choices are that tuple, and no module of the package spells it out again."""

from __future__ import annotations

import re
from pathlib import Path

import click

from neuronctl.cli.main import cli
from neuronctl.devices import DEVICES, FALLBACK_DEVICES

REPO = Path(__file__).resolve().parents[2]
SPELLED = re.compile(r"""["']auto["'],\s*["']neuron["'],\s*["']cuda["'],\s*["']cpu["']|"""
                     r"""\(\s*["']cuda["'],\s*["']cpu["']\s*\)""")
# Modules still spelling the vocabulary while other sessions move them (issue 24): none now.
PENDING: set[str] = set()
# Stand-alone scripts that run inside the target interpreter and cannot import neuronctl.
STANDALONE = "probes/scripts/"


def test_the_vocabulary():
    assert DEVICES == ("auto", "neuron", "cuda", "cpu")
    assert FALLBACK_DEVICES == ("cuda", "cpu")


def test_every_device_option_offers_the_core_vocabulary():
    install = cli.get_command(click.Context(cli), "install")
    assert install is not None
    device = next(p for p in install.params if p.name == "device")
    assert isinstance(device.type, click.Choice) and tuple(device.type.choices) == DEVICES


def test_no_module_spells_the_vocabulary_again():
    spelled = []
    for part in ("neuronctl", "resolvers", "probes", "backend"):
        for path in (REPO / part).rglob("*.py"):
            relative = path.relative_to(REPO).as_posix()
            if relative in PENDING or relative.startswith(STANDALONE) \
                    or relative == "neuronctl/devices.py":
                continue
            if SPELLED.search(path.read_text(encoding="utf-8")):
                spelled.append(relative)
    assert spelled == []
