"""deploy/docker-compose.yaml through the real Compose CLI: `docker-compose config`.

`config` loads the file the way `docker compose up` does (the Compose specification's schema, interpolation,
anchors and merges, relative paths resolved) and needs no Docker engine, which CI does not have: nothing here
builds an image or starts a container. The CLI is Compose v5.6.0 built from its Go modules by
deploy/tools/build.sh (.ci/run runs it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import external


ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "docker-compose.yaml"
COMPOSE = DEPLOY / "tools" / "bin" / "docker-compose"


@pytest.fixture(scope="module", autouse=True)
def compose_cli() -> None:
    if not COMPOSE.is_file():
        external.missing("the Compose CLI (docker-compose)", "deploy/tools/build.sh")


def _config(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``config`` on ``path``, its relative paths resolved from deploy/ as for the real file."""
    return subprocess.run(
        [str(COMPOSE), "-f", str(path), "--project-directory", str(DEPLOY), "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(path.parent)},  # no COMPOSE_* or DOCKER_* from the caller
    )


@pytest.fixture(scope="module")
def resolved() -> dict:
    done = _config(COMPOSE_FILE, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_compose_file_is_valid(resolved: dict) -> None:
    assert set(resolved["services"]) == set(yaml.safe_load(COMPOSE_FILE.read_text())["services"])


def test_every_bind_mount_resolves_to_a_file_in_the_repository(resolved: dict) -> None:
    binds = [v for svc in resolved["services"].values() for v in svc.get("volumes", ()) if v["type"] == "bind"]
    assert binds
    assert [v["source"] for v in binds if not (Path(v["source"]).exists() and ROOT in Path(v["source"]).parents)] == []


def test_luckrate_builds_from_the_repository_with_the_dockerfile(resolved: dict) -> None:
    for name in ("luckrate", "demo"):
        build = resolved["services"][name]["build"]
        assert (Path(build["context"]), build["dockerfile"]) == (ROOT, "deploy/Dockerfile")


@pytest.mark.parametrize(
    ("find", "plant", "error"),
    [
        ("    restart: unless-stopped\n", "    restart: unless-stopped\n    restat: always\n", "restat"),
        (
            "        condition: service_healthy\n",
            "        condition: service_heathy\n",
            "depends_on.luckrate.condition",
        ),
    ],
)
def test_a_planted_error_fails(find: str, plant: str, error: str, tmp_path: Path) -> None:
    # Guards the guard: config rejects what the engine would, or passing it proves nothing.
    text = COMPOSE_FILE.read_text()
    assert find in text
    copy = tmp_path / "docker-compose.yaml"
    copy.write_text(text.replace(find, plant, 1))
    done = _config(copy, "--quiet")
    assert done.returncode != 0 and error in done.stderr, done.stderr
