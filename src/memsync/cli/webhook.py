"""`memsync webhook register|list|remove`: the Platform's webhooks, pointed at the daemon."""

from __future__ import annotations

import click

from memsync.base import output
from memsync.cli.common import App, pass_app
from memsync.orchestration.live.announcements import SLOW_PROBE
from memsync.orchestration.live.webhook_setup import WebhookSetup, masked
from memsync.staging.webhooks import Registration


@click.group()
def webhook() -> None:
    """Register, list or remove the Platform's webhook that sends its changes to the daemon."""


@webhook.command("register")
@click.argument("provider")
@click.option(
    "--public-url", metavar="URL", help="The HTTPS address (default [webhooks] public_url)."
)
@click.option("--name", "label", metavar="NAME", help="The webhook's name on the Platform.")
@click.option("--rotate", is_flag=True, help="A new secret: the webhook's URL moves to it.")
@pass_app
def register(
    app: App, provider: str, public_url: str | None, label: str | None, rotate: bool
) -> None:
    """Register PROVIDER's memory_add, memory_update and memory_delete events to the daemon.

    The URL registered is the public URL, then /hooks/PROVIDER/ and a secret memsync keeps in
    its state directory (0600); the daemon receives the events on [webhooks] listen, behind
    your reverse proxy or tunnel. Run again, it keeps what is registered (--rotate: a new
    secret). Shown with the secret masked.

    \b
    Example:
      memsync webhook register mem0
    """
    done = WebhookSetup(app.paths, app.config).register(
        provider, public_url=public_url, label=label, rotate=rotate
    )
    events = ", ".join(done.subscription.events) or "none"
    click.echo(
        f"{done.how} webhook {done.subscription.id} on {done.place} ({events}) -> {done.url}"
    )
    public = done.url.split("/hooks/", 1)[0]
    click.echo(
        f"the daemon receives them on {app.config.webhooks.listen}: forward {public} there "
        f"(your reverse proxy or tunnel); while they arrive it probes {provider} every "
        f"{SLOW_PROBE:g}s"
    )


@webhook.command("list")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def list_command(app: App, provider: str | None, as_json: bool) -> None:
    """The webhooks registered where PROVIDER's memories are (every pushing provider by
    default), memsync's own marked, with what the daemon saw arrive."""
    setup = WebhookSetup(app.paths, app.config)
    names = [provider] if provider else setup.webhook_providers()
    found = [setup.listed(name) for name in names]
    if as_json:
        output.print_json(
            {
                listed.provider: {
                    "place": listed.place,
                    "webhooks": [
                        {
                            "id": s.id,
                            "url": masked(s.url),
                            "events": list(s.events),
                            "active": s.active,
                            "memsync": listed.ours is not None
                            and listed.ours.subscription_id == s.id,
                        }
                        for s in listed.subscriptions
                    ],
                    "health": _health(listed.ours),
                }
                for listed in found
            }
        )
        return
    for listed in found:
        ours = listed.ours
        click.echo(f"{listed.provider}: {len(listed.subscriptions)} webhook(s) on {listed.place}")
        for s in listed.subscriptions:
            mine = " (memsync's)" if ours is not None and ours.subscription_id == s.id else ""
            state = "active" if s.active else "inactive"
            events = ", ".join(s.events)
            click.echo(f"  {s.id} {state} {events} -> {masked(s.url)}{mine}")
        click.echo(f"  events: {_said(ours)}")


@webhook.command("remove")
@click.argument("provider")
@pass_app
def remove(app: App, provider: str) -> None:
    """Remove PROVIDER's webhook from the Platform and forget its secret."""
    removed, had = WebhookSetup(app.paths, app.config).remove(provider)
    if removed is None:
        click.echo(f"{provider}: no webhook of memsync's was registered; its secret is forgotten")
        return
    gone = "removed" if had else "was already gone:"
    click.echo(
        f"{gone} webhook {removed} of {provider}; the daemon probes it every [sync] probe again"
    )


def _health(ours: Registration | None) -> dict[str, object] | None:
    if ours is None:
        return None
    return {
        "state": ours.state or "waiting",
        "registered_at": ours.registered_at,
        "last_event_at": ours.last_event_at,
        "events": ours.events,
        "missed": ours.missed,
        "rejected": ours.rejected,
        "probe_every": ours.probe_every,
    }


def _said(ours: Registration | None) -> str:
    if ours is None:
        return "none registered by memsync (`memsync webhook register NAME`)"
    total = sum(ours.events.values())
    last = ours.last_event_at or "none yet"
    return (
        f"{ours.state or 'waiting'}; {total} received, last {last}; {ours.missed} missed, "
        f"{ours.rejected} refused"
    )
