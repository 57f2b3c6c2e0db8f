"""An agent's mnem store: through the memsync daemon when it serves the store, else opened here
as mnem's own clients open it, and handed over between the two as the daemon comes and goes.

- **Daemon running** (its socket answers, and the store is one memsync syncs): every operation
  is a request; the daemon holds the store, so memsync's cycles are never locked out.
- **No daemon** (stopped, starting, upgrading, or not installed): the store is opened here and
  kept, exactly as ``mnem-mcp`` and ``mnem-langgraph`` keep theirs. Opening waits a few
  seconds while someone else holds the store (a cycle of a daemon still starting), where
  mnem's clients fail at once.
- **The daemon starts** while the store is held here: a watcher thread notices the socket
  within ``HANDOVER_CHECK`` seconds, asks the daemon whether it serves the store, lets go of
  the handle and attaches (the daemon takes the handle once it is free).
- **The daemon stops**: it answers the requests in flight and hangs up; the next operation
  finds the connection closed before sending anything and takes the store back here.
- **The daemon dies mid-request**: a read is asked again, wherever the store is now; a write
  raises ``WriteUnconfirmed``, never a silent loss: it may or may not have been committed.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import os
import select
import socket
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import mnem

from memsync.base.errors import MemsyncError
from memsync.base.lock import daemon_lock, is_locked, read_daemon_info
from memsync.base.mnem_lock import held_elsewhere
from memsync.base.paths import Paths, resolve_paths
from memsync.config import load_config
from memsync.orchestration.serve import ops
from memsync.orchestration.serve.intents import Intents
from memsync.orchestration.serve.place import place_of, store_root
from memsync.orchestration.serve.wire import (
    MAX_LINE,
    ServeError,
    connect,
    decode,
    encode,
    exception_from,
)
from memsync.orchestration.serve.wire import socket_path as daemon_socket
from memsync.providers.mnem.holder import store_holder

HANDOVER_CHECK = 1.0  # seconds between looks for a daemon that started
ASK_AGAIN = 30.0  # a daemon that does not serve this store is asked again after this long
TAKE_BACK_WAIT = 10.0  # how long opening waits while another holds the store
ASK_LIVE_DAEMON = 10.0  # how long a live daemon that did not answer is asked again
ASK_HOLDER = 0.25  # while the daemon holds the store, it is asked again this often
REPLY_TIMEOUT = 120.0  # the longest the daemon may take to answer one request


class WriteUnconfirmed(mnem.StoreIoError):
    """The daemon went away between receiving a write and answering it: the write may or may
    not be in the store (read it back before writing it again)."""


class StoreClient:
    """One mnem store for an agent's process, wherever it is held (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, client: str, paths: Paths | None = None):
        self.path = os.fspath(path)
        self.client = client
        self.paths = paths if paths is not None else resolve_paths()
        self.socket = daemon_socket(self.paths)
        self._lock = threading.RLock()
        self._conn: socket.socket | None = None
        self._reader: Any = None
        self._store: Any = None  # the Store, when held here
        self._asked: tuple[int, int] | None = None  # a socket that said "not served"
        self._asked_at = 0.0
        self._closed = False
        with self._lock:
            self._connect_or_open()
        watcher = threading.Thread(
            target=_watch, args=(weakref.ref(self),), name="memsync-handover", daemon=True
        )
        watcher.start()

    # where the store is ------------------------------------------------------------------------

    @property
    def via_daemon(self) -> bool:
        """Whether the daemon holds the store for this client right now."""
        return self._conn is not None

    def _connect_or_open(self) -> None:
        """Through the daemon when it serves the store; a live daemon that could not be
        reached (busy accepting a burst of agents, or answering slowly) is asked again before
        the store is opened here, for ASK_LIVE_DAEMON seconds."""
        before = self._socket_identity()
        deadline = time.monotonic() + ASK_LIVE_DAEMON
        pause = 0.05
        while True:
            reached = self._through_daemon()
            if reached is _Reached.SERVED:
                return
            if reached is _Reached.NOT_SERVED or not self.socket.exists():
                break  # the daemon said no, or there is no socket: nothing to ask again
            if not self._daemon_alive():
                break  # a socket a dead daemon left
            if time.monotonic() + pause > deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
        self._open_here(before)

    def _through_daemon(self) -> _Reached:
        """Attach to the daemon if it serves this store (letting go of a handle held here
        first): SERVED now, NOT_SERVED (the daemon said so), or UNREACHED."""
        if not self.socket.exists():
            return _Reached.UNREACHED
        try:
            conn = connect(self.socket, REPLY_TIMEOUT)
        except OSError:
            return _Reached.UNREACHED  # a socket a dead daemon left, or a backlog still full
        reader = conn.makefile("rb")
        try:
            answer = _ask(conn, reader, "serves", {"store": self.path})
            if not answer.get("served"):
                identity = self._socket_identity()
                self._asked, self._asked_at = identity, time.monotonic()
                raise _NotServed
            self._let_go_here()
            _ask(conn, reader, "attach", {"store": self.path, "client": self.client})
        except _NotServed:
            reader.close()
            conn.close()
            return _Reached.NOT_SERVED
        except (OSError, ValueError, mnem.MnemError, ServeError):
            reader.close()
            conn.close()
            return _Reached.UNREACHED
        self._conn, self._reader = conn, reader
        return _Reached.SERVED

    def _daemon_alive(self) -> bool:
        """Whether a memsync daemon runs for these paths (it holds its lock)."""
        return is_locked(daemon_lock(self.paths).path)

    def _open_here(self, socket_seen: tuple[int, int] | None) -> None:
        """Open the store in this process, waiting while someone else holds it; a daemon that
        starts meanwhile (a socket other than SOCKET_SEEN) is asked to serve it instead. A
        lock the daemon holds is never waited on: the daemon is asked again instead."""
        deadline = time.monotonic() + TAKE_BACK_WAIT
        asked_at = time.monotonic()
        while True:
            try:
                self._store = mnem.open(self.path)
                break
            except mnem.MnemError as exc:  # mnem's own error, as mnem's clients raise it
                locked = held_elsewhere(exc, mnem.StoreIoError)
                if not locked or time.monotonic() > deadline:
                    raise _bare(exc) from None
            time.sleep(0.05)
            now = self._socket_identity()
            changed = now is not None and now != socket_seen
            held_by_daemon = now is not None and self._held_by_daemon()
            if changed or (held_by_daemon and time.monotonic() - asked_at >= ASK_HOLDER):
                socket_seen, asked_at = now, time.monotonic()
                if self._through_daemon() is _Reached.SERVED:
                    return
        Intents(self.paths).recover(self._store, Path(self._store.root).resolve())

    def _held_by_daemon(self) -> bool:
        """Whether the process holding the store's lock is the running memsync daemon."""
        root = store_root(self.path)
        holder = None if root is None else store_holder(root)
        if holder is None:
            return False
        info = read_daemon_info(self.paths)
        return bool(info.get("running")) and info.get("pid") == holder.pid

    def _let_go_here(self) -> None:
        if self._store is not None:
            self._store = None
            gc.collect()  # mnem lets go of its lock when the handle is collected

    def _hang_up(self) -> None:
        reader, conn, self._reader, self._conn = self._reader, self._conn, None, None
        with contextlib.suppress(OSError):
            if reader is not None:
                reader.close()
            if conn is not None:
                conn.close()

    def _socket_identity(self) -> tuple[int, int] | None:
        try:
            info = self.socket.stat()
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns

    def look_for_daemon(self) -> None:
        """Hand the store over to a daemon that started since it was opened here."""
        if self._settled():
            return
        identity = self._socket_identity()
        if identity is None:
            return
        if identity == self._asked and time.monotonic() - self._asked_at < ASK_AGAIN:
            return
        with self._lock:
            if self._settled():
                return
            had_it = self._store is not None
            reached = self._through_daemon()
            if reached is not _Reached.SERVED and had_it and self._store is None:
                self._open_here(identity)  # let go for a daemon that then could not take it

    def _settled(self) -> bool:
        """Nothing to hand over: closed, or the daemon holds the store already."""
        return self._closed or self._conn is not None

    def place_args(self) -> dict[str, str]:
        """The provider name and PMM scope key memsync knows this store by (its config), for
        the PMM tools: an export names the scope as a backup of it would."""
        root = store_root(self.path)
        if root is None:
            return {}
        try:
            place = place_of(load_config(self.paths.config_file), root)
        except MemsyncError:
            place = None
        if place is None:
            return {"scope_key": root.name}
        return {"name": place.provider, "scope_key": place.scope_key}

    # operations --------------------------------------------------------------------------------

    def call(self, op: str, **args: Any) -> Any:
        """Operation OP (``serve.ops``) with ARGS, wherever the store is held; its answer."""
        with self._lock:
            if self._closed:
                raise mnem.StoreIoError(f"the store client for {self.path} was closed")
            if self._conn is not None and _hung_up(self._conn):
                self._hang_up()  # the daemon stopped between requests: nothing was sent
            if self._conn is None and self._store is None:
                self._connect_or_open()
            if self._conn is not None:
                return self._remote(op, args)
            return self._local(op, args)

    def _remote(self, op: str, args: dict[str, Any]) -> Any:
        data = encode({"op": op, "args": args})  # TypeError here, before anything is sent
        assert self._conn is not None
        try:
            self._conn.sendall(data)
            line = self._reader.readline(MAX_LINE)
        except OSError:
            line = b""
        if not line:
            self._hang_up()
            if op in ops.WRITES:
                raise WriteUnconfirmed(
                    f"the memsync daemon went away before confirming {op} on {self.path}: "
                    "it may or may not be in the store; read it back before writing it again"
                )
            self._connect_or_open()  # a read: asked again, wherever the store is now
            return self._remote(op, args) if self._conn is not None else self._local(op, args)
        answer = decode(line)
        if "error" in answer:
            raise exception_from(answer["error"])
        return answer.get("ok")

    def _local(self, op: str, args: dict[str, Any]) -> Any:
        try:
            return ops.run(self._store, op, args)
        except Exception as exc:
            raise _bare(exc) from None

    def close(self) -> None:
        """Let go of the store: the daemon's (it keeps it a moment for a reconnect) or ours."""
        with self._lock:
            self._closed = True
            self._hang_up()
            self._let_go_here()

    def __enter__(self) -> StoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _NotServed(Exception):
    pass


