"""The ``hf:PATH`` agent prefix, published to the evaluation core through the ``openagent.agents`` entry point.

Light on purpose: the core reads it to check a spec, so torch and transformers load only in :meth:`HFKind.load`.
"""

from __future__ import annotations

from sandbox.agent import Agent
from sandbox.errors import MissingExtra, install_line, require_extra
from sandbox.evaluation.specs import AgentSpecError

TRAIN_MODULES = ("torch", "transformers")
"""What an ``hf:`` agent cannot load without (the ``train`` extra)."""


class HFKind:
    """``hf:PATH``: a ``save_pretrained`` checkpoint (``hf:default``: the default base) run in this process."""

    usage = "names no checkpoint. Use hf:PATH (a save_pretrained directory) or hf:default"

    def check(self, spec: str, rest: str) -> None:
        try:
            require_extra("train", TRAIN_MODULES, f"agent {spec!r}")
        except MissingExtra as exc:
            raise AgentSpecError(str(exc)) from None
        if rest != "default":  # a checkpoint that is not there is said before any test or episode, in one line
            from pathlib import Path

            from training.inference.model_dir import CheckpointError, check_dir

            try:
                check_dir(Path(rest).expanduser())
            except CheckpointError as exc:
                raise AgentSpecError(str(exc)) from None

    def load(self, spec: str, rest: str) -> Agent:
        try:
            from training.inference.model_agent import load_agent

            return load_agent(rest)
        except ModuleNotFoundError as exc:
            missing = f"{exc.name} not installed"
            raise AgentSpecError(
                f"agent {spec!r} needs the `train` extra ({missing}); install it: {install_line('train')}"
            ) from exc


HF = HFKind()
