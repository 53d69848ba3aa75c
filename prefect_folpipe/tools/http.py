"""``http`` tools: one HTTP request per call, declared in tools.md metadata.

~~~markdown
## get_weather
> type: http
> method: GET
> url: https://api.weather.example/v1/forecast/{location}
> headers: {"Authorization": "Bearer ${WEATHER_API_KEY}"}
> env: [WEATHER_API_KEY]
> timeout: 10
> max_bytes: 200000

Get the weather forecast for a location.

**Parameters:**
- location (str): City name
- days (int, default=3): Forecast days
~~~

* ``{name}`` in the url takes that argument (URL-encoded); the other arguments go to the
  query string for GET / DELETE / HEAD and to a JSON body for POST / PUT / PATCH.
  ``> query: [a, b]`` sends the listed arguments in the query string whatever the method.
* ``${VAR}`` in ``url`` and ``headers`` is replaced by the environment variable ``VAR`` only
  when ``VAR`` is listed in ``> env:`` (the allow-list); anything else is an error, so a
  tools.md cannot read arbitrary secrets. Values never appear in errors or logs, and the tool
  runtime redacts them from responses.
* Responses larger than ``max_bytes`` (default 1 MB) are refused; redirects are not followed
  unless ``> follow_redirects: true`` (each hop is checked like the first request).
* Hosts resolving to private, loopback, link-local or otherwise non-public addresses are
  refused unless the task sets ``security: {allow_private_network: true}``. Every address the
  name resolves to is checked.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import httpx

from ..authoring import ToolContext
from ..errors import SandboxViolation
from ..workflow.toolmeta import ENV_REFERENCE, allow_list, meta_names
from ..workflow.tree import ToolSpec
from .toolbox import CodedToolError, register_runner

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_TIMEOUT = 30.0
MAX_REDIRECTS = 5
QUERY_METHODS = frozenset({"GET", "DELETE", "HEAD"})
PATH_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
CLIENT_KEY = "http_tool_client"
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class HttpToolError(CodedToolError):
    """An http tool call failed; ``retryable`` for time-outs, 429 and 5xx answers."""


class PrivateAddressRefused(SandboxViolation):
    """The URL's host resolves to an address the task may not reach."""

    code = "FP240"


async def run_http_tool(spec: ToolSpec, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
    """Send the tool's request with ``arguments``; the parsed JSON (or text) of the answer."""
    meta = spec.metadata
    method = str(meta.get("method", "GET")).upper()
    allowed = allow_list(meta.get("env"))
    values = {**_defaults(spec.parameters), **dict(arguments)}
    url = substitute_env(str(meta["url"]), allowed, spec.name)
    url, values = fill_path(url, values)
    headers = {
        name: substitute_env(str(value), allowed, spec.name)
        for name, value in dict(meta.get("headers") or {}).items()
    }
    query_names = set(meta_names(meta.get("query")))
    in_query = {k: v for k, v in values.items() if method in QUERY_METHODS or k in query_names}
    body = {k: v for k, v in values.items() if k not in in_query}
    request = _client(ctx).build_request(
        method,
        url,
        params=_query_params(in_query),
        headers=headers,
        json=body if body else None,
        timeout=float(meta.get("timeout") or _tool_timeout(ctx)),
    )
    response = await _send(request, spec, ctx)
    return decode(response, spec.name)


def substitute_env(text: str, allowed: frozenset[str], tool: str) -> str:
    """Replace ``${VAR}`` by the environment value, only for allow-listed names."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in allowed:
            raise HttpToolError(
                f"http tool {tool!r} uses ${{{name}}} but {name} is not in its `> env:` "
                f"allow-list (add `> env: [{name}]`)",
                code="FP241",
            )
        found = os.environ.get(name)
        if found is None:
            raise HttpToolError(
                f"http tool {tool!r} needs the environment variable {name}, which is not set",
                code="FP241",
            )
        return found

    return ENV_REFERENCE.sub(value, text)


def fill_path(url: str, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Put ``{name}`` arguments into the URL (encoded); return the URL and the rest."""
    rest = dict(values)

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in rest:
            return match.group(0)
        return urllib.parse.quote(str(rest.pop(name)), safe="")

    return PATH_PARAMETER.sub(value, url), rest


async def check_destination(url: httpx.URL, *, allow_private: bool) -> None:
    """Refuse non-http(s) URLs, and hosts with any non-public address unless allowed."""
    if url.scheme not in ("http", "https"):
        raise HttpToolError(
            f"only http and https URLs are allowed, not {url.scheme!r}", code="FP245"
        )
    if allow_private:
        return
    host = url.host
    port = url.port or (443 if url.scheme == "https" else 80)
    for address in await resolve(host, port):
        if not is_public(address):
            raise PrivateAddressRefused(
                f"{host} resolves to {address}, a private / loopback / link-local address; "
                "set `security: {allow_private_network: true}` in the task.yaml to allow it"
            )


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself)."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=0)
    except OSError as exc:
        raise HttpToolError(
            f"cannot resolve host {host!r}: {exc}", code="FP244", retryable=True
        ) from None
    return sorted({str(info[4][0]).split("%")[0] for info in infos})


