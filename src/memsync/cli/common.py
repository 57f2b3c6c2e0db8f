"""What every command shares: the App (paths, config and store on first use), the group that
turns a user's error into one line, and ``pass_app``.

Command modules import this and nothing else from ``memsync.cli``, so there is no circle.
It imports only what the group itself needs at start-up (click, the errors, the paths); the
config, the providers and the staging store are imported when a command first asks for them,
so ``memsync --version`` or ``--help`` does not pay for them.
"""

from __future__ import annotations

import errno
import sqlite3
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from memsync.base.errors import MemsyncError, StagingError
from memsync.base.paths import Paths

if TYPE_CHECKING:
    from memsync.base.scopes import Scope
    from memsync.config import Config
    from memsync.providers import Provider
    from memsync.staging import StagingStore


@dataclass
class App:
    """What every command needs: paths, and the config and staging store on first use."""

    paths: Paths
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            from memsync.config import load_config

            self._config = load_config(self.paths.config_file)
        return self._config

    def provider(self, name: str) -> Provider:
        from memsync.orchestration.scopes.views import refuse_unscoped
        from memsync.providers import build_provider

        context = click.get_current_context(silent=True)
        command = (context.info_name if context else None) or "this command"
        refuse_unscoped(self.config, name, command)
        return build_provider(name, self.config)

    def store(self, *, create: bool = True) -> StagingStore:
        from memsync.staging import StagingStore

        self.paths.ensure()
        return StagingStore.open(self.paths.database, create=create)


class MemsyncGroup(click.Group):
    """Turns MemsyncError into one line on stderr and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemsyncError as exc:
            _say(f"memsync: error: {exc}")
            sys.exit(exc.exit_code)
        except sqlite3.OperationalError as exc:
            # SQLite rolled the transaction back: the database is intact, the write is not.
            hint = (
                "free some space and run the command again"
                if "full" in str(exc) or "I/O" in str(exc)
                else "run the command again; if it persists, `memsync repair` rebuilds it"
            )
            _say(f"memsync: error: staging database: {exc}; {hint}")
            sys.exit(StagingError.exit_code)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            _say(
                f"memsync: error: {exc.strerror}: {exc.filename or 'a file'}; nothing was "
                "replaced (files are written whole or not at all); free some space and retry",
            )
            sys.exit(1)
        except KeyboardInterrupt:
            _say("memsync: interrupted")
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)


def _say(message: str) -> None:
    """One line on stderr, as every error is printed (rich is imported only when one is)."""
    from memsync.base.output import stderr

    stderr.print(message, markup=False)


pass_app = click.make_pass_decorator(App)


def parse_scope(ctx: click.Context, param: click.Parameter, value: str | None) -> Scope | None:
    """The ``--scope KEY=VALUE[,KEY=VALUE]`` callback: a Scope; a malformed one is one line."""
    from memsync.base.scopes import Scope

    return Scope.parse(value) if value is not None else None
