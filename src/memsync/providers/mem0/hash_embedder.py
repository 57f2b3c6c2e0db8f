"""``embedder = "hash"``: a deterministic, offline embedder for Mem0, so memsync can write
without an embedding API.

UNFIT FOR SEMANTIC SEARCH. It hashes word tokens into a fixed number of signed buckets
(feature hashing): texts sharing words land near each other, synonyms and paraphrases do not.
Use it for backups, sync between stores, demos and tests — never for a store an application
searches by meaning, whose vectors must come from the application's own embedding model.

Importing this module imports mem0 (it subclasses ``EmbeddingBase``); the mem0-oss provider
imports it only after switching Mem0's telemetry off.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from mem0.embeddings.base import EmbeddingBase

_TOKEN = re.compile(r"\w+")


class HashEmbedder(EmbeddingBase):  # type: ignore[misc]  # mem0 ships no type information
    """Feature hashing of lower-cased word tokens into ``dims`` signed buckets, L2-normalised.

    The same text always gives the same vector, in every process and on every machine. Unfit
    for semantic search (see the module docstring).
    """

    def __init__(self, dims: int) -> None:
        if dims < 1:
            raise ValueError("dims must be at least 1")
        super().__init__(None)
        self.dims = dims

    def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
        vector = [0.0] * self.dims
        for token in _TOKEN.findall(str(text or "").lower()):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dims
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:  # no tokens, or they cancelled out: any fixed unit vector will do
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]
