"""`neuronctl migrate`: find XLA-era code, settings and pins in a repository, say what each
becomes on TorchNeuron (with AWS's page), and rewrite what is mechanical (--fix, --diff).

The operation: `migrate(MigrateRequest, Reporter) -> MigrateOutcome`; no click, no rich. The
rules are data (rules.py); walk.py picks the files, read.py reads and scans each (python_scan.py
with `ast`, text_scan.py for the rest), fix.py (libcst) rewrites."""

from neuronctl.ops.migrate.run import MigrateOutcome, MigrateRequest, migrate, native_versions

__all__ = ["MigrateOutcome", "MigrateRequest", "migrate", "native_versions"]
