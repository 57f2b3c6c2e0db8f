"""Cutover readiness: for each provider, whether `memsync switch` to it is safe now, and why."""

from __future__ import annotations

from typing import Any

from memsync.config import Config
from memsync.engine.conflicts import list_conflicts
from memsync.orchestration.status.times import short_time
from memsync.staging import StagingStore

NO_OUTBOX = {  # a provider's or a pair's outbox before anything is counted in
    "pending": 0,
    "failed": 0,
    "dead": 0,
}


def last_verify(store: StagingStore, a: str, b: str) -> dict[str, Any] | None:
    """The newest `verify` of A and B (either order), with how many changes came since."""
    found = store.verify_results.latest(a, b)
    if found is None:
        return None
    return {
        "at": found.at,
        "reconciled": found.reconciled,
        "count": {found.a: found.count_a, found.b: found.count_b},
        "differences": found.differences,
        "error": found.error,
        "changes_since": store.journal.count_since(a, b, found.journal_seq),
    }


def cutover_readiness(store: StagingStore, config: Config) -> list[dict[str, Any]]:
    """For the active backend and each other provider: is it safe to `memsync switch` to it?"""
    active = config.sync.active
    waiting = list_conflicts(store)
    pairs = []
    for other in config.providers:
        if other == active:
            continue
        outbox = dict(NO_OUTBOX)
        for state, actions in store.status_counts.outbox_between(active, other).items():
            outbox["pending" if state == "running" else state] += actions
        conflicts = [c["id"] for c in waiting if active in c["versions"] or other in c["versions"]]
        verified = last_verify(store, active, other)
        checks = [
            _check("verify", *_verify_verdict(verified)),
            _check("outbox", outbox["pending"] + outbox["failed"] == 0, _outbox_text(outbox)),
            _check("dead letters", outbox["dead"] == 0, f"{outbox['dead']} dead"),
            _check("conflicts", not conflicts, f"{len(conflicts)} open"),
        ]
        pairs.append(
            {
                "a": active,
                "b": other,
                "verify": verified,
                "outbox": outbox,
                "conflicts": conflicts,
                "checks": checks,
                "safe": all(c["ok"] for c in checks),
                "switch": switch_plan(active, other, config.providers[other].direction),
            }
        )
    return pairs


def verify_summary(pairs: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    """The newest verify of each linked pair (scheduled or by hand), and how many fail."""
    results = []
    for pair in pairs:
        found = pair.get("verify") or {}
        failing = bool(found) and (bool(found.get("error")) or not found.get("reconciled"))
        results.append({"a": pair["a"], "b": pair["b"], **found, "failing": failing})
    return {
        "interval": config.verify.interval,
        "pairs": results,
        "failing": sum(1 for r in results if r["failing"]),
    }


def _check(name: str, ok: bool, text: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "text": text}


def _verify_verdict(verified: dict[str, Any] | None) -> tuple[bool, str]:
    if verified is None:
        return False, "never verified"
    if verified["error"]:
        return False, f"could not verify: {verified['error']}"
    if not verified["reconciled"]:
        return False, f"{verified['differences']} difference(s) at {short_time(verified['at'])}"
    if verified["changes_since"]:
        since = verified["changes_since"]
        return False, f"reconciled at {short_time(verified['at'])}, {since} change(s) since"
    return True, f"reconciled at {short_time(verified['at'])}"


def _outbox_text(outbox: dict[str, int]) -> str:
    return f"{outbox['pending']} pending, {outbox['failed']} failing"


def switch_plan(active: str, target: str, direction: str = "both") -> list[str]:
    """What `memsync switch TARGET` does, step by step (orchestration/switch.py), for a person."""
    steps = [
        f"run one sync cycle around {active} (the active backend now), so nothing pending is lost;"
        " stop if it does not finish cleanly",
        f'set [sync] active = "{target}" in the config file (comments and layout kept)',
        f"run one sync cycle around {target}; links survive, so no memory is duplicated or lost",
    ]
    if direction != "both":
        steps.append(
            f'{target} is configured with direction = "{direction}"; as the active backend it '
            "sends and receives all the same (the active backend always does both)"
        )
    return steps
