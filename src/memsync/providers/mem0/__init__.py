"""Mem0 as a provider family: the library in-process, the self-hosted server, the hosted platform.

``oss`` (type ``mem0-oss``), ``server`` (``mem0-server``) and ``platform`` (``mem0-platform``)
are the three provider types; ``convert`` maps Mem0's memory shape to memsync's Record and
back for all three, ``paging`` makes ``get_all``'s capped listings complete, ``http`` holds
what the two HTTP types share, and ``embed_ahead``/``hash_embedder`` serve the library type.
"""
