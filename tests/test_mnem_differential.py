"""The mnem double against the real SDK: one sequence of operations, the same answers.

tests/doubles/mnem_double.py stands in for mnem wherever a test counts work (the benches,
the double-only provider tests), so it must answer as the real SDK does. This test runs one
script of store operations (the calls memsync makes, the calls agents make with
``mnem.agents``, and the mistakes that raise) on a fresh store of each, and compares every
answer: working memory, staged changes, diffs, log, changed_by, state_at, resolved refs and
the errors (type and message). Commit and object ids are content hashes that differ by
design (BLAKE3 over CBOR in mnem, sha256 over JSON in the double), so each is replaced by the
order in which it first appeared; everything else must be equal.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.doubles import mnem_double
from tests.mnem_sdk import real_sdk

HEX_ID = re.compile(r"^[0-9a-f]{64}$")


class Normal:
    """Answers made comparable: dataclasses as dicts, hash ids as their order of appearance,
    the store's folder as <root>, a Store handle as <store>."""

    def __init__(self, sdk: ModuleType, root: Path) -> None:
        self.ids: dict[str, str] = {}
        self.store_type, self.root = sdk.Store, str(root)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, self.store_type):
            return "<store>"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {"@": type(value).__name__} | {
                f.name: self(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            if HEX_ID.match(value):
                return self.ids.setdefault(value, f"<id {len(self.ids) + 1}>")
            value = value.replace(self.root, "<root>")
            return re.sub(r"[0-9a-f]{64}", lambda m: self(m.group(0)), value)
        if isinstance(value, Path):
            return "<path>"
        return value


def script(sdk: ModuleType, root: Path) -> list[tuple[str, Any]]:
    """Run the sequence on SDK in ROOT; each step's answer, or its error as (type, message)."""
    normal = Normal(sdk, root)
    answers: list[tuple[str, Any]] = []
    state: dict[str, Any] = {}

    def step(name: str, action: Callable[[], Any]) -> Any:
        try:
            result = action()
        except Exception as exc:  # the errors are part of the contract
            answers.append((name, ("raised", type(exc).__name__, normal(str(exc)))))
            return None
        answers.append((name, normal(result)))
        return result

    store = step("init", lambda: sdk.init(root))
    step("init again", lambda: sdk.init(root))
    step("open a folder with no store", lambda: sdk.open(root.parent / "nowhere"))
    step("a second handle", lambda: sdk.open(root))
    step("unborn head", lambda: (store.head(), store.head_commit()))
    step("unborn log", lambda: store.log())
    step("unborn diff", lambda: store.diff())
    step("empty working memory", lambda: store.working_memory())

    prov = sdk.Provenance(source="ticket", agent_step="s1", note='{"memsync": 1}')
    step("add text", lambda: store.add("a", "alpha", provenance=prov, event_time=1_700_000_000_000))
    step("add json", lambda: store.add("b", {"z": 1, "a": [1, 2.5, None, True]}))
    step("add a claim", lambda: store.add("c", "the sky is blue", content_kind="claim"))
    step("add a JSON string", lambda: store.add("d", '{"not": "parsed"}'))
    step("add a huge int", lambda: store.add("e", 2**70))
    step("float event_time", lambda: store.add("f", "x", event_time=1.5))
    step("NaN content", lambda: store.add("f", math.nan))
    step("unserialisable content", lambda: store.add("f", {1, 2}))
    step("-Infinity in a dict", lambda: store.add("f", {"a": "NaN", "b": -math.inf}))
    step("a bad content_kind", lambda: store.add("f", "x", content_kind="bogus"))
    step("a non-text content_kind", lambda: store.add("f", "x", content_kind=5))  # type: ignore[arg-type]
    step("a non-text id", lambda: store.add(5, "x"))  # type: ignore[arg-type]
    step("a huge event_time", lambda: store.add("f", "x", event_time=2**70))
    step("a non-text source", lambda: store.add("f", "x", provenance=sdk.Provenance(source=5)))
    step(
        "numbers at the edges", lambda: store.add("g", [2**63, -(2**63) - 1, 2**64 - 1, 2**64, 1.0])
    )
    step("unicode", lambda: store.add("h", "héllo \u2028 😀"))
    step("a new branch on an unborn HEAD", lambda: store.new_branch("side"))
    step("staged", lambda: store.staged())
    step("diff before the first commit", lambda: store.diff())
    state["c1"] = step("commit", lambda: store.commit("first", author="memsync", time_ms=1000))
    step("log", lambda: store.log())
    step("changed_by first", lambda: store.changed_by(state["c1"]))
    step("working memory", lambda: store.working_memory())
    step("state_at first", lambda: store.state_at(state["c1"]))
    step("working_node", lambda: (store.working_node("a"), store.working_node("missing")))

    step("same content again", lambda: store.add("c", "the sky is blue", content_kind="claim"))
    step(
        "provenance alone",
        lambda: store.add(
            "b", {"z": 1, "a": [1, 2.5, None, True]}, provenance=sdk.Provenance(source="other")
        ),
    )
    step("event_time alone", lambda: store.add("d", '{"not": "parsed"}', event_time=7))
    step("rm", lambda: store.rm("a"))
    step("rm a missing node", lambda: store.rm("missing"))
    step("rm then add", lambda: (store.rm("e"), store.add("e", "back")))
    step("staged deletions", lambda: (store.staged(), store.staged_deletions()))
    step("diff head to working", lambda: store.diff())
    step("unstage", lambda: (store.unstage("c"), store.unstage("nothing")))
    state["c2"] = step("second commit", lambda: store.commit("second", time_ms=2000))
    step("diff first to second", lambda: store.diff(state["c1"], state["c2"]))
    step("diff first to working", lambda: store.diff(state["c1"]))
    step("changed_by second", lambda: store.changed_by(state["c2"]))
    state["c3"] = step("empty commit", lambda: store.commit("nothing", author="x", time_ms=3000))
    step("changed_by empty", lambda: store.changed_by(state["c3"]))
    step("log limits", lambda: (store.log(limit=2), store.log(first_parent=True)))

    step(
        "remember",
        lambda: sdk.agents.remember(
            store,
            "r1",
            "remembered",
            source="bot",
            step="p3",
            observation="o",
            tool_call="t",
            note="n",
            time_ms=4000,
        ),
    )
    step(
        "remember_many",
        lambda: sdk.agents.remember_many(
            store,
            [{"id": "m1", "content": "x", "event_time": 9}, {"id": "m2", "content": [1]}],
            summary="two",
            time_ms=5000,
        ),
    )
    step("forget", lambda: sdk.agents.forget(store, "m1", time_ms=6000))
    step("forget a missing node", lambda: sdk.agents.forget(store, "m1", time_ms=7000))
    step("log after agents", lambda: store.log())
    step("working memory after agents", lambda: store.working_memory())
    step("changed_by each", lambda: [store.changed_by(c.id) for c in store.log()])

    step("resolve a branch", lambda: store.resolve(store.head()))
    step("resolve a prefix", lambda: store.resolve(state["c1"][:12]))
    step("resolve nonsense", lambda: store.resolve("no-such-ref"))
    step("state_at nonsense", lambda: store.state_at("0000"))
    step("diff from nonsense", lambda: store.diff("no-such-ref"))
    step("a non-text message", lambda: store.commit(5))  # type: ignore[arg-type]
    step("a negative log limit", lambda: store.log(limit=-1))
    step("a non-text node id", lambda: (store.rm(5), store.working_node(5)))  # type: ignore[arg-type]
    step("branch", lambda: store.new_branch("side"))
    step("the branch again", lambda: store.new_branch("side"))
    step("pending changes block a checkout", lambda: (store.add("p", "x"), store.checkout("side")))
    step("checkout discarding", lambda: store.checkout("side", discard=True))
    step("checkout a new branch", lambda: store.checkout(create="third"))
    step("branches", lambda: (store.head(), store.branches(), sorted(store.working_memory())))
    store = None  # drop the handle: the store is locked while one lives
    gc.collect()
    reopened = step("reopen", lambda: sdk.open(root))
    step("working memory after reopen", lambda: reopened.working_memory())
    reopened = None
    gc.collect()
    return answers


def test_the_double_answers_every_call_as_the_real_sdk_does(tmp_path: Path) -> None:
    real = script(real_sdk(), tmp_path / "real")
    double = script(mnem_double, tmp_path / "double")
    assert [name for name, _ in double] == [name for name, _ in real]
    differences = [
        (name, theirs, ours)
        for (name, theirs), (_, ours) in zip(real, double, strict=True)
        if theirs != ours
    ]
    assert not differences, "\n\n".join(
        f"{name}:\n  real   {theirs!r}\n  double {ours!r}" for name, theirs, ours in differences
    )


@pytest.mark.parametrize("sdk", ["real", "double"])
def test_the_script_itself_sees_what_it_claims(sdk: str, tmp_path: Path) -> None:
    """The comparison is not vacuous: the script's answers hold data and errors."""
    answers = dict(script(real_sdk() if sdk == "real" else mnem_double, tmp_path / sdk))
    assert answers["rm a missing node"][:2] == ("raised", "InvalidRefError")
    assert answers["a second handle"][:2] == ("raised", "StoreIoError")
    assert set(answers["working memory after agents"]) == {"b", "c", "d", "e", "g", "h", "r1", "m2"}
    assert len(answers["log after agents"]) == 6
