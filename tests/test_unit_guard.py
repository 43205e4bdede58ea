"""The unit tier's guard (tests/unit_guard.py), proven on planted tests run by pytester in this process: each
way of opening a socket or starting a process fails the unit test that does it, naming the test and what it
did; in-process socket pairs, an event loop, and the same code in a test of another tier pass."""

from __future__ import annotations


PLANTED = """
import asyncio
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

pytestmark = pytest.mark.unit


def test_listens():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()


def test_connects():
    socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_runs_a_subprocess():
    subprocess.run([sys.executable, "-c", "pass"])


def test_runs_a_shell_command():
    os.system("true")


def test_starts_a_multiprocessing_process():
    multiprocessing.get_context("spawn").Process(target=print).start()


def test_starts_a_grpc_server():
    grpc.server(ThreadPoolExecutor(1))


def test_opens_a_grpc_channel():
    grpc.insecure_channel("127.0.0.1:9").close()


def test_swallows_what_it_did():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except Exception:
        pass


def test_connects_in_a_thread_it_starts():
    t = threading.Thread(target=lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
    t.start()
    t.join()


@pytest.fixture
def server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s
    s.close()


def test_uses_a_fixture_that_listens(server):
    pass


def test_socketpair_an_event_loop_and_a_bind_alone_are_in_process():
    socket.socket(socket.AF_INET6).bind(("::1", 0))
    a, b = socket.socketpair()
    a.sendall(b"x")
    assert b.recv(1) == b"x"
    asyncio.run(asyncio.sleep(0))
"""

OTHER_TIER = """
import socket

import pytest


@pytest.mark.e2e
def test_another_tier_may_listen():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
"""

CAUGHT = [
    # (planted test, what the failure says it did)
    ("test_listens", "listened on a socket at ('127.0.0.1', "),
    ("test_connects", "connected a socket to ('127.0.0.1', 9)"),
    ("test_runs_a_subprocess", "started a subprocess ["),
    ("test_runs_a_shell_command", "ran a shell command b'true'"),
    ("test_starts_a_multiprocessing_process", "started a multiprocessing process"),
    ("test_starts_a_grpc_server", "started a gRPC server"),
    ("test_opens_a_grpc_channel", "opened a gRPC channel to '127.0.0.1:9'"),
    ("test_swallows_what_it_did", "connected a socket to ('127.0.0.1', 9)"),
    ("test_connects_in_a_thread_it_starts", "connected a socket to ('127.0.0.1', 9)"),
    ("test_uses_a_fixture_that_listens", "listened on a socket at ('127.0.0.1', "),
]


def test_each_planted_violation_fails_naming_the_test_and_what_it_did(pytester):
    pytester.makeini("[pytest]\nmarkers =\n    unit: planted\n    e2e: planted\n")
    pytester.makepyfile(test_planted=PLANTED, test_other_tier=OTHER_TIER)
    result = pytester.runpytest("-p", "tests.unit_guard", "-p", "no:cacheprovider", "-rfE")
    result.assert_outcomes(passed=2, failed=len(CAUGHT) - 1, errors=1)
    out = result.stdout.str()
    for test, what in CAUGHT:
        assert f"test_planted.py::{test}: a unit test {what}" in out
    assert "test_socketpair_an_event_loop_and_a_bind_alone_are_in_process:" not in out
    assert "test_another_tier_may_listen:" not in out
