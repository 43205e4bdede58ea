"""OTLP/gRPC receiver: ``TraceService/Export`` and ``LogsService/Export``, plus the
``grpc.health.v1.Health/Check`` service.

Each Export method is registered with the service name and response type from opentelemetry-proto's
generated module, but takes the request as raw bytes rather than through the generated servicer: gRPC
answers a request its deserializer cannot parse with INTERNAL, and OTLP wants INVALID_ARGUMENT (and we
want the refusal counted).
"""

from __future__ import annotations

import collections
import errno
import logging
import socket
from concurrent.futures import ThreadPoolExecutor

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsPartialSuccess, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import logs_request_from_protobuf, request_from_protobuf
from luckrate.service.receive import status
from luckrate.service.config import Endpoint
from luckrate.service.assemble.intake import Intake
from luckrate.service.receive.options import ReceiverOptions
from luckrate.service.security import token_ok

log = logging.getLogger(__name__)

TRACE_SERVICE = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
LOGS_SERVICE = logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"].full_name
HEALTH_SERVICE = "grpc.health.v1.Health"
# grpc.health.v1.HealthCheckResponse.ServingStatus
SERVING, NOT_SERVING = 1, 2
MAX_RESPONSE = 4 * 1024 * 1024


def _refuse_taken(endpoint: Endpoint) -> None:
    """Bind the address as gRPC will (without SO_REUSEPORT), then let go: a taken port is refused here,
    in luckrate's words, before gRPC's core writes its own log line about it to stderr. A port taken in
    between is still refused after gRPC's line (start's RuntimeError)."""
    if endpoint.port == 0:
        return
    try:
        found = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return  # a name that does not resolve: gRPC's bind refuses it
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC: TIME_WAIT is no obstacle
            try:
                probe.bind(address)
            except OSError as e:
                raise OSError(e.errno, f"grpc {endpoint}: cannot bind ({e.strerror})") from None


class _Status(collections.namedtuple("_Status", ("code", "details", "trailing_metadata")), grpc.Status):
    """A status with trailing metadata, for ``context.abort_with_status`` (as grpcio-status builds it)."""


def _health_request(data: bytes) -> str:
    """``HealthCheckRequest{string service = 1}``: hand-decoded so grpcio-health-checking is not needed."""
    if not data:
        return ""
    if data[0] != 0x0A or len(data) < 2 or data[1] >= 0x80 or len(data) != 2 + data[1]:
        raise ValueError("not a HealthCheckRequest")
    return data[2:].decode("utf-8", "replace")


def _health_response(serving_status: int) -> bytes:
    return bytes((0x08, serving_status))


class GrpcReceiver:
    def __init__(
        self,
        endpoint: Endpoint,
        intake: Intake,
        options: ReceiverOptions,
        credentials: grpc.ServerCredentials | None = None,
        workers: int = 8,
    ):
        """``credentials``: None serves plaintext gRPC."""
        self.name = "grpc"
        self.endpoint = endpoint
        self._intake = intake
        self._max = options.max_request_bytes
        self._retry_after = options.retry_after
        self._token = options.token
        self._credentials = credentials
        self._workers = workers
        self._server: grpc.Server | None = None
        self.port = endpoint.port
        self.serving = False

    def start(self) -> None:
        self._server = grpc.server(
            ThreadPoolExecutor(self._workers, thread_name_prefix="luckrate-grpc"),
            # so_reuseport off: with it on (gRPC's default) a second server on the same port starts too, and
            # the kernel splits connections between them, so each grades half of every trace.
            options=[
                ("grpc.max_receive_message_length", self._max),
                ("grpc.max_send_message_length", MAX_RESPONSE),
                ("grpc.so_reuseport", 0),
            ],
        )
        export = grpc.unary_unary_rpc_method_handler(
            self._export, response_serializer=ExportTraceServiceResponse.SerializeToString
        )
        export_logs = grpc.unary_unary_rpc_method_handler(
            self._export_logs, response_serializer=ExportLogsServiceResponse.SerializeToString
        )
        check = grpc.unary_unary_rpc_method_handler(
            self._check, request_deserializer=_health_request, response_serializer=_health_response
        )
        self._server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": export}),
                grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": export_logs}),
                grpc.method_handlers_generic_handler(HEALTH_SERVICE, {"Check": check}),
            )
        )
        address = str(self.endpoint)
        _refuse_taken(self.endpoint)
        try:
            if self._credentials is not None:
                self.port = self._server.add_secure_port(address, self._credentials)
            else:
                self.port = self._server.add_insecure_port(address)
        except RuntimeError:  # grpcio says only "Failed to bind"; the usual cause is another listener
            self._server = None
            raise OSError(errno.EADDRINUSE, f"grpc {address}: cannot bind (address in use or not available)") from None
        self._server.start()
        self.serving = True

    def shutdown(self, grace: float = 5.0) -> None:
        """Refuse new calls, let running ones finish (up to ``grace`` s); safe without start and twice."""
        self.serving = False
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace).wait()

    def _check(self, service: str, context: grpc.ServicerContext) -> int:
        if service not in ("", TRACE_SERVICE, LOGS_SERVICE):
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {service[:100]!r}")
        return SERVING if self.serving else NOT_SERVING

    def _export(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        outcome = self._take(body, context, logs=False)
        if outcome.rejected or outcome.message:
            return ExportTraceServiceResponse(
                partial_success=ExportTracePartialSuccess(
                    rejected_spans=outcome.rejected, error_message=outcome.message
                )
            )
        return ExportTraceServiceResponse()

    def _export_logs(self, body: bytes, context: grpc.ServicerContext) -> ExportLogsServiceResponse:
        outcome = self._take(body, context, logs=True)
        if outcome.rejected or outcome.message:
            return ExportLogsServiceResponse(
                partial_success=ExportLogsPartialSuccess(
                    rejected_log_records=outcome.rejected, error_message=outcome.message
                )
            )
        return ExportLogsServiceResponse()

    def _take(self, body: bytes, context: grpc.ServicerContext, logs: bool):
        """Check, decode and hand over one export request of either signal; aborts the call when it is
        refused whole (counted on the signal's own counter)."""
        metadata = dict(context.invocation_metadata())
        if not token_ok(self._token, metadata.get("authorization")):
            self._intake.refuse("grpc", "unauthenticated", logs)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        if len(body) > self._max:  # gRPC enforces this first; kept for a limit changed at runtime
            self._intake.refuse("grpc", "too_large", logs)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"request over {self._max} bytes")
        try:
            request = (logs_request_from_protobuf if logs else request_from_protobuf)(body)
        except InvalidInput as e:
            self._intake.refuse("grpc", "undecodable", logs)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e)[:1024])
        accept = self._intake.accept_logs if logs else self._intake.accept
        outcome = accept(request, "grpc", raw=body)
        if outcome.throttled:
            # UNAVAILABLE when the write-ahead log cannot take it: retryable too, and not a full buffer.
            code, number = (
                (grpc.StatusCode.UNAVAILABLE, status.UNAVAILABLE)
                if outcome.unavailable
                else (grpc.StatusCode.RESOURCE_EXHAUSTED, status.RESOURCE_EXHAUSTED)
            )
            details = status.encode_status(number, outcome.message, self._retry_after)
            # RetryInfo twice: in the status details (read by the Collector's Go exporter) and under its
            # own -bin key (read by the OTel Python exporter).
            trailers = (
                ("grpc-status-details-bin", details),
                ("google.rpc.retryinfo-bin", status.retry_info(self._retry_after)),
            )
            context.abort_with_status(_Status(code, outcome.message, trailers))
        return outcome
