"""Config: defaults, TOML, flags over TOML, and every bad value named by its key."""

from __future__ import annotations

import argparse

import pytest

from luckrate.service.app import add_arguments, config_from_args
from luckrate.service.config import (
    ENV_BEARER_TOKEN,
    Endpoint,
    InvalidConfig,
    ServiceConfig,
    build_config,
    finalize,
    load_config,
    parse_endpoint,
)

BAD = [
    ({"root_grace": -1}, "1 problem in config t\n  root_grace: expected a positive number of seconds, got -1"),
    ({"grpc": "nowhere"}, "1 problem in config t\n  grpc: 'nowhere' is not HOST:PORT"),
    ({"http": "127.0.0.1:70000"}, "1 problem in config t\n  http: '127.0.0.1:70000': port must be 0-65535"),
    ({"max_buffered_spans": 1.5}, "1 problem in config t\n  max_buffered_spans: expected a positive integer, got 1.5"),
    ({"root_grase": 1}, "1 problem in config t\n  root_grase: unknown key (did you mean 'root_grace'?)"),
    (
        {"idle_timeout": True, "spec": ""},
        "2 problems in config t\n"
        "  idle_timeout: expected a positive number of seconds, got True\n"
        "  spec: expected a non-empty string, got ''",
    ),
]


@pytest.mark.parametrize("values, message", BAD)
def test_bad_values_are_named(values, message):
    with pytest.raises(InvalidConfig) as e:
        build_config(values, "t")
    assert str(e.value) == message


ENDPOINTS = [
    ("127.0.0.1:4317", Endpoint("127.0.0.1", 4317)),
    ("0.0.0.0:0", Endpoint("0.0.0.0", 0)),
    ("[::1]:4318", Endpoint("::1", 4318)),
    ("off", None),
]


@pytest.mark.parametrize("text, endpoint", ENDPOINTS)
def test_parse_endpoint(text, endpoint):
    assert parse_endpoint(text) == endpoint


def test_toml_file_then_flags_override(tmp_path):
    spec = tmp_path / "spec.py"
    spec.write_text("SPEC = {'tools': ['a']}\n")
    conf = tmp_path / "luckrate.toml"
    conf.write_text(f'spec = "{spec}"\nroot_grace = 0.5\n[serve]\nhttp = "127.0.0.1:0"\nprometheus = "off"\n')
    cfg = load_config(conf)
    assert (cfg.root_grace, cfg.http, cfg.prometheus, cfg.idle_timeout) == (0.5, Endpoint("127.0.0.1", 0), None, 30.0)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--config", str(conf), "--root-grace", "3", "--grpc", "off"])
    cfg = config_from_args(args)
    assert (cfg.root_grace, cfg.grpc, cfg.http, cfg.spec) == (3.0, None, Endpoint("127.0.0.1", 0), str(spec))


def test_every_key_is_a_flag():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    dests = {a.dest for a in parser._actions}
    from luckrate.service.config import KEYS

    assert set(KEYS) - dests == {"late_memory", "retry_after"}  # tuning knobs kept to the TOML file


