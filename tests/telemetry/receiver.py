"""A real OTLP/HTTP trace receiver on 127.0.0.1, in the test process: what a collector or a
trace backend (Phoenix, Jaeger, Tempo) receives, decoded from the protobuf the exporter sends."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    """One received span, decoded."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    status: int = 0

    def __getitem__(self, key: str) -> Any:
        return self.attributes[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)

    def text(self) -> str:
        """Everything the span carries, as one string (for "never in any span" checks)."""
        return repr((self.name, self.attributes, self.events, self.resource))


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class Receiver:
    """Collects every span POSTed to ``{endpoint}/v1/traces``."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self._lock = threading.Lock()

    def add(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            Span(
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes=_attributes(span.attributes),
                                resource=resource,
                                events=[(e.name, _attributes(e.attributes)) for e in span.events],
                                links=[link.trace_id.hex() for link in span.links],
                                status=span.status.code,
                            )
                        )

    def wait_for(self, name_prefix: str, count: int = 1, timeout: float = 20.0) -> list[Span]:
        """The spans whose name starts with ``name_prefix`` once ``count`` have arrived."""
        deadline = time.monotonic() + timeout
        while True:
            found = [span for span in list(self.spans) if span.name.startswith(name_prefix)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.add(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: Any) -> None:
            return

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Receiver]]:
    """``(endpoint, receiver)``: set ``OTEL_EXPORTER_OTLP_ENDPOINT=endpoint`` to export to it."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", receiver
    finally:
        server.shutdown()
        server.server_close()
