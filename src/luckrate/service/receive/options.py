"""What a receiver is configured with, beyond where it listens and whom it hands requests to."""

from __future__ import annotations

from dataclasses import dataclass

from luckrate.service.config import ServiceConfig


@dataclass(frozen=True)
class ReceiverOptions:
    """What both OTLP receivers enforce on every request."""

    max_request_bytes: int
    """Largest request after decompression."""
    retry_after: int
    """Seconds a throttled client is told to wait (Retry-After, RetryInfo)."""
    token: str | None = None
    """The bearer token clients must send; None: none is asked for."""

    @classmethod
    def from_config(cls, cfg: ServiceConfig) -> ReceiverOptions:
        return cls(cfg.max_request_bytes, cfg.retry_after, cfg.bearer_token)


@dataclass(frozen=True)
class HttpLimits:
    """How the OTLP/HTTP receiver bounds slow and greedy clients."""

    max_connections: int = ServiceConfig.http_max_connections
    """Connections served at once; more get 503 + Retry-After and are counted."""
    request_timeout: float = ServiceConfig.http_request_timeout
    """Seconds for a request's headers and body to arrive, from its first byte."""
    idle_timeout: float = ServiceConfig.http_idle_timeout
    """Seconds a connection may idle between requests."""

    @classmethod
    def from_config(cls, cfg: ServiceConfig) -> HttpLimits:
        return cls(cfg.http_max_connections, cfg.http_request_timeout, cfg.http_idle_timeout)
