"""Typed model of the folder format: task.yaml config and the loaded task tree (no Prefect)."""

from .config import (
    OUTPUT_TYPES,
    AgentConfig,
    Conditions,
    DeployConfig,
    InputSpec,
    McpServer,
    ProviderConfig,
    RateLimit,
    Schedule,
    SecurityConfig,
    Settings,
    SubtasksConfig,
    TaskConfig,
    ToolsConfig,
    task_yaml_json_schema,
)
from .tree import EffectiveSettings, ResolvedProvider, Task, ToolSpec, Workflow

__all__ = [
    "OUTPUT_TYPES",
    "AgentConfig",
    "Conditions",
    "DeployConfig",
    "EffectiveSettings",
    "InputSpec",
    "McpServer",
    "ProviderConfig",
    "RateLimit",
    "ResolvedProvider",
    "Schedule",
    "SecurityConfig",
    "Settings",
    "SubtasksConfig",
    "Task",
    "TaskConfig",
    "ToolSpec",
    "ToolsConfig",
    "Workflow",
    "task_yaml_json_schema",
]
