"""OpenTelemetry spans of a run, in the GenAI semantic conventions (optional).

The tree of one run, in one trace (``docs/observability.md`` lists every attribute)::

    invoke_workflow <workflow>            the run, with its totals
      [Prefect task run]                  when Prefect emits its own spans
        invoke_agent <task path>          one agent pass (``run_task`` without an agent)
          chat <model>                    one model call (replayed ones marked)
          execute_tool <tool>             one tool call
          hook pre_run / post_run
      approval <task>                     an approval gate
      invoke_agent <task path>            a pass restored from its checkpoint (marked)

Tracing is on when a tracer provider is configured in the process, or when an OTLP endpoint
variable asks for export (``setup``). Otherwise every function here returns a no-op and this
package imports no OpenTelemetry module: the spans inside a pass read one context variable.
The run's trace context travels as a W3C ``traceparent`` string (plain data) to the leaf
tasks, so a pass on another process (a Dask worker) continues the run's trace.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from . import setup
from .setup import export_requested, flush, prepare
from .state import PASS, RUN

__all__ = [
    "agent_span",
    "approval_span",
    "chat_span",
    "export_requested",
    "flush",
    "hook_span",
    "prepare",
    "restored",
    "run_span",
    "tool_span",
]


class _Nothing:
    """What a span helper returns when tracing is off: every method does nothing."""

    traceparent: str | None = None

    def __getattr__(self, name: str) -> Any:
        return _ignore


def _ignore(*_args: Any, **_kwargs: Any) -> None:
    return None


NOTHING = _Nothing()
_OFF: AbstractContextManager[Any] = nullcontext(NOTHING)


def run_span(
    workflow: str,
    *,
    labels: MutableMapping[str, Any] | None = None,
    resumes: str | None = None,
    lineage: str | None = None,
) -> AbstractContextManager[Any]:
    """The run's ``invoke_workflow`` span (``.traceparent``, ``.finish(status, rows, cost)``).

    ``labels``: the flow run's labels, where Prefect reads the parent of the task runs it
    starts; ``resumes``: the traceparent of the run this one resumes (a span link)."""
    tracer = setup.tracer()
    if tracer is None:
        return _OFF
    from .spans import run_span as traced

    return traced(tracer, workflow, labels=labels, resumes=resumes, lineage=lineage)


def agent_span(
    path: str,
    *,
    agent: bool,
    phase: str,
    iteration: Sequence[int] | None,
    attempt: int,
    label: str,
    traceparent: str | None,
) -> AbstractContextManager[Any]:
    """One pass's span (``.finish(payload)``); off unless the run is traced (``traceparent``)."""
    if traceparent is None:
        return _OFF
    tracer = setup.tracer()
    if tracer is None:
        return _OFF
    from .spans import agent_span as traced

    return traced(
        tracer,
        path,
        agent=agent,
        phase=phase,
        iteration=tuple(iteration or ()),
        attempt=attempt,
        label=label,
        traceparent=traceparent,
    )


def chat_span(provider: str, request: Any, convo: Any) -> AbstractContextManager[Any]:
    """One model call's ``chat`` span (``.answered(response)``), inside a traced pass."""
    info = PASS.get()
    tracer = setup.tracer() if info is not None else None
    if info is None or tracer is None:
        return _OFF
    from .calls import chat_span as traced

    return traced(tracer, info, provider, request, convo)


def tool_span(
    call: Any, kind: str | None, *, replayed: bool = False
) -> AbstractContextManager[Any]:
    """One tool call's ``execute_tool`` span (``.done(...)``), inside a traced pass."""
    info = PASS.get()
    tracer = setup.tracer() if info is not None else None
    if info is None or tracer is None:
        return _OFF
    from .calls import tool_span as traced

    return traced(tracer, info, call, kind, replayed=replayed)


def hook_span(stage: str, kind: str) -> AbstractContextManager[Any]:
    """A hook's span, inside a traced pass."""
    info = PASS.get()
    tracer = setup.tracer() if info is not None else None
    if info is None or tracer is None:
        return _OFF
    from .calls import hook_span as traced

    return traced(tracer, info, stage, kind)


def approval_span(path: str, label: str) -> AbstractContextManager[Any]:
    """An approval gate's span (``.answered(source)``), inside a traced run."""
    tracer = setup.tracer() if RUN.get() is not None else None
    if tracer is None:
        return _OFF
    from .calls import approval_span as traced

    return traced(tracer, path, label)


def restored(path: str, label: str, phase: str) -> None:
    """A pass answered by its checkpoint: a zero-length ``invoke_agent`` span, marked."""
    tracer = setup.tracer() if RUN.get() is not None else None
    if tracer is not None:
        from .spans import restored as traced

        traced(tracer, path, label, phase)
