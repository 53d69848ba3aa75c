"""Where spans go: the tracer provider the user configured, or one this module installs.

* The user configured a tracer provider (``logfire.configure()``, ``phoenix.otel.register()``,
  the SDK by hand): spans go there.
* Otherwise, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set (and
  ``OTEL_SDK_DISABLED`` / ``OTEL_TRACES_EXPORTER=none`` not): an SDK tracer provider with a
  batching OTLP/HTTP (protobuf) exporter is installed as the global one, so Prefect's own
  flow-run and task-run spans are exported too. ``OTEL_SERVICE_NAME`` and
  ``OTEL_RESOURCE_ATTRIBUTES`` name the resource (service ``folpipe`` when neither does); the
  exporter reads the rest of the standard ``OTEL_EXPORTER_OTLP_*`` variables itself.
* Neither: no tracer, and OpenTelemetry is never imported by this package.

Every import of ``opentelemetry`` here happens inside a function, once tracing is asked for.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ..redaction import register_secret

LOG = logging.getLogger("prefect_folpipe.telemetry")
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
HEADER_VARS = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
DEFAULT_SERVICE = "folpipe"
SCHEMA_URL = "https://opentelemetry.io/schemas/1.44.0"
"""The semantic-conventions version whose GenAI names the spans use."""
INSTRUMENTATION = "prefect_folpipe"

_lock = threading.Lock()
_tracer: Any = None
_installed: Any = None
"""The provider this module installed (``False``: it tried and could not)."""


def export_requested(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for OTLP export (an endpoint variable, not disabled)."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARS)


def prepare() -> None:
    """Install the exporting provider now when the environment asks for one (call it before
    Prefect starts a flow run, so that run's own spans are exported too)."""
    if export_requested():
        _install()


def tracer() -> Any | None:
    """This package's tracer, or ``None`` when spans would go nowhere."""
    global _tracer
    if _tracer is not None:
        return _tracer
    if export_requested():
        _install()
    elif "opentelemetry.trace" not in sys.modules:
        return None  # nobody configured anything: stay out of OpenTelemetry entirely
    from opentelemetry import trace

    if not _recording(trace.get_tracer_provider()):
        return None
    _tracer = trace.get_tracer(INSTRUMENTATION, schema_url=SCHEMA_URL)
    return _tracer


def flush(timeout_s: float = 10.0) -> None:
    """Send what the installed provider still holds now (a Dask worker after a pass: its
    process may be stopped without its exit handlers)."""
    provider = _installed
    if provider:
        try:
            provider.force_flush(int(timeout_s * 1000))
        except Exception as exc:  # telemetry never fails a run
            LOG.debug("could not flush spans: %s", exc)


def installed_here() -> bool:
    """Whether this process exports through the provider this module installed."""
    return bool(_installed)


def _recording(provider: Any) -> bool:
    from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

    return not isinstance(provider, ProxyTracerProvider | NoOpTracerProvider)


def _install() -> None:
    global _installed
    if _installed is not None:
        return
    with _lock:
        if _installed is None:
            _installed = _new_provider()


def _new_provider() -> Any:
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        LOG.warning(
            "%s is set but OpenTelemetry export is not installed (%s): no spans are sent; "
            "install it with: pip install 'prefect-folpipe[otel]'",
            next(name for name in ENDPOINT_VARS if os.environ.get(name, "").strip()),
            exc,
        )
        return False
    if _recording(trace.get_tracer_provider()):
        return False  # the user's own provider wins; flushing it is the user's business
    _check_protocol()
    _register_header_secrets()
    resource = Resource.create()  # reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)  # shut down (hence flushed) when the process exits
    return provider


def _register_header_secrets() -> None:
    """The exporter's headers carry the backend's credentials (``Authorization=...``): every
    sink masks their values, though the variables' names do not say they are secret."""
    for name in HEADER_VARS:
        for pair in os.environ.get(name, "").split(","):
            _, _, value = pair.partition("=")
            value = unquote(value.strip())
            register_secret(value, *value.split(" ")[1:])  # "Basic <token>": the token too


def _check_protocol() -> None:
    for name in PROTOCOL_VARS:
        value = os.environ.get(name, "").strip()
        if value and value != "http/protobuf":
            LOG.warning("%s=%s: folpipe exports with http/protobuf only", name, value)
            return
