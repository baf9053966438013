"""install: `run.install(InstallRequest, Reporter) -> InstallOutcome`, a pipeline of named steps
(run.py lists them): the target and its turn (target.py, env_mutex.py), the lock for this host
(ops/lock/choice.py), the source (source.py; find_links.py, resolution.py), the plan (plan.py),
the preflight (preflight.py), apply (apply.py, requirements.py, private_copy.py, failure.py) and
the check (check.py); what runs beside them is behind background.py."""
