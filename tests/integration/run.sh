#!/usr/bin/env bash
# `make integration`: start real Hindsight and Cognee servers offline, run the provider
# contract against them, stop them. Not part of `make test`. Servers that fail to start are
# reported, and their tests are skipped with the reason.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SERVERS="$ROOT/tests/integration/start_servers.sh"

bash "$SERVERS" install || { echo "[integration] installing the servers failed" >&2; exit 1; }
trap 'bash "$SERVERS" stop' EXIT
exports="$(bash "$SERVERS" start)" || echo "[integration] a server did not start; its tests will be skipped" >&2
eval "$exports"
export MEMSYNC_IT_HINDSIGHT_URL="${MEMSYNC_IT_HINDSIGHT_URL:-}"
export MEMSYNC_IT_COGNEE_URL="${MEMSYNC_IT_COGNEE_URL:-}"
.venv/bin/python -m pytest -v -rs -m integration tests/integration "$@"