class _Reached(enum.Enum):
    """What asking the daemon to serve the store came to."""

    SERVED = "served"
    NOT_SERVED = "not served"  # the daemon answered: not a store it syncs, or it is stopping
    UNREACHED = "unreached"  # no daemon listening, or it did not answer


def _ask(conn: socket.socket, reader: Any, op: str, args: dict[str, Any]) -> dict[str, Any]:
    conn.sendall(encode({"op": op, "args": args}))
    line = reader.readline(MAX_LINE)
    if not line:
        raise OSError("the memsync daemon hung up")
    answer = decode(line)
    if "error" in answer:
        raise exception_from(answer["error"])
    result = answer.get("ok")
    return result if isinstance(result, dict) else {}


def _hung_up(conn: socket.socket) -> bool:
    """Whether the daemon closed the connection (checked without waiting)."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        if not readable:
            return False
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (OSError, ValueError):
        return True


def _bare(exc: BaseException) -> BaseException:
    """EXC without its traceback: a caller that keeps it must not keep the Store alive (and
    mnem's lock with it) after this client lets go of it."""
    exc.__context__ = None
    exc.__cause__ = None
    return exc.with_traceback(None)


def _watch(ref: weakref.ReferenceType[StoreClient]) -> None:
    """Every HANDOVER_CHECK seconds, while the client lives: a daemon that started?"""
    while True:
        time.sleep(HANDOVER_CHECK)
        client = ref()
        if client is None or client._closed:
            return
        with contextlib.suppress(Exception):  # a look that failed is taken again next time
            client.look_for_daemon()
        del client
