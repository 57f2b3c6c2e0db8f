"""What every command shares: the App (paths, and the config and store on first use),
``pass_app`` that hands it to a command, and the ``--scope`` callback.

Command modules import this and nothing else from ``memsync.cli``, so there is no circle.
The group in ``cli/__init__.py`` does not import it: the group resolves the paths (``ctx.obj``)
and a command's ``pass_app`` makes the App from them, so ``memsync --version`` and ``--help``
import neither this module nor the config, the providers and the staging store it imports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

import click

from memsync.base.paths import Paths
from memsync.base.scopes import Scope
from memsync.config import Config, load_config
from memsync.orchestration.scopes.views import refuse_unscoped
from memsync.providers import Provider, build_provider
from memsync.staging import StagingStore

P = ParamSpec("P")
R = TypeVar("R")

_APP = "memsync.app"  # the run's App, in ``ctx.meta`` (shared by every context of one run)


@dataclass
class App:
    """What every command needs: paths, and the config and staging store on first use."""

    paths: Paths
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.paths.config_file)
        return self._config

    def provider(self, name: str) -> Provider:
        context = click.get_current_context(silent=True)
        command = (context.info_name if context else None) or "this command"
        refuse_unscoped(self.config, name, command)
        return build_provider(name, self.config)

    def store(self, *, create: bool = True) -> StagingStore:
        self.paths.ensure()
        return StagingStore.open(self.paths.database, create=create)


def pass_app(command: Callable[Concatenate[App, P], R]) -> Callable[P, R]:
    """Call COMMAND with the run's App first, made from the paths the group resolved (as
    ``click.make_pass_decorator`` passes an object)."""

    def with_app(*args: P.args, **kwargs: P.kwargs) -> R:
        ctx = click.get_current_context()
        app = ctx.meta.get(_APP)
        if app is None:
            paths = ctx.find_object(Paths)
            if paths is None:
                raise RuntimeError("a memsync command runs under the group that resolves paths")
            app = ctx.meta[_APP] = App(paths)
        return ctx.invoke(command, app, *args, **kwargs)

    return functools.update_wrapper(with_app, command)


def parse_scope(ctx: click.Context, param: click.Parameter, value: str | None) -> Scope | None:
    """The ``--scope KEY=VALUE[,KEY=VALUE]`` callback: a Scope; a malformed one is one line."""
    return Scope.parse(value) if value is not None else None
