"""Frozen pydantic models of ``task.yaml`` (docs/format.md), strict at every level.

Every model forbids unknown keys, so a typo is an error with a "did you mean" (the loader turns
pydantic's ``extra_forbidden`` into diagnostic FP103). Fields left out of a file stay unset
(``model_fields_set``), which is how the config cascade tells "not said" from "said null".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ExecutionType = Literal["parallel", "sequential", "graph", "loop", "priority_groups"]
OnError = Literal["fail", "continue", "ignore"]
OnFailure = Literal["fail", "skip", "use_default"]
OnMaxIterations = Literal["fail", "succeed_with_last"]
OutputType = Literal["str", "int", "float", "bool", "list", "dict"]
BranchAs = Literal["subflow", "task"]

OUTPUT_TYPES: tuple[str, ...] = ("str", "int", "float", "bool", "list", "dict")


NO_LIMIT = -1
"""``settings.timeout: -1``: run without a time limit."""


class StrictModel(BaseModel):
    """Base for task.yaml models: frozen, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class RateLimit(StrictModel):
    """Model-call throttle for a provider/model: requests per minute and concurrent calls."""

    requests_per_minute: float | None = Field(default=None, gt=0)
    max_concurrent: int | None = Field(default=None, ge=1)
    prefect_limit: str | None = None
    """Name of a Prefect global concurrency limit to hold around each call (strict)."""


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: Any) -> Any:
    """``"90s"``, ``"30m"``, ``"12h"``, ``"1d"``, ``"2w"`` or a number of seconds -> seconds
    (anything else is left for the field's own validation to reject)."""
    if isinstance(value, str):
        text = value.strip().lower()
        unit = DURATION_UNITS.get(text[-1:]) if text else None
        number = text[:-1] if unit else text
        try:
            return float(number) * (unit or 1)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a duration: use seconds or e.g. '30m', '12h', '1d'"
            ) from None
    return value


class CacheSettings(StrictModel):
    """``settings.cache`` as a mapping: checkpoints on, and how far they reach.

    Within one flow run's lineage (Prefect's task retries, the UI's Retry of a failed run,
    ``folpipe resume``) checkpoints are always reused. Across runs they are reused by local
    runs (``folpipe run`` again re-runs only what changed) and not by deployment runs
    (schedules, UI and API triggers re-run every task) unless ``across_runs`` says so.
    """

    across_runs: bool | None = None
    """Reuse checkpoints of earlier runs; unset: yes for local runs, no for deployment runs."""
    ttl: float | None = Field(default=None, gt=0)
    """How long a checkpoint is reused by later runs: seconds, or ``30m``, ``12h``, ``1d``."""

    @field_validator("ttl", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value)


class Settings(StrictModel):
    """Execution settings; cascade from the root down, child keys win."""

    max_retries: int | None = Field(default=None, ge=0)
    """Retries after the first attempt (Prefect ``retries``)."""
    retry_delay_seconds: float | list[float] | None = None
    """Delay before each retry; a number grows exponentially, a list is used as is."""
    timeout: float | None = None
    """Seconds per attempt; ``-1`` or ``null`` = no limit. For a loop: the whole loop."""

    @property
    def time_limit(self) -> float | None:
        """``timeout`` as a limit: ``None`` for no limit (``-1`` or unset)."""
        return None if self.timeout is None or self.timeout == NO_LIMIT else self.timeout

    parallel_workers: int | None = Field(default=None, ge=1)
    max_turns: int | None = Field(default=None, ge=1)
    output_retries: int | None = Field(default=None, ge=0)
    tool_result_max_chars: int | None = Field(default=None, ge=100)
    tool_timeout: float | None = Field(default=None, gt=0)
    tool_retries: int | None = Field(default=None, ge=0)
    branch_as: BranchAs | None = None
    token_budget: int | None = Field(default=None, ge=1)
    cost_budget: float | None = Field(default=None, gt=0)
    rate_limit: RateLimit | None = None
    task_runner: Literal["default", "dask"] | None = None
    dask_address: str | None = None
    cache: bool | CacheSettings | None = None
    """``false`` turns checkpoints off for this subtree; ``{across_runs, ttl}`` says how far
    they reach (see ``CacheSettings``)."""
    cache_expiration: float | None = Field(default=None, gt=0)
    """Seconds before a checkpoint stops being reused (``cache.ttl`` says it too)."""
    tags: list[str] | None = None
    """Extra Prefect tags for the task runs of this subtree."""


