"""Mem0 as a provider family: the library in-process, the self-hosted server, the hosted platform.

- ``oss`` (type ``mem0-oss``), with ``oss_memory`` (the open Memory), ``oss_config`` (the
  offline config it runs with) and ``oss_files`` (its local store, watched by the daemon);
  ``embed_ahead`` and ``hash_embedder`` serve it too.
- ``server`` (type ``mem0-server``), with ``server_features`` (what the server supports),
  ``server_session`` (learnt once a cycle for every scope), ``server_listing`` and
  ``server_search`` (a scope whole, past the 1,000 cap), ``server_entities`` (the one reader
  of ``GET /entities``), ``server_discovery`` (the scopes it holds), ``server_probes`` (which
  of them changed) and ``server_tokens`` (bearer tokens renewed through /auth/refresh).
- ``platform`` (type ``mem0-platform``), with ``platform_listing`` and ``platform_scopes``
  (the scopes it holds, and which of them changed).
- Shared by all three: ``convert`` (Mem0's memory shape <-> memsync's Record) and ``paging``
  (complete listings from ``get_all``'s capped ``top_k``); by the two HTTP types: ``http``.
"""
