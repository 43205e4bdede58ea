"""Fixtures shared by the service tests: an in-process service, a recorded clean run, a telemetry pair."""

from __future__ import annotations

import pytest

from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from luckrate.service.export.prometheus import PrometheusReader
from luckrate.service.export.telemetry import Labels, Telemetry
from tests.builders import config
from tests.service.harness import SPEC, SPECS, record_runs, runs


@pytest.fixture(scope="module")
def spans():
    return record_runs(runs(["clean"]))


@pytest.fixture
def service(request):
    svc = build(config(**getattr(request, "param", {})), load_specs(SPEC))
    svc.start()
    yield svc
    assert svc.stop(10)


@pytest.fixture
def tele():
    reader = PrometheusReader()
    t = Telemetry([reader], Labels(SPECS, max_agents=2))
    yield t, reader
    t.shutdown()
