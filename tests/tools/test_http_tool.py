"""http tools end to end: tools.md -> ToolSpec -> Toolbox -> a real server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from prefect_folpipe.loader.tools._toolsmd import parse_tools_md
from prefect_folpipe.providers import ToolCall
from prefect_folpipe.tools.http import is_public
from prefect_folpipe.tools.toolbox import Toolbox
from prefect_folpipe.workflow.config import TaskConfig
from prefect_folpipe.workflow.tree import EffectiveSettings, Task, Workflow

SECRET = "weather-secret-4242"


@pytest.fixture(scope="module")
def server() -> Iterator[HTTPServer]:
    srv = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def http(server: HTTPServer) -> Iterator[HTTPServer]:
    server.clear()
    yield server
    server.clear()


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_API_KEY", SECRET)


def toolbox(tmp_path: Path, tools_md: str, *, allow_private: bool = True) -> Toolbox:
    (tmp_path / "tools.md").write_text(tools_md)
    specs, diagnostics = parse_tools_md(tmp_path / "tools.md", owner="")
    assert not [d for d in diagnostics if d.severity == "error"], diagnostics
    task = Task(
        name="t",
        path="t",
        folder=tmp_path,
        config=TaskConfig(),
        settings=EffectiveSettings(allow_private_network=allow_private, tool_timeout=5.0),
        tools=tuple(specs),
    )
    root = Task(
        name="root",
        path="",
        folder=tmp_path,
        config=TaskConfig(),
        settings=EffectiveSettings(),
        children=(task,),
    )
    return Toolbox(task, Workflow(root=root, root_dir=tmp_path, name="wf"), {})


def weather_md(url: str, extra: str = "") -> str:
    return f"""## get_weather
> type: http
> method: GET
> url: {url}
> headers: {{"Authorization": "Bearer ${{WEATHER_API_KEY}}"}}
> env: [WEATHER_API_KEY]
{extra}
Get weather forecast for a location.

**Parameters:**
- location (str): City name or coordinates
- days (int, default=3): Forecast days
"""


async def call(box: Toolbox, name: str, **arguments: object):  # type: ignore[no-untyped-def]
    try:
        return await box.call(ToolCall("c1", name, arguments))
    finally:
        await box.aclose()


def _echo(request: Request) -> Response:
    body = {
        "path": request.path,
        "query": request.args.to_dict(flat=False),
        "authorization": request.headers.get("Authorization"),
        "json": request.get_json(silent=True),
        "method": request.method,
    }
    return Response(json.dumps(body), content_type="application/json")


async def test_get_with_query_defaults_and_allowed_header_secret(http, tmp_path: Path) -> None:
    http.expect_request("/v1/forecast").respond_with_handler(_echo)
    box = toolbox(tmp_path, weather_md(http.url_for("/v1/forecast")))
    result = await call(box, "get_weather", location="Paris")
    assert not result.is_error, result.content
    seen = json.loads(result.content)
    assert seen["query"] == {"location": ["Paris"], "days": ["3"]}
    assert seen["method"] == "GET"
    # the server got the real key; the model sees it redacted (the server echoed it back)
    assert seen["authorization"] == "Bearer [REDACTED]"
    assert SECRET not in result.content


async def test_post_sends_json_body_and_fills_the_path(http, tmp_path: Path) -> None:
    http.expect_request("/items/a b", method="POST").respond_with_handler(_echo)
    md = f"""## create_item
> type: http
> method: POST
> url: {http.url_for("/items")}/{{item_id}}
> query: [dry_run]

Create an item.

**Parameters:**
- item_id (str): id
- title (str): title
- dry_run (bool, default=false): only check
"""
    box = toolbox(tmp_path, md)
    result = await call(box, "create_item", item_id="a b", title="hello")
    assert not result.is_error, result.content
    seen = json.loads(result.content)
    assert seen["json"] == {"title": "hello"}
    assert seen["query"] == {"dry_run": ["false"]}


async def test_header_variable_must_be_allow_listed(http, tmp_path: Path) -> None:
    http.expect_request("/x").respond_with_handler(_echo)
    md = f"""## leak
> type: http
> url: {http.url_for("/x")}
> headers: {{"X-Key": "${{WEATHER_API_KEY}}"}}

