"""Train checkpoints, then gate each one with this folder's robustness suite, as a CI job would.

    python examples/ci_gate/train_and_gate.py                 # train SFT and PAFT, gate both
    python examples/ci_gate/train_and_gate.py --steps 60      # shorter training
    python examples/ci_gate/train_and_gate.py --agents hf:runs/sft hf:runs/paft   # gate what you have

Each checkpoint is trained with ``openagent train`` and tested with ``pytest`` in this folder
(``--openagent-agent hf:DIR``); the job's verdict is pytest's exit code, and a failed gate lists
each criterion it missed with the value measured. The paper's expectation: the plain SFT agent
is brittle (it collapses under renamed tools and errors, and stops refusing) and fails the gate;
the PAFT agent, trained on perturbed episodes too, holds up better. Whether it clears this
gate at your step count is what the run measures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def train(method: str, out: Path, steps: int) -> str:
    """``openagent train sft|paft``; returns the agent spec of the checkpoint (reused if already there)."""
    if not (out / "config.json").is_file():
        command = ["openagent", "train", method, "--out", str(out), "--steps", str(steps)]
        print("$", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    return f"hf:{out}"


def gate(agent: str, cache_dir: Path, extra: list[str] | None = None) -> tuple[int, str]:
    """Run this folder's suite against ``agent``; pytest's exit code and its output."""
    command = [
        sys.executable, "-m", "pytest", str(HERE), "--rootdir", str(HERE), "-c", str(HERE / "pyproject.toml"),
        "-q", "--openagent-agent", agent, "--openagent-cache-dir", str(cache_dir), *(extra or []),
    ]  # fmt: skip
    print("$", " ".join(command[2:]), flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=HERE)
    return done.returncode, done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agents", nargs="+", default=None, help="agent specs to gate instead of training (hf:DIR, ...)")
    p.add_argument("--work", default="runs/ci_gate", help="where checkpoints and the episode cache go")
    p.add_argument("--steps", type=int, default=200, help="training steps of each checkpoint (default 200)")
    args = p.parse_args(argv)

    work = Path(args.work)
    agents = args.agents or [train(method, work / method, args.steps) for method in ("sft", "paft")]
    verdicts = {}
    for agent in agents:
        code, output = gate(agent, work / "cache")
        print(output)
        verdicts[agent] = "passed" if code == 0 else f"FAILED (pytest exit code {code})"
    print("\n".join(f"{agent}: {verdict}" for agent, verdict in verdicts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
