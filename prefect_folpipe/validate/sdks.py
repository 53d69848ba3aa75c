"""Optional SDKs the workflow needs and this interpreter cannot import: a warning, since the
folder may well run on a machine that has them (``folpipe run`` refuses with the same FP321)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic, Severity
from ..loader import LoadResult
from ..workflow.sdks import missing_sdks
from ._common import at


def check_installed_sdks(result: LoadResult) -> Iterator[Diagnostic]:
    """FP321 (warning) per missing SDK, at the provider block that needs it when there is one."""
    workflow = result.workflow
    if workflow is None:
        return
    for missing in missing_sdks(workflow):
        loc = ("providers", missing.provider) if missing.provider else ()
        yield at(
            result,
            workflow.root,
            "FP321",
            f"{missing.message} here (a run on this machine is refused)",
            loc,
            missing.install,
            Severity.WARNING,
        )
