"""install: target, source, plan policy, preflight, apply, failure analysis, and the
per-environment install mutex."""
