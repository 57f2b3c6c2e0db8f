"""The systemd user unit: its text, and installing, removing and inspecting it.

The unit runs ``memsync daemon`` as ``Type=notify`` with a watchdog. Its hardening is the set
that works in a *user* manager without user namespaces: the seccomp-based settings
(NoNewPrivileges, SystemCallFilter, RestrictAddressFamilies, ...). Mount-namespace settings
(PrivateTmp, ProtectSystem, ProtectHome, ...) are left out on purpose: in a user unit they
need ``PrivateUsers=yes`` and unprivileged user namespaces, which some distributions turn
off, and there a unit that uses them fails to start at all (docs/daemon.md shows a drop-in
that adds them where they work).

Where no systemd user instance answers (a container, WSL, a machine booted without systemd),
``install`` still writes the file and says which commands to run once systemd is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.files import write_private_text
from memsync.base.paths import Paths

UNIT_NAME = "memsync.service"
PACKAGED_EXEC = ("/usr/bin/memsync",)  # systemd/memsync.service, for packagers

_TEMPLATE = """\
# memsync: keeps AI-agent memory stores in sync (a systemd user unit).
# `memsync service install` writes one for its own installation; see docs/daemon.md.
# Local changes belong in a drop-in: systemctl --user edit memsync
[Unit]
Description=memsync: keep AI-agent memory stores in sync
StartLimitIntervalSec=10min
StartLimitBurst=5

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
# 2: the config is invalid, 7: another memsync daemon runs; a restart cannot fix either.
Restart=on-failure
RestartSec=10s
RestartPreventExitStatus=2 7
TimeoutStartSec=60s
TimeoutStopSec=20s
WatchdogSec=2min
{environment}\
# API keys named by api_key_env can live here (KEY=value lines, chmod 600).
EnvironmentFile=-{environment_file}
UMask=0077
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
RestrictNamespaces=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6