class AgentConfig(StrictModel):
    """Per-task provider override; deep-merged over the provider block."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    provider: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    base_url: str | None = None
    timeout: float | None = None


class ProviderConfig(StrictModel):
    """One named provider block of the root ``providers:`` mapping.

    Extra keys are kept for custom ``module:`` providers; the validator flags them as unknown
    for built-in providers.
    """

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    type: str | None = None
    module: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    base_url: str | None = None
    timeout: float | None = None
    api_key_env: str | None = None
    api_key_secret: str | None = None
    replies: str | None = None
    """scripted/replay: replies or cassette file, relative to the workflow root."""
    prompt_caching: bool | None = None
    json_mode: bool | None = None


class InputField(StrictModel):
    """One declared input: its type and what it means (the deployment form shows both)."""

    type: OutputType | None = None
    """``str|int|float|bool|list|dict``; unset: any JSON value."""
    description: str | None = None


InputKeys = list[str] | dict[str, OutputType | InputField | None]
"""Input keys: a list of names, or ``{name: type}`` / ``{name: {type, description}}``."""


class InputSpec(StrictModel):
    """Scoped input: the agent sees only these keys (plus ``_env``). On the root task they are
    the workflow's inputs: the parameters of its flow and deployments."""

    required: InputKeys = Field(default_factory=list)
    optional: InputKeys = Field(default_factory=list)

    def names(self) -> list[str]:
        """Required then optional keys, each once, in declaration order."""
        return list(dict.fromkeys([*self.required, *self.optional]))

    def field(self, key: str) -> InputField:
        """The declared type and description of ``key`` (empty for a plain name)."""
        for keys in (self.required, self.optional):
            if isinstance(keys, dict) and key in keys:
                value = keys[key]
                if isinstance(value, InputField):
                    return value
                return InputField(type=value)
        return InputField()


class SubtasksConfig(StrictModel):
    """How children run (docs/format.md, "Execution types")."""

    execution_type: ExecutionType = "parallel"
    order: list[str] | None = None
    on_error: OnError = "fail"
    until: str | dict[str, Any] | None = None
    max_iterations: int | None = Field(default=None, ge=1)
    iteration_timeout: float | None = Field(default=None, gt=0)
    on_max_iterations: OnMaxIterations = "fail"


class ToolsConfig(StrictModel):
    """Tool options of a task."""

    use_shared: list[str] = Field(default_factory=list)


class Conditions(StrictModel):
    """When to skip a task and which errors are worth retrying."""

    skip_if: str | dict[str, Any] | None = None
    retry_on: list[str] | None = None


class SecurityConfig(StrictModel):
    """Security opt-outs."""

    allow_sensitive_files: bool = False
    allow_private_network: bool = False
    """http tools: allow private / link-local / loopback addresses."""


class HttpHook(StrictModel):
    """A task.yaml ``hooks:`` entry (folpipe 0.1.8): POST the task's context to ``url``."""

    type: Literal["http"] = "http"
    url: str
    method: str = "POST"
    auth_env: str | None = None
    """Environment variable whose value is sent as ``Authorization: Bearer <value>``."""
    timeout: float = Field(default=10.0, gt=0)


class HooksConfig(StrictModel):
    """task.yaml ``hooks:``; a ``hooks/<stage>.py`` or ``.sh`` file of the task wins."""

    pre_run: HttpHook | None = None
    post_run: HttpHook | None = None


