"""`releases import` as an operation: AWS's n2-manifest.json, read (bounded) and converted to
neuronctl's manifest format, written atomically where asked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronctl.atomic import write_text_atomic
from neuronctl.aws_manifest_import import convert_n2
from neuronctl.manifest import Manifest, read_json_file
from neuronctl.ops.reporter import Event, NullReporter, Reporter


@dataclass(frozen=True)
class ReleasesImport:
    """An AWS release table converted to a neuronctl manifest, and where it was written."""

    source: Path
    manifest: Manifest
    text: str
    """The converted manifest as neuronctl reads it (JSON)."""
    written: Path | None
    """Where it was written, if anywhere."""

    def to_json(self) -> dict[str, Any]:
        return {"source": str(self.source),
                "output": str(self.written) if self.written else None,
                "generated_from": dict(self.manifest.generated_from),
                "releases": [r.to_json() for r in self.manifest.releases]}


def import_aws_manifest(source: Path, write_to: Path | None = None,
                        reporter: Reporter | None = None) -> ReleasesImport:
    """Convert `source`; write the result to `write_to` when given. Bad input (a file that is no
    n2 manifest, a malformed field) is an InputError naming the file and field; nothing is
    written then."""
    reporter = reporter or NullReporter()
    manifest = convert_n2(read_json_file(source), str(source))
    text = json.dumps(manifest.to_json(), indent=1) + "\n"
    if write_to is not None:
        write_text_atomic(write_to, text)
        reporter.emit(Event("done", f"wrote {len(manifest.releases)} releases to {write_to}",
                            {"path": str(write_to), "releases": len(manifest.releases)}))
    return ReleasesImport(source, manifest, text, write_to)


__all__ = ["ReleasesImport", "import_aws_manifest"]
