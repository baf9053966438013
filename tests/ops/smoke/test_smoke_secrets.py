"""A smoke run's error text comes from the user's model and the target's stderr: a credential
quoted there appears in no output, text or JSON: in a URL, or as a config line 'token = "..."'
(which the redactor once let through)."""

from __future__ import annotations

import json
import textwrap

import pytest

from neuronctl.probes.smoke import SmokeExit, SmokeSpec, parse_smoke

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_smoke.py)

TOKEN = "PLANTEDsmoketok"
URL = f"https://user:{TOKEN}@models.example/weights"
TOKEN2 = "PLANTEDhftok"
FAST = ("--device", "cpu", "--warmup", "1", "--steps", "1")


@pytest.mark.parametrize("where", ["make", "forward"])
def test_a_models_error_with_a_credential_is_redacted(cli, isolated_env, where: str) -> None:
    body = f'''
        import torch

        class Boom(torch.nn.Module):
            def forward(self, x):
                raise RuntimeError("cannot fetch {URL}")

        def make():
            if {where == "make"!r}:
                raise RuntimeError('bad config line: hf_token = "{TOKEN2}"')
            return Boom(), (torch.randn(2, 2),)
    '''
    (isolated_env / "leaky.py").write_text(textwrap.dedent(body))
    for args in (("--json",), ()):
        result = cli("smoke", *args, *FAST, "--model", "leaky:make")
        assert result.code == 1, result.err
        for secret in (TOKEN, TOKEN2):
            assert secret not in result.out and secret not in result.err
        # the message is there, masked
        assert ("models.example" if where == "forward" else "hf_token") in result.out + result.err
    out = isolated_env / "smoke.json"
    cli("smoke", *FAST, "--model", "leaky:make", "-o", str(out))
    if out.exists():
        assert TOKEN not in out.read_text() and TOKEN2 not in out.read_text()
        json.loads(out.read_text())


def test_stderr_quoted_in_the_detail_is_redacted() -> None:
    report = parse_smoke(SmokeSpec(), ["garbage"],
                         SmokeExit(1, 60.0, 1.0, f"OSError: cannot open {URL}"))
    assert TOKEN not in report.detail and "models.example" in report.detail
    report = parse_smoke(SmokeSpec(), [], SmokeExit(3, 60.0, 1.0, f'"password": "{TOKEN}"'))
    assert TOKEN not in report.detail
