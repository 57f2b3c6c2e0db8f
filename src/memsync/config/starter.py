"""The commented starter config that ``memsync init`` writes."""

STARTER_CONFIG = """\
# memsync configuration. Every key is checked when memsync starts: a typo is an error.
# Reference: `memsync --help`, README.md. Secrets never go in this file (see api_key_env).

[sync]
active = "mem0"            # the active backend: the centre every other provider syncs with
conflict = "newest"        # both sides changed: error | active | newest | keep-both
max_delete = "25%"         # refuse a cycle that would delete more than this share of a provider
max_delete_count = 100     # ...or more than this many memories at once
interval = "5m"            # how often the daemon makes a full pass over everything
# watch = true               # watch local stores (mnem, pmm-dir): their changes sync in a second
# probe = "5s"               # ask remote stores which scopes changed (then: interval = "1h")
# full_scan_interval = "1h"  # incremental providers are listed in full this often (finds deletes)
# max_attempts = 5           # a failing write is retried this many cycles, then parked as dead

[backup]
interval = "1h"            # PMM snapshot of every provider's memories
keep = 24                  # newest snapshots kept
# gzip = false

# [verify]
# interval = "1d"            # the daemon verifies every linked pair; status shows FAILED in red

# [pmm]
# max_content_bytes = 1048576  # records with more content are rejected on import

# The open-source Mem0 library, in-process (pip install 'memsync[mem0]').
[providers.mem0]
type = "mem0-oss"
direction = "both"         # pull: into the active backend | push: out of it | both: two-way
scope = { user_id = "alice" }
# mem0_config_file = "~/mem0.yaml"   # or mem0_config = { vector_store = { ... } }
# embedder = "hash"   # offline hashing embedder: for backup/sync only, no semantic search

# A directory of PMM JSONL files, one per scope: a portable copy of everything.
[providers.backup]
type = "pmm-dir"
path = "~/memsync-pmm"
direction = "push"

# mnem (pip install 'memsync[mnem]'):
# [providers.mnem]
# type = "mnem"
# path = "~/agents/memory"           # the directory holding .mnem
# direction = "both"
# exclude = { ids = ["*:_seq"] }     # agent frameworks' counter nodes: not memories
# layout = "mem0"                    # nodes mem0:{id} as text (mnem-mcp); for LangGraph/LangMem:
#   layout = { type = "langgraph", namespace = ["memories", "alice"], value = "content" }

# A self-hosted Mem0 server, a whole team (docs/mem0-server.md). Past 10,000 memories its
# routes cannot show every user: give memsync read-only access to the server's own database
# (discovery and the probe then see everyone, at any size), or name the team in a file.
# [providers.server]
# type = "mem0-server"
# base_url = "https://mem0.internal:8000"
# scope = { user_id = "*" }
# api_key_env = "MEM0_ADMIN_KEY"
# database_url_env = "MEM0_DATABASE_URL"  # postgresql://reader:...@host/db, a role with SELECT only
# scopes_file = "~/team.txt"              # or, without a database: one user id a line

# The hosted Mem0 Platform; the key comes from the environment or a file, never from here:
# [providers.platform]
# type = "mem0-platform"
# scope = { user_id = "alice" }      # or { user_id = "alice", app_id = "*" }: each app apart
# api_key_env = "MEM0_API_KEY"       # or api_key_file = "~/.config/memsync/mem0.key"
# latest_only = false                # true: skip what Dream superseded or merged (docs/dream.md)
"""
