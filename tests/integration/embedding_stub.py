"""A tiny OpenAI-compatible embeddings server, so Hindsight and Cognee run with no network.

``POST /v1/embeddings`` answers deterministic vectors (a hash of the text, normalised), so
equal texts embed equally and the servers' own dedup/search code runs unchanged. Standard
library only: it runs under any of the integration venvs.

    python embedding_stub.py --port 18090 --dims 384
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def embed(text: str, dims: int) -> list[float]:
    values: list[float] = []
    counter = 0
    while len(values) < dims:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(b / 255.0 - 0.5 for b in digest)
        counter += 1
    vector = values[:dims]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def make_handler(dims: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
            else:
                self._send(200, {"status": "ok"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "body is not JSON"}})
                return
            if not self.path.rstrip("/").endswith("/embeddings"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            texts = request.get("input", [])
            if isinstance(texts, str):
                texts = [texts]
            size = int(request.get("dimensions") or dims)
            data = [
                {"object": "embedding", "index": i, "embedding": embed(str(t), size)}
                for i, t in enumerate(texts)
            ]
            tokens = sum(len(str(t).split()) for t in texts)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": request.get("model", "stub"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18090)
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.dims))
    server.serve_forever()


if __name__ == "__main__":
    main()
