"""Breaks for the tests phase 3 added (issues 37-40: live hints, serving bursts, Mem0's history,
sharded stores, store growth, Platform webhooks and deletes, newest-wins with mnem), one a test."""

from __future__ import annotations

from tests.breakcheck.breaks import Break

BURST = "tests/test_serve_burst.py"
FEATURES = "tests/test_server_features_once.py"
AHEAD = "tests/test_mnem_stage_ahead.py"

PHASE_3: list[Break] = [
    # test_live_hints ---------------------------------------------------------------------------
    Break(
        "hints-sort-by-scope-alone",
        "tests/test_live_hints.py::test_hints_with_and_without_a_scope_sort_together",
        "src/memsync/providers/watched.py",
        "        return self._order() < other._order()\n",
        "        return (self.provider, self.scope) < (other.provider, other.scope)\n",
        "a provider's whole-store hint (no scope) sorts beside its scoped hints",
    ),
    Break(
        "hinted-cycle-failure-drops-hints",
        "tests/test_live_hints.py::test_a_hinted_cycle_that_fails_keeps_its_hints_and_says_so_once",
        "src/memsync/orchestration/live/triggers.py",
        '            self._count_not_run("failed")\n'
        "            self.queue.back_off(hints, self.config.sync.interval)\n"
        "            self._failed(why, exc)\n",
        '            self._count_not_run("failed")\n            self._failed(why, exc)\n',
        "a hinted cycle that fails unexpectedly keeps its hints for a retry",
    ),
    # test_serve_burst ----------------------------------------------------------------------------
    Break(
        "serve-backlog-of-five",
        f"{BURST}::test_a_hundred_clients_made_at_once_are_all_served_by_the_daemon",
        "src/memsync/orchestration/serve/server.py",
        "    request_queue_size = socket.SOMAXCONN\n",
        "",
        "the daemon listens with a backlog a burst of agents fits in (not socketserver's 5)",
    ),
    Break(
        "serve-client-asks-once",
        f"{BURST}::test_a_live_daemon_a_client_could_not_reach_is_asked_again_not_bypassed",
        "src/memsync/orchestration/serve/client.py",
        "            if time.monotonic() + pause > deadline:\n                break\n",
        "            break\n",
        "a client that could not reach a live daemon asks it again before opening the store",
    ),
    Break(
        "wire-connect-gives-up-on-eagain",
        f"{BURST}::test_a_connect_that_meets_a_full_backlog_waits_for_room_instead_of_giving_up",
        "src/memsync/orchestration/serve/wire.py",
        "            if time.monotonic() + pause > deadline:\n                raise\n",
        "            raise\n",
        "a connect that meets a full backlog (EAGAIN) waits and tries again",
    ),
    # test_server_features_once -------------------------------------------------------------------
    Break(
        "server-features-read-every-cycle",
        f"{FEATURES}::test_hinted_cycles_read_the_servers_schema_once_a_process",
        "src/memsync/providers/mem0/server_features.py",
        "        if known is not None:\n            return known\n",
        "",
        "a server's features (its schema) are read once a process",
    ),
    Break(
        "server-features-never-forgotten",
        f"{FEATURES}::test_a_route_that_answers_as_if_the_server_changed_has_the_schema_read_again",
        "src/memsync/providers/mem0/server_features.py",
        "            forgotten = self._known.pop(key, None)\n",
        "            forgotten = self._known.get(key)\n",
        "a route that answers as if the server changed has its features read again",
    ),
    # test_metrics ----------------------------------------------------------------------------------
    Break(
        "metrics-live-cycles-uncounted",
        "tests/test_metrics.py::test_every_cycle_is_counted_when_changes_arrive_only_through_the"
        "_watcher_and_the_probe",
        "src/memsync/orchestration/live/triggers.py",
        "        if self.counter is not None:\n            self.counter.cycle_ended(\n",
        "        if False:\n            self.counter.cycle_ended(\n",
        "every hinted (live) cycle is counted in the daemon's metrics",
    ),
    # test_status_folded ----------------------------------------------------------------------------
    Break(
        "status-fold-hidden-still-served",
        "tests/test_status_folded.py::test_status_folded_as_it_reads_says_what_folding_every_scope"
        "_afterwards_said",
        "src/memsync/orchestration/status/collect.py",
        "            row.records -= dated.records\n            row.hidden += dated.records\n",
        "            row.hidden += dated.records\n",
        "folded as staging is read, a scope's hidden memories are not counted as served",
    ),
    # test_mnem_stage_ahead -------------------------------------------------------------------------
    Break(
        "stage-ahead-beside-history",
        f"{AHEAD}::test_a_store_that_begins_with_its_sources_past_is_not_staged_ahead",
        "src/memsync/engine/ahead.py",
        "            if _begins_with_history(name, provider, providers, topology):\n"
        "                continue  # the history import writes its HEAD (engine.history): nothing to"
        " stage\n",
        "",
        "a store that begins with its source's past gets no writer process",
    ),
    Break(
        "stage-ahead-commits-what-the-plan-left",
        f"{AHEAD}::test_a_memory_two_sources_hold_is_created_once_though_both_copies_were_staged"
        "_ahead",
        "src/memsync/providers/mnem/on_demand.py",
        "        if not self.unstage(sorted(staged - wanted)):",
        "        if False:",
        "a node staged ahead that the plan did not ask for is unstaged, never committed",
    ),
    # test_crash_first_sync_ahead -------------------------------------------------------------------
    Break(
        "ahead-outcomes-kept-before-the-commit",
        "tests/test_crash_first_sync_ahead.py::test_killed_at_a_crash_point_the_store_shows_all_or"
        "_nothing_and_the_rerun_writes_each_once[prepared]",
        "src/memsync/engine/prepared.py",
        '    fault_point("replay:prepared")\n',
        '    _record(store, outcomes, prepared)\n    fault_point("replay:prepared")\n',
        "a prepared batch's outcomes are kept in staging only after mnem's commit",
        also=(
            (
                '    fault_point("replay:committed")\n    _record(store, outcomes, prepared)\n',
                '    fault_point("replay:committed")\n',
            ),
        ),
    ),
    # test_history_timeline, test_history_windows, test_history_library -------------------------
    Break(
        "history-delete-makes-no-absent-version",
        "tests/test_history_timeline.py::test_a_deleted_memory_whose_scope_memsync_saw_is_placed"
        "_and_absent_at_the_end",
        "src/memsync/base/history/timeline.py",
        "                if self.text is not None:\n"
        "                    self._version(None, event)\n",
        "                if self.text is not None:\n",
        "a delete in Mem0's history makes the memory absent from then on",
    ),
    Break(
        "history-window-in-one-layer",
        "tests/test_history_windows.py::test_a_memory_edited_every_day_is_folded_only_when_even"
        "_years_do_not_fit",
        "src/memsync/base/history/windows.py",
        "        if len(by_node) == len(window):\n",
        "        if len(by_node) <= len(window):\n",
        "no commit holds two versions of one memory (a window's versions go in layers)",
    ),
    Break(
        "history-head-keeps-expired",
        "tests/test_history_library.py::test_migrate_brings_every_version_at_its_own_time_and_head"
        "_is_the_current_state_import",
        "src/memsync/providers/mnem/history_import.py",
        "    forget_expired(handle, expired)\n",
        "",
        "HEAD after the history import is the current-state import's (expired memories forgotten)",
    ),
    # test_layouts_sharded, test_serve_sharded ------------------------------------------------------
    Break(
        "shard-name-keeps-slashes",
        "tests/test_layouts_sharded.py::test_every_namespace_is_one_directory_name_and_back",
        "src/memsync/base/mnem_shards.py",
        '    name = quote(namespace_id, safe="")\n',
        "    name = quote(namespace_id)\n",
        "every namespace is one directory name (quote's default keeps '/')",
    ),
    Break(
        "served-shard-namespace-unsplit",
        "tests/test_serve_sharded.py::test_agents_writes_through_the_daemon_reach_mem0_under_their"
        "_user",
        "src/memsync/orchestration/serve/place.py",
        '    segments = namespace.split(":") if namespace else []\n',
        "    segments = [namespace] if namespace else []\n",
        "a write the daemon serves into a shard is hinted for the user its namespace names",
    ),
    # test_store_growth -----------------------------------------------------------------------------
    Break(
        "growth-per-second-said-per-day",
        "tests/test_store_growth.py::test_status_the_page_and_metrics_show_each_stores_size_and"
        "_growth",
        "src/memsync/orchestration/disk.py",
        "    return (newest.bytes - oldest.bytes) / seconds * DAY, seconds\n",
        "    return (newest.bytes - oldest.bytes) / seconds, seconds\n",
        "status shows each store's growth a day, from the cycles' samples",
    ),
    Break(
        "growth-check-without-samples",
        "tests/test_store_growth.py::test_check_warns_when_a_team_store_grows_past_its_budget_and"
        "_names_a_cheaper_layout",
        "src/memsync/orchestration/checks.py",
        "        growth = disk_growth(store, config)\n",
        "        growth = disk_growth(None, config)\n",
        "check warns when a store grows past its growth_budget at the measured rate",
    ),
    # test_platform_webhooks, test_platform_deletes, test_write_backs -------------------------------
    Break(
        "webhook-any-secret",
        "tests/test_platform_webhooks.py::test_the_listener_refuses_a_wrong_secret_path_or_body_and"
        "_never_logs_the_secret",
        "src/memsync/orchestration/live/webhook_receiver.py",
        "        if expected is None or not hmac.compare_digest(parts[2].encode(), expected.encode()):",
        "        if expected is None:",
        "the webhook listener refuses a wrong secret",
    ),
    Break(
        "delete-check-bisects-one-half",
        "tests/test_platform_deletes.py::test_a_delete_on_the_platform_reaches_mnem_by_the_count"
        "_check_without_webhooks",
        "src/memsync/providers/mem0/platform_deletes.py",
        "        found.update(self._bisect(staged, labels[half:], instant, remote - left))\n",
        "",
        "the count check finds the scope that lost a memory, in either half",
    ),
    Break(
        "write-back-owed-only-in-its-run",
        "tests/test_write_backs.py::test_a_write_back_killed_before_replay_lands_at_the_next"
        "_incremental_cycle",
        "src/memsync/staging/write_backs.py",
        '            if run == run_id and state in ("pending", "running"):\n',
        '            if state in ("pending", "running"):\n',
        "a write-back an earlier run queued and never replayed is queued again",
    ),
    # test_newest_mnem ------------------------------------------------------------------------------
    Break(
        "mnem-version-dated-by-its-addition",
        "tests/test_newest_mnem.py::test_a_mnem_edit_made_after_a_mem0_edit_wins_and_carries_its"
        "_commits_time",
        "src/memsync/providers/mnem/provider.py",
        "            {n: iso_from_ms(t) for n, t in added.items()},\n"
        "            {n: iso_from_ms(t) for n, t in made.items()},\n",
        "            {n: iso_from_ms(t) for n, t in made.items()},\n"
        "            {n: iso_from_ms(t) for n, t in added.items()},\n",
        "a mnem version is dated by the commit that made it, not by the node's addition",
    ),
]
