"""First steps: `init` writes a starter config, `check` validates it and reaches each provider."""

from __future__ import annotations

import click

from memsync.base.errors import MemsyncError
from memsync.base.files import write_private_text
from memsync.cli.common import App, pass_app
from memsync.config.starter import STARTER_CONFIG
from memsync.orchestration.checks import check_providers, growth_warnings

_ANSWERS = {
    "ok": "",
    "unavailable": "not available: ",
    "failed": "FAILED: ",
    "incomplete": "INCOMPLETE: ",
}


@click.command()
@click.option("--force", is_flag=True, help="Overwrite an existing config file.")
@pass_app
def init(app: App, force: bool) -> None:
    """Write a commented starter config (refuses to overwrite one without --force)."""
    path = app.paths.config_file
    if path.exists() and not force:
        raise MemsyncError(f"{path} already exists; edit it, or pass --force to replace it")
    write_private_text(path, STARTER_CONFIG)
    click.echo(f"wrote {path}\nedit it, then run `memsync check`")
    click.echo(
        "a team on a self-hosted Mem0 server past 10,000 memories: give memsync read-only "
        "access to the server's database (database_url_env in the [providers.server] example; "
        "docs/mem0-server.md), or every user cannot be found"
    )


@click.command()
@pass_app
def check(app: App) -> None:
    """Validate the config and reach each provider.

    Exits 0 when every provider answered, 1 when one did not (each is listed with why) or
    could not show it found every user of a team ("N users found, more may exist"). Warns of
    a store growing past its growth_budget a day at the rate measured (exit 0: a warning).
    """
    config = app.config
    click.echo(f"config: {app.paths.config_file}: ok ({len(config.providers)} providers)")
    failures = 0
    for checked in check_providers(config):
        marker = " (active)" if checked.active else ""
        failures += checked.answer != "ok"
        said = _ANSWERS[checked.answer] + checked.detail
        click.echo(f"{checked.name} [{checked.type}]{marker}: {said}")
    for warning in growth_warnings(app.paths, config):
        click.echo(f"WARNING {warning}")
    if failures:
        raise SystemExit(1)
