"""The daemon serves the mnem stores it syncs to the agents that use them, on a local socket.

A client (``memsync mcp``, ``memsync.langgraph.MnemosyneStore``) asks whether the daemon serves
its store (``serves``: a store of a configured mnem provider), then attaches to it: the daemon
leases the store's one handle from its held stores (``providers/held``), so its own
cycles use the same handle, and keeps it while a client is attached, and ``LINGER`` seconds
after the last one leaves. Each request then runs in the store's lane, ahead of
memsync's own calls: a write is the agent's commit, with the agent's author, summary and
provenance, answered only once mnem committed it, and its scope is handed to the live side
(``on_write``) so the change is synced at once, with no watching involved.

Stopping: no new connection is taken, each request in flight is answered, every connection is
closed, and the daemon lets go of the stores (``HeldStores.let_go_of_idle``) so the clients
take them back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import mnem

from memsync.base.errors import MemsyncError, ProviderBusy
from memsync.base.faults import fault_point
from memsync.base.paths import Paths, make_private_dir
from memsync.config import Config
from memsync.orchestration.serve import ops
from memsync.orchestration.serve.intents import Intents
from memsync.orchestration.serve.place import Place, place_of, store_root
from memsync.orchestration.serve.wire import (
    MAX_LINE,
    address,
    decode,
    encode,
    error_of,
    socket_path,
)
from memsync.providers.held import HeldStore, HeldStores
from memsync.providers.mnem.commits import note_served, now_ms, staged_entry
from memsync.providers.mnem.holder import process
from memsync.providers.mnem.in_flight import InFlight, store_identity, unstage_left_behind
from memsync.providers.mnem.opening import open_at
from memsync.providers.watched import Hint

log = logging.getLogger("memsync.serve")

LINGER = 5.0  # seconds a store stays held after its last client left (a client reconnecting)


class _Listener(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    block_on_close = False
    owner: StoreServer


class StoreServer:
    """The socket, the clients attached to it, and the stores they use."""

    def __init__(
        self,
        paths: Paths,
        config: Config,
        *,
        held: HeldStores,
        on_write: Callable[[Hint], None],
        linger: float = LINGER,
    ) -> None:
        self.paths = paths
        self.config = config
        self.held = held  # the daemon's: its cycles borrow the very stores served here
        self.on_write = on_write
        self.linger = linger
        self.path = socket_path(paths)
        self.intents = Intents(paths)
        self.closing = threading.Event()
        self._sessions: set[_Session] = set()
        self._lock = threading.Condition()
        self._listener: _Listener | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Listen on the socket (replacing one a dead daemon left) and serve in a thread."""
        make_private_dir(self.path.parent)
        self.path.unlink(missing_ok=True)  # the daemon lock is held: a socket here is stale
        with address(self.path) as where:
            listener = _Listener(where, _Handler, bind_and_activate=True)
        os.chmod(self.path, 0o600)
        listener.owner = self
        self._listener = listener
        self.held.on_open.append(self._recover)
        self._thread = threading.Thread(
            target=listener.serve_forever, kwargs={"poll_interval": 0.5}, name="serve"
        )
        self._thread.daemon = True
        self._thread.start()
        log.info("serving mnem stores to agents on %s", self.path)

    def reconfigure(self, config: Config) -> None:
        """A new config: stores it no longer syncs are not served to new clients."""
        self.config = config

    def close(self, grace: float) -> bool:
        """Stop taking clients, answer the requests in flight, close every connection; whether
        every connection was closed within GRACE seconds."""
        self.closing.set()
        if self._listener is not None:
            self._listener.shutdown()
            self._listener.server_close()
        self.path.unlink(missing_ok=True)
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.hang_up()
        deadline = time.monotonic() + grace
        with self._lock:
            done = self._lock.wait_for(
                lambda: not self._sessions, max(0.0, deadline - time.monotonic())
            )
        if self._recover in self.held.on_open:
            self.held.on_open.remove(self._recover)
        return done

    def _recover(self, store: HeldStore) -> None:
        """A store was opened in this process: unstage an agent's write a crash cut short, and
        memsync's own batch a kill cut short (so that no agent's commit sweeps it in)."""
        try:
            self.intents.recover(store, store.root)
            place = place_of(self.config, store.root)
            if place is not None:
                note = InFlight(store_identity(store.root, place.branch))
                unstage_left_behind(store, note, label=f"{place.label} ({store.root})")
        except Exception as exc:  # never the reason a store cannot be used
            log.warning("%s: could not check for an interrupted write (%s)", store.root, exc)

    def _joined(self, session: _Session) -> bool:
        with self._lock:
            if self.closing.is_set():
                return False
            self._sessions.add(session)
            return True

    def _left(self, session: _Session) -> None:
        with self._lock:
            self._sessions.discard(session)
            self._lock.notify_all()

    # requests ----------------------------------------------------------------------------------

    def serves(self, store: str) -> dict[str, Any]:
        """Whether the daemon serves the store at STORE (a path, as a client was given it)."""
        if self.closing.is_set():
            return {"served": False, "why": "the memsync daemon is stopping"}
        root = store_root(store)
        if root is None:
            return {"served": False, "why": f"no mnem store at {store}"}
        place = place_of(self.config, root)
        if place is None:
            return {"served": False, "why": f"memsync does not sync the mnem store at {root}"}
        return {"served": True, "root": str(root), "as": place.label}


