"""First steps: `init` writes a starter config, `check` validates it and reaches each provider."""

from __future__ import annotations

import click

from memsync.cli.common import App, pass_app
from memsync.errors import MemsyncError, ProviderUnavailable
from memsync.files import write_private_text
from memsync.providers import build_provider
from memsync.starter import STARTER_CONFIG


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


@click.command()
@pass_app
def check(app: App) -> None:
    """Validate the config and reach each provider.

    Exits 0 when every provider answered, 1 when one did not (each is listed with why).
    """
    from memsync.scope_views import check_scoped
    from memsync.scopes import is_template

    config = app.config
    click.echo(f"config: {app.paths.config_file}: ok ({len(config.providers)} providers)")
    failures = 0
    for name, entry in config.providers.items():
        marker = " (active)" if name == config.sync.active else ""
        try:
            provider = build_provider(name, config)
            if is_template(entry):  # a template names no store of its own to open
                detail = check_scoped(config, name, provider) or ""
            else:
                with provider:
                    detail = check_scoped(config, name, provider) or provider.check()
        except ProviderUnavailable as exc:
            failures += 1
            click.echo(f"{name} [{entry.type}]{marker}: not available: {exc}")
            continue
        except MemsyncError as exc:
            failures += 1
            click.echo(f"{name} [{entry.type}]{marker}: FAILED: {exc}")
            continue
        click.echo(f"{name} [{entry.type}]{marker}: {detail}")
    if failures:
        raise SystemExit(1)
