"""The systemd user unit: valid to systemd itself, and `memsync service` with or without systemd.

`systemctl` is replaced by a recording double (a shell script each test writes) wherever a real user
manager would be touched, so no test can install or start a service on the machine it runs on.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memsync.orchestration.daemon.unit import (
    PACKAGED_EXEC,
    packaged_unit,
    quote_arg,
    render_unit,
    this_installation,
)
from tests.conftest import subprocess_env

REPO = Path(__file__).resolve().parent.parent
SYSTEMCTL_DOUBLE = """#!/bin/sh
# A double of systemctl: records its arguments, answers like a user manager would.
echo "$*" >> "{log}"
if [ -n "{fail}" ]; then echo "{fail}" >&2; exit 1; fi
case "$2" in
  is-enabled) echo enabled ;;
  is-active) echo active ;;
  status) echo "* memsync.service - memsync: keep AI-agent memory stores in sync" ;;
esac
exit 0
"""


def analyze(unit_text: str, tmp_path: Path) -> str:
    """Everything `systemd-analyze --user verify` prints about the unit (empty when clean)."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
    units = tmp_path / "units"
    units.mkdir(exist_ok=True)
    (units / "memsync.service").write_text(unit_text)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    result = subprocess.run(
        [tool, "--user", "verify", str(units / "memsync.service")],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # verify exits 0 even after a parse warning: the printed text is the verdict.
    return (result.stdout + result.stderr).strip() or (
        "" if result.returncode == 0 else f"exit {result.returncode}"
    )


def test_the_generated_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    odd = tmp_path / "a dir with spaces, 100% odd $chars"
    odd.mkdir()
    text = render_unit(
        this_installation(),
        config_file=odd / "config.toml",
        memsync_home=odd,
        environment_file=odd / "environment",
    )
    assert analyze(text, tmp_path) == ""


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: a misspelt setting is reported."""
    broken = render_unit(this_installation()).replace("Type=notify", "Type=notifyy")
    assert "Failed to parse service type" in analyze(broken, tmp_path)


def test_the_unit_runs_this_installation_as_a_notify_service_with_a_watchdog() -> None:
    text = render_unit(this_installation(), config_file=Path("/etc/my memsync/config.toml"))
    settings = [
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    ]
    values: dict[str, list[str]] = {}
    for key, value in settings:
        values.setdefault(key, []).append(value)
    assert shlex.split(values["ExecStart"][0]) == [
        sys.executable,
        "-m",
        "memsync",
        "--config",
        "/etc/my memsync/config.toml",
        "daemon",
    ]
    for key, value in {
        "Type": "notify",
        "NotifyAccess": "main",
        "ExecReload": "/bin/kill -HUP $MAINPID",
        "Restart": "on-failure",
        "WatchdogSec": "2min",
        "NoNewPrivileges": "yes",
        "UMask": "0077",
        "WantedBy": "default.target",
    }.items():
        assert values[key] == [value], key
    assert "StartLimitIntervalSec" in values and "StartLimitBurst" in values
    # No mount-namespace sandboxing: a user manager without user namespaces cannot start it.
    for needs_namespaces in ("PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateDevices"):
        assert needs_namespaces not in values


def test_special_characters_are_escaped_for_systemd() -> None:
    assert quote_arg("/usr/bin/memsync") == "/usr/bin/memsync"
    assert quote_arg("/home/me/100%/x") == "/home/me/100%%/x"
    assert quote_arg("/a b/$HOME") == '"/a b/$$HOME"'
    assert quote_arg('/say "hi"') == '"/say \\"hi\\""'


def test_the_shipped_unit_file_is_the_packaged_rendering() -> None:
    shipped = (REPO / "systemd" / "memsync.service").read_text()
    assert shipped == packaged_unit(), (
        "systemd/memsync.service is out of date; regenerate it with\n"
        "  .venv/bin/python -c 'from memsync.orchestration.daemon.unit import packaged_unit; "
        'print(packaged_unit(), end="")\' > systemd/memsync.service'
    )
    assert f"ExecStart={PACKAGED_EXEC[0]} daemon" in shipped


# --- memsync service, through the command line -------------------------------------------------


def memsync(home: Path, tmp_path: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {
        **subprocess_env(),
        "MEMSYNC_HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PATH": path,
    }
    return subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def systemctl_double(tmp_path: Path, *, fail: str = "") -> tuple[str, Path]:
    """A PATH whose systemctl is the recording double; and the file it records calls in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "systemctl.log"
    script = bin_dir / "systemctl"
    script.write_text(SYSTEMCTL_DOUBLE.format(log=log, fail=fail))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"{bin_dir}:/usr/bin:/bin", log


def unit_path(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "systemd" / "user" / "memsync.service"


def test_install_enable_writes_the_unit_and_starts_it(home: Path, tmp_path: Path) -> None:
    path, log = systemctl_double(tmp_path)
    result = memsync(home, tmp_path, "service", "install", "--enable", path=path)
    assert result.returncode == 0, result.stderr
    unit = unit_path(tmp_path)
    assert f"wrote {unit}" in result.stdout and "enabled and running" in result.stdout
    assert unit.stat().st_mode & 0o777 == 0o644
    text = unit.read_text()
    assert f'Environment="MEMSYNC_HOME={home}"' in text
    assert f"EnvironmentFile=-{home}/config/environment" in text
    assert log.read_text().splitlines() == [
        "--user show-environment",
        "--user daemon-reload",
        "--user enable --now memsync.service",
    ]


def test_install_passes_an_explicit_config_to_the_daemon(home: Path, tmp_path: Path) -> None:
    path, _ = systemctl_double(tmp_path)
    config = tmp_path / "elsewhere.toml"
    result = memsync(home, tmp_path, "--config", str(config), "service", "install", path=path)
    assert result.returncode == 0, result.stderr
    assert f"--config {config} daemon" in unit_path(tmp_path).read_text()
    assert "systemctl --user enable --now memsync.service" in result.stdout


def test_install_without_systemctl_writes_the_unit_and_says_what_to_run(
    home: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = memsync(home, tmp_path, "service", "install", path=str(empty))
    assert result.returncode == 0, result.stderr
    assert "systemctl is not installed here" in result.stdout
    assert "  systemctl --user enable --now memsync.service" in result.stdout
    assert unit_path(tmp_path).exists()
    enabled = memsync(home, tmp_path, "service", "install", "--enable", path=str(empty))
    assert enabled.returncode == 1  # asked to start it, and nothing was started


def test_install_where_no_user_manager_answers(home: Path, tmp_path: Path) -> None:
    path, log = systemctl_double(tmp_path, fail="Failed to connect to bus: No medium found")
    result = memsync(home, tmp_path, "service", "install", path=path)
    assert result.returncode == 0
    assert (
        "no systemd user instance answers here (systemctl: Failed to connect to bus"
        in result.stdout
    )
    assert log.read_text().splitlines() == ["--user show-environment"]
    assert unit_path(tmp_path).exists()


def test_install_with_the_real_systemctl_when_no_user_manager_runs(
    home: Path, tmp_path: Path
) -> None:
    """The real systemctl, only where it cannot reach a user manager (nothing gets installed)."""
    if shutil.which("systemctl") is None:
        pytest.skip("systemctl is not installed")
    probe = subprocess.run(
        ["systemctl", "--user", "show-environment"], capture_output=True, timeout=30
    )
    if probe.returncode == 0:
        pytest.skip("a systemd user manager runs here; the doubles cover install")
    result = memsync(home, tmp_path, "service", "install", path=os.environ["PATH"])
    assert result.returncode == 0
    assert "no systemd user instance answers here" in result.stdout
    assert unit_path(tmp_path).exists()


def test_install_print_writes_nothing(home: Path, tmp_path: Path) -> None:
    path, log = systemctl_double(tmp_path)
    result = memsync(home, tmp_path, "service", "install", "--print", path=path)
    assert result.returncode == 0 and result.stdout.startswith("# memsync")
    assert "Type=notify" in result.stdout
    assert not unit_path(tmp_path).exists() and not log.exists()


def test_uninstall_stops_disables_and_removes(home: Path, tmp_path: Path) -> None:
    path, log = systemctl_double(tmp_path)
    memsync(home, tmp_path, "service", "install", path=path)
    log.unlink()
    result = memsync(home, tmp_path, "service", "uninstall", path=path)
    assert result.returncode == 0
    assert not unit_path(tmp_path).exists() and "removed" in result.stdout
    assert log.read_text().splitlines() == [
        "--user show-environment",
        "--user disable --now memsync.service",
        "--user daemon-reload",
    ]
    again = memsync(home, tmp_path, "service", "uninstall", path=path)
    assert again.returncode == 0 and "was not installed" in again.stdout


def test_service_status_shows_unit_systemd_and_daemon(home: Path, tmp_path: Path) -> None:
    path, _ = systemctl_double(tmp_path)
    memsync(home, tmp_path, "service", "install", path=path)
    result = memsync(home, tmp_path, "service", "status", path=path)
    assert result.returncode == 0
    assert f"unit file\t{unit_path(tmp_path)}\n" in result.stdout
    assert "enabled\tenabled" in result.stdout and "active\tactive" in result.stdout
    assert "daemon\tnot running" in result.stdout
