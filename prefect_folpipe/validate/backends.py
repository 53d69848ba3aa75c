"""Real backends, checked before a run: http tool secrets, MCP servers, prices, cost budgets.

Pure checks over the loaded tree (no network, no processes): an http tool that reads a
variable it did not allow-list, an mcp tool whose server is not declared, a malformed
``pricing:`` entry, or a ``cost_budget`` over a model without a price.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import ConfigError, Diagnostic
from ..loader import LoadResult
from ..workflow.pricing import PriceTable, unpriced_budgets
from ..workflow.toolmeta import ENV_REFERENCE, allow_list
from ..workflow.tree import Task, ToolSpec, Workflow
from ._common import at


def check_backends(result: LoadResult) -> Iterator[Diagnostic]:
    """FP241 / FP245 http tools, FP250 mcp servers, FP331 pricing, FP332 unpriced budgets."""
    workflow = result.workflow
    if workflow is None:
        return
    yield from _check_mcp_servers(result, workflow.root)
    for spec in _declared_tools(result, workflow):
        if spec.kind == "http":
            yield from _check_http(spec)
        elif spec.kind == "mcp":
            yield from _check_mcp_tool(spec, workflow)
    prices = yield from _check_pricing(result, workflow.root)
    if prices is not None:
        yield from _check_cost_budgets(result, workflow, prices)


def _declared_tools(result: LoadResult, workflow: Workflow) -> Iterator[ToolSpec]:
    seen: set[tuple[str, str]] = set()
    specs = [*workflow.shared_tools]
    for task in result.all_tasks():
        specs.extend(task.own_tools)
    for spec in specs:
        key = (spec.source_file, spec.name)
        if key not in seen:
            seen.add(key)
            yield spec


def _tool_diagnostic(spec: ToolSpec, code: str, message: str, hint: str) -> Diagnostic:
    return Diagnostic(code, message, spec.source_file, spec.line, spec.owner or None, hint)


def _check_http(spec: ToolSpec) -> Iterator[Diagnostic]:
    meta = spec.metadata
    allowed = allow_list(meta.get("env"))
    texts = [str(meta.get("url", "")), *map(str, dict(meta.get("headers") or {}).values())]
    for name in sorted({m.group(1) for text in texts for m in ENV_REFERENCE.finditer(text)}):
        if name not in allowed:
            yield _tool_diagnostic(
                spec,
                "FP241",
                f"http tool {spec.name!r} uses ${{{name}}} but {name} is not in its "
                "`> env:` allow-list",
                f"add `> env: [{name}]` to the tool's metadata",
            )
    url = ENV_REFERENCE.sub("x", str(meta.get("url", "")))
    if url and not url.lower().startswith(("http://", "https://")):
        yield _tool_diagnostic(
            spec,
            "FP245",
            f"http tool {spec.name!r}: url must start with http:// or https://",
            "write the full URL, e.g. https://api.example.com/v1/...",
        )


def _check_mcp_tool(spec: ToolSpec, workflow: Workflow) -> Iterator[Diagnostic]:
    server = str(spec.metadata.get("server", ""))
    servers = workflow.root.config.mcp_servers
    if server and server not in servers:
        declared = ", ".join(sorted(servers)) or "none"
        yield _tool_diagnostic(
            spec,
            "FP250",
            f"mcp tool {spec.name!r} uses server {server!r}, which is not declared in the root "
            f"task.yaml `mcp_servers:` (declared: {declared})",
            f"add `mcp_servers: {{{server}: {{command: ..., args: [...]}}}}` to the root task.yaml",
        )


def _check_mcp_servers(result: LoadResult, root: Task) -> Iterator[Diagnostic]:
    for name, server in root.config.mcp_servers.items():
        if bool(server.command) == bool(server.url):
            yield at(
                result,
                root,
                "FP250",
                f"mcp server {name!r} needs exactly one of `command` (stdio) or `url`",
                ("mcp_servers", name),
                "e.g. `{command: python, args: [server.py]}` or `{url: https://.../mcp}`",
            )


def _check_pricing(result: LoadResult, root: Task) -> Iterator[Diagnostic]:
    """Yield FP331 for a bad entry; return the price table when it is valid."""
    try:
        return PriceTable(root.config.pricing)
    except ConfigError as exc:
        yield at(result, root, "FP331", str(exc), ("pricing",), exc.hint)
        return None


def _check_cost_budgets(
    result: LoadResult, workflow: Workflow, prices: PriceTable
) -> Iterator[Diagnostic]:
    reported: set[tuple[str, str | None]] = set()
    for budgeted, task in unpriced_budgets(workflow, prices):
        model = task.provider.model if task.provider else None
        if (budgeted.path, model) in reported:
            continue
        reported.add((budgeted.path, model))
        yield at(
            result,
            budgeted,
            "FP332",
            f"`cost_budget` covers task {task.path or '<root>'!r}, whose model "
            f"{model!r} has no price, so the budget could never trigger",
            ("settings", "cost_budget"),
            f"add `pricing: {{{model}: {{input_per_mtok: N, output_per_mtok: N}}}}` "
            "to the root task.yaml",
        )
