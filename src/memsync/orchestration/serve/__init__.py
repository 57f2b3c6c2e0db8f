"""memsync serves the mnem stores it syncs to the agents that use them (issue 31).

mnem allows one open handle per store, and mnem's clients for agents (``mnem-mcp``,
``mnem-langgraph``) keep theirs for as long as they run, which locks memsync out. memsync's own
clients (``memsync mcp``, ``memsync.langgraph.MnemosyneStore``) offer the same tools and API but
go through the daemon when it runs (``server``): the daemon holds the store's one handle, makes
each agent write a commit of the agent's own, answers once mnem committed it, and syncs it at
once. When no daemon runs, the client opens the store itself as mnem's clients do, and the two
hand the store over when the daemon starts or stops (``client``).

- ``ops``: the operations, by name, on an open Store (in the daemon or in the client alike);
- ``portable``: ``memory_export`` / ``memory_import`` on memsync's PMM codec and import;
- ``wire``: the local socket (owner-only) and its JSON-lines messages;
- ``place``: which configured provider and scope a store is;
- ``intents``: an agent's write the daemon was making when it died is never half-staged;
- ``server``: the daemon's side; ``client``: the agent's side; ``mcp``: ``memsync mcp``.
"""
