"""The dpkg status reader parses only the stanzas that name a Neuron package; it must find exactly
what a parse of every stanza finds, on any status file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronctl.probes.dpkg import parse_dpkg_status


def parse_every_stanza(text: str, prefix: str = "aws-neuron") -> dict[str, str]:
    """The reference: every stanza parsed, as the reader did before it skipped to the matches."""
    found: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        name = fields.get("package", "")
        if not name.startswith(prefix) or "installed" not in fields.get("status", "").split():
            continue
        version = fields.get("version", "").split(":", 1)[-1]
        found[name] = version.rsplit("-", 1)[0] if "-" in version else version
    return found


NAMES = st.sampled_from(["aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuron-tools", "libc6",
                         "xaws-neuron", "aws-neur", "AWS-NEURONX-TOOLS"])
KEYS = st.sampled_from(["Package", "package", "PACKAGE ", "Status", "Version", "Description",
                        " Package", "\tVersion", "Depends"])
VALUES = st.sampled_from(["install ok installed", "deinstall ok config-files", "2.19.64.0-1",
                          "1:2.23.0-3", "2.35", " aws-neuronx-dkms", "aws-neuronx-tools", ""])


@st.composite
def stanza(draw: st.DrawFn) -> str:
    lines = [f"Package: {draw(NAMES)}"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            lines.append(f" continued {draw(VALUES)}")
        elif kind == 1:
            lines.append(f"{draw(KEYS)}:{draw(VALUES)}")
        else:
            lines.append(f"{draw(KEYS)}: {draw(st.one_of(VALUES, NAMES))}")
    draw(st.randoms()).shuffle(lines)
    return "\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(stanza(), max_size=8), st.sampled_from(["\n\n", "\n\n\n", "\n"]), st.booleans())
def test_only_the_matching_stanzas_are_parsed_and_nothing_else_changes(stanzas, sep, trailing):
    text = sep.join(stanzas) + ("\n" if trailing else "")
    assert parse_dpkg_status(text) == parse_every_stanza(text)


def test_the_hosts_real_status_file_reads_the_same():
    status = Path("/var/lib/dpkg/status")
    text = status.read_text(errors="replace") if status.is_file() else ""
    planted = text + ("\n" if text and not text.endswith("\n") else "") + (
        "\nPackage: aws-neuronx-dkms\nStatus: install ok installed\nVersion: 2.19.64.0-1\n")
    assert parse_dpkg_status(planted) == parse_every_stanza(planted) == {"aws-neuronx-dkms": "2.19.64.0"}


@pytest.mark.parametrize("text", [
    "Status: install ok installed\n" + "Package: aws-neuronx\n" * 40000,  # one stanza, many names
    ("Package: aws-neuronx-dkms\r\nStatus: install ok installed\r\n\r\n") * 20000,  # CRLF: no "\n\n"
    "aws-neuron" * 80000,  # the prefix over and over on one line
    "\n\n".join(f"Package: aws-neuron-{i}\nStatus: install ok installed\nVersion: 1.{i}-1"
                for i in range(20000)),
])
def test_a_crafted_status_file_is_read_in_linear_time(text):
    """Each character is looked at a bounded number of times: 1 MB of the worst shapes (each once
    quadratic in an earlier draft: 45 s for 168 KB) reads as fast as the full parse does.
    Compared with the reference parse in the same run, not with a clock."""
    import time

    def best(parse) -> float:  # type: ignore[no-untyped-def]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            parse(text)
            times.append(time.perf_counter() - start)
        return min(times)

    assert parse_dpkg_status(text) == parse_every_stanza(text)
    assert best(parse_dpkg_status) < 3 * best(parse_every_stanza) + 0.05
