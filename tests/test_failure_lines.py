"""A cycle's failures, folded into one line per provider and reason (``engine/failures.py``):
the same failure from every scope is said once, the provider's name once, writes count up
into one line, and the exit code follows the worst."""

from __future__ import annotations

from memsync.base.write_kind import WriteKind
from memsync.engine.report import (
    CycleReport,
    FailureEntry,
    ProviderOutcome,
    ProviderState,
)

REFUSED = "https://mem0.test refused the key from $K (HTTP 401: Invalid API key.): wrong"


def report(*outcomes: ProviderOutcome) -> CycleReport:
    cycle = CycleReport(1, False, "2026-01-01T00:00:00Z")
    for outcome in outcomes:
        cycle.providers[outcome.name] = outcome
    return cycle


def error(name: str, text: str, code: int | None = None) -> ProviderOutcome:
    return ProviderOutcome(name, state=ProviderState.ERROR, error=text, exit_code=code)


def test_one_failure_in_every_scope_and_at_discovery_is_one_line() -> None:
    cycle = report(
        error("cloud", f"cloud: {REFUSED}"),
        error("cloud[user_id=alice]", f"cloud: {REFUSED}"),
        error("cloud[user_id=bob]", f"cloud[user_id=bob]: cloud: {REFUSED}"),
        ProviderOutcome("backup[user_id=alice]"),
    )
    assert [f.line() for f in cycle.provider_failures()] == [f"cloud: {REFUSED}"]
    assert cycle.exit_code == 5


def test_scopes_failing_alone_are_named_and_different_reasons_get_a_line_each() -> None:
    cycle = report(
        *(
            error(f"cloud[user_id=u{n}]", f"cloud[user_id=u{n}]: GET /memories failed (HTTP 502)")
            for n in range(5)
        ),
        error("cloud[user_id=z]", "cloud[user_id=z]: GET /memories was refused (HTTP 400)"),
    )
    assert [f.line() for f in cycle.provider_failures()] == [
        "cloud: GET /memories failed (HTTP 502) "
        "(scopes user_id=u0, user_id=u1, user_id=u2 and 2 more)",
        "cloud: GET /memories was refused (HTTP 400) (scope user_id=z)",
    ]


def test_failed_writes_fold_into_one_line_per_provider_and_exit_1() -> None:
    cycle = report(ProviderOutcome("mnem"))
    for n in range(3):
        cycle.failures.append(
            FailureEntry("mnem", WriteKind.CREATE, f"link-{n}", "mnem: store is read-only", n == 2)
        )
    cycle.failures.append(
        FailureEntry("mnem", WriteKind.UPDATE, "link-9", "mnem: disk full", False)
    )
    (line,) = [f.line() for f in cycle.provider_failures()]
    assert line == (
        "mnem: 4 writes failed (1 parked as dead, the rest retried next cycle): store is "
        "read-only; 1 other reason(s): `memsync sync --json` lists each"
    )
    assert cycle.exit_code == 1


def test_a_failure_reported_for_a_provider_as_a_whole_goes_through_the_same_path() -> None:
    cycle = report(ProviderOutcome("cloud"))
    cycle.report_failure("cloud", "cloud unreachable (connection refused); 12 writes kept")
    assert [f.line() for f in cycle.provider_failures()] == [
        "cloud unreachable (connection refused); 12 writes kept"
    ]
    assert cycle.exit_code == 5
    assert cycle.as_dict()["provider_failures"][0]["line"].startswith("cloud unreachable")


def test_busy_is_exit_1_and_a_config_error_keeps_its_code() -> None:
    busy = ProviderOutcome("mnem", state=ProviderState.BUSY, error="mnem: store busy")
    assert report(busy).exit_code == 1
    assert report(busy, error("hs", "hs: variable X is not set", 2)).exit_code == 2
    assert report(busy, error("hs", "hs: refused", 2), error("m0", "m0: down")).exit_code == 5
