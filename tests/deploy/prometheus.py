"""A real Prometheus for the deploy tests: started on a free loopback port with its own config and data
directory, scraping `luckrate serve`; and the polls those tests make of it and of luckrate's verdict log."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

DEADLINE = 90.0
"""Seconds to wait for any one condition; generous for a loaded 2-core CI machine."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, probe: Callable[[], object], deadline: float = DEADLINE) -> object:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after the deadline."""
    end = time.monotonic() + deadline
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > end:
            pytest.fail(f"timed out after {deadline:.0f} s waiting for {what}")
        time.sleep(0.25)  # polling a live server, not a timing assumption


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_prometheus(tmp: Path, target_port: int, config: dict, *flags: str) -> Iterator[str]:
    """Prometheus (``config`` plus a job scraping luckrate at ``target_port``) on a free loopback port, with
    its data in ``tmp``: yields its URL once ready, stops it after."""
    job = {"job_name": "luckrate", "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({**config, "scrape_configs": [job]}))
    port = free_port()
    proc = subprocess.Popen(
        [
            "prometheus",
            *flags,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("Prometheus to become ready", lambda: get(f"{url}/-/ready") is not None or proc.poll() is not None)
        assert proc.poll() is None, (tmp / "prometheus.log").read_text()
        yield url
    finally:
        stop(proc)


def get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read()
    except OSError:
        return None


def tainted_traces(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [v["trace_id"] for v in lines if any(x["check"] == "taint" for x in v["violations"])]
