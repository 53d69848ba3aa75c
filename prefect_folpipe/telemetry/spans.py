"""The OpenTelemetry spans of a run (imported only once a tracer exists: see ``setup``).

Every string attribute goes through the redaction registry as it is set, whatever it holds:
no secret value reaches a span, even in a task path or an error message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..redaction import SECRETS
from . import setup
from .state import PASS, RUN, PassInfo

OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
PREFECT_TRACEPARENT = "__OTEL_TRACEPARENT"
"""The label Prefect keeps a run's trace context in (``prefect.telemetry.run_telemetry``)."""
_W3C = TraceContextTextMapPropagator()
_QUIET = {"record_exception": False, "set_status_on_exception": False}


def traceparent_of(span: Span) -> str | None:
    """The W3C ``traceparent`` of ``span`` (plain data another process continues from)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


def context_of(traceparent: str | None) -> Any:
    """The OpenTelemetry context of a ``traceparent`` (``None``: the current one)."""
    return _extracted(traceparent) if traceparent else None


@lru_cache(maxsize=64)
def _extracted(traceparent: str) -> Any:
    """A run's passes share its traceparent: parsed once (a context is immutable)."""
    return _W3C.extract({"traceparent": traceparent})


def masked(attributes: Mapping[str, Any], *texts: str) -> tuple[dict[str, Any], list[str]]:
    """``attributes`` without ``None`` values and ``texts``, every string masked (in lists
    too), with one look-up of the secrets for all of them."""
    kept = {key: value for key, value in attributes.items() if value is not None}
    values = SECRETS.data([*texts, *kept.values()])
    return dict(zip(kept, values[len(texts) :], strict=True)), values[: len(texts)]


def set_attributes(span: Span, attributes: Mapping[str, Any]) -> None:
    """Set ``attributes`` (``None`` values skipped), strings masked."""
    span.set_attributes(masked(attributes)[0])


