"""``memsync mcp``: mnem-mcp's MCP server over stdio, on a store the memsync daemon serves."""

from __future__ import annotations

import click

from memsync.base.errors import ProviderError, ProviderUnavailable
from memsync.cli.common import App, pass_app


@click.command()
@click.option(
    "--store",
    metavar="PATH",
    help="The store directory (default: $MNEM_STORE, then the current directory).",
)
@click.option(
    "--tools",
    type=click.Choice(["core", "all"]),
    default="core",
    show_default=True,
    help="'all' also exposes branch / switch / merge.",
)
@pass_app
def mcp(app: App, store: str | None, tools: str) -> None:
    """Serve a mnem store to an agent over MCP (stdio): mnem-mcp's tools, never locked out.

    The same tools, arguments and answers as `mnem-mcp` (remember, revise, remember_many,
    forget, recall, recall_at, history, why, when_did, whats_new; branch, switch and merge
    with --tools all), plus memory_export and memory_import (PMM). While the memsync daemon
    runs it holds the store and syncs each write at once; without it this process opens the
    store itself, as mnem-mcp does, and hands it to the daemon when it starts.

    \b
    In the agent's MCP config, the command changes and nothing else:
      "command": "memsync", "args": ["mcp", "--store", "/home/me/agents/memory"]
    """
    try:  # only here: mcp and the mnem SDK are optional, needed by this command alone
        import mnem

        from memsync.orchestration.serve.mcp import build_server
    except ImportError as exc:
        raise ProviderUnavailable(
            f"memsync mcp needs the mcp package and the mnem SDK ({exc.name} is missing): "
            "pip install 'memsync[mcp,mnem]'"
        ) from None
    try:
        server = build_server(store, tools, paths=app.paths)
    except mnem.MnemError as exc:
        raise ProviderError(
            f"cannot open the mnem store at {store or '.'}: {exc}; give the directory that "
            "holds .mnem with --store (or $MNEM_STORE)"
        ) from None
    server.run("stdio")
