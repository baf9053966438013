"""A real two-node Slurm cluster on this machine (Debian's slurm-wlm and munge), for the fleet tests.

munged, slurmctld and two slurmd (`slurmd -N node1`, `-N node2`) run with their state, spool,
sockets and logs under one temp dir and a slurm.conf that `SLURM_CONF` points at; each is stopped
by its own pid. Nodes differ only through Slurm itself: a TaskProlog exports `NEURONCTL_SYSROOT`
(and whatever else a test asks for) per `SLURMD_NODENAME`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

NODES = ("node1", "node2")
# Slurm node features, for `fleet doctor --constraint`.
FEATURES = {"node1": "trn2,efa", "node2": "trn1"}
START_LIMIT_S = 30.0


# Debian installs the daemons in /usr/sbin, which a user's PATH (or CI's narrow one) may lack.
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def slurm_available() -> bool:
    return all(shutil.which(t, path=SBIN_PATH)
               for t in ("munged", "slurmctld", "slurmd", "srun", "scontrol", "sinfo"))


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    env: dict[str, str]
    node_env: dict[str, dict[str, str]] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)

    def run(self, *argv: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def set_node_env(self, node: str, **values: str) -> None:
        """What the TaskProlog exports on `node` for the next job step (read at task start)."""
        self.node_env[node] = dict(values)
        self._write_prolog_env()

    def _write_prolog_env(self) -> None:
        for node in NODES:
            lines = [f"export {k}={v}" for k, v in sorted(self.node_env.get(node, {}).items())]
            (self.root / f"env.{node}").write_text("\n".join(lines) + "\n")

    def node_state(self, node: str) -> str:
        out = self.run("scontrol", "show", "node", node).stdout
        return out

    def stop_slurmd(self, node: str) -> None:
        _stop(self.pids.pop(f"slurmd-{node}"))

    def wait_idle(self, nodes: tuple[str, ...] = NODES, limit: float = START_LIMIT_S) -> None:
        deadline = time.monotonic() + limit
        last = ""
        while time.monotonic() < deadline:
            last = self.run("sinfo", "-h", "-N", "-o", "%N %t").stdout
            states = dict(line.split() for line in last.splitlines() if line.strip())
            if all(states.get(n) == "idle" for n in nodes):  # "idle*": not responding yet
                return
            time.sleep(0.3)
        raise RuntimeError(f"slurm nodes not idle within {limit}s: {last!r}\n{self.logs()}")

    def logs(self) -> str:
        parts = []
        for log in sorted(self.root.glob("*.log")):
            parts.append(f"--- {log.name}\n" + log.read_text(errors="replace")[-2000:])
        return "\n".join(parts)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done == pid:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _conf(root: Path, ports: list[int]) -> str:
    user = os.environ.get("USER") or "root"
    nodes = "\n".join(f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} "
                      f"Port={ports[i + 1]} CPUs=1 RealMemory=100 Features={FEATURES[n]} "
                      "State=UNKNOWN"
                      for i, n in enumerate(NODES))
    return f"""ClusterName=neuronctl-test
SlurmctldHost={socket.gethostname()}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
TaskProlog={root}/task_prolog.sh
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmctldTimeout=10
# Long enough that a slurmd starved by a busy test machine (two test workers) is not marked
# down; a stopped one is still reported, by srun's launch error.
SlurmdTimeout=30
MessageTimeout=5
# No message forwarding through other slurmd: a stopped node must not make its peer look unresponsive.
TreeWidth=65533
InactiveLimit=0
KillWait=2
MinJobAge=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
{nodes}
PartitionName=neuron Nodes={','.join(NODES)} Default=YES MaxTime=10 State=UP
"""


def _daemon(name: str) -> str:
    found = shutil.which(name, path=SBIN_PATH)
    assert found, name
    return found


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> int:
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return proc.pid


def _appears_within(path: Path, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {limit}s")
        time.sleep(0.05)


@contextmanager
def running_cluster(root: Path) -> Iterator[SlurmCluster]:
    root.mkdir(parents=True, exist_ok=True)
    for d in ("state", *(f"spool/{n}" for n in NODES)):
        (root / d).mkdir(parents=True, exist_ok=True)
    ports = _free_ports(1 + len(NODES))
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, ports))
    prolog = root / "task_prolog.sh"
    # A TaskProlog's stdout lines "export NAME=value" become the task's environment.
    prolog.write_text(f'#!/bin/sh\ncat "{root}/env.$SLURMD_NODENAME" 2>/dev/null\nexit 0\n')
    prolog.chmod(0o755)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for k in list(env):
        if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
            env.pop(k)
    cluster = SlurmCluster(root, conf, env)
    cluster._write_prolog_env()
    try:
        cluster.pids["munged"] = _spawn(
            [_daemon("munged"), "-F", "-f", "--key-file", str(key), "--socket", str(root / "munge.sock"),
             "--pid-file", str(root / "munged.pid"), "--seed-file", str(root / "munge.seed"),
             "--log-file", str(root / "munged.log")], env, root / "munged.out.log")
        _appears_within(root / "munge.sock")
        cluster.pids["slurmctld"] = _spawn([_daemon("slurmctld"), "-D", "-i", "-f", str(conf)], env,
                                           root / "slurmctld.out.log")
        for node in NODES:
            cluster.pids[f"slurmd-{node}"] = _spawn([_daemon("slurmd"), "-D", "-N", node, "-f", str(conf)],
                                                    env, root / f"slurmd.{node}.out.log")
        cluster.wait_idle()
        yield cluster
    finally:
        for name in [n for n in cluster.pids if n.startswith("slurmd")] + ["slurmctld", "munged"]:
            if name in cluster.pids:
                _stop(cluster.pids.pop(name))