[Install]
WantedBy=default.target
"""


def _escape_specifiers(text: str) -> str:
    return text.replace("%", "%%")


def quote_arg(arg: str) -> str:
    """One ExecStart= word: specifiers and $ escaped, quoted when it has spaces or quotes."""
    if "\n" in arg:
        raise MemsyncError(f"{arg!r}: a path with a line break cannot go into a systemd unit")
    text = _escape_specifiers(arg).replace("$", "$$")
    if any(c in text for c in " \t\"'\\;"):
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def quote_environment(name: str, value: str) -> str:
    if "\n" in value:
        raise MemsyncError(f"{name}: a value with a line break cannot go into a systemd unit")
    text = _escape_specifiers(f"{name}={value}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def this_installation() -> list[str]:
    """The command that runs this memsync: this interpreter (venv and all) with -m memsync."""
    return [sys.executable, "-m", "memsync"]


def render_unit(
    command: list[str] | tuple[str, ...],
    *,
    config_file: Path | None = None,
    memsync_home: Path | None = None,
    environment_file: Path | None = None,
) -> str:
    """The unit text for a memsync command (ExecStart = command [--config FILE] daemon)."""
    words = list(command)
    if config_file is not None:
        words += ["--config", str(config_file)]
    words.append("daemon")
    environment = (
        f"Environment={quote_environment('MEMSYNC_HOME', str(memsync_home))}\n"
        if memsync_home is not None
        else ""
    )
    # %E is $XDG_CONFIG_HOME in a user unit: the config directory of a default installation.
    env_file_text = (
        "%E/memsync/environment"
        if environment_file is None
        else _escape_specifiers(str(environment_file))
    )
    return _TEMPLATE.format(
        exec_start=" ".join(quote_arg(w) for w in words),
        environment=environment,
        environment_file=env_file_text,
    )


def unit_for_this_installation(paths: Paths, *, config_file: Path | None = None) -> str:
    """The unit that runs this memsync with the --config (CONFIG_FILE) and MEMSYNC_HOME given
    now, reading its secrets from the environment file beside the config."""
    home = os.environ.get("MEMSYNC_HOME")
    return render_unit(
        this_installation(),
        config_file=config_file,
        memsync_home=Path(home).expanduser().resolve() if home else None,
        environment_file=paths.config_file.parent.resolve() / "environment",
    )


def packaged_unit() -> str:
    """systemd/memsync.service as shipped: for a memsync installed at /usr/bin/memsync."""
    return render_unit(PACKAGED_EXEC)


def unit_dir(env: dict[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/systemd/user, or ~/.config/systemd/user."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "systemd" / "user"


# --- systemctl ------------------------------------------------------------------------------


@dataclass
class Systemctl:
    """`systemctl --user`, or why it cannot be used here."""

    unreachable: str | None = None
    log: list[str] = field(default_factory=list)  # the commands run, for the user to see

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = ["systemctl", "--user", *args]
        self.log.append(" ".join(command))
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def systemctl() -> Systemctl:
    """A Systemctl whose ``unreachable`` says plainly why no systemd user instance answers."""
    if shutil.which("systemctl") is None:
        return Systemctl("systemctl is not installed here (this system does not run systemd)")
    try:
        probe = subprocess.run(
            ["systemctl", "--user", "show-environment"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Systemctl(f"`systemctl --user` could not run ({exc})")
    if probe.returncode != 0:
        reason = (probe.stderr or probe.stdout).strip().splitlines()
        return Systemctl(
            "no systemd user instance answers here"
            + (f" (systemctl: {reason[0]})" if reason else "")
        )
    return Systemctl()


@dataclass
class InstallResult:
    path: Path
    unit: str
    systemd: str | None  # why systemd could not be used, or None when it was
    enabled: bool = False
    commands: list[str] = field(default_factory=list)
    error: str | None = None


def install(unit_text: str, *, enable: bool, directory: Path | None = None) -> InstallResult:
    """Write the unit, reload systemd, and with enable start it now and at every login."""
    path = (directory or unit_dir()) / UNIT_NAME
    write_private_text(path, unit_text)
    path.chmod(0o644)  # a unit file holds no secret; 0644 is what systemctl and packagers expect
    ctl = systemctl()
    result = InstallResult(path, unit_text, ctl.unreachable)
    if ctl.unreachable:
        result.commands = [
            "systemctl --user daemon-reload",
            f"systemctl --user enable --now {UNIT_NAME}",
        ]
        return result
    reload = ctl.run("daemon-reload")
    if reload.returncode != 0:
        result.error = f"systemctl --user daemon-reload failed: {_first_line(reload)}"
    elif enable:
        started = ctl.run("enable", "--now", UNIT_NAME)
        if started.returncode != 0:
            result.error = (
                f"systemctl --user enable --now {UNIT_NAME} failed: {_first_line(started)}; "
                f"`journalctl --user -u {UNIT_NAME}` says why"
            )
        else:
            result.enabled = True
    result.commands = ctl.log
    return result


@dataclass
class UninstallResult:
    path: Path
    removed: bool
    systemd: str | None
    commands: list[str] = field(default_factory=list)


def uninstall(directory: Path | None = None) -> UninstallResult:
    """Stop and disable the service (when systemd answers), remove the unit, reload systemd."""
    path = (directory or unit_dir()) / UNIT_NAME
    ctl = systemctl()
    if not ctl.unreachable:
        ctl.run("disable", "--now", UNIT_NAME)  # fails harmlessly when it was never enabled
    removed = path.exists()
    path.unlink(missing_ok=True)
    if not ctl.unreachable:
        ctl.run("daemon-reload")
    return UninstallResult(path, removed, ctl.unreachable, ctl.log)


@dataclass
class ServiceState:
    path: Path
    installed: bool
    systemd: str | None
    enabled: str | None = None  # systemctl is-enabled: enabled, disabled, ...
    active: str | None = None  # systemctl is-active: active, inactive, failed, ...
    status_text: str | None = None  # `systemctl --user status` for a person


def service_state(directory: Path | None = None) -> ServiceState:
    path = (directory or unit_dir()) / UNIT_NAME
    ctl = systemctl()
    state = ServiceState(path, path.exists(), ctl.unreachable)
    if ctl.unreachable:
        return state
    state.enabled = ctl.run("is-enabled", UNIT_NAME).stdout.strip() or None
    state.active = ctl.run("is-active", UNIT_NAME).stdout.strip() or None
    status = ctl.run("status", "--no-pager", "--lines=5", UNIT_NAME)
    state.status_text = (status.stdout or status.stderr).rstrip() or None
    return state


def _first_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[0] if lines else f"exit status {result.returncode}"