class McpServer(StrictModel):
    """An MCP server the workflow's mcp tools talk to (root task.yaml only)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None


class Schedule(StrictModel):
    """A deployment schedule: exactly one of cron, interval, rrule."""

    cron: str | None = None
    interval: float | None = Field(default=None, gt=0)
    rrule: str | None = None
    timezone: str | None = None


class ApprovalConfig(StrictModel):
    """A human approval gate: the run waits for an answer before the task runs (the answer
    merges into the context; see ``workflow.approval``)."""

    prompt: str = Field(min_length=1)
    """Shown in the Prefect UI and the terminal; ``{{ context.key }}`` is substituted."""
    input: dict[str, OutputType | list[str]] = Field(default_factory=lambda: {"approved": "bool"})
    """The answer's keys and types (all required); a list is a set of choices."""
    timeout: str | float | None = None
    """``72h``, ``30m``, ``2d`` or seconds; then the task's ``on_failure`` applies."""
    on_timeout: dict[str, Any] | None = None
    """The answer the gate takes by itself when ``timeout`` passes (recorded as defaulted)."""
    notify: Any = None
    """The Prefect notification blocks told when the gate starts waiting in a deployment's run
    (a block name, ``slug/name``, or a list; checked by ``validate``, FP409); a local run
    prints the message."""


class DeployConfig(StrictModel):
    """Deployment defaults declared in the root task.yaml."""

    name: str | None = None
    schedule: Schedule | None = None
    work_pool: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class TaskConfig(StrictModel):
    """Everything a ``task.yaml`` (or SKILL.md front-matter) may say."""

    schema_: str | None = Field(default=None, alias="$schema")
    name: str | None = None
    description: str | None = None
    priority: int | None = None
    enabled: bool = True
    settings: Settings = Field(default_factory=Settings)
    agent: AgentConfig | None = None
    providers: dict[str, ProviderConfig | str] | None = None
    """``default: <name>`` plus named provider blocks (root task)."""
    input: InputSpec | None = None
    output: list[str] | dict[str, OutputType | None] | None = None
    subtasks: SubtasksConfig | None = None
    depends_on: list[str] = Field(default_factory=list)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    inherit_tools: bool | list[str] = True
    exclude_tools: list[str] = Field(default_factory=list)
    block_tools: list[str] = Field(default_factory=list)
    inherit_tools_depth: int = Field(default=-1, ge=-1)
    conditions: Conditions = Field(default_factory=Conditions)
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    context: dict[str, Any] = Field(default_factory=dict)
    dependencies: list[str] = Field(default_factory=list)
    on_failure: OnFailure = "fail"
    default_output: dict[str, Any] | None = None
    hooks: HooksConfig | None = None
    approval: ApprovalConfig | None = None
    """Wait for a person's answer before the task runs (Prefect UI, terminal, --approve)."""
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    pricing: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Price table override: ``{model: {input_per_mtok, output_per_mtok}}``."""
    deploy: DeployConfig | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("providers")
    @classmethod
    def _default_is_a_name(
        cls, value: dict[str, ProviderConfig | str] | None
    ) -> dict[str, ProviderConfig | str] | None:
        if value is None:
            return value
        for key, block in value.items():
            if isinstance(block, str) and key != "default":
                raise ValueError(f"provider {key!r} must be a mapping (only 'default' is a name)")
        return value

    @property
    def output_keys(self) -> tuple[str, ...]:
        """Declared output keys in declaration order (empty when none declared)."""
        if self.output is None:
            return ()
        return tuple(self.output)

    @property
    def output_types(self) -> dict[str, str | None]:
        """Declared output keys mapped to their type (``None`` = untyped)."""
        if self.output is None:
            return {}
        if isinstance(self.output, list):
            return dict.fromkeys(self.output)
        return dict(self.output)


def task_yaml_json_schema() -> dict[str, Any]:
    """The JSON Schema of task.yaml, for editors (``folpipe schema``)."""
    schema = TaskConfig.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "folpipe task.yaml"
    return schema