def is_public(address: str) -> bool:
    """Whether an IP address is globally routable (not private, loopback, link-local...)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def _send(request: httpx.Request, spec: ToolSpec, ctx: ToolContext) -> httpx.Response:
    """Send, following redirects only when allowed, and checking every hop."""
    follow = _flag(spec.metadata.get("follow_redirects"))
    allow_private = bool(ctx.settings and ctx.settings.allow_private_network)
    limit = int(spec.metadata.get("max_bytes") or DEFAULT_MAX_BYTES)
    client = _client(ctx)
    for _hop in range(MAX_REDIRECTS + 1):
        await check_destination(request.url, allow_private=allow_private)
        response = await _fetch(client, request, limit, spec.name)
        if not response.is_redirect:
            return _checked(response, spec.name)
        target = response.headers.get("location", "")
        if not follow:
            raise HttpToolError(
                f"http tool {spec.name!r} got a redirect (HTTP {response.status_code}) to "
                f"{target!r}, not followed (set `> follow_redirects: true`)",
                code="FP246",
            )
        request = _redirected(request, response)
    raise HttpToolError(f"http tool {spec.name!r}: too many redirects", code="FP246")


async def _fetch(
    client: httpx.AsyncClient, request: httpx.Request, limit: int, tool: str
) -> httpx.Response:
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException:
        raise HttpToolError(
            f"http tool {tool!r}: request to {request.url.host} timed out",
            code="FP244",
            retryable=True,
        ) from None
    except httpx.TransportError as exc:
        raise HttpToolError(
            f"http tool {tool!r}: cannot reach {request.url.host}: {type(exc).__name__}",
            code="FP244",
            retryable=True,
        ) from None
    try:
        declared = int(response.headers.get("content-length", "0") or 0)
        if declared > limit:
            raise _too_large(tool, limit)
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > limit:
                raise _too_large(tool, limit)
    finally:
        await response.aclose()
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=bytes(body), request=request
    )


def _too_large(tool: str, limit: int) -> HttpToolError:
    return HttpToolError(
        f"http tool {tool!r}: the response is larger than {limit:,} bytes (raise `> max_bytes:`)",
        code="FP242",
    )


def _checked(response: httpx.Response, tool: str) -> httpx.Response:
    if response.status_code < 400:
        return response
    snippet = " ".join(response.text.split())[:500]
    raise HttpToolError(
        f"http tool {tool!r}: HTTP {response.status_code} {response.reason_phrase}: {snippet}",
        code="FP243",
        retryable=response.status_code in RETRYABLE_STATUSES,
    )


def _redirected(request: httpx.Request, response: httpx.Response) -> httpx.Request:
    target = request.url.join(response.headers.get("location", ""))
    method = request.method
    if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
        method = "GET"
    same_origin = (target.scheme, target.host, target.port) == (
        request.url.scheme,
        request.url.host,
        request.url.port,
    )
    headers = dict(request.headers) if same_origin else {}  # no credentials to other hosts
    headers.pop("host", None)
    content = request.content if method == request.method else None
    if content is None:
        headers.pop("content-length", None)
        headers.pop("content-type", None)
    return httpx.Request(
        method,
        target,
        headers=headers,
        content=content,
        extensions=request.extensions,
    )


def decode(response: httpx.Response, tool: str) -> Any:
    """The answer's JSON when it is JSON, else its text."""
    kind = response.headers.get("content-type", "")
    if "json" in kind:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
    return response.text


def _client(ctx: ToolContext) -> httpx.AsyncClient:
    client = ctx.resources.get(CLIENT_KEY)
    if client is None:
        client = httpx.AsyncClient(follow_redirects=False, timeout=DEFAULT_TIMEOUT)
        ctx.resources[CLIENT_KEY] = client
        ctx.on_close(client.aclose)
    return client


def _tool_timeout(ctx: ToolContext) -> float:
    return ctx.settings.tool_timeout if ctx.settings else DEFAULT_TIMEOUT


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def _defaults(parameters: Mapping[str, Any]) -> dict[str, Any]:
    properties = parameters.get("properties") or {}
    return {
        name: schema["default"]
        for name, schema in properties.items()
        if isinstance(schema, Mapping) and "default" in schema
    }


def _query_params(values: Mapping[str, Any]) -> dict[str, Any]:
    """Query values as strings (lists repeat the key; dicts/bools as JSON)."""
    params: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, list):
            params[name] = [_query_value(v) for v in value]
        else:
            params[name] = _query_value(value)
    return params


def _query_value(value: Any) -> str:
    if isinstance(value, bool | dict | list):
        return json.dumps(value)
    return str(value)


register_runner("http", run_http_tool)
