"""The unit tier's promise, enforced: a test marked ``unit`` opens no network socket and starts no process.

While a unit test is set up, run and torn down, listening on or connecting a socket (or sending a
datagram), starting a subprocess, forking, exec'ing, starting a ``multiprocessing`` process, or starting a
gRPC server or channel fails it, naming the test and what it did. In-process ``socket.socketpair()`` is
allowed: it neither listens nor connects (asyncio's event loop makes one to wake itself). So is a bind
alone, which serves no one: urllib3 binds ``('::1', 0)`` on import to probe for IPv6.

What is watched: the interpreter's audit events (``sys.addaudithook``: ``socket.connect``, ``sendto``,
``subprocess``, ``os.fork`` and the ``exec``/``spawn`` family), plus what raises none (``socket.listen``,
``multiprocessing``'s spawn and forkserver starts, gRPC's C core). Only the test's own thread and the
threads it starts are watched: a server thread an earlier test of another tier left behind is not the unit
test's doing.

The violation is raised where it happens and, in case the code under test swallows it, reported again
when the phase ends. ``tests/conftest.py`` loads this plugin for every run; ``tests/test_unit_guard.py``
plants violations to prove it.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

WATCHED = {
    "socket.connect": "connected a socket to {1!r}",
    "socket.sendto": "sent a datagram to {2!r}",
    "subprocess.Popen": "started a subprocess {1!r}",
    "os.system": "ran a shell command {0!r}",
    "os.exec": "exec'd {0!r}",
    "os.posix_spawn": "spawned a process {0!r}",
    "os.spawn": "spawned a process {1!r}",
    "os.fork": "forked the test process",
    "os.forkpty": "forked the test process",
}
"""Audit event -> what the test did, formatted with the event's arguments."""


class UnitTierViolation(Exception):
    """A unit test opened a socket or started a process."""


@dataclass(eq=False)
class Running:
    """A test in one of its phases: its thread, and what it did. Tests of the other tiers are tracked
    unguarded, so that one pytester runs inside a unit test is not taken for that unit test."""

    nodeid: str
    guarded: bool
    thread: int = field(default_factory=threading.get_ident)
    violations: list[str] = field(default_factory=list)


_RUNNING: list[Running] = []
"""The tests running now, innermost last (pytester runs a session inside a test)."""
_HOOKED: list[bool] = []
"""Whether this process has the audit hook yet (one per process: audit hooks cannot be removed)."""
_OWNER = "_unit_guard_owner"
"""The attribute naming, on a thread a test started, the ``Running`` it belongs to."""


def _owner() -> Running | None:
    """The running test this thread belongs to: the innermost one running on it, else the one that
    started it (if that one is still running)."""
    me = threading.get_ident()
    running = next((r for r in reversed(_RUNNING) if r.thread == me), None)
    if running is None:
        running = getattr(threading.current_thread(), _OWNER, None)
    return running if any(r is running for r in _RUNNING) else None


def _violation(what: str) -> None:
    running = _owner()
    if running is None or not running.guarded:
        return
    message = (
        f"{running.nodeid}: a unit test {what}. The unit tier opens no sockets and starts no processes; "
        "give the test a server tier (tests/conftest.py: TIERS, or @pytest.mark.e2e on the test)."
    )
    running.violations.append(message)
    raise UnitTierViolation(message)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in WATCHED and _RUNNING:
        _violation(WATCHED[event].format(*args))


def _patched(owner: Any, name: str, what: Callable[..., str]) -> Callable[..., Any]:
    original = getattr(owner, name)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        _violation(what(*args, **kwargs))
        return original(*args, **kwargs)

    return guarded


def _no_audit_event() -> list[tuple[Any, str, Callable[..., str]]]:
    """(owner, attribute, what the test did, from the call's arguments) for the starts the interpreter raises
    no audit event for."""
    import multiprocessing.process

    import grpc  # a runtime dependency; imported once, at the first unit test

    return [
        (socket.socket, "listen", lambda sock, *_: f"listened on a socket at {sock.getsockname()!r}"),
        (multiprocessing.process.BaseProcess, "start", lambda *_: "started a multiprocessing process"),
        (grpc, "server", lambda *_, **__: "started a gRPC server"),
        (grpc, "insecure_channel", lambda target, *_, **__: f"opened a gRPC channel to {target!r}"),
        (grpc, "secure_channel", lambda target, *_, **__: f"opened a gRPC channel to {target!r}"),
    ]


@contextlib.contextmanager
def watching(nodeid: str, guarded: bool = True) -> Iterator[None]:
    """Fail ``nodeid`` if, inside this block, it (or a thread it starts) opens a socket or starts a process;
    unguarded, only mark the block as another test's."""
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED.append(True)
    running = Running(nodeid, guarded)
    start_thread = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        setattr(thread, _OWNER, _owner())  # before it starts: its first act may be the violation
        start_thread(thread)

    patches: list[tuple[Any, str, Any]] = []
    if guarded:
        patches.append((threading.Thread, "start", start))
        patches += [(owner, name, _patched(owner, name, what)) for owner, name, what in _no_audit_event()]
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]  # None: inherited
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    _RUNNING.append(running)
    try:
        yield
    finally:
        _RUNNING.remove(running)
        for owner, name, original in reversed(saved):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
    if running.violations:  # the code under test caught the exception: the test still fails
        pytest.fail("\n".join(running.violations), pytrace=False)


def _phase(item: pytest.Item) -> contextlib.AbstractContextManager[None]:
    return watching(item.nodeid, guarded=item.get_closest_marker("unit") is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _phase(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _phase(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with _phase(item):
        return (yield)
