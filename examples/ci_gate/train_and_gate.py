"""Train checkpoints, then gate each one with this folder's robustness suite, as a CI job would.

    python examples/ci_gate/train_and_gate.py                 # train SFT and PAFT, gate both
    python examples/ci_gate/train_and_gate.py --steps 60      # shorter training
    python examples/ci_gate/train_and_gate.py --agents hf:runs/ci_gate/sft hf:runs/ci_gate/paft   # gate what you have

Each checkpoint is trained with ``openagent train`` (a finished one is reused; one trained with
other options is refused, so a changed ``--steps`` never gates a stale model: add ``--overwrite``)
and tested with ``pytest`` in this folder (``--openagent-agent hf:DIR``); a failed gate lists each
criterion it missed with the value measured. The script's exit code is the job's verdict, as
``openagent gate`` gives it: 0 every agent passed, 1 a gate (or a test) failed, 2 misuse (a bad
option or agent spec, a refused ``--out``: no verdict), which outranks 1; 4 if training crashed
(nothing to measure, as ``openagent eval`` exits 4 when the agent is dead).

The paper's expectation: the plain SFT agent is brittle (it collapses under renamed tools and
errors, and stops refusing) and fails the gate; the PAFT agent, trained on perturbed episodes too,
holds up better. Whether it clears this gate at your step count is what the run measures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_NO_MEASUREMENT = 0, 1, 2, 4  # openagent's codes
PYTEST_TESTS_FAILED = 1  # pytest.ExitCode.TESTS_FAILED: a test or the gate failed; any other nonzero code is misuse


class TrainingFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"openagent train exited {code}")
        self.code = code


def train(method: str, out: Path, steps: int, overwrite: bool = False) -> str:
    """``openagent train sft|paft`` (which reuses a finished run of the same options); the checkpoint's agent spec."""
    command = ["openagent", "train", method, "--out", str(out), "--steps", str(steps)]
    command += ["--overwrite"] if overwrite else []
    print("$", " ".join(command), flush=True)
    # Through this interpreter, so the script works from a virtual environment that is not activated.
    done = subprocess.run([sys.executable, "-m", "pytest_openagent.cli", *command[1:]])
    if done.returncode != 0:
        raise TrainingFailed(done.returncode)
    return f"hf:{out}"


def verdict(codes: list[int]) -> int:
    """The job's exit code from pytest's, one per agent: misuse outranks a failure, which outranks a pass."""
    if any(code not in (0, PYTEST_TESTS_FAILED) for code in codes):
        return EXIT_USAGE
    return EXIT_FAILED if PYTEST_TESTS_FAILED in codes else EXIT_PASSED


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
    p.add_argument("--overwrite", action="store_true", help="retrain checkpoints trained with other options")
    args = p.parse_args(argv)

    work = Path(args.work)
    try:
        agents = args.agents or [train(m, work / m, args.steps, args.overwrite) for m in ("sft", "paft")]
    except TrainingFailed as exc:
        print(f"train_and_gate: {exc}; nothing gated", file=sys.stderr)
        return EXIT_USAGE if exc.code == EXIT_USAGE else EXIT_NO_MEASUREMENT
    codes, verdicts = [], {}
    for agent in agents:
        code, output = gate(agent, work / "cache")
        print(output)
        codes.append(code)
        if code == 0:
            verdicts[agent] = "passed"
        elif code == PYTEST_TESTS_FAILED:
            verdicts[agent] = f"FAILED (pytest exit code {code})"
        else:
            verdicts[agent] = f"NOT GATED: misuse (pytest exit code {code})"
    print("\n".join(f"{agent}: {text}" for agent, text in verdicts.items()))
    return verdict(codes)


if __name__ == "__main__":
    sys.exit(main())
