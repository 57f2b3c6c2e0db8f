#!/usr/bin/env bash
# `make integration`: start real Hindsight and Cognee servers offline, run the provider
# contract against them, stop them. Not part of `make test` (`.ci/run` runs it after).
# A server that cannot be installed or started is reported LOUDLY and its tests skip with
# the reason (MEMSYNC_IT_<SERVER>_SKIP); the tests against a server that started must pass.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SERVERS="$ROOT/tests/integration/start_servers.sh"
IT="${MEMSYNC_IT_DIR:-$ROOT/.integration}"

loud() {
    printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
    printf '!!! [integration] %s\n' "$*" >&2
    printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
}

trap 'bash "$SERVERS" stop' EXIT
for server in hindsight cognee; do
    upper=$(echo "$server" | tr '[:lower:]' '[:upper:]')
    unset "MEMSYNC_IT_${upper}_URL" "MEMSYNC_IT_${upper}_SKIP"
    if ! bash "$SERVERS" "install-$server"; then
        reason="installing the $server server failed (pip; see the output above)"
    elif ! exports="$(bash "$SERVERS" "$server")"; then
        reason="the $server server did not start (see $IT/logs/$server.log)"
    else
        eval "$exports"
        continue
    fi
    loud "$reason: its tests will be SKIPPED"
    export "MEMSYNC_IT_${upper}_SKIP=$reason"
done
.venv/bin/python -m pytest -v -rs -m integration tests/integration "$@"