def fail(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc``: its code or type as ``error.type``, a masked message."""
    code = getattr(exc, "code", None)
    kind = code if isinstance(code, str) and code else type(exc).__name__
    if isinstance(exc, Exception):
        set_attributes(span, {"error.type": kind})
        span.set_status(Status(StatusCode.ERROR, SECRETS.text(str(exc))[:500]))
    else:  # a cancellation, a signal, a suspension: not an error of the span's work
        set_attributes(span, {"folpipe.interrupted": kind})


@contextmanager
def open_span(
    tracer: Any, name: str, attributes: Mapping[str, Any], **options: Any
) -> Iterator[Span]:
    clean, [title] = masked(attributes, name)
    with tracer.start_as_current_span(title, attributes=clean, **_QUIET, **options) as span:
        try:
            yield span
        except BaseException as exc:
            fail(span, exc)
            raise


class RunTrace:
    """The ``invoke_workflow`` span of a run."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.traceparent = traceparent_of(span)

    def finish(
        self, status: str, tasks: Sequence[Mapping[str, Any]], cost_usd: float | None
    ) -> None:
        """The run's totals, from its report rows (paid and replayed calls, tokens, cost)."""
        usage = [row.get("usage") or {} for row in tasks]
        set_attributes(
            self.span,
            {
                "folpipe.status": status,
                "gen_ai.usage.input_tokens": sum(u.get("input_tokens", 0) for u in usage),
                "gen_ai.usage.output_tokens": sum(u.get("output_tokens", 0) for u in usage),
                "folpipe.model_calls": sum(row.get("model_calls", 0) for row in tasks),
                "folpipe.replayed_calls": sum(row.get("replayed_calls", 0) for row in tasks),
                "folpipe.tool_calls": sum(row.get("tool_calls", 0) for row in tasks),
                "folpipe.tasks": len(tasks),
                "folpipe.cost_usd": float(cost_usd or 0.0),
            },
        )
        if status == "failed":
            self.span.set_status(Status(StatusCode.ERROR, "the run failed"))

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        texts = {key: str(value) for key, value in attributes.items()}
        self.span.add_event(name, masked(texts)[0])


@contextmanager
def run_span(
    tracer: Any,
    workflow: str,
    *,
    labels: MutableMapping[str, Any] | None,
    resumes: str | None,
    lineage: str | None,
) -> Iterator[RunTrace]:
    """One run's ``invoke_workflow`` span, current while the run goes on; the Prefect task
    runs started meanwhile nest under it (their parent is read from the flow run's labels)."""
    links = []
    resumed = trace.get_current_span(context_of(resumes)).get_span_context() if resumes else None
    if resumed is not None and resumed.is_valid:
        links.append(Link(resumed, {"folpipe.link": "resumes"}))
    attributes = {
        OPERATION: "invoke_workflow",
        AGENT_NAME: workflow,
        "gen_ai.workflow.name": workflow,
        "folpipe.lineage": lineage,
    }
    with open_span(tracer, f"invoke_workflow {workflow}", attributes, links=links) as span:
        run = RunTrace(span)
        token = RUN.set(run)
        before = labels.get(PREFECT_TRACEPARENT) if labels is not None else None
        if labels is not None and run.traceparent:
            labels[PREFECT_TRACEPARENT] = run.traceparent
        try:
            yield run
        finally:
            RUN.reset(token)
            if labels is not None and run.traceparent:
                if before is None:
                    labels.pop(PREFECT_TRACEPARENT, None)
                else:
                    labels[PREFECT_TRACEPARENT] = before
    # no flush here: the batching exporter sends the run's last spans from its own thread,
    # and the provider set up from the environment is flushed as the process exits (its
    # shutdown at exit); a run in a long-lived process does not wait for its export


class AgentTrace:
    """The ``invoke_agent`` span of one pass."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def finish(self, payload: Mapping[str, Any]) -> None:
        """The pass's totals (its checkpointed payload)."""
        usage = payload.get("usage") or {}
        set_attributes(
            self.span,
            {
                "gen_ai.usage.input_tokens": usage.get("input_tokens", 0),
                "gen_ai.usage.output_tokens": usage.get("output_tokens", 0),
                "gen_ai.provider.name": payload.get("provider"),
                "gen_ai.response.model": payload.get("model"),
                "folpipe.model_calls": payload.get("model_calls", 0),
                "folpipe.replayed_calls": payload.get("replayed_calls", 0),
                "folpipe.tool_calls": payload.get("tool_calls", 0),
                "folpipe.cost_usd": float(payload.get("cost") or 0.0),
            },
        )


def _parent(traceparent: str | None) -> Any:
    """The current context when it is in the run's trace (the Prefect task run's span, in the
    flow's process), else the run's ``traceparent`` (another process: a Dask worker)."""
    current = trace.get_current_span().get_span_context()
    remote = context_of(traceparent)
    if remote is None:
        return None
    run = trace.get_current_span(remote).get_span_context()
    return None if current.is_valid and current.trace_id == run.trace_id else remote


@contextmanager
def agent_span(
    tracer: Any,
    path: str,
    *,
    agent: bool,
    phase: str,
    iteration: Sequence[int],
    attempt: int,
    label: str,
    traceparent: str | None,
) -> Iterator[AgentTrace]:
    """One pass's span: ``invoke_agent`` for an agent task, ``run_task`` for hooks only."""
    operation = "invoke_agent" if agent else "run_task"
    attributes = {
        OPERATION: operation if agent else None,
        AGENT_NAME: (path or "root") if agent else None,
        "folpipe.task.path": path,
        "folpipe.task.label": label,
        "folpipe.pass": phase,
        "folpipe.iteration": list(iteration) or None,
        "folpipe.attempt": attempt,
    }
    parent = _parent(traceparent)
    name = f"{operation} {path or 'root'}"
    with open_span(tracer, name, attributes, context=parent) as span:
        token = PASS.set(PassInfo(path, phase, attempt, span))
        try:
            yield AgentTrace(span)
        finally:
            PASS.reset(token)
    if RUN.get() is None and setup.installed_here():  # another process than the run's
        setup.flush()


def restored(tracer: Any, path: str, label: str, phase: str) -> None:
    """A pass that did not run: its checkpoint answered it (a zero-length, marked span)."""
    attributes = {
        OPERATION: "invoke_agent",
        AGENT_NAME: path or "root",
        "folpipe.task.path": path,
        "folpipe.task.label": label,
        "folpipe.pass": phase,
        "folpipe.restored": True,
        "gen_ai.usage.input_tokens": 0,
        "gen_ai.usage.output_tokens": 0,
        "folpipe.cost_usd": 0.0,
    }
    with open_span(tracer, f"invoke_agent {path or 'root'}", attributes):
        pass
