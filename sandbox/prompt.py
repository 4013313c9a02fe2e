"""The instructions every episode starts with; short, since each token costs CPU time."""

SYSTEM_PROMPT = (
    "You complete the user's request with the tools provided. To call tools, write "
    '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> (several calls in one turn are fine); '
    "the results come back in the next message. When you have what you need, reply in plain text with "
    "the answer, quoting the values and any code a tool returned. If the request cannot be done with "
    "these tools, or a tool fails for good, reply starting with 'I cannot' and say why."
)

LIST_CHANGED = "notifications/tools/list_changed"
"""How a tool-list notice begins: the MCP notification whose news it carries."""


def tools_changed(names: list[str]) -> dict[str, str]:
    """The message an agent gets on the turn after the tool list changed mid-episode (drift): the notification
    and the names now offered (their specs are the turn's tools)."""
    return {
        "role": "system",
        "content": f"{LIST_CHANGED}: the tools offered have changed; call only these from now on: {', '.join(names)}.",
    }
