"""``release_diff``: a user's own release, read off two ``tools/list`` snapshots, applied to the world.

The spec holds the release (:func:`~sandbox.perturbations.evolution.snapshot.derive`) as canonical JSON. The agent
sees the new surface: each changed tool under its new name, description and input schema, removed tools gone,
added tools listed (a call to one fails for good: the world runs the old release). A call is translated back to
the old release (parameters renamed back, parameters the release added dropped) after the new schema's required
parameters are checked; result fields the release renamed (where the snapshots give ``outputSchema``) are renamed
on the way back. A task the release broke for every agent (a tool it needs removed, an argument it needs no
longer taken, a new required parameter whose value nothing documents) is a case to refuse.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from pydantic import field_validator

from sandbox.domains import domain_of
from sandbox.identifiers import rename_keys
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import Route, ToolSpec, ToolsWrapper, failure, on
from sandbox.task import Task
from sandbox.tools import ToolResult


def _function(name: str, description: str, schema: dict[str, Any]) -> ToolSpec:
    parameters = schema if schema.get("type") == "object" else {"type": "object", "properties": {}, **schema}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def learnable(prop: dict[str, Any]) -> bool:
    """Whether an agent can learn a new required parameter's value from its schema: one enum value, a const or a
    default."""
    return len(prop.get("enum") or ()) == 1 or "const" in prop or "default" in prop


class _Release(ToolsWrapper):
    spec: ReleaseDiff
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        release = self.spec.data
        changes, removed = release.get("tools", {}), set(release.get("removed", ()))
        routes, taken = [], set()
        for spec in specs:
            name = spec["function"]["name"]
            change = changes.get(name)
            if name in removed:
                continue
            if not change:
                routes.append(Route(spec, target=name))
            else:
                description = change["description"]
                if change.get("fields"):  # as the new outputSchema documents them, in the notes the oracle reads
                    pairs = ", ".join(f"{old} → {new}" for old, new in change["fields"].items())
                    description = f"{description} {vocab.FIELD_NOTES['eval'][0].format(pairs=pairs)}".strip()
                visible = _function(change["to"], description, change["input"])
                routes.append(Route(visible, target=name, handler=on(self._call, name, change)))
            taken.add(routes[-1].spec["function"]["name"])
        for tool in release.get("added", ()):
            if tool["name"] not in taken:
                visible = _function(tool["name"], tool["description"], tool["inputSchema"])
                routes.append(Route(visible, handler=on(self._added, tool["name"])))
        return routes

    def _call(self, arguments: Any, target: str, change: dict[str, Any]) -> ToolResult:
        if isinstance(arguments, dict):
            schema = change["input"]
            props = schema.get("properties") or {}
            missing = [p for p in schema.get("required", ()) if p not in arguments]
            if missing:
                return failure(target, "invalid_arguments", f"missing required argument '{missing[0]}'")
            for key, value in arguments.items():
                if props and key not in props:
                    return failure(target, "invalid_arguments", f"unexpected argument '{key}'")
                allowed = props.get(key, {}).get("enum")
                if key in change["added"] and allowed and value not in allowed:
                    return failure(target, "invalid_arguments", f"'{key}' must be one of {allowed}")
            arguments = {change["params"].get(k, k): v for k, v in arguments.items() if k not in change["added"]}
        result = self.env.call(target, arguments)
        if result.ok and change.get("fields"):
            return result.model_copy(update={"content": rename_keys(result.content, change["fields"])})
        return result

    def _added(self, arguments: Any, name: str) -> ToolResult:
        return failure(name, "fatal", f"{name} is new in this release; the world under test runs the release before")

    @property
    def solvable(self) -> bool:
        return self.env.solvable and self.spec.broken(self.task) is None


@register
class ReleaseDiff(Perturbation):
    name: ClassVar[str] = "release_diff"
    tier = "perception"
    shift = "action"
    paft_family = ""
    drawn = False
    summary = "the change between two tools/list snapshots of a server (openagent diff-test)"
    expected = "use the new release's tools as documented; refuse where the release broke the task"
    limits = "a task whose tools the release does not touch (and a release that adds no tool)"
    layer = "restructure"

    release: str = "{}"
    """The release as canonical JSON (:func:`~sandbox.perturbations.evolution.snapshot.derive`)."""

    @field_validator("release")
    @classmethod
    def _canonical(cls, value: str) -> str:
        data = json.loads(value)
        if not isinstance(data, dict):
            raise ValueError("release must be a JSON object (snapshot.derive's)")
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def between(cls, release: dict[str, Any], **params: Any) -> ReleaseDiff:
        return cls(release=json.dumps(release), **params)

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.release)

    def label(self) -> str:
        digest = hashlib.sha256(self.release.encode()).hexdigest()[:8]
        onset = f",after={self.after}" if self.after else ""
        return f"release_diff({self.pool},{digest}{onset})"

    def applies_to(self, task: Task) -> bool:
        data = self.data
        touched = set(data.get("tools", {})) | set(data.get("removed", ()))
        return bool(data.get("added")) or any(t.name in touched for t in domain_of(task).tools_for(task))

    def broken(self, task: Task) -> str | None:
        """Why the release broke ``task`` for every agent, or ``None`` where its new surface can still solve it."""
        data = self.data
        changes, removed = data.get("tools", {}), set(data.get("removed", ()))
        for call in task.plan:
            if call.tool in removed:
                return f"{call.tool} was removed and no tool of the new release takes its place"
            change = changes.get(call.tool)
            if not change:
                continue
            gone = sorted(set(call.args) & set(change["removed"]))
            if gone:
                return f"{change['to']} no longer takes {gone[0]}, which the task needs"
            props = change["input"].get("properties") or {}
            for p in change["added"]:
                if p in change["input"].get("required", ()) and not learnable(props.get(p, {})):
                    return f"{change['to']} requires the new parameter {p}, whose value its schema does not give"
        return None

    wrapper = _Release
