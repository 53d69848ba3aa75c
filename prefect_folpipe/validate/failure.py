"""Task failure policy: `on_failure: use_default` and `default_output` go together."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ._common import at


def check_failure_policy(result: LoadResult) -> Iterator[Diagnostic]:
    """FP155 default_output without use_default; FP156 use_default without default_output;
    FP157 default_output keys that are not declared outputs (warning)."""
    for task in result.all_tasks():
        config = task.config
        if config.default_output is not None and config.on_failure != "use_default":
            yield at(
                result,
                task,
                "FP155",
                "`default_output` is used only with `on_failure: use_default`",
                ("default_output",),
                "add `on_failure: use_default`, or remove default_output",
            )
        if config.on_failure == "use_default" and config.default_output is None:
            yield at(
                result,
                task,
                "FP156",
                "`on_failure: use_default` needs `default_output`",
                ("on_failure",),
                "add the values to use, e.g. `default_output: {ok: false}`",
            )
        if config.default_output and config.output_keys:
            for key in config.default_output:
                if key not in config.output_keys:
                    yield at(
                        result,
                        task,
                        "FP157",
                        f"default_output key {key!r} is not a declared output",
                        ("default_output", key),
                        f"declared outputs: {', '.join(config.output_keys)}",
                        Severity.WARNING,
                    )