Try to read a secret that is not allow-listed.
"""
    result = await call(toolbox(tmp_path, md), "leak")
    assert result.is_error
    assert "not in its `> env:` allow-list" in result.content
    assert SECRET not in result.content
    assert http.log == [], "no request was sent"


async def test_private_addresses_are_refused_without_opt_in(http, tmp_path: Path) -> None:
    http.expect_request("/v1/forecast").respond_with_handler(_echo)
    for url in (
        http.url_for("/v1/forecast"),
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/x",
        f"http://localhost:{http.port}/v1/forecast",
    ):
        box = toolbox(tmp_path, weather_md(url), allow_private=False)
        result = await call(box, "get_weather", location="Oslo")
        assert result.is_error, url
        assert "allow_private_network" in result.content
    assert http.log == []


def test_public_address_classification() -> None:
    assert is_public("93.184.216.34")
    assert is_public("2606:4700:4700::1111")
    for private in (
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "fd00::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "100.64.0.1",
        "224.0.0.1",
    ):
        assert not is_public(private), private


async def test_response_size_cap(http, tmp_path: Path) -> None:
    http.expect_request("/big").respond_with_data("x" * 5000)
    url = http.url_for("/big")
    box = toolbox(tmp_path, weather_md(url, "> max_bytes: 1000"))
    result = await call(box, "get_weather", location="x")
    assert result.is_error and "larger than 1,000 bytes" in result.content


async def test_size_cap_without_content_length(http, tmp_path: Path) -> None:
    def stream(request: Request) -> Response:
        return Response((b"y" * 500 for _ in range(10)), content_type="text/plain")

    http.expect_request("/stream").respond_with_handler(stream)
    box = toolbox(tmp_path, weather_md(http.url_for("/stream"), "> max_bytes: 2000"))
    result = await call(box, "get_weather", location="x")
    assert result.is_error and "larger than 2,000 bytes" in result.content


async def test_redirects_are_not_followed_by_default(http, tmp_path: Path) -> None:
    http.expect_request("/old").respond_with_data(
        "", status=302, headers={"Location": http.url_for("/new")}
    )
    http.expect_request("/new").respond_with_handler(_echo)
    result = await call(
        toolbox(tmp_path, weather_md(http.url_for("/old"))), "get_weather", location="x"
    )
    assert result.is_error and "not followed" in result.content
    box = toolbox(tmp_path, weather_md(http.url_for("/old"), "> follow_redirects: true"))
    followed = await call(box, "get_weather", location="x")
    assert not followed.is_error, followed.content
    seen = json.loads(followed.content)
    assert seen["path"] == "/new"
    assert seen["authorization"] == "Bearer [REDACTED]"  # same origin keeps its headers


async def test_server_errors_are_retried_and_client_errors_are_not(http, tmp_path: Path) -> None:
    attempts: list[float] = []

    def flaky(request: Request) -> Response:
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            return Response("busy", status=503)
        return Response("fine", content_type="text/plain")

    http.expect_request("/flaky").respond_with_handler(flaky)
    box = toolbox(tmp_path, weather_md(http.url_for("/flaky"), "> retries: 2"))
    result = await call(box, "get_weather", location="x")
    assert (result.is_error, result.content) == (False, "fine")
    assert len(attempts) == 2

    http.expect_request("/missing").respond_with_data("no such thing", status=404)
    box = toolbox(tmp_path, weather_md(http.url_for("/missing"), "> retries: 2"))
    result = await call(box, "get_weather", location="x")
    assert result.is_error and "HTTP 404" in result.content and "no such thing" in result.content
    assert len([e for e in http.log if e[0].path == "/missing"]) == 1


async def test_timeout(http, tmp_path: Path) -> None:
    def slow(request: Request) -> Response:
        time.sleep(1.0)
        return Response("late")

    http.expect_request("/slow").respond_with_handler(slow)
    box = toolbox(tmp_path, weather_md(http.url_for("/slow"), "> timeout: 0.3"))
    result = await call(box, "get_weather", location="x")
    assert result.is_error and "timed out" in result.content


async def test_missing_allowed_variable(http, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("WEATHER_API_KEY")
    result = await call(
        toolbox(tmp_path, weather_md(http.url_for("/x"))), "get_weather", location="x"
    )
    assert result.is_error and "WEATHER_API_KEY" in result.content and "not set" in result.content


async def test_non_http_scheme_is_refused(tmp_path: Path) -> None:
    result = await call(
        toolbox(tmp_path, weather_md("file:///etc/passwd")), "get_weather", location="x"
    )
    assert result.is_error and "only http and https" in result.content