class _Session:
    """One client's connection: the store it attached to, and whether a request is running."""

    def __init__(self, server: StoreServer, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.sock = sock
        self.peer = peer
        self.place: Place | None = None
        self.store: HeldStore | None = None
        self._lease = contextlib.ExitStack()  # gives the store back when the client leaves
        self.client = "a client"

    def hang_up(self) -> None:
        """No more requests: the one in flight is still answered."""
        with contextlib.suppress(OSError):  # closed already
            self.sock.shutdown(socket.SHUT_RD)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        args = request.get("args") or {}
        if not isinstance(op, str) or not isinstance(args, dict):
            return {"error": {"type": "ServeError", "message": "a request has an op and args"}}
        try:
            if op == "serves":
                return {"ok": self.server.serves(str(args.get("store", ".")))}
            if op == "attach":
                return {"ok": self.attach(str(args.get("store", ".")), str(args.get("client", "")))}
            return {"ok": self.run(op, args)}
        except Exception as exc:  # the client raises it as the same error
            return {"error": error_of(exc)}

    def attach(self, path: str, client: str) -> dict[str, Any]:
        """Hold the store at PATH for this client (opened here if nobody holds it yet)."""
        if self.store is not None:
            raise MemsyncError("this connection is attached to a store already")
        answer = self.server.serves(path)
        if not answer["served"]:
            raise MemsyncError(str(answer["why"]))
        root = Path(answer["root"])
        place = place_of(self.server.config, root)
        assert place is not None
        lease = self.server.held.lease(
            root,
            partial(open_at, mnem, root, name=place.provider, busy_timeout=place.busy_timeout),
            linger=self.server.linger,
        )
        try:
            self.store = self._lease.enter_context(lease)
        except ProviderBusy as exc:  # mnem's own client would fail to open it, as this one
            raise mnem.StoreIoError(str(exc)) from None
        self.place, self.client = place, client or self.client
        log.info("serving %s (%s) to %s", place.label, root, self.peer)
        return {"root": str(root), "as": place.label}

    def run(self, op: str, args: dict[str, Any]) -> Any:
        """One operation on the attached store, in its lane ahead of memsync's own calls."""
        store, place = self.store, self.place
        if store is None or place is None:
            raise MemsyncError("attach to a store first")
        writes = op in ops.WRITES
        with store.lane.held(agent=True):
            if not writes:
                return ops.run(store, op, args)
            staged = ops.staged_by(op, args)
            if staged:
                self.server.intents.begin(place.root, staged)
            fault_point("serve:received")
            try:
                answer = ops.run(_CommitPoint(store) if staged else store, op, args)
            except BaseException:
                if staged:  # leave staging as it was: nothing half-written stays behind
                    _unstage(store, staged)
                    self.server.intents.end(place.root)
                raise
            if staged:
                self.server.intents.end(place.root)
            fault_point("serve:committed")
        for hint in place.hints_for(staged):
            self.server.on_write(hint)
        return answer

    def close(self) -> None:
        if self.store is not None:
            self.store = None
            self._lease.close()  # given back; let go LINGER seconds after the last client
            log.debug("%s detached from %s", self.peer, self.place.label if self.place else "-")


class _Handler(socketserver.StreamRequestHandler):
    server: _Listener

    def handle(self) -> None:
        owner = self.server.owner
        peer = _peer(self.connection)
        if peer is None:
            return  # another user's process: not served
        session = _Session(owner, self.connection, peer)
        if not owner._joined(session):
            return
        try:
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return
                try:
                    request = decode(line)
                except ValueError as exc:
                    self._send({"error": {"type": "ServeError", "message": f"bad request: {exc}"}})
                    return
                self._send(session.answer(request))
        except OSError:
            return  # the client went away mid-answer
        finally:
            session.close()
            owner._left(session)

    def _send(self, message: dict[str, Any]) -> None:
        try:
            data = encode(message)
        except (TypeError, ValueError) as exc:
            data = encode({"error": error_of(exc)})
        self.wfile.write(data)
        self.wfile.flush()


def _peer(sock: socket.socket) -> str | None:
    """'pid 4242 (python app.py)' for a peer running as this user; None for anyone else."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
    except OSError:
        return "a client"
    if uid != os.getuid():
        log.warning("refused a connection from uid %d (pid %d): not this user", uid, pid)
        return None
    return process(pid).describe()


class _CommitPoint:
    """The store as a write sees it, with the crash tests' fault point between its staged
    changes and their commit (``serve:staged``); each commit it makes is noted on the held
    store with its time and what it wrote, so the daemon's cycle dates the agent's versions
    without reading the commit back from mnem (``providers/mnem/commits``)."""

    def __init__(self, store: HeldStore) -> None:
        self._shared = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shared, name)

    def commit(self, message: str, **kwargs: Any) -> Any:
        fault_point("serve:staged")
        if kwargs.get("time_ms") is None:
            kwargs["time_ms"] = now_ms()  # the SDK's own default, taken here to be known
        time_ms = int(kwargs["time_ms"])
        written = staged_entry(self._shared, "", time_ms)
        commit = self._shared.commit(message, **kwargs)
        note_served(self._shared, [replace(written, commit=str(commit))])
        return commit


def _unstage(store: Any, nodes: list[str]) -> None:
    for node_id in nodes:
        try:
            store.unstage(node_id)
        except Exception as exc:  # the note stays: the next open unstages it
            log.warning("could not unstage %r after a failed write: %s", node_id, exc)


__all__ = ["LINGER", "StoreServer"]
