"""The plan of a run (Prefect-free): how a loaded workflow runs, as a frozen, printable value.

Built once per run from a loaded workflow; ``compile`` builds Prefect objects from it and
``folpipe plan`` / ``tree`` / ``graph`` print it. Also here: checkpoint keys and their
manifests, the checkpoint scope of a run, context rules, run-time failures, previews and views.
"""

from __future__ import annotations

from ._keys import cache_key, task_identity
from ._manifest import key_parts, write_manifest
from ._nodes import DaskPlan, NodePlan
from ._plan import Plan, build_plan
from ._preview import Settings, preview
from ._scope import CheckpointScope, describe
from ._views import graph_to_dict, tool_origin, tree_to_dict

__all__ = [
    "CheckpointScope",
    "DaskPlan",
    "NodePlan",
    "Plan",
    "Settings",
    "build_plan",
    "cache_key",
    "describe",
    "graph_to_dict",
    "key_parts",
    "preview",
    "task_identity",
    "tool_origin",
    "tree_to_dict",
    "write_manifest",
]
