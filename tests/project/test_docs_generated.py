"""docs/cli.md, docs/config.md and docs/checks.md are generated from the code: the committed pages
must be what the generator writes now, and each must really cover what it documents (an empty
registry or a page of headings would otherwise pass)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from neuronctl.cli import docs_checks, docs_gen

REPO = Path(__file__).resolve().parents[2]
REGENERATE = "python -m neuronctl.cli.docs_gen"


@pytest.mark.parametrize("page", sorted(docs_gen.PAGES))
def test_committed_page_is_what_the_code_generates(page):
    committed = (REPO / page).read_text(encoding="utf-8") if (REPO / page).is_file() else ""
    assert committed == docs_gen.PAGES[page](), f"{page} is out of date: run `{REGENERATE}`"


def test_check_mode_names_the_stale_page_and_the_command(tmp_path):
    for name, make in docs_gen.PAGES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(make())
    security = tmp_path / "docs/security.md"  # a page written by hand around a generated block
    security.write_text((REPO / "docs/security.md").read_text())
    assert docs_gen.stale(tmp_path) == []
    (tmp_path / "docs/config.md").write_text("# Configuration\n")
    (tmp_path / "docs/checks.md").unlink()
    security.write_text(security.read_text().replace("| `manifest` |", "| `manifest_old` |"))
    assert docs_gen.stale(tmp_path) == ["docs/checks.md", "docs/config.md", "docs/security.md"]
    assert docs_gen.write(tmp_path) == ["docs/checks.md", "docs/config.md", "docs/security.md"]
    assert docs_gen.stale(tmp_path) == []
    assert security.read_text() == (REPO / "docs/security.md").read_text()
    security.unlink()
    assert docs_gen.stale(tmp_path) == ["docs/security.md"]


def test_check_mode_runs_as_a_module_from_the_checkout():
    r = subprocess.run([sys.executable, "-m", "neuronctl.cli.docs_gen", "--check"], cwd=REPO,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    bad = subprocess.run([sys.executable, "-m", "neuronctl.cli.docs_gen", "--nope"], cwd=REPO,
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and REGENERATE in bad.stderr


def _walk_commands():
    import click

    from neuronctl.cli.main import cli

    root = cli.make_context("neuronctl", [], resilient_parsing=True)
    stack = [(cli, root)]
    while stack:
        command, ctx = stack.pop()
        yield command, ctx
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                stack.append((sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True)))


def test_cli_page_has_every_command_subcommand_and_option():
    from neuronctl.cli.main import COMMANDS

    page = docs_gen.cli_page()
    for name in COMMANDS:
        assert f"### neuronctl {name}\n" in page, name
    seen = 0
    for command, ctx in _walk_commands():
        section = page.split(f"## {ctx.command_path}\n", 1)[1].split("\n## ", 1)[0] \
            .split("\n### neuronctl ", 1)[0]
        for param in command.get_params(ctx):
            if getattr(param, "hidden", False):  # an old spelling: its new option's help names it
                assert any(f"once {param.opts[0]}" in (getattr(p, "help", None) or "")
                           for p in command.get_params(ctx)), (ctx.command_path, param.opts)
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}`" in section, (ctx.command_path, opt)
                    seen += 1
    assert seen > 150  # every command's options, not a handful
    # Defaults and choices are in the tables, and completion is documented in the header.
    assert "| `--format` | `text` \\| `json` \\| `junit` \\| `github` \\| `prometheus` |" in page
    assert re.search(r"^\| `--timeout` \| `INTEGER RANGE` \| `120` \|", page, re.M)  # npd-config
    # A setting's flag shows its row's default, which applies after the variable and the configs
    # (click's own default for it is None): lock's network timeout, install's engine.
    assert re.search(r"^\| `--timeout` \| `FLOAT` \| `30` \| Each network request", page, re.M)
    assert re.search(r"^\| `--engine` \| `auto` \\\| `pip` \\\| `uv` \| `auto` \|", page, re.M)
    assert "_NEURONCTL_COMPLETE=bash_source neuronctl" in page.split("## Commands")[0]
    # Every table row has its four cells: a `|` in a metavar (X.Y|PATH) or help is escaped.
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert rows and all(len(re.split(r"(?<!\\)\|", row)) == 6 for row in rows), \
        [row for row in rows if len(re.split(r"(?<!\\)\|", row)) != 6][:3]


def test_cli_page_holds_nothing_of_this_machine():
    page = docs_gen.cli_page() + docs_gen.config_page() + docs_checks.checks_page()
    for local in {str(Path.home()), str(REPO), sys.executable, sys.prefix}:
        assert local not in page
    assert "Sentinel" not in page and "<function" not in page


def test_config_page_has_every_schema_key_with_its_meaning():
    from neuronctl.config import schema  # read now: a snapshot taken at import went stale when
    # the first import happened inside a test that adds a row (test_settings_options' new_row)

    page = docs_gen.config_page()
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| [a-z ]+ \| (.+) \|$", page, re.M))
    keys = schema()
    assert set(rows) == set(keys)
    for key, (_, description) in keys.items():
        assert rows[key] == description.replace("|", "\\|")
    assert "## Precedence" in page


def test_checks_page_has_every_registered_check_with_level_and_what_it_reads():
    from neuronctl.ops.doctor.checks import CHECKS

    page = docs_checks.checks_page()
    assert len(CHECKS) >= 15
    for spec in CHECKS:
        section = page.split(f"### `{spec.id}`\n", 1)[1].split("\n### ", 1)[0]
        assert f"- level: {spec.level}\n" in section, spec.id
        if hasattr(spec, "severity"):
            assert f"- severity: {spec.severity}" in section, spec.id
    # What is read and fixed comes from the code: spot-check a few known facts.
    probe = page.split("### `device.probe`\n", 1)[1].split("\n### ", 1)[0]
    assert "`probe`" in probe and "install_fix" in probe
    driver = page.split("### `hardware.driver`\n", 1)[1].split("\n### ", 1)[0]
    assert "driver_load_fix" in driver and "`system_packages`" in driver
    # A fact is what a check reads on its Facts: network.efa reads the hardware report's own
    # `system_packages` field (hw.system_packages), not the fact of that name.
    efa = page.split("### `network.efa`\n", 1)[1].split("\n### ", 1)[0]
    assert "`hardware`" in efa and "`system_packages`" not in efa
    lock = page.split("### `lock.drift`\n", 1)[1].split("\n### ", 1)[0]
    assert "`neuronctl lock ...`" in lock


def test_hand_written_descriptions_name_only_registered_checks():
    from neuronctl.ops.doctor.checks import CHECK_IDS

    assert set(docs_checks.ABOUT) <= set(CHECK_IDS), set(docs_checks.ABOUT) - set(CHECK_IDS)


def test_analysis_follows_calls_and_reads_fixes_from_code():
    """A check the generator has never seen: its reads, its fix and its severity are found."""
    from neuronctl.ops.doctor import checks_lock

    found = docs_checks.analyse(checks_lock.check_lock)
    assert "`pylock`" in found.reads and "`env`" in found.reads
    assert any("neuronctl lock" in fix for fix in found.fixes)
    assert docs_checks.analyse(lambda f: None).reads == set()


HAND_WRITTEN = ("architecture", "benchmarks", "bundle", "ci", "cost", "doctor", "fleet", "install",
                "json", "lock", "releases", "security", "setup", "smoke")
# The README's first session and set-up hold `neuronctl ...` lines too: checked like the pages.
SYNOPSIS_PAGES = (*(f"docs/{name}.md" for name in HAND_WRITTEN), "README.md")


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def test_every_link_between_the_pages_lands():
    docs = REPO / "docs"
    pages = sorted(docs.glob("*.md"))
    assert {f"{n}.md" for n in HAND_WRITTEN} <= {p.name for p in pages}
    checked = 0
    for page in pages:
        for target, anchor in re.findall(r"\]\(([\w.-]+\.md)?(?:#([\w-]+))?\)", page.read_text()):
            dest = docs / target if target else page
            assert dest.is_file(), (page.name, target)
            if anchor:
                assert anchor in _anchors(dest.read_text()), (page.name, target, anchor)
            checked += 1
    assert checked >= 15


def test_every_link_from_the_readme_lands():
    """The README keeps only the first hour: everything else is a link into docs/, so each must land."""
    links = re.findall(r"\]\((docs/[\w.-]+\.md)(?:#([\w-]+))?\)", (REPO / "README.md").read_text())
    assert len(links) >= 10
    for target, anchor in links:
        assert (REPO / target).is_file(), target
        if anchor:
            assert anchor in _anchors((REPO / target).read_text()), (target, anchor)


def _options_of(words: list[str]) -> set[str] | None:
    """The options `neuronctl WORDS...` accepts (its own and the global ones), None if no command."""
    import click

    from neuronctl.cli.main import cli

    ctx = cli.make_context("neuronctl", [], resilient_parsing=True)
    command: click.Command = cli
    options = {o for p in cli.params for o in getattr(p, "opts", [])}
    for word in words:
        if not isinstance(command, click.Group) or word not in command.list_commands(ctx):
            break
        command = command.get_command(ctx, word)
        ctx = command.make_context(word, [], parent=ctx, resilient_parsing=True)
        options |= {o for p in command.params for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]}
    return None if command is cli else options


@pytest.mark.parametrize("name", SYNOPSIS_PAGES)
def test_hand_written_synopses_name_only_options_the_commands_have(name):
    """Each `neuronctl CMD ...` line in a code block of a hand-written page: every --option it
    shows is one that command has (the README's synopses had drifted)."""
    text = (REPO / name).read_text()
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    for block in blocks:
        for command_line in re.split(r"\n(?=neuronctl |\S+/neuronctl )", block):
            match = re.match(r"(?:\S+/)?neuronctl ((?:[a-z][\w-]* ?)+)", command_line)
            if not match:
                continue
            options = _options_of(match.group(1).split())
            if options is None:
                continue
            shown = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", command_line.split("#")[0]))
            assert shown <= options, (name, command_line.splitlines()[0], sorted(shown - options))


def test_security_page_states_the_trust_root_rule_from_the_settings_table():
    """docs/security.md's "Trust roots" table is the settings table's (`trust_root`): what a
    project file may set and what only the user may."""
    from neuronctl.settings import SPECS

    page = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    table = docs_gen.trust_table()
    assert "## Trust roots" in page
    assert table in page, ("docs/security.md's trust-root table differs from the settings table: run "
                           "`python -m neuronctl.cli.docs_gen`")
    for spec in SPECS:
        if spec.key:
            row = next(line for line in table.splitlines() if line.startswith(f"| `{spec.key}` |"))
            assert ("no: noted, not used" in row) is spec.trust_root, row
    roots = {s.key for s in SPECS if s.trust_root}
    assert roots == {"manifest", "manifest_url", "system_repo", "drain_on"}
