"""install: `run.install(InstallRequest, Reporter) -> InstallOutcome`, and its parts: the target
(target.py) and its per-environment install mutex (env_mutex.py), the source (source.py: a
lock's selection; sourcing.py: lock or fresh resolution, routing, the one Fetcher), preflight,
the plan policy, downloads, apply and failure analysis."""
