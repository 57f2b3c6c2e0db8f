"""`memsync backup`: a PMM backup of each provider's mirrored memories, now."""

from __future__ import annotations

import click

from memsync.base.output import print_json
from memsync.cli.common import App, pass_app
from memsync.orchestration.backups import take_backups


@click.command()
@click.option("--provider", "only", multiple=True, help="Back up only this provider (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@pass_app
def backup(app: App, only: tuple[str, ...], as_json: bool) -> None:
    """Take a PMM backup of each provider's mirrored memories now.

    Writes backups/<provider>/<UTC time>.pmm.jsonl (.gz with [backup] gzip = true) under the
    data directory and keeps the newest [backup] keep. The snapshot is of the mirror as of the
    last sync; restore one with `memsync restore FILE --into NAME`. Exits 1 if one failed.

    \b
    Example:
      memsync backup --provider mem0
    """
    config = app.config
    for name in only:
        config.provider(name)
    outcomes = take_backups(app.paths, config, only=list(only) or None)
    if as_json:
        print_json([o.as_dict() for o in outcomes])
    else:
        for outcome in outcomes:
            if outcome.error:
                click.echo(f"{outcome.provider}: FAILED: {outcome.error}")
            elif outcome.skipped:
                click.echo(f"{outcome.provider}: skipped: {outcome.skipped}")
            else:
                removed = f"; removed {len(outcome.removed)} older" if outcome.removed else ""
                click.echo(
                    f"{outcome.provider}: {outcome.count} memories -> {outcome.path}{removed}"
                )
    if any(o.error for o in outcomes):
        raise SystemExit(1)
