"""Breaks for the tests added or changed in the round before issue 38 (stop 34: issues 30-33),
from ``git diff 27e2b74 b03dcad -- tests`` (27e2b74: stop 28's landing), one a test."""

from __future__ import annotations

from tests.breakcheck.breaks import Break

OPTIONS = (
    'options = f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_TIMEOUT_MS}"'
)
NOT_EMPTY = (
    "        conditions += [sql.SQL(\"coalesce({}, '') <> ''\").format(c) for c in columns]\n"
)

LAST_ROUND: list[Break] = [
    # test_app_scopes, test_config, test_config_edit -------------------------------------------
    Break(
        "page-folds-app-team",
        "tests/test_app_scopes.py::test_status_log_and_the_page_speak_per_app",
        "src/memsync/orchestration/status/page.py",
        '    report = status_report(paths)\n    for name, entry in report["providers"].items():\n',
        '    report = collect_status(paths)\n    for name, entry in report["providers"].items():\n',
        "the page folds a team (apps) into its provider, as status does",
    ),
    Break(
        "config-full-pass-daily-beside-database-probe",
        "tests/test_config.py::test_a_probe_without_an_interval_makes_the_full_pass_rare",
        "src/memsync/config/model.py",
        "interval = COMPLETELY_PROBED_INTERVAL if complete else PROBED_INTERVAL",
        "interval = PROBED_INTERVAL",
        "beside a probe that sees every change, the full pass is daily",
    ),
    Break(
        "switch-keeps-single-quotes",
        "tests/test_config_edit.py::test_switch_changes_only_the_active_value",
        "src/memsync/config/edit.py",
        "    literal = (\n",
        "    literal = False and (\n",
        "switch keeps the quotes the user wrote",
    ),
    Break(
        "switch-quotes-a-name-with-a-quote",
        "tests/test_config_edit.py::test_switch_keeps_double_quotes_and_quotes_a_name_that_needs_them",
        "src/memsync/config/edit.py",
        '        and "\'" not in name\n',
        "",
        "a name holding ' is double-quoted",
    ),
    # test_crash_mnem_commit, test_discovery_honesty, test_dry_run, test_e2e_mnem, test_exclude --
    Break(
        "mnem-leftover-with-another-writers-change",
        "tests/test_crash_mnem_commit.py::test_a_batch_another_writer_staged_into_is_left_alone",
        "src/memsync/providers/mnem/in_flight.py",
        "if pending and noted is not None and pending <= noted:",
        "if pending and noted is not None:",
        "a leftover is memsync's only when its note names every staged change",
    ),
    Break(
        "entities-incomplete-said-complete",
        "tests/test_discovery_honesty.py::test_every_command_says_more_may_exist_until_the"
        "_database_resolves_it",
        "src/memsync/providers/mem0/server_discovery.py",
        'scopes, complete=census.complete, note=census.note, source="GET /entities"',
        'scopes, complete=True, note=census.note, source="GET /entities"',
        "a discovery /entities cannot finish says more may exist",
    ),
    Break(
        "database-url-in-config",
        "tests/test_discovery_honesty.py::test_a_database_url_in_the_config_itself_is_refused"
        "_with_what_to_do",
        "src/memsync/config/fields.py",
        '    "database_url",\n',
        "",
        "a database URL in the config is refused with what to do",
    ),
    Break(
        "dry-run-scoped-scratch",
        "tests/test_dry_run.py::test_a_dry_run_over_wildcard_scopes_leaves_the_staging_database"
        "_as_it_was",
        "src/memsync/orchestration/scopes/cycle.py",
        "    if options.dry_run and not store.scratch:\n",
        "    if False:\n",
        "a scoped dry run works on a scratch copy",
    ),
    Break(
        "migrate-create-ignored",
        "tests/test_e2e_mnem.py::test_migrate_into_a_store_that_does_not_exist_yet_makes_it"
        "_with_create",
        "src/memsync/providers/mnem/on_demand.py",
        "            if not self.create_missing:\n",
        "            if True:\n",
        "create = true makes the store on migrate's first write",
    ),
    Break(
        "migrate-missing-store-says-how",
        "tests/test_e2e_mnem.py::test_migrate_into_a_missing_store_without_create_says_how_to"
        "_make_it",
        "src/memsync/providers/mnem/opening.py",
        'f"{name}: no mnem store at {path}; set create = true in "',
        'f"{name}: no mnem store at {path}; see "',
        "a missing store's error says how to make it",
    ),
    Break(
        "exclude-per-scope",
        "tests/test_exclude.py::test_every_scope_of_a_store_template_keeps_the_exclude",
        "src/memsync/orchestration/scopes/binding.py",
        "        bound.exclusion = base.exclusion\n",
        "",
        "every scope's provider keeps the configured exclude",
    ),
    # test_layouts -------------------------------------------------------------------------------
    Break(
        "layout-metadata-dropped",
        "tests/test_layouts.py::test_a_langmem_tool_value_is_its_text_with_its_keys_as_metadata"
        "_and_meta_as_provenance",
        "src/memsync/providers/mnem/layouts.py",
        "    metadata = {k: v for k, v in value.items() if k not in reserved}\n",
        "    metadata = {}\n",
        "a LangMem value's other keys are the memory's metadata",
    ),
    Break(
        "layout-kind-not-kept",
        "tests/test_layouts.py::test_the_store_managers_value_is_its_text_and_keeps_its_kind",
        "src/memsync/providers/mnem/layouts.py",
        '        value["kind"] = kind if isinstance(kind, str) else "Memory"\n',
        '        value["kind"] = "Memory"\n',
        "a store manager's value keeps its kind",
    ),
    Break(
        "layout-json-carriage-unmarked",
        "tests/test_layouts.py::test_a_value_that_is_not_a_memory_is_carried_whole_and_comes"
        "_back_as_it_was",
        "src/memsync/providers/mnem/layouts.py",
        "    return Value(canonical_json(content), as_json=True)\n",
        "    return Value(canonical_json(content))\n",
        "a value that is not a memory is carried as JSON and comes back whole",
    ),
    Break(
        "layout-plain-text-reshaped",
        "tests/test_layouts.py::test_plain_text_in_a_langgraph_store_stays_plain_text",
        "src/memsync/providers/mnem/layouts.py",
        '        return Value(content, envelope={"shape": "text"} if default != "text" else None)\n',
        "        return Value(content)\n",
        "plain text in a LangGraph store stays text",
    ),
    Break(
        "layout-key-not-mem0-id",
        "tests/test_layouts.py::test_a_mem0_memory_becomes_a_langgraph_item_at_its_id_in_the"
        "_users_namespace",
        "src/memsync/providers/mnem/layouts.py",
        'key = rest if family == "mem0" and rest and NAMESPACE_SEPARATOR not in rest else ""',
        'key = ""',
        "a Mem0 memory's key is its Mem0 id",
    ),
    Break(
        "layout-reserved-keys-at-top",
        "tests/test_layouts.py::test_metadata_keys_a_value_reserves_for_itself_travel_in_the_note",
        "src/memsync/providers/mnem/convert.py",
        "    top = {k: v for k, v in item.metadata.items() if dict_value and k not in reserved}\n",
        "    top = {k: v for k, v in item.metadata.items() if dict_value}\n",
        "metadata keys the value reserves travel in the note",
    ),
    Break(
        "layout-shape-not-configured",
        "tests/test_layouts.py::test_the_configured_shape_is_what_a_new_memory_gets",
        "src/memsync/providers/mnem/layouts.py",
        '    if shape == "kind":\n        kind = (envelope or {}).get("kind")\n',
        '    if shape == "never":\n        kind = (envelope or {}).get("kind")\n',
        "a new memory gets the configured shape",
    ),
    Break(
        "layout-json-text-parsed",
        "tests/test_layouts.py::test_text_that_parses_as_json_stays_text",
        "src/memsync/providers/mnem/convert.py",
        '    as_json = provenance.pop(CONTENT_JSON_KEY, None) == "json"\n',
        "    provenance.pop(CONTENT_JSON_KEY, None)\n    as_json = True\n",
        "text that parses as JSON stays text",
    ),
    Break(
        "layout-edited-carriage-stays-json",
        "tests/test_layouts.py::test_a_carried_value_edited_into_plain_text_becomes_a_memory_of"
        "_that_text",
        "src/memsync/providers/mnem/convert.py",
        "        json_value = _json_value(item.content, default=None)\n",
        "        json_value = _json_value(item.content, default=[item.content])\n",
        "a carried value edited into plain text becomes a memory of that text",
    ),
    Break(
        "layout-note-in-meta-ignored",
        "tests/test_layouts.py::test_a_note_inside_meta_is_found_when_provenance_lost_it",
        "src/memsync/providers/mnem/convert.py",
        '    return _note_in(node.provenance.note) or _note_in(meta_of(node.content).get("note"))\n',
        "    return _note_in(node.provenance.note)\n",
        "memsync's note is found in _meta when provenance lost it",
    ),
    Break(
        "layout-key-holds-separator",
        "tests/test_layouts.py::test_keys_never_hold_the_namespace_separator_and_stay_stable",
        "src/memsync/providers/mnem/layouts.py",
        'key = rest if family == "mem0" and rest and NAMESPACE_SEPARATOR not in rest else ""',
        "key = rest",
        "a key never holds ':'",
    ),
    Break(
        "layout-holds-sub-namespace",
        "tests/test_layouts.py::test_a_node_is_in_its_scopes_namespace_or_outside_every_one",
        "src/memsync/providers/mnem/layouts.py",
        "        return bool(key) and namespace == self.namespace\n",
        "        return bool(key) and namespace[: len(self.namespace)] == self.namespace\n",
        "a sub-namespace is not the scope's",
    ),
    Break(
        "namespace-segment-unchecked",
        "tests/test_layouts.py::test_a_user_id_that_cannot_be_a_namespace_segment_is_refused",
        "src/memsync/base/mnem_items.py",
        "            problem = _segment_problem(value)\n",
        "            problem = None\n",
        "a user id that cannot be a namespace segment is refused",
    ),
    Break(
        "team-store-taken-for-one-scope",
        "tests/test_layouts.py::test_one_store_holds_every_scope_when_its_namespace_names_the"
        "_wildcard_keys",
        "src/memsync/config/scoping.py",
        "        if is_template(entry) or scoped_in_store(entry)\n",
        "        if is_template(entry)\n",
        "a namespace naming the wildcard keys makes one store hold every scope",
    ),
    Break(
        "layout-namespace-keys-unchecked",
        "tests/test_layouts.py::test_a_layout_that_cannot_place_memories_is_refused_with_one_line",
        "src/memsync/config/scoping.py",
        "        if used == keys:\n            continue\n",
        "        if True:\n            continue\n",
        "a layout that cannot place memories is refused",
    ),
    # test_layouts_agents ----------------------------------------------------------------------
    Break(
        "agents-namespace-unfilled",
        "tests/test_layouts_agents.py::test_langmem_finds_every_migrated_memory_of_alice_and"
        "_none_of_bobs",
        "src/memsync/base/mnem_items.py",
        "            filled.append(value)\n",
        "            filled.append(segment)\n",
        "each user's memories in that user's namespace",
    ),
    Break(
        "agents-content-value-not-text",
        "tests/test_layouts_agents.py::test_a_memory_langmem_writes_reaches_mem0_as_plain_text"
        "_under_its_user",
        "src/memsync/providers/mnem/layouts.py",
        '    if isinstance(inner, str):\n        shape: Shape = "content"\n',
        '    if False:\n        shape: Shape = "content"\n',
        "LangMem's value reaches Mem0 as its text",
    ),
    Break(
        "agents-metadata-not-at-top",
        "tests/test_layouts_agents.py::test_an_edit_in_mem0_reads_back_through_langmem_in_its_shape",
        "src/memsync/providers/mnem/layouts.py",
        "    value.update(metadata)\n",
        "",
        "an edit from Mem0 comes back in the value's shape, metadata beside the text",
    ),
    Break(
        "agents-kind-value-not-text",
        "tests/test_layouts_agents.py::test_the_store_managers_shape_keeps_its_kind_both_ways",
        "src/memsync/providers/mnem/layouts.py",
        "    elif isinstance(kind, str) and isinstance(inner, dict) and _plain_memory(inner):\n",
        "    elif False:\n",
        "the store manager's shape is read as text and written back with its kind",
    ),
    Break(
        "agents-default-layout-dict",
        "tests/test_layouts_agents.py::test_mnem_mcp_recall_still_shows_migrated_memories_as"
        "_plain_text",
        "src/memsync/providers/mnem/layouts.py",
        '    if shape == "text":\n        return text\n',
        '    if shape == "text":\n        return {"content": text}\n',
        "the default layout writes plain text",
    ),
    Break(
        "agents-no-adoption",
        "tests/test_layouts_agents.py::test_a_text_langmem_already_holds_beside_the_same_text_in"
        "_mem0_is_one_memory",
        "src/memsync/engine/adopt.py",
        "    if not _anything_to_pair(search, preference):\n        return result\n",
        "    if True:\n        return result\n",
        "the same text on both sides is one memory",
    ),
    Break(
        "agents-json-carriage-as-text",
        "tests/test_layouts_agents.py::test_values_that_are_not_memories_round_trip_and_json"
        "_looking_text_stays_text",
        "src/memsync/providers/mnem/convert.py",
        '    if json_value is not None and not isinstance(json_value, str):\n        shape = "json"\n',
        '    if False:\n        shape = "json"\n',
        "a value that is not a memory round-trips",
    ),
    Break(
        "agents-outside-not-counted",
        "tests/test_layouts_agents.py::test_nodes_outside_the_namespaces_are_left_alone_and_counted",
        "src/memsync/providers/mnem/layouts.py",
        "        return self.place(node_id) is None\n",
        "        return False\n",
        "nodes outside the namespaces are counted",
    ),
    Break(
        "agents-native-date-now",
        "tests/test_layouts_agents.py::test_a_memory_an_agent_wrote_natively_is_dated_by_the"
        "_commit_that_added_it",
        "src/memsync/providers/mnem/dates.py",
        "            {n: self._created[n] for n in created if n in self._created},\n",
        "            {},\n",
        "a native node is dated by the commit that added it",
    ),
    Break(
        "agents-colon-user-written",
        "tests/test_layouts_agents.py::test_deletes_cross_both_ways_and_a_user_id_that_cannot_be"
        "_a_namespace_is_refused",
        "src/memsync/base/mnem_items.py",
        '    if NAMESPACE_SEPARATOR in value:\n        return f"contains {NAMESPACE_SEPARATOR!r}"\n',
        "",
        "a user id holding ':' is refused",
    ),
    Break(
        "agents-fixed-namespace-unbound",
        "tests/test_layouts_agents.py::test_one_user_config_writes_the_namespace_literally_and"
        "_leaves_other_namespaces_alone",
        "src/memsync/providers/mnem/layouts.py",
        "        fixed = tuple(template) if not namespace_keys(template) else None\n",
        "        fixed = None\n",
        "a fixed namespace is written literally",
    ),
    # test_live_org, test_live_watch -----------------------------------------------------------
    Break(
        "live-own-store-changes-are-others",
        "tests/test_live_org.py::test_a_first_sync_that_creates_a_thousand_stores_starts_no"
        "_cycle_after_it[watched]",
        "src/memsync/orchestration/live/local_stores.py",
        "            if hint in left and self._unchanged(store, hint, left[hint]):\n",
        "            if False:\n",
        "the stores memsync made and left start no cycle",
    ),
    Break(
        "live-hinted-cycle-goes-on",
        "tests/test_live_org.py::test_a_write_into_a_server_probed_through_its_database_is"
        "_listed_once_more_alone",
        "src/memsync/engine/cycle.py",
        "            if name == next(iter(rest), None) and lead and self._nothing_to_do(lead, report):\n",
        "            if False:\n",
        "a hinted cycle that finds only memsync's own write stops at the hinted store",
    ),
    Break(
        "live-own-probe-answers-listed",
        "tests/test_live_org.py::test_a_burst_of_hundreds_of_scopes_is_one_cycle_and_never_a_loop",
        "src/memsync/orchestration/live/probing.py",
        "                if label in expected and flags.tokens.get(label) == expected[label]\n",
        "                if False\n",
        "the probe's answers to memsync's own writes start nothing",
    ),
    Break(
        "watch-signature-by-time",
        "tests/test_live_watch.py::test_a_mnem_stores_content_signature_ignores_a_read_and_sees"
        "_every_write",
        "src/memsync/providers/mnem/watched.py",
        '    return signature_of(store / ".mnem", by_content=True)\n',
        '    return signature_of(store / ".mnem")\n',
        "a store's signature moves with a write, not a read",
    ),
    Break(
        "watch-read-is-a-change",
        "tests/test_live_watch.py::test_another_program_that_only_reads_a_mnem_store_starts_no"
        "_cycle",
        "src/memsync/providers/mnem/watched.py",
        "    def signature(self, scope: Scope | None) -> Signature:\n"
        "        return content_signature(self.root)\n",
        "    def signature(self, scope: Scope | None) -> Signature:\n"
        '        return signature_of(self.root / ".mnem")\n',
        "a program that only reads a store starts no cycle",
        also=(
            ("        return mnem_settled(self.root, token, self.held)\n", "        return None\n"),
        ),
    ),
    Break(
        "watch-team-store-let-go-is-a-change",
        "tests/test_live_watch.py::test_one_mnem_store_holding_every_scope_is_watched_and"
        "_memsyncs_own_writes_start_nothing",
        "src/memsync/orchestration/live/local_stores.py",
        "        if store.signature(hint.scope) == note.files:\n            return True\n",
        "",
        "memsync's own writes to a team store start nothing",
        also=(
            (
                "        if note.token is None:\n            return False\n",
                "        return False\n",
            ),
        ),
    ),
    # test_named_scopes ------------------------------------------------------------------------
    Break(
        "named-extra-users-unsaid",
        "tests/test_named_scopes.py::test_a_named_team_is_complete_and_users_found_beside_it_are"
        "_synced_and_said",
        "src/memsync/providers/mem0/server_discovery.py",
        '        note = f"the server also holds {shown}, not in {named.describe()}"\n',
        "        note = None\n",
        "users the routes find beside the team's list are said",
    ),
    Break(
        "named-command-failure-silent",
        "tests/test_named_scopes.py::test_a_command_prints_the_team_and_its_failure_is_one_line",
        "src/memsync/providers/named_scopes.py",
        '        reason = f": {said[-1]}" if said else ""\n',
        '        reason = ""\n',
        "a failing scopes_command's error is its last line",
    ),
    Break(
        "named-bad-line-unnamed",
        "tests/test_named_scopes.py::test_two_wildcards_take_key_value_pairs_and_a_bad_line_is"
        "_named",
        "src/memsync/providers/named_scopes.py",
        '            f"{where}, line {number}: expected {example}"\n',
        '            f"{where}: expected {example}"\n',
        "a bad line of the team's list is named",
    ),
    Break(
        "named-database-and-file-both",
        "tests/test_named_scopes.py::test_database_and_team_keys_are_checked_on_load",
        "src/memsync/config/providers.py",
        "        if self.database_url_env and self.database_url_file:\n",
        "        if False:\n",
        "database and team keys are checked on load",
    ),
    Break(
        "named-psycopg-missing-unsaid",
        "tests/test_named_scopes.py::test_a_database_without_psycopg_names_what_to_install",
        "src/memsync/providers/mem0/server_database.py",
        '    if importlib.util.find_spec("psycopg") is not None:\n',
        "    if True:\n",
        "a database without psycopg names what to install",
    ),
    # test_pmm_scope_keys, test_provider_mnem --------------------------------------------------
    Break(
        "pmm-mnem-scope-key-is-name",
        "tests/test_pmm_scope_keys.py::test_memories_an_agent_edits_or_writes_in_mnem_stay_in"
        "_erins_backup",
        "src/memsync/providers/mnem/configured.py",
        "    scope_key = entry.scope_key or config_scope_key(config)\n",
        "    scope_key = entry.scope_key\n",
        "a mnem store's records carry its Mem0 scope's key",
    ),
    Break(
        "pmm-old-records-not-repaired",
        "tests/test_pmm_scope_keys.py::test_a_backup_written_before_the_fix_is_repaired_on_its"
        "_next_write",
        "src/memsync/providers/pmm_dir.py",
        "                        existing.scope_key = self.fixed_scope or scope"
        "  # repaired if it was not\n",
        "",
        "an older file's records are repaired on the next write",
    ),
    Break(
        "batch-reads-each-node",
        "tests/test_provider_mnem.py::test_a_batch_after_a_full_listing_scans_the_store_for_nothing",
        "src/memsync/providers/mnem/batch_plan.py",
        "        return self.known.get(node_id)\n",
        "        return self._read(node_id)\n",
        "a batch after a full listing reads no node",
    ),
    Break(
        "batch-ignores-staged-record",
        "tests/test_provider_mnem.py::test_updates_and_deletes_from_an_incremental_cycle_use_the"
        "_staged_record",
        "src/memsync/providers/mnem/batch_plan.py",
        "        if previous is not None and previous.id == node_id:\n",
        "        if False:\n",
        "updates and deletes take the staged record",
    ),
    Break(
        "batch-reads-each-unknown-create",
        "tests/test_provider_mnem.py::test_creates_nobody_knew_cost_one_diff_for_the_whole_batch",
        "src/memsync/providers/mnem/batch_plan.py",
        "        current = self._current(spec.id)\n",
        "        current = self._read(spec.id)\n",
        "creates nobody knew cost one diff",
    ),
    Break(
        "batch-staged-record-taken-as-exact",
        "tests/test_provider_mnem.py::test_an_update_from_the_staged_record_is_written_even_when"
        "_its_version_matches",
        "src/memsync/providers/mnem/batch_plan.py",
        "            return previous, False\n",
        "            return previous, True\n",
        "a staged record is not proof of what the node holds",
    ),
    Break(
        "batch-identical-create-committed",
        "tests/test_provider_mnem.py::test_a_create_nobody_knew_of_a_node_already_there_as"
        "_written_commits_nothing",
        "src/memsync/providers/mnem/batch.py",
        "            if node_id not in changed:"
        "  # the very node is there already: nothing to write\n",
        "            if False:\n",
        "a create of a node already there as written commits nothing",
    ),
    # test_scopes, test_scopes_remote ----------------------------------------------------------
    Break(
        "check-noun-scopes",
        "tests/test_scopes.py::test_check_reports_discovered_scopes_and_the_store_template",
        "src/memsync/orchestration/scopes/report.py",
        '    return NOUNS.get(keys[0], "scopes") if len(keys) == 1 else "scopes"\n',
        '    return "scopes"\n',
        "check names a user_id team's scopes users",
    ),
    Break(
        "verify-lists-every-scope",
        "tests/test_scopes.py::test_verify_of_a_large_team_lists_only_the_scopes_that_do_not_hold",
        "src/memsync/cli/status.py",
        "    quiet = len(scoped.scopes) > QUIET_OVER\n",
        "    quiet = False\n",
        "verify of a large team lists only the scopes that do not hold",
    ),
    Break(
        "client-per-scope",
        "tests/test_scopes_remote.py::test_every_scope_talks_through_the_providers_one_client"
        "_closed_with_the_run",
        "src/memsync/providers/http/provider.py",
        "        bound._client_owner = self\n",
        "        bound._client_owner = bound\n",
        "every scope shares the provider's one client",
    ),
    Break(
        "no-read-ahead",
        "tests/test_scopes_remote.py::test_a_teams_listings_are_read_ahead_a_few_at_a_time_each"
        "_once",
        "src/memsync/orchestration/scopes/cycle.py",
        "    if len(order) < 2:\n        return\n",
        "    if True:\n        return\n",
        "a team's listings are read ahead",
    ),
    # test_serve_daemon ------------------------------------------------------------------------
    Break(
        "serve-write-starts-no-cycle",
        "tests/test_serve_daemon.py::test_an_agents_write_through_the_daemon_is_its_own_commit"
        "_and_reaches_mem0_at_once",
        "src/memsync/orchestration/serve/server.py",
        "        for hint in place.hints_for(staged):\n            self.server.on_write(hint)\n",
        "",
        "an agent's write reaches Mem0 at once",
    ),
    Break(
        "serve-no-handover",
        "tests/test_serve_daemon.py::test_the_store_is_handed_to_the_daemon_when_it_starts_and"
        "_taken_back_when_it_stops",
        "src/memsync/orchestration/serve/client.py",
        "            client.look_for_daemon()\n",
        "            pass\n",
        "the store is handed to a daemon that starts",
    ),
    Break(
        "serve-write-retried-silently",
        "tests/test_serve_daemon.py::test_a_daemon_killed_between_receiving_a_write_and_answering"
        "_it_never_loses_it_silently",
        "src/memsync/orchestration/serve/client.py",
        "            if op in ops.WRITES:\n                raise WriteUnconfirmed(\n",
        "            if False:\n                raise WriteUnconfirmed(\n",
        "a write the daemon died on is never retried silently",
    ),
    Break(
        "serve-any-store",
        "tests/test_serve_daemon.py::test_a_store_memsync_does_not_sync_is_opened_by_the_client"
        "_itself",
        "src/memsync/orchestration/serve/place.py",
        "        if Path(entry.path).expanduser().resolve() == root:\n",
        "        if True:\n",
        "a store memsync does not sync is not served",
    ),
    Break(
        "serve-socket-mode",
        "tests/test_serve_daemon.py::test_the_socket_is_private_to_its_user",
        "src/memsync/orchestration/serve/server.py",
        "        os.chmod(self.path, 0o600)\n",
        "",
        "the socket is private to its user",
    ),
    Break(
        "serve-busy-not-daemon",
        "tests/test_serve_daemon.py::test_memsync_sync_beside_a_served_store_says_the_daemon"
        "_holds_it_and_syncs_it",
        "src/memsync/providers/mnem/opening.py",
        "    if holder is not None and holder.pid == _daemon_pid():\n",
        "    if False:\n",
        "a store the daemon holds is said so",
    ),
    Break(
        "mcp-missing-store-traceback",
        "tests/test_serve_daemon.py::test_memsync_mcp_on_a_missing_store_is_one_clear_line",
        "src/memsync/cli/mcp.py",
        "    except mnem.MnemError as exc:\n",
        "    except ImportError as exc:\n",
        "memsync mcp on a missing store is one clear line",
    ),
    Break(
        "serve-team-write-hints-every-scope",
        "tests/test_serve_daemon.py::test_a_put_into_a_team_store_the_daemon_serves_reaches_mem0"
        "_as_text_for_that_user_alone",
        "src/memsync/orchestration/serve/place.py",
        "        if self.namespace is None or not node_ids:\n",
        "        if True:\n",
        "a put into a team store starts its user's cycle alone",
    ),
    # test_serve_held, test_serve_mcp ----------------------------------------------------------
    Break(
        "lane-yield-takes-back-at-once",
        "tests/test_serve_held.py::test_the_lane_lets_a_waiting_agent_in_before_memsync_when_a"
        "_batch_steps_aside",
        "src/memsync/providers/held.py",
        "            self._turn.wait_for(lambda: self._owner is None and not self._agents)\n",
        "            self._turn.wait_for(lambda: self._owner is None)\n",
        "a batch that steps aside lets the waiting agent in first",
    ),
    Break(
        "batch-never-steps-aside",
        "tests/test_serve_held.py::test_an_agents_write_during_a_sync_batch_goes_first_as_its_own"
        "_commit",
        "src/memsync/providers/mnem/batch.py",
        "            if self.handle.agents_waiting() and number + 1 < len(writes):\n",
        "            if False:\n",
        "an agent's write goes first, mid-batch",
    ),
    Break(
        "batch-no-refusal-after-agent",
        "tests/test_serve_held.py::test_a_node_the_batch_has_yet_to_write_that_the_agent_writes"
        "_meanwhile_keeps_its_value",
        "src/memsync/providers/mnem/batch.py",
        "                self._refuse_changed_meanwhile(writes[number + 1 :])\n",
        "",
        "a node the agent wrote mid-batch keeps its value",
    ),
    Break(
        "meanwhile-covers-nothing",
        "tests/test_serve_held.py::test_a_node_an_agent_changed_since_the_listing_is_never"
        "_overwritten_blind",
        "src/memsync/providers/mnem/meanwhile.py",
        "        return node_id in self.others or EVERYTHING in self.others\n",
        "        return False\n",
        "a node an agent changed since the listing is not overwritten",
    ),
    Break(
        "freshness-asked-of-own-store",
        "tests/test_serve_held.py::test_a_store_opened_for_memsync_alone_asks_no_freshness",
        "src/memsync/providers/mnem/provider.py",
        "        if not self.borrowed:\n            return None\n        with self.writing():\n",
        "        if False:\n            return None\n        with self.writing():\n",
        "a store memsync holds alone asks no freshness",
    ),
    Break(
        "team-store-account-per-scope",
        "tests/test_serve_held.py::test_in_a_held_team_store_the_run_keeps_one_account_memsyncs"
        "_commits_not_counted",
        "src/memsync/providers/mnem/shared.py",
        "        if self._meanwhile is None:\n",
        "        if True:\n",
        "a held team store keeps one account a run",
    ),
    Break(
        "mcp-recall-missing-differs",
        "tests/test_serve_mcp.py::test_memsync_mcp_answers_every_mnem_mcp_tool_as_mnem_mcp_does",
        "src/memsync/orchestration/serve/ops.py",
        "    node = store.working_node(id)\n    return node.to_dict() if node is not None else None\n",
        "    node = store.working_node(id)\n    return node.to_dict() if node is not None else {}\n",
        "memsync mcp answers as mnem-mcp",
    ),
    Break(
        "mcp-reimport-skips-no-duplicate",
        "tests/test_serve_mcp.py::test_memory_export_is_a_valid_pmm_file_and_importing_it_again"
        "_imports_nothing_twice",
        "src/memsync/orchestration/portability.py",
        '    if strategy == "skip_duplicates" and (\n',
        '    if strategy == "never" and (\n',
        "an export imported again imports nothing twice",
    ),
    Break(
        "mcp-bad-pmm-unhandled",
        "tests/test_serve_mcp.py::test_a_bad_pmm_document_is_one_clear_tool_error",
        "src/memsync/orchestration/serve/mcp.py",
        "        except (ServeError, MemsyncError) as exc:  # memsync's own (a bad PMM document)\n",
        "        except ServeError as exc:\n",
        "a bad PMM document is one clear tool error",
    ),
    # test_server_database ---------------------------------------------------------------------
    Break(
        "database-discovery-unused",
        "tests/test_server_database.py::test_discovery_through_the_database_finds_every_user_past"
        "_the_entities_scan",
        "src/memsync/providers/mem0/server_discovery.py",
        "    if provider.database is not None:\n",
        "    if False:\n",
        "discovery goes through the database",
    ),
    Break(
        "database-discovery-incomplete",
        "tests/test_server_database.py::test_a_cycle_with_the_database_syncs_the_user_the_routes"
        "_never_show",
        "src/memsync/providers/mem0/server_discovery.py",
        '        return Discovery(scopes, source="database")\n',
        '        return Discovery(scopes, complete=False, source="database")\n',
        "a cycle with the database is complete",
    ),
    Break(
        "database-digest-constant",
        "tests/test_server_database.py::test_the_probe_sees_a_delete_with_a_backdated_add_that"
        "_entities_counts_hide",
        "src/memsync/providers/mem0/server_database.py",
        "\"coalesce(sum(hashtextextended(id::text || coalesce(payload::text, ''), 0)), 0)::text\"",
        "\"'0'\"",
        "the digest sees a delete and a backdated add",
    ),
    Break(
        "database-digest-ids-only",
        "tests/test_server_database.py::test_past_the_scan_the_probe_flags_exactly_the_users_with"
        "_an_edit_a_delete_or_a_backdated_add",
        "src/memsync/providers/mem0/server_database.py",
        "hashtextextended(id::text || coalesce(payload::text, ''), 0)",
        "hashtextextended(id::text, 0)",
        "the digest sees an edit",
    ),
    Break(
        "database-session-writable",
        "tests/test_server_database.py::test_nothing_can_be_written_through_memsyncs_connection",
        "src/memsync/providers/mem0/server_database.py",
        OPTIONS,
        'options = f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"',
        "the session is read-only",
    ),
    Break(
        "database-superuser-setting",
        "tests/test_server_database.py::test_a_role_granted_select_alone_is_enough",
        "src/memsync/providers/mem0/server_database.py",
        OPTIONS,
        OPTIONS[:-1] + ' -c log_min_duration_statement=-1"',
        "a role granted SELECT alone is enough (no superuser-only setting)",
    ),
    Break(
        "database-empty-key-rows",
        "tests/test_server_database.py::test_pairs_and_fixed_keys_come_from_the_same_one_query",
        "src/memsync/providers/mem0/server_database.py",
        NOT_EMPTY,
        "",
        "pairs and fixed keys come from the one query",
    ),
    Break(
        "database-error-multiline",
        "tests/test_server_database.py::test_a_database_that_does_not_answer_is_one_line",
        "src/memsync/providers/mem0/server_database.py",
        "        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]\n",
        "        text = str(exc).strip() or type(exc).__name__\n",
        "a database error is one line (libpq's run over two)",
    ),
    Break(
        "database-error-unsourced",
        "tests/test_server_database.py::test_a_wrong_password_is_one_line_that_carries_neither_the"
        "_url_nor_the_password",
        "src/memsync/providers/mem0/server_database.py",
        'f"{self.provider}: cannot read {self.describe()}: {self._safe(exc)}"',
        'f"{self.provider}: cannot read the database: {self._safe(exc)}"',
        "a wrong password's error says where the URL comes from",
    ),
    Break(
        "database-bad-url-provider-error",
        "tests/test_server_database.py::test_a_url_libpq_cannot_read_is_a_config_error_without_the"
        "_password",
        "src/memsync/providers/mem0/server_database.py",
        "        except psycopg.ProgrammingError as exc:  # a URL libpq cannot parse\n"
        "            raise ConfigError(\n",
        "        except psycopg.ProgrammingError as exc:  # a URL libpq cannot parse\n"
        "            raise ProviderError(\n",
        "a URL libpq cannot read is a config error",
    ),
    Break(
        "database-missing-table-generic",
        "tests/test_server_database.py::test_a_table_that_is_not_there_names_the_key_to_set",
        "src/memsync/providers/mem0/server_database.py",
        "            except psycopg.errors.UndefinedTable:\n",
        "            except psycopg.errors.UndefinedFunction:\n",
        "a missing table names database_table",
    ),
    Break(
        "database-census-skips-expired",
        "tests/test_server_database.py::test_a_census_counts_expired_memories_as_the_listing_does",
        "src/memsync/providers/mem0/server_database.py",
        NOT_EMPTY,
        NOT_EMPTY
        + "        conditions.append(sql.SQL(\"coalesce(payload->>'expiration_date', '') = ''\"))\n",
        "the census counts expired memories",
    ),
    # test_server_discovery, test_sql_home, test_team_backups, test_ui_* -----------------------
    Break(
        "discovery-noun-dropped",
        "tests/test_server_discovery.py::test_any_valid_key_discovers_the_users_through_entities",
        "src/memsync/orchestration/scopes/cycle.py",
        '        "noun": scope_noun(keys),\n',
        "",
        "a run's discovery says its source and noun",
    ),
    Break(
        "sql-outside-staging",
        "tests/test_sql_home.py::test_no_sql_runs_outside_staging",
        "src/memsync/orchestration/status/page.py",
        "SCOPES_SHOWN = 50  #",
        'def _peek(conn: Any) -> Any:\n    return conn.execute("SELECT 1")\n\n\nSCOPES_SHOWN = 50  #',
        "no SQL runs outside staging",
    ),
    Break(
        "team-backup-scope-keys",
        "tests/test_team_backups.py::test_a_teams_backup_holds_every_scope_each_record_under_its"
        "_own",
        "src/memsync/orchestration/backups.py",
        "                record.scope_key = where.scope.pmm_key\n",
        "                pass\n",
        "each record of a team's backup under its own scope",
    ),
    Break(
        "team-backup-empty-not-skipped",
        "tests/test_team_backups.py::test_a_team_never_synced_is_skipped_and_says_why",
        "src/memsync/orchestration/backups.py",
        "    if not mirrored:\n",
        "    if False:\n",
        "a team never synced is skipped and says why",
        also=(("    if not paths.database.exists():\n", "    if False:\n"),),
    ),
    Break(
        "team-restore-one-scope",
        "tests/test_team_backups.py::test_a_teams_backup_restores_a_lost_store_into_its_own_scope",
        "src/memsync/orchestration/scopes/binding.py",
        "        scope = Scope.from_pmm_key(key, binder.keys)\n",
        '        scope = Scope.from_pmm_key("alice", binder.keys)\n',
        "a team's backup restores each memory into its own scope",
    ),
    Break(
        "team-import-guesses-scope",
        "tests/test_team_backups.py::test_a_record_whose_scope_key_names_no_scope_is_refused_not"
        "_guessed",
        "src/memsync/orchestration/scopes/binding.py",
        "        return None if scope is None else binder.bind(name, base, scope)\n",
        '        return binder.bind(name, base, scope or scope_from_pmm_key("dave", binder.keys))\n',
        "a record whose scope_key names no scope is refused, not guessed",
    ),
    Break(
        "team-snapshot-sqlite-error-escapes",
        "tests/test_team_backups.py::test_a_team_snapshot_that_cannot_be_read_fails_and_exits_non"
        "_zero",
        "src/memsync/orchestration/backups.py",
        "    except (MemsyncError, sqlite3.Error) as exc:\n",
        "    except MemsyncError as exc:\n",
        "a snapshot that cannot be read fails and exits non-zero",
    ),
    Break(
        "daemon-backup-job-skips-teams",
        "tests/test_team_backups.py::test_the_daemons_backup_job_covers_a_team",
        "src/memsync/orchestration/daemon/jobs.py",
        "        for outcome in take_backups(self.paths, self.current()):\n",
        "        for outcome in take_backups(self.paths, self.current(), only=['mem0', 'backup']):\n",
        "the daemon's backup job covers a team",
    ),
    Break(
        "page-sends-every-scope",
        "tests/test_ui_server.py::test_a_team_of_hundreds_is_summarised_and_paged_not_sent_whole",
        "src/memsync/orchestration/status/page.py",
        "        shown = sorted(scopes)[:SCOPES_SHOWN]\n",
        "        shown = sorted(scopes)\n",
        "the page gets a team's first 50 scopes, not all",
    ),
    Break(
        "page-next-stays",
        "tests/test_ui_browser.py::test_a_team_is_drawn_fifty_scopes_at_a_time_and_paged",
        "src/memsync/orchestration/ui/static/app.js",
        'onclick: go({ offset: view.offset + SCOPES_SHOWN }) }, "next ›")',
        'onclick: go({ offset: view.offset }) }, "next ›")',
        "the page pages through a team",
    ),
]
