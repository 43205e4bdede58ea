"""Processes and readings for the benchmarks: start a receiver pinned to a core, run the load generator,
scrape ``/metrics``, read RSS from ``/proc``, and take quantiles from a Prometheus histogram.

Every server is a real subprocess; the benchmark process itself only orchestrates and reads.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEC = ROOT / "examples" / "spec.py"
START_TIMEOUT = 60.0
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(HERE)])}


def _pinned(cpus: set[int] | None):
    """preexec_fn: pin before exec, so every thread the server starts inherits the affinity."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


class Proc:
    """A subprocess that prints a line containing ``ready_word`` once it listens."""

    def __init__(self, cmd: list[str], ready_word: str, cpus: set[int] | None = None):
        self.cmd = cmd
        # stderr to a file, not a pipe: a chatty server must never block on a full pipe mid-measurement.
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=_env(), cwd=ROOT, preexec_fn=_pinned(cpus)
        )
        self.ready_line = self._wait_line(ready_word)

    def _wait_line(self, word: str) -> str:
        end = time.monotonic() + START_TIMEOUT
        for line in self.proc.stdout:
            if word in line:
                return line
            if time.monotonic() > end:
                break
        self.kill()
        raise RuntimeError(f"{' '.join(self.cmd[:4])}... never printed {word!r}: {self.errors()}")

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-2000:]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 60.0) -> str:
        """SIGTERM, wait, and return what it printed after its ready line."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            out = ""
        return out or ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def null_receiver(transport: str, cpus: set[int] | None) -> tuple[Proc, str]:
    p = Proc([sys.executable, str(HERE / "null_receiver.py"), "--transport", transport], "listening", cpus)
    return p, f"127.0.0.1:{int(p.ready_line.split()[1])}"


@dataclass
class Serve:
    """``luckrate serve`` on free loopback ports."""

    flags: tuple[str, ...] = ()
    cpus: set[int] | None = None
    proc: Proc = field(init=False)
    ports: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "luckrate.service",
            "--spec",
            str(SPEC),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--prometheus",
            "127.0.0.1:0",
            "--viewer",
            "127.0.0.1:0",
            "--log-level",
            "WARNING",
            *self.flags,
        ]
        self.proc = Proc(cmd, "listening", self.cpus)
        words = self.proc.ready_line.split()
        # "luckrate serve: listening grpc H:P http H:P prometheus H:P viewer H:P runs-by=MODE" (the last word is no pair)
        self.ports = {words[i]: int(words[i + 1].rsplit(":", 1)[1]) for i in range(3, len(words) - 1, 2)}

    def target(self, transport: str) -> str:
        return f"127.0.0.1:{self.ports[transport]}"

    def scrape(self) -> dict[tuple[str, tuple], float]:
        url = f"http://127.0.0.1:{self.ports['prometheus']}/metrics"
        with urllib.request.urlopen(url, timeout=30) as r:
            return parse_metrics(r.read().decode())

    def rss(self) -> int:
        return proc_status(self.proc.pid, "VmRSS")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the server and its grading processes (``--workers``)."""
        pids = [self.proc.pid] + children(self.proc.pid)
        return sum(_cpu(pid) for pid in pids)

    def peak_rss(self) -> int:
        return proc_status(self.proc.pid, "VmHWM")

    def stop(self) -> None:
        self.proc.stop()


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0  # exited between listing and reading
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` memory line (``VmRSS``, ``VmHWM``) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def parse_metrics(text: str) -> dict[tuple[str, tuple], float]:
    """Prometheus text format → {(name, sorted label pairs): value} (enough for our own endpoint)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(samples: dict, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def buckets(samples: dict, name: str) -> dict[float, float]:
    """Cumulative histogram buckets {upper bound: count} summed over label sets."""
    out: dict[float, float] = {}
    for (n, ls), v in samples.items():
        if n == name + "_bucket":
            le = float(dict(ls)["le"])
            out[le] = out.get(le, 0.0) + v
    return out


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float | None:
    """``histogram_quantile`` over the increase between two scrapes (linear within a bucket)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return None
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, cum in zip(bounds, counts):
        if cum >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * ((rank - below) / (cum - below) if cum > below else 1.0)
        lower, below = bound, cum
    return None


class Load:
    """The load generator as a subprocess (its own interpreter, its own core)."""

    def __init__(
        self,
        transport: str,
        targets: list[str],
        *,
        duration: float,
        concurrency: int = 4,
        rate: float = 0.0,
        requests: int = 0,
        tools_only: bool = False,
        cpus: set[int] | None = None,
        chunked: bool = False,
    ):
        cmd = [
            sys.executable,
            str(HERE / "loadgen.py"),
            "--transport",
            transport,
            "--duration",
            str(duration),
            "--concurrency",
            str(concurrency),
            "--rate",
            str(rate),
            "--requests",
            str(requests),
        ]
        for t in targets:
            cmd += ["--target", t]
        if tools_only:
            cmd.append("--tools-only")
        if chunked:
            cmd.append("--chunked")
        self.proc = Proc(cmd, "started", cpus)

    def result(self, timeout: float = 300.0) -> dict:
        try:
            out, _ = self.proc.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"load generator printed no result: {self.proc.errors()}")
        return json.loads(lines[-1])

    def stop(self) -> dict:
        if self.proc.proc.poll() is None:
            self.proc.proc.send_signal(signal.SIGTERM)
        return self.result()


def rate_between(timeline: list[list[float]], t0: float, t1: float) -> float:
    """Spans/s acknowledged between two monotonic instants, from the load generator's timeline."""

    def at(t: float) -> float:
        last = timeline[0][1]
        for ts, n in timeline:
            if ts > t:
                break
            last = n
        return last

    return (at(t1) - at(t0)) / (t1 - t0)


def wait_for(predicate, what: str, timeout: float = 120.0, poll: float = 0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
