"""Mem0 as a provider family: the library in-process, the self-hosted server, the hosted platform.

- ``oss`` (type ``mem0-oss``), with ``oss_memory`` (the open Memory) and ``oss_config`` (the
  offline config it runs with); ``embed_ahead`` and ``hash_embedder`` serve it too.
- ``server`` (type ``mem0-server``), with ``server_features`` and ``server_listing``.
- ``platform`` (type ``mem0-platform``), with ``platform_listing``.
- Shared by all three: ``convert`` (Mem0's memory shape <-> memsync's Record) and ``paging``
  (complete listings from ``get_all``'s capped ``top_k``); by the two HTTP types: ``http``.
"""
