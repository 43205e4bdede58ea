"""Test 1: the real collector's ``validate`` accepts every collector config luckrate ships, exactly as a user
copies it, and refuses a config with a misspelt key.

Shipped configs are found, not listed: every YAML in collector-config/, every overlay (validated on the
base file its first line names), every collector config a docker-compose service mounts, and every
collector config embedded in a Kubernetes ConfigMap under deploy/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.collector.harness import BASE, COLLECTOR_CONFIGS, LOADBALANCING, OVERLAYS, validate
from tests.service.harness import ROOT


DEPLOY = ROOT / "deploy"


def _overlay_base(overlay: Path) -> Path:
    """The base an overlay names in its first line: "# Overlay on otelcol.yaml: ..."."""
    m = re.match(r"# Overlay on (\S+?):", overlay.read_text())
    assert m, f"{overlay.name}: first line must say '# Overlay on <base>.yaml:'"
    return COLLECTOR_CONFIGS / m.group(1)


def _is_collector_config(doc: object) -> bool:
    return isinstance(doc, dict) and "service" in doc and "receivers" in doc and "exporters" in doc


def _compose_mounts() -> list[Path]:
    """Collector configs that docker-compose mounts into a collector container."""
    found = []
    for compose in DEPLOY.rglob("*compose*.y*ml"):
        for service in (yaml.safe_load(compose.read_text()).get("services") or {}).values():
            for volume in service.get("volumes") or ():
                source = (compose.parent / str(volume).split(":", 1)[0]).resolve()
                if (
                    source.is_file()
                    and source.suffix in (".yaml", ".yml")
                    and _is_collector_config(yaml.safe_load(source.read_text()))
                ):
                    found.append(source)
    return found


def _embedded(tmp_path: Path) -> list[Path]:
    """Collector configs held as ConfigMap data under deploy/, written out to files for ``validate``."""
    found = []
    for manifest in DEPLOY.rglob("*.y*ml"):
        if (manifest.parent.parent / "Chart.yaml").is_file() and manifest.parent.name == "templates":
            continue  # a Helm template is YAML only once rendered (tests/deploy/test_helm.py renders the chart)
        for doc in yaml.safe_load_all(manifest.read_text()):
            if not (isinstance(doc, dict) and doc.get("kind") == "ConfigMap"):
                continue
            for key, text in (doc.get("data") or {}).items():
                try:
                    inner = yaml.safe_load(text)
                except yaml.YAMLError:
                    continue
                if _is_collector_config(inner):
                    path = tmp_path / f"{manifest.stem}-{key}"
                    path.write_text(text)
                    found.append(path)
    return found


def _env(tmp_path: Path) -> dict:
    """Values for the environment variables the configs read (files that exist, an address)."""
    ca, token = tmp_path / "ca.pem", tmp_path / "token"
    ca.write_text("not read by validate\n")
    token.write_text("a-token")
    return {
        "TRACING_BACKEND_ENDPOINT": "127.0.0.1:4317",
        "LUCKRATE_CA_FILE": str(ca),
        "LUCKRATE_BEARER_TOKEN_FILE": str(token),
    }


def _check(configs: list[Path], tmp_path: Path) -> None:
    proc = validate(*configs, env=_env(tmp_path))
    assert proc.returncode == 0, f"validate {[str(c.relative_to(ROOT)) for c in configs]}:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("config", sorted(COLLECTOR_CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_validates(config: Path, tmp_path: Path) -> None:
    _check([config], tmp_path)


@pytest.mark.parametrize("overlay", sorted(OVERLAYS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_overlay_validates_on_its_base(overlay: Path, tmp_path: Path) -> None:
    base = _overlay_base(overlay)
    assert base.is_file(), f"{overlay.name} names {base.name}, which is not in collector-config/"
    _check([base, overlay], tmp_path)


def test_every_config_deploy_uses_is_shipped_and_validates(tmp_path: Path) -> None:
    mounted = _compose_mounts()
    assert BASE in mounted, "docker-compose mounts no collector config from collector-config/"
    for config in {*mounted, *_embedded(tmp_path)}:
        _check([config], tmp_path)


def test_the_static_overlay_uses_the_same_replica_template_as_dns() -> None:
    # Tests 5 and 6 route through loadbalancing/static; what they show holds for dns and k8s only while the
    # per-replica exporter (retry, queue, timeout) is the same.
    static = yaml.safe_load((OVERLAYS / "loadbalancing-static.yaml").read_text())["exporters"]
    shipped = yaml.safe_load(LOADBALANCING.read_text())["exporters"]
    assert (
        static["loadbalancing/static"]["protocol"]
        == shipped["loadbalancing/dns"]["protocol"]
        == shipped["loadbalancing/k8s"]["protocol"]
    )


@pytest.mark.parametrize(
    "good, bad",
    [
        ("send_batch_size:", "send_batch_sise:"),  # a processor option
        ("retry_on_failure:", "retry_on_failures:"),  # an exporter option
    ],
)
def test_a_misspelt_key_fails_validation(good: str, bad: str, tmp_path: Path) -> None:
    text = BASE.read_text()
    assert good in text
    broken = tmp_path / "otelcol.yaml"
    broken.write_text(text.replace(good, bad, 1))
    proc = validate(broken, env=_env(tmp_path))
    assert proc.returncode != 0
    assert bad.rstrip(":") in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("config", [BASE, LOADBALANCING], ids=lambda p: p.name)
def test_an_unset_tracing_backend_is_refused_naming_the_variable(config: Path) -> None:
    """Regression: without TRACING_BACKEND_ENDPOINT the collector said only 'requires a non-empty
    "endpoint"'. The collector's ${env:...} has no required form, so the default value is the message."""
    proc = validate(config, env={"TRACING_BACKEND_ENDPOINT": None})
    assert proc.returncode != 0
    assert (
        "exporters::otlp/tracing_backend::clientconfig: address TRACING_BACKEND_ENDPOINT is not set: "
        "missing port in address"
    ) in proc.stderr
