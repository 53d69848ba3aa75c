"""A tool's ``approval`` metadata (pure rules): parsing, prompts over ``args`` and
``context``, ``on_timeout`` against the form, the declined text, and the ``@tool`` option."""

from __future__ import annotations

import pytest

from prefect_folpipe import tool
from prefect_folpipe.authoring import tool_meta
from prefect_folpipe.loader.tools._defs import metadata_value
from prefect_folpipe.workflow.toolapproval import (
    approves,
    declined_text,
    parse_tool_approval,
    render_tool_prompt,
)


def test_true_false_and_words() -> None:
    assert parse_tool_approval(True).fields == {"approved": "bool"}  # type: ignore[union-attr]
    assert parse_tool_approval("yes") is not None
    assert parse_tool_approval(False) is None and parse_tool_approval(None) is None
    assert metadata_value("approval", "true") is True
    assert metadata_value("approval", "{timeout: 4h}") == {"timeout": "4h"}


def test_a_block_is_checked_and_its_default_fits_the_form() -> None:
    approval = parse_tool_approval(
        {
            "prompt": "Deploy {{ args.version }} for {{ context.team }}?",
            "input": {"approved": "bool", "reason": "str"},
            "timeout": "4h",
            "on_timeout": {"approved": "no", "note": "kept"},
        }
    )
    assert approval is not None and approval.timeout == 4 * 3600
    assert approval.on_timeout == {"approved": False, "reason": "", "note": "kept"}
    text = render_tool_prompt(approval, "deploy", {"version": "1.2"}, {"team": "ops"})
    assert text == "Deploy 1.2 for ops?"


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"prompt": "{{ args.__class__ }}"}, "prompt"),
        ({"prompt": "{{ os.system('x') }}"}, "prompt"),
        ({"input": {"approved": "boolean"}}, "input"),
        ({"timeout": "soon"}, "timeout"),
        ({"on_timeout": {"approved": False}}, "on_timeout"),
        ({"timeout": 5, "on_timeout": {"approved": "maybe"}}, "on_timeout"),
        ({"notify": 3}, "notify"),
        ({"notify": ["ok-hook", "Not A Block"]}, "notify"),
        ({"notify": []}, "notify"),
        ({"promt": "x"}, ""),
        (42, ""),
    ],
)
def test_a_bad_block_names_its_part(value: object, key: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_tool_approval(value)
    assert getattr(raised.value, "key", None) == key


def test_the_default_prompt_names_the_tool_and_its_arguments() -> None:
    approval = parse_tool_approval(True)
    assert approval is not None
    text = render_tool_prompt(approval, "pay", {"amount": 3, "to": "bob"}, {})
    assert text == 'Run tool \'pay\' with {"amount": 3, "to": "bob"}?'


def test_declined_text_and_what_approves() -> None:
    assert "Reason: freeze" in declined_text("deploy", {"approved": False, "reason": "freeze"})
    assert "Reason" not in declined_text("deploy", {"approved": False, "reason": " "})
    assert not approves({"approved": False}) and approves({"approved": True})
    assert not approves({"decision": "reject"}) and approves({"decision": "approve"})


def test_the_tool_decorator_option() -> None:
    @tool(approval={"prompt": "Pay {{ args.amount }}?"})
    def pay(amount: int) -> str:
        return "paid"

    meta = tool_meta(pay)
    assert meta is not None and meta.metadata()["approval"] == {"prompt": "Pay {{ args.amount }}?"}
    with pytest.raises(ValueError):
        tool(approval="sometimes")(pay)  # type: ignore[arg-type]


def test_notify_names_notification_blocks() -> None:
    approval = parse_tool_approval({"notify": "ops-hook"})
    assert approval is not None and approval.notify == ("ops-hook",)
    listed = parse_tool_approval({"notify": ["slack-webhook/ops", "ops-hook", "ops-hook"]})
    assert listed is not None and listed.notify == ("slack-webhook/ops", "ops-hook")
