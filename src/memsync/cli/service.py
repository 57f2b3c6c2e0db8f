"""`memsync service install|uninstall|status`: the systemd user unit that runs the daemon."""

from __future__ import annotations

from pathlib import Path

import click

from memsync.base.errors import MemsyncError
from memsync.base.lock import read_daemon_info
from memsync.base.output import print_table
from memsync.base.paths import Paths
from memsync.orchestration.daemon.unit import (
    install,
    service_state,
    uninstall,
    unit_for_this_installation,
)

# The unit's commands need the paths alone, which the group resolved: not the App, whose
# config, providers and staging store they would import for nothing.
pass_paths = click.make_pass_decorator(Paths)


def _config_override() -> Path | None:
    """The --config given to `memsync`, if any, made absolute for a unit file."""
    value = click.get_current_context().find_root().params.get("config_path")
    return Path(value).expanduser().resolve() if value else None


@click.group()
def service() -> None:
    """Install, remove or inspect the systemd user service that runs `memsync daemon`."""


@service.command("install")
@click.option("--enable", is_flag=True, help="Also start it now and at every login.")
@click.option("--print", "print_only", is_flag=True, help="Print the unit; write nothing.")
@pass_paths
def service_install(paths: Paths, enable: bool, print_only: bool) -> None:
    """Write memsync.service under ~/.config/systemd/user for this installation.

    ExecStart runs this memsync (this Python, -m memsync), with --config and MEMSYNC_HOME as
    given now. Where no systemd user instance answers, the unit is still written and the
    commands to run later are printed: exit 0, or 1 with --enable (nothing was started).

    \b
    Example:
      memsync service install --enable
    """
    text = unit_for_this_installation(paths, config_file=_config_override())
    if print_only:
        click.echo(text, nl=False)
        return
    result = install(text, enable=enable)
    click.echo(f"wrote {result.path}")
    if not paths.config_file.exists():
        click.echo(
            f"note: {paths.config_file} does not exist yet; the service cannot start "
            "until it does (`memsync init`, then `memsync check`)"
        )
    if result.systemd:
        click.echo(f"systemd: {result.systemd}.")
        click.echo("The unit is written; once systemd runs for your user, start it with:")
        for command in result.commands:
            click.echo(f"  {command}")
        if enable:
            raise SystemExit(1)
        return
    for command in result.commands:
        click.echo(f"ran: {command}")
    if result.error:
        raise MemsyncError(result.error)
    if result.enabled:
        click.echo("memsync.service is enabled and running; `memsync service status` shows it")
    else:
        click.echo("start it with: systemctl --user enable --now memsync.service")


@service.command("uninstall")
def service_uninstall() -> None:
    """Stop and disable memsync.service and remove its unit file."""
    result = uninstall()
    for command in result.commands:
        click.echo(f"ran: {command}")
    if result.systemd:
        click.echo(f"systemd: {result.systemd}; nothing to stop.")
    click.echo(f"removed {result.path}" if result.removed else f"{result.path} was not installed")


@service.command("status")
@pass_paths
def service_status(paths: Paths) -> None:
    """Whether the unit is installed, what systemd says of it, and the daemon's own lock."""
    state = service_state()
    daemon_info = read_daemon_info(paths)
    running = (
        f"running (pid {daemon_info['pid']}, since {daemon_info['since']})"
        if daemon_info.get("running")
        else "not running"
    )
    print_table(
        "",
        ("what", "state"),
        [
            ("unit file", f"{state.path}" + ("" if state.installed else " (not installed)")),
            ("systemd", state.systemd or "reachable"),
            ("enabled", state.enabled or "-"),
            ("active", state.active or "-"),
            ("daemon", running),
        ],
    )
    if state.status_text:
        click.echo(state.status_text)
