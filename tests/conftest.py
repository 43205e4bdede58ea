"""Shared fixtures, and the test tiers.

Every test gets exactly one tier marker: its own ``@pytest.mark.e2e`` (or another tier's) when it has one,
else the one for where it lives (``TIERS``). ``pytest -m unit`` runs the in-process tier in seconds and
``-m e2e`` / ``-m interop`` / ``-m collector`` the tiers that start servers, real SDKs in other languages,
or the real collector. A plain ``pytest`` runs them all. A unit test that opens a socket or starts a
process fails, naming what it did (``tests/unit_guard.py``).
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

pytest_plugins = ["pytester", "tests.unit_guard"]

TESTS = Path(__file__).resolve().parent
TIER_NAMES = ("unit", "e2e", "interop", "collector")
TIERS = {
    "collector": "collector",
    "interop": "interop",
    "deploy": "e2e",
    "reliability": "e2e",
    "frameworks": "e2e",
    "test_benchmarks.py": "e2e",
    "test_detection_benchmark.py": "e2e",
    # Every source graded alike, pydantic-ai and smolagents run live: the frameworks' import alone takes seconds.
    "test_one_spec_every_source.py": "e2e",
    # Hypothesis over arbitrary span sets: ~25 s on its own, more than the whole unit tier.
    "adapters/test_otlp_fuzz.py": "e2e",
    # The service as users run it: `luckrate serve` subprocesses, sockets, grading processes.
    "service/test_e2e.py": "e2e",
    "service/test_e2e_logs.py": "e2e",
    "service/test_e2e_verdict_events.py": "e2e",
    "service/test_e2e_runs.py": "e2e",
    "service/test_e2e_every_capture.py": "e2e",
    "service/test_receivers.py": "e2e",
    "service/test_http_framing.py": "e2e",
    "service/test_logs_receiver.py": "e2e",
    "service/test_tls.py": "e2e",
    "service/test_workers.py": "e2e",
    # `luckrate serve` in-process, scraped, and promtool as a subprocess.
    "service/test_prometheus.py": "e2e",
    # The instrumentation example and the README's snippet as subprocesses against `luckrate serve`.
    "test_example_instrument.py": "e2e",
    # The run viewer's HTTP server, and luckrate serve with grading processes feeding it.
    "service/test_viewer.py": "e2e",
    # A real browser (Debian's chromium, driven by Playwright) against the viewer and the HTML report.
    "browser": "e2e",
    # An OTLP log exporter sending verdicts to a local HTTP receiver (sockets, its retry thread).
    "service/test_verdict_events.py": "e2e",
}
"""Test path (a directory or a file, relative to tests/) -> tier; the longest match wins; the rest is ``unit``."""


def tier_of(path: Path) -> str:
    rel = path.resolve().relative_to(TESTS).as_posix()
    matches = [key for key in TIERS if rel == key or rel.startswith(key + "/")]
    return TIERS[max(matches, key=len)] if matches else "unit"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m unit`` alone, files of the other tiers are not even imported (their frameworks and servers
    cost seconds to import); what they would have collected is deselected anyway."""
    if config.option.markexpr.strip() != "unit" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_") or TESTS not in collection_path.resolve().parents:
        return None
    return tier_of(collection_path) != "unit" or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        own = [name for name in TIER_NAMES if item.get_closest_marker(name)]
        if not own:
            item.add_marker(getattr(pytest.mark, tier_of(item.path)))
        elif len(own) > 1:
            raise pytest.UsageError(f"{item.nodeid}: one tier per test, it is marked {' and '.join(own)}")
        elif own == ["unit"] and tier_of(item.path) != "unit":
            raise pytest.UsageError(
                f"{item.nodeid}: marked unit in a file of the {tier_of(item.path)} tier (TIERS), "
                "which pytest -m unit does not import"
            )


# ---- certificates ----------------------------------------------------------------------------------


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key, issuer_name: str, issuer_key, *, ca: bool = False, server: bool = False):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1, a client certificate it signed, and a rogue client
    certificate from another CA."""
    d = tmp_path_factory.mktemp("pki")
    files = {}
    ca_key, rogue_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("luckrate test CA", ca_key, "luckrate test CA", ca_key, ca=True)
    rogue_ca = _cert("rogue CA", rogue_key, "rogue CA", rogue_key, ca=True)
    for name, issuer, issuer_key, server in (
        ("server", "luckrate test CA", ca_key, True),
        ("client", "luckrate test CA", ca_key, False),
        ("rogue", "rogue CA", rogue_key, False),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        (d / f"{name}.pem").write_bytes(_pem(_cert(name, key, issuer, issuer_key, server=server)))
        (d / f"{name}.key").write_bytes(_key_pem(key))
        files[name] = (d / f"{name}.pem", d / f"{name}.key")
    (d / "ca.pem").write_bytes(_pem(ca))
    (d / "rogue-ca.pem").write_bytes(_pem(rogue_ca))
    files["ca"] = d / "ca.pem"
    return files
