"""The container and Kubernetes files agree with each other and with luckrate itself.

No Docker engine or Kubernetes cluster runs here. `docker-compose config` (test_compose.py) and
`kubeconform -strict` (test_helm.py) check the files' form; these check what they cannot: everything
mounted exists, labels and selectors match, ports line up with what luckrate listens on, and the
ConfigMap's config and spec load with luckrate's own loaders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from luckrate.core.spec_loader import load_specs
from luckrate.service.config import InvalidConfig, build_config, finalize, load_config


ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())


def _k8s() -> dict[str, dict]:
    docs = [
        d
        for p in sorted(K8S.glob("*.yaml"))
        if p.name != "kustomization.yaml"
        for d in yaml.safe_load_all(p.read_text())
        if d
    ]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def _dockerfile_cmd() -> list[str]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_compose_mounts_exist() -> None:
    missing = [
        f"{name}: {vol}"
        for name, svc in _compose()["services"].items()
        for vol in svc.get("volumes", ())
        if vol.startswith(".") and not (DEPLOY / vol.split(":")[0]).exists()
    ]
    assert missing == []


def test_compose_builds_luckrate_from_the_dockerfile() -> None:
    services = _compose()["services"]
    for name in ("luckrate", "demo"):
        build = services[name]["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


def test_demo_sends_to_the_collector_grpc_receiver() -> None:
    services = _compose()["services"]
    host, port = _flag(services["demo"]["command"], "--endpoint").split(":")
    collector = yaml.safe_load((ROOT / "collector-config" / "otelcol.yaml").read_text())
    assert host == "collector" and collector["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(f":{port}")


def test_collector_image_is_the_version_the_configs_name() -> None:
    image = _compose()["services"]["collector"]["image"]
    assert image.startswith("otel/opentelemetry-collector-contrib:")
    version = image.rsplit(":", 1)[1]
    for path in (ROOT / "collector-config").glob("*.yaml"):
        assert f"v{version}" in path.read_text(), path.name


def test_image_serves_on_all_interfaces_with_default_ports() -> None:
    cmd = _dockerfile_cmd()
    cfg = build_config({k: _flag(cmd, f"--{k}") for k in ("grpc", "http", "prometheus")}, "Dockerfile CMD")
    assert {(e.host, e.port) for e in (cfg.grpc, cfg.http, cfg.prometheus)} == {
        ("0.0.0.0", 4317),
        ("0.0.0.0", 4318),
        ("0.0.0.0", 9464),
    }


def test_image_runs_as_non_root_with_a_healthcheck() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*\n?.*/readyz", text, re.M)
    assert all("slim" in base for base in re.findall(r"^FROM (\S+)", text, re.M))


def test_k8s_selectors_match_the_pods() -> None:
    objs = _k8s()
    pod_labels = objs["Deployment/luckrate"]["spec"]["template"]["metadata"]["labels"]
    selectors = [
        objs["Deployment/luckrate"]["spec"]["selector"]["matchLabels"],
        objs["Service/luckrate-headless"]["spec"]["selector"],
        objs["PodDisruptionBudget/luckrate"]["spec"]["selector"]["matchLabels"],
    ]
    assert all(s.items() <= pod_labels.items() for s in selectors)
    assert objs["Service/luckrate-headless"]["spec"]["clusterIP"] == "None"


def test_k8s_ports_and_probes_match_the_config(tmp_path: Path) -> None:
    objs = _k8s()
    cfg = _configmap_config(objs, tmp_path)
    container = objs["Deployment/luckrate"]["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"otlp-grpc": cfg.grpc.port, "otlp-http": cfg.http.port, "metrics": cfg.prometheus.port}
    assert {cfg.grpc.host, cfg.http.host, cfg.prometheus.host} == {"0.0.0.0"}
    for probe, path in (("startupProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "otlp-http"}
    # Liveness asks the gRPC health service: /healthz sits behind the HTTP connection cap.
    assert container["livenessProbe"]["grpc"] == {"port": cfg.grpc.port}
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    service_ports = {p["port"] for p in objs["Service/luckrate-headless"]["spec"]["ports"]}
    assert cfg.grpc.port in service_ports  # what the loadbalancing exporter dials


def test_k8s_grace_period_covers_the_shutdown_deadline(tmp_path: Path) -> None:
    objs = _k8s()
    cfg = _configmap_config(objs, tmp_path)
    assert (
        objs["Deployment/luckrate"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > cfg.shutdown_timeout
    )


def test_configmap_spec_is_the_example_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.py"
    spec.write_text(_k8s()["ConfigMap/luckrate"]["data"]["spec.py"])
    assert load_specs(spec) == load_specs(ROOT / "examples" / "spec.py")


def test_configmap_config_errors_would_be_caught(tmp_path: Path) -> None:
    # Guards the guard: luckrate's loader rejects a misspelt key, so the check above means something.
    bad = tmp_path / "bad.toml"
    bad.write_text(_k8s()["ConfigMap/luckrate"]["data"]["luckrate.toml"].replace("root_grace", "root_grase"))
    with pytest.raises(InvalidConfig, match="root_grase"):
        load_config(bad)


def _configmap_config(objs: dict, tmp_path: Path):
    """The ConfigMap's luckrate.toml through luckrate's loader, spec path pointed at a local copy."""
    data = objs["ConfigMap/luckrate"]["data"]
    (tmp_path / "spec.py").write_text(data["spec.py"])
    toml = tmp_path / "luckrate.toml"
    toml.write_text(data["luckrate.toml"].replace("/etc/luckrate/spec.py", str(tmp_path / "spec.py")))
    return finalize(load_config(toml), str(toml), env={})


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def _bytes(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    return int(quantity[:-2]) * units[quantity[-2:]] if quantity[-2:] in units else int(quantity)


def test_k8s_turns_the_write_ahead_log_on_within_a_writable_volume(tmp_path: Path) -> None:
    objs = _k8s()
    cfg = _configmap_config(objs, tmp_path)
    pod = objs["Deployment/luckrate"]["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for path, m in mounts.items() if cfg.wal_dir.startswith(path.rstrip("/") + "/")]
    assert not mount.get("readOnly")
    limit = _bytes(volumes[mount["name"]]["emptyDir"]["sizeLimit"])
    assert cfg.wal_max_bytes < limit  # over its sizeLimit an emptyDir gets the pod evicted


def test_compose_turns_the_write_ahead_log_on_in_its_volume() -> None:
    svc = _compose()["services"]["luckrate"]
    wal = _flag(svc["command"], "--wal")
    assert any(wal.startswith(v.split(":")[1] + "/") for v in svc["volumes"] if not v.startswith("."))
    # The rest of the command is the image's own.
    assert svc["command"][: len(_dockerfile_cmd())] == _dockerfile_cmd()