def test_bad_toml_is_reported_with_the_file(tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text("root_grace = \n")
    with pytest.raises(InvalidConfig, match=r"1 problem in config .*c.toml\n  invalid TOML"):
        load_config(conf)


def test_finalize_cross_checks(tmp_path):
    cfg = ServiceConfig(
        spec=str(tmp_path / "missing.py"), tls_cert="c.pem", grpc=None, http=None, otlp_metrics="collector:4318"
    )
    with pytest.raises(InvalidConfig) as e:
        finalize(cfg, "x.toml", env={})
    assert [k for k, _ in e.value.problems] == ["spec", "tls_key", "tls_cert", "otlp_metrics", "grpc"]


def test_token_from_file_or_environment(tmp_path):
    spec = tmp_path / "s.py"
    spec.write_text("SPEC = {}\n")
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    assert finalize(ServiceConfig(spec=str(spec), bearer_token_file=str(token)), env={}).bearer_token == "s3cret"
    assert finalize(ServiceConfig(spec=str(spec)), env={ENV_BEARER_TOKEN: "e"}).bearer_token == "e"
    assert finalize(ServiceConfig(spec=str(spec)), env={}).bearer_token is None


def test_docs_list_every_flag_and_key():
    """The serve options table (docs/serve.md) names every flag and every TOML key."""
    import re
    from pathlib import Path

    from luckrate.service.flags import _FLAGS
    from luckrate.service.config import KEYS

    text = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text(encoding="utf-8")
    flags = set(re.findall(r"`(--[a-z-]+)", text))
    keys = set(re.findall(r"`([a-z_]+)`", text))
    assert {f for f, *_ in _FLAGS} <= flags
    assert set(KEYS) <= keys


def test_verdict_log_all_is_a_toml_switch_beside_verdict_log(tmp_path):
    spec = tmp_path / "s.py"
    spec.write_text("SPEC = {}\n")
    conf = tmp_path / "c.toml"
    conf.write_text(f'spec = "{spec}"\nverdict_log = "{tmp_path / "v.jsonl"}"\nverdict_log_all = true\n')
    assert finalize(load_config(conf), env={}).verdict_log_all is True
    conf.write_text('verdict_log_all = "yes"\n')
    with pytest.raises(InvalidConfig, match="verdict_log_all: expected true or false, got 'yes'"):
        load_config(conf)
    with pytest.raises(InvalidConfig, match="verdict_log_all: needs verdict_log"):
        finalize(ServiceConfig(spec=str(spec), verdict_log_all=True), env={})


OTLP_URLS = [
    # (key, as given, as pushed to): a base URL gets the signal's path, as OTEL_EXPORTER_OTLP_ENDPOINT does;
    # a URL with a path is used as it is, as OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is.
    ("otlp_metrics", "http://127.0.0.1:14318", "http://127.0.0.1:14318/v1/metrics"),
    ("otlp_metrics", "http://127.0.0.1:14318/", "http://127.0.0.1:14318/v1/metrics"),
    ("otlp_metrics", "https://collector", "https://collector/v1/metrics"),
    ("otlp_metrics", "http://collector:4318/v1/metrics", "http://collector:4318/v1/metrics"),
    ("otlp_metrics", "http://gateway/otlp/metrics", "http://gateway/otlp/metrics"),
    ("otlp_logs", "http://127.0.0.1:14318", "http://127.0.0.1:14318/v1/logs"),
    ("otlp_logs", "http://collector:4318/v1/logs", "http://collector:4318/v1/logs"),
]


@pytest.mark.parametrize("key, given, used", OTLP_URLS)
def test_an_otlp_push_url_is_read_as_otel_exporters_read_it(tmp_path, key, given, used):
    """Regression: --otlp-metrics http://127.0.0.1:14318 (the single-host config's advice) pushed to the
    collector's '/', which answers 404 to every push."""
    spec = tmp_path / "s.py"
    spec.write_text("SPEC = {}\n")
    assert getattr(finalize(ServiceConfig(spec=str(spec), **{key: given}), env={}), key) == used


BAD_OTLP_URLS = [
    # (as given, the problem)
    ("collector:4318", "expected an http(s) URL such as http://collector:4318, got 'collector:4318'"),
    (
        "127.0.0.1:4318/v1/metrics",
        "expected an http(s) URL such as http://collector:4318, got '127.0.0.1:4318/v1/metrics'",
    ),
    ("grpc://collector:4317", "expected an http(s) URL such as http://collector:4318, got 'grpc://collector:4317'"),
    ("http://", "expected an http(s) URL such as http://collector:4318, got 'http://'"),
    ("http://collector:43x8", "bad port in 'http://collector:43x8'"),
    ("http://collector:99999", "bad port in 'http://collector:99999'"),
]


@pytest.mark.parametrize("given, problem", BAD_OTLP_URLS)
def test_an_otlp_push_url_that_cannot_be_used_is_refused_at_start(tmp_path, given, problem):
    spec = tmp_path / "s.py"
    spec.write_text("SPEC = {}\n")
    with pytest.raises(InvalidConfig) as e:
        finalize(ServiceConfig(spec=str(spec), otlp_metrics=given), "flags", env={})
    assert e.value.problems == [("otlp_metrics", problem)]
