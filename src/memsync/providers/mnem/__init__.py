"""mnem (Mnemosyne, version-controlled agent memory) as a provider: type ``mnem``.

``provider`` is the provider itself, built on ``handle`` (the one open Store, the SDK's errors
as memsync's; ``opening`` waits for a busy store and says who holds it; ``held`` the daemon's
stores, lent to its providers and the agents it serves); ``factory`` builds one from its
config entry; ``layouts`` says where a memory sits and what its content holds (LangGraph
items in the vocabulary of ``base/mnem_items``), ``convert`` maps nodes to records and back
through it; ``listing`` pages full and delta listings; ``batch`` makes one ``write_many`` one
commit, each op planned by ``batch_plan``; ``expiry`` forgets expired nodes with tombstone
commits; ``dates`` dates agents' nodes by the commits that added them; ``on_demand`` is a
store made on its first write; ``shared`` one store holding every scope, a namespace each.
"""
