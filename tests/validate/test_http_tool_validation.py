"""Validation of real tool backends (http, mcp) and of prices/budgets, from folders on disk."""

from __future__ import annotations

from pathlib import Path

from prefect_folpipe.validate import validate_workflow

ROOT_YAML = """name: wf
providers:
  default: claude
  claude: {{model: {model}, api_key_env: ANTHROPIC_API_KEY}}
{extra}
"""
TOOLS_MD = """## get_weather
> type: http
> url: https://api.weather.example/v1/forecast
> headers: {"Authorization": "Bearer ${WEATHER_API_KEY}", "X-Other": "${OTHER_SECRET}"}
> env: [WEATHER_API_KEY]

Weather.

## local_file
> type: http
> url: ftp://files.example/x

Not http.

## notify
> type: mcp
> server: slack

Notify.
"""


def workflow(
    tmp_path: Path, *, model: str = "claude-sonnet-4-5", extra: str = "", tools: str = ""
) -> Path:
    (tmp_path / "task.yaml").write_text(ROOT_YAML.format(model=model, extra=extra))
    (tmp_path / "instructions.md").write_text("Do the thing.\n")
    if tools:
        (tmp_path / "tools.md").write_text(tools)
    return tmp_path


def codes(path: Path) -> dict[str, list]:
    found: dict[str, list] = {}
    for diagnostic in validate_workflow(path):
        found.setdefault(diagnostic.code, []).append(diagnostic)
    return found


def test_http_and_mcp_tool_problems_are_located(tmp_path: Path) -> None:
    found = codes(workflow(tmp_path, tools=TOOLS_MD))
    [secret] = found["FP241"]
    assert "OTHER_SECRET" in secret.message and "WEATHER_API_KEY" not in secret.message
    assert secret.file and secret.file.endswith("tools.md") and secret.line == 1
    assert "> env: [OTHER_SECRET]" in (secret.hint or "")
    [scheme] = found["FP245"]
    assert "local_file" in scheme.message
    [server] = found["FP250"]
    assert "'slack'" in server.message and server.line == 15


def test_declared_mcp_server_is_fine_and_bad_entries_are_reported(tmp_path: Path) -> None:
    extra = "mcp_servers:\n  slack: {url: 'https://mcp.example/slack'}\n  broken: {args: [x]}\n"
    found = codes(workflow(tmp_path, extra=extra, tools=TOOLS_MD))
    [broken] = found["FP250"]
    assert "'broken'" in broken.message and broken.file.endswith("task.yaml")
    assert broken.line == 7


def test_pricing_and_cost_budget(tmp_path: Path) -> None:
    extra = "settings: {cost_budget: 1.0}\n"
    found = codes(workflow(tmp_path, model="my-finetune", extra=extra))
    [unpriced] = found["FP332"]
    assert "my-finetune" in unpriced.message and unpriced.line == 5

    priced = "pricing:\n  my-finetune: {input_per_mtok: 1, output_per_mtok: 2}\n" + extra
    assert "FP332" not in codes(workflow(tmp_path, model="my-finetune", extra=priced))

    bad = "pricing:\n  my-finetune: {input: 1}\n"
    [malformed] = codes(workflow(tmp_path, extra=bad))["FP331"]
    assert malformed.line == 5


def test_known_models_need_no_pricing(tmp_path: Path) -> None:
    found = codes(workflow(tmp_path, extra="settings: {cost_budget: 1.0}\n"))
    assert not {"FP331", "FP332", "FP241", "FP250"} & set(found)
