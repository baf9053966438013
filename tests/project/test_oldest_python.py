"""neuronctl runs on the oldest Python pyproject.toml allows (requires-python), not only on the one
CI installs it with: every module's source compiles there (probes/scripts' too: they run in target
interpreters), and so does every regular expression the package compiles, at import and redact's
netrc patterns built on first use. Possessive quantifiers and atomic groups are Python 3.11's:
with them, neuronctl failed at import on Python 3.10."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from support.package_modules import WALK
from support.wheels import find_python

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("neuronctl", "resolvers", "probes", "backend")

# Run by the interpreter the tests run on: every module-level compiled pattern of the package.
_COLLECT = WALK + """
import json, re
from neuronctl import redact
found = []
for name in sorted(names):
    for attr, value in vars(importlib.import_module(name)).items():
        if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
            found.append([value.pattern, value.flags, f"{name}.{attr}"])
found += [[s, 0, f"neuronctl.redact.netrc_sources()[{i}]"] for i, s in enumerate(redact.netrc_sources())]
print(json.dumps(found))
"""

# Run by the oldest interpreter: what does not compile there, by where it is.
_CHECK = """
import json, re, sys
given = json.load(sys.stdin)
bad = []
for pattern, flags, where in given["patterns"]:
    try:
        re.compile(pattern, flags)
    except re.error as exc:
        bad.append(f"{where}: {exc}")
for path in given["sources"]:
    try:
        compile(open(path, encoding="utf-8").read(), path, "exec")
    except SyntaxError as exc:
        bad.append(f"{path}:{exc.lineno}: {exc.msg}")
try:
    re.compile("a++")
    possessive = True
except re.error:
    possessive = False
print(json.dumps({"bad": bad, "possessive": possessive}))
"""


def _floor() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^requires-python\s*=\s*">=\s*(3\.\d+)"', text, re.M)
    assert found, "requires-python is not a plain >=3.N"
    return found.group(1)


def test_the_package_compiles_and_its_patterns_compile_on_the_oldest_python_it_allows(tmp_path):
    collected = subprocess.run([sys.executable, "-c", _COLLECT], cwd=tmp_path, capture_output=True,
                               text=True, timeout=120, check=False)
    assert collected.returncode == 0, collected.stderr
    patterns = json.loads(collected.stdout)
    assert len(patterns) > 30  # the walk reached the modules that compile patterns at import
    sources = [str(p) for d in PACKAGE_DIRS for p in sorted((ROOT / d).rglob("*.py"))]
    assert any("/probes/scripts/" in s for s in sources)
    floor = _floor()
    checked = subprocess.run([find_python(floor), "-I", "-c", _CHECK], cwd=tmp_path,
                             input=json.dumps({"patterns": patterns, "sources": sources}),
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert result["bad"] == [], f"not valid on Python {floor}: {result['bad']}"
    # The check can fail: the floor's re refuses what 3.11 added (where the floor is older).
    assert result["possessive"] is (tuple(map(int, floor.split("."))) >= (3, 11))
