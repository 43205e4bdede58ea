"""TLS, mutual TLS and bearer-token checks shared by both receivers."""

from __future__ import annotations

import hmac
import ssl
from pathlib import Path

import grpc

from luckrate.service.config import ServiceConfig


def token_ok(expected: str | None, header: str | None) -> bool:
    """True when no token is configured, or ``header`` is ``Bearer <expected>`` (constant-time compare)."""
    if expected is None:
        return True
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), expected.encode())


def http_context(cfg: ServiceConfig) -> ssl.SSLContext | None:
    """Server-side TLS context, requiring client certificates when ``tls_client_ca`` is set; None = plain."""
    if not cfg.tls_cert:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cfg.tls_cert, cfg.tls_key)
    if cfg.tls_client_ca:
        ctx.load_verify_locations(cfg.tls_client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def grpc_credentials(cfg: ServiceConfig) -> grpc.ServerCredentials | None:
    if not cfg.tls_cert:
        return None
    if not cfg.tls_key:  # load_config refuses a certificate without its key
        raise ValueError("tls_cert without tls_key")
    pair = (Path(cfg.tls_key).read_bytes(), Path(cfg.tls_cert).read_bytes())
    ca = Path(cfg.tls_client_ca).read_bytes() if cfg.tls_client_ca else None
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=ca is not None)
