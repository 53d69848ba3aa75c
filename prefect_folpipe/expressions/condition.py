"""A compiled condition and the error every expression problem raises."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FolpipeError


class ExpressionError(FolpipeError):
    """An expression or structured condition that cannot be compiled or evaluated.

    ``code`` is FP130 (unparsable), FP131 (unsafe), FP132 (failed while evaluating) or FP133
    (a constant part exceeds the evaluation bounds).
    """

    code = "FP130"


@dataclass(frozen=True)
class Condition:
    """A compiled condition; :meth:`evaluate` answers it against a context."""

    source: str | Mapping[str, Any]
    _check: Callable[[Mapping[str, Any]], Any]

    def evaluate(self, context: Mapping[str, Any], *, timeout: float | None = None) -> bool:
        """Truth of the condition for ``context``; ExpressionError (FP132) if it cannot say,
        or if it runs past ``timeout`` seconds (at most ``bounds.MAX_SECONDS``)."""
        token = CONDITION_TIMEOUT.set(timeout)
        try:
            return bool(self._check(context))
        except ExpressionError:
            raise
        except Exception as exc:  # any evaluation failure is the author's
            raise ExpressionError(
                f"condition {shown(self.source)} failed: {type(exc).__name__}: {exc}",
                code="FP132",
                hint="guard missing values, e.g. `(context.x or 0) > 3`; keep numbers and "
                "sequences small",
            ) from None
        finally:
            CONDITION_TIMEOUT.reset(token)


CONDITION_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "folpipe_condition_timeout", default=None
)


def shown(source: str | Mapping[str, Any], limit: int = 200) -> str:
    text = repr(source)
    return text if len(text) <= limit else text[: limit - 3] + "..."
