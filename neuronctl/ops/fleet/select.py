"""Which Slurm nodes `fleet doctor` runs on, beyond the partition and the node list: the job's
account, QOS and reservation, and the nodes it leaves out (`--exclude`) or needs (`--constraint`).

Every value is checked against the characters Slurm's own names use and reaches srun as its own
argument (`--account=VALUE`), never through a shell. With `--nodes N` Slurm picks the nodes and
applies all of it. With `--all` or `--nodelist`, neuronctl lists the nodes itself (sinfo) and
runs on those it names, so it applies `--exclude`, `--constraint` and `--reservation` to that list
first (srun refuses a node list that breaks any of them: one excluded or reserved node would fail
the whole step). srun still gets every option, so Slurm checks the same request again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from msgspec import Struct

from neuronctl.errors import FaultError, InputError

# Slurm account, QOS and reservation names: letters, digits, '.', '_', '-' (no leading '-').
NAME = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]{0,255}")
# A host list reaches `scontrol show hostnames` as an argument: no leading '-' (an option).
HOST_LIST = re.compile(r"[A-Za-z0-9._,\[\]][A-Za-z0-9._,\[\]-]{0,4095}")
# Slurm's constraint syntax: features with & (and), | (or), [..] (matching or), *N (counts), ().
CONSTRAINT = re.compile(r"[A-Za-z0-9._:\[(][A-Za-z0-9._:&|\[\]*()-]{0,1023}")
FEATURE = re.compile(r"[A-Za-z0-9._:-]{1,256}")
MAX_HOSTNAMES = 200_000

Lister = Callable[[list[str]], tuple[int, str]]
"""Runs a Slurm query (scontrol): its exit code and stdout."""


class Selection(Struct, frozen=True):
    """The srun options that choose where and as whom the step runs."""

    account: str | None = None
    qos: str | None = None
    reservation: str | None = None
    exclude: str | None = None
    constraint: str | None = None

    def check(self) -> None:
        for flag, value, pattern in (("--account", self.account, NAME), ("--qos", self.qos, NAME),
                                     ("--reservation", self.reservation, NAME),
                                     ("--exclude", self.exclude, HOST_LIST),
                                     ("--constraint", self.constraint, CONSTRAINT)):
            if value is not None and not pattern.fullmatch(value):
                raise InputError(f"{flag} {value!r}: not a Slurm "
                                 + ("host list" if pattern is HOST_LIST else
                                    "constraint" if pattern is CONSTRAINT else "name"))

    def srun_args(self) -> list[str]:
        """Each option its own argument, in srun's `--flag=value` form."""
        pairs = (("--account", self.account), ("--qos", self.qos),
                 ("--reservation", self.reservation), ("--exclude", self.exclude),
                 ("--constraint", self.constraint))
        return [f"{flag}={value}" for flag, value in pairs if value is not None]

    @property
    def filters(self) -> bool:
        return any(v is not None for v in (self.reservation, self.exclude, self.constraint))


def feature_groups(constraint: str) -> list[frozenset[str]]:
    """`a&b` -> [{a, b}] (all of them); `a|b` -> [{a}, {b}] (any one). The forms a node can be
    judged by alone; matching OR (`[a|b]`: every node the same one), counts, parentheses and
    mixed &/| are about the whole allocation and need Slurm's scheduler."""
    if "&" in constraint and "|" in constraint:
        raise _needs_slurm(constraint)
    parts = constraint.split("&") if "&" in constraint else constraint.split("|")
    if not all(FEATURE.fullmatch(p) for p in parts):
        raise _needs_slurm(constraint)
    return [frozenset(parts)] if "&" in constraint else [frozenset({p}) for p in parts]


def _needs_slurm(constraint: str) -> InputError:
    return InputError(f"--constraint {constraint!r}: with --all or --nodelist neuronctl picks the "
                      "nodes itself and reads FEATURE, A&B or A|B; for matching OR ([A|B]), "
                      "counts or parentheses let Slurm pick: --nodes N")


def satisfies(features: Iterable[str], groups: list[frozenset[str]]) -> bool:
    have = set(features)
    return any(group <= have for group in groups)


def hostnames(host_list: str, lister: Lister) -> set[str]:
    """A Slurm host list (`trn[01-04],gpu1`) expanded by Slurm itself."""
    code, out = lister(["scontrol", "show", "hostnames", host_list])
    if code != 0:
        raise InputError(f"{host_list!r}: Slurm cannot expand this host list (scontrol show hostnames)")
    return set(out.split()[:MAX_HOSTNAMES])


def reservation_nodes(name: str, lister: Lister) -> set[str]:
    code, text = lister(["scontrol", "show", "reservation", name, "--oneliner"])
    found = re.search(r"(?:^|\s)Nodes=(\S+)", text)
    if code != 0 or not found or not text.startswith(f"ReservationName={name} "):
        raise InputError(f"--reservation {name!r}: no such Slurm reservation (scontrol show "
                         "reservation)")
    if found.group(1) == "(null)":
        return set()
    if not HOST_LIST.fullmatch(found.group(1)):
        raise FaultError(f"scontrol show reservation {name}: unreadable node list")
    return hostnames(found.group(1), lister)


def pick(states: dict[str, str], features: dict[str, set[str]], selection: Selection,
         lister: Lister) -> dict[str, str]:
    """The nodes of `states` (node -> sinfo state) that the selection keeps. A node in the
    reservation counts as available though Slurm shows it reserved (`resv`): the step runs in it."""
    kept = dict(states)
    if selection.exclude is not None:
        for node in hostnames(selection.exclude, lister):
            kept.pop(node, None)
    if selection.constraint is not None:
        groups = feature_groups(selection.constraint)
        kept = {n: s for n, s in kept.items() if satisfies(features.get(n, ()), groups)}
    if selection.reservation is not None:
        inside = reservation_nodes(selection.reservation, lister)
        kept = {n: ("idle" if s.rstrip("*~#!%$@^-") == "resv" else s)
                for n, s in kept.items() if n in inside}
    return kept


def node_features(field: str) -> set[str]:
    """sinfo's %f (`trn2,efa` or `(null)`)."""
    return set() if field == "(null)" else {f for f in field.split(",") if FEATURE.fullmatch(f)}
