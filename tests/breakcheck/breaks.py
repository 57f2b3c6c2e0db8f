"""The break-check's table: a test, and one break of what its name says it guards.

A break is one or more search/replace edits in one file, applied to a scratch copy of the tree
(``python -m tests.breakcheck``). Keep each break the smallest change that removes the guarded
behaviour, as a careless edit would; a search string must occur exactly once in its file.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Break:
    name: str  # short and unique: what is broken
    test: str  # a pytest node id, from the repository root
    file: str  # the file the break edits, from the repository root
    find: str
    replace: str
    guards: str  # what the break takes away, in words
    also: tuple[tuple[str, str], ...] = field(default=())  # more edits in the same file

    @property
    def edits(self) -> tuple[tuple[str, str], ...]:
        return ((self.find, self.replace), *self.also)


SERVE_DAEMON = "tests/test_serve_daemon.py"

ISSUE_38: list[Break] = [  # the eight breaks issue 38 found the tests missed
    Break(
        "serve-recover-noop",
        f"{SERVE_DAEMON}::test_a_write_cut_short_whose_agent_gave_up_is_unstaged_by_the"
        "_restarted_daemon",
        "src/memsync/orchestration/serve/server.py",
        "self.intents.recover(store, store.root)",
        "None",
        "the restarted daemon unstages an agent's write a crash cut short",
    ),
    Break(
        "langgraph-timestamp-now",
        "tests/test_serve_langgraph.py::test_memsync_store_answers_as_mnem_langgraph_alone_and"
        "_through_the_daemon",
        "src/memsync/langgraph.py",
        "    if event_time is not None:\n"
        "        return datetime.fromtimestamp(event_time / 1000, tz=UTC)\n",
        "",
        "an item's created_at/updated_at is the node's event_time",
    ),
    Break(
        "lane-agent-priority",
        "tests/test_serve_held.py::test_an_agent_waiting_when_memsyncs_call_ends_goes_before"
        "_memsyncs_next_call",
        "src/memsync/providers/held.py",
        "lambda: self._owner is None and (agent or not self._agents)",
        "lambda: self._owner is None",
        "a waiting agent goes before memsync's next call on the store",
    ),
    Break(
        "mnem-commit-kill-before",
        "tests/test_crash_mnem_commit.py::test_killed_inside_the_mnem_commit_the_store_holds_none"
        "_of_the_batch_and_the_rerun_writes_it_once",
        "src/memsync/providers/mnem/batch.py",
        '            with killed_inside("mnem:commit"):\n',
        '            with killed_inside("mnem:commit"):\n'
        "                import time as _t; _end = _t.perf_counter() + 0.05  # noqa\n"
        "                while _t.perf_counter() < _end: pass  # noqa\n",
        "the kill lands inside mnem's commit (a 50 ms Python loop runs first)",
    ),
    Break(
        "database-read-only-transactions",
        "tests/test_server_database.py::test_every_transaction_is_read_only_even_where_the"
        "_sessions_default_is_lost",
        "src/memsync/providers/mem0/server_database.py",
        "        conn.read_only = True  # and every transaction opened READ ONLY besides\n",
        "",
        "every transaction on the server's database is opened READ ONLY",
    ),
    Break(
        "database-redaction-library",
        "tests/test_server_database.py::test_a_password_libpq_splits_into_the_host_is_not"
        "_printed_in_any_part",
        "src/memsync/providers/mem0/server_database.py",
        "return redact(text, self.url, *self._password())",
        "return text",
        "a database error's text loses the URL and its password",
    ),
    Break(
        "database-redaction-password-pieces",
        "tests/test_server_database.py::test_a_password_libpq_splits_into_the_host_is_not"
        "_printed_in_any_part",
        "src/memsync/providers/mem0/server_database.py",
        '            found += [p for p in re.split(r"[@/:?#,]", whole.group(1)) if len(p) >= 4]\n',
        "",
        "the parts of a password libpq read as a host or port are redacted too",
    ),
    Break(
        "database-redaction-commands",
        "tests/test_discovery_honesty.py::test_a_database_url_that_fails_is_said_without_its"
        "_password",
        "src/memsync/providers/mem0/server_database.py",
        "return redact(text, self.url, *self._password())",
        "return text",
        "no command prints the database URL's password",
    ),
    Break(
        "team-store-one-diff",
        "tests/test_layouts_agents.py::test_one_store_for_every_user_is_opened_once_a_cycle",
        "src/memsync/providers/mnem/shared.py",
        "        found = self.shared.changes_in(cursor, self._namespace)\n",
        "        self.shared._changes.pop(cursor, None)\n"
        "        self.shared._changes_by.pop(cursor, None)\n"
        "        found = self.shared.changes_in(cursor, self._namespace)\n",
        "a run diffs a team's store once, for every scope",
    ),
]
