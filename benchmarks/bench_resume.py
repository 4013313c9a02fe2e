"""Work lost to kills and results changed by cache state, in ``openagent eval``: code trees side by side.

    python benchmarks/bench_resume.py --before /tmp/before --n 40 --kills 10 --pause 0.2

Each code tree (this one, and each ``--before DIR``, e.g. from ``git worktree add /tmp/before fb3f57b``) runs
the command line (``python -m pytest_openagent.cli eval``, the tree first on ``PYTHONPATH``) in a folder of
its own, with two ``module:callable`` agents written there:

- **kills**: ``slow:AGENT``, the oracle pausing ``--pause`` seconds per batch and logging each episode it is
  told has ended. A cold run to the end gives the episodes (E) and its duration (D). On a fresh cache,
  ``--kills`` runs are each sent SIGKILL at a random time (seeded) between the end of the cold run's first
  episode (after the start-up) and D, then one runs to the end.
  Episodes redone = every episode that ended, over all these runs, minus E: the work the kills lost. A run
  that ended before its kill counts as finished.
- **raising**: ``fussy:AGENT``, the oracle raising on any batch that holds one of about ``1/--every`` of the
  conversations once it has a tool result. The same ``--n`` eval runs cold, then warm on the same cache; the
  figure is how many measurement records differ between the two (the command's exit code is shown too: 4
  is a run that called the agent broken).

Prints the figures per tree and writes ``benchmarks/results/resume.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write

THIS = Path(__file__).resolve().parents[1]

SLOW = """
import os
import time

from sandbox.agents import OracleAgent


class Slow(OracleAgent):
    def fingerprint(self):
        return "bench-slow-oracle"

    def act(self, turns):
        time.sleep(float(os.environ["BENCH_PAUSE"]))
        return super().act(turns)

    def close(self, episode_ids):
        super().close(episode_ids)
        with open(os.environ["BENCH_ENDED"], "a") as f:
            f.write("".join(f"{e}\\n" for e in episode_ids))


AGENT = Slow()
"""

FUSSY = """
import os
import zlib

from sandbox.agents import OracleAgent


class Fussy(OracleAgent):
    def fingerprint(self):
        return "bench-fussy-oracle"

    def act(self, turns):
        every = int(os.environ["BENCH_EVERY"])
        if any(zlib.crc32(t.messages[1]["content"].encode()) % every == 0 and len(t.messages) > 2 for t in turns):
            raise RuntimeError("cannot read this conversation")
        return super().act(turns)


AGENT = Fussy()
"""


class Tree:
    """One code tree's runs of ``openagent eval``, in a folder of their own."""

    def __init__(self, tree: Path, folder: Path, args: argparse.Namespace) -> None:
        self.tree, self.folder, self.args = tree, folder, args
        (folder / "slow.py").write_text(SLOW)
        (folder / "fussy.py").write_text(FUSSY)
        self.ended = folder / "ended"

    def start(self, agent: str, cache: str, report: str | None = None, every: int = 0) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.tree), str(self.folder)])}
        env |= {"BENCH_PAUSE": str(self.args.pause), "BENCH_ENDED": str(self.ended)}
        env["BENCH_EVERY"] = str(every)
        argv = [sys.executable, "-m", "pytest_openagent.cli", "eval", "--agent", agent, "--n", str(self.args.n)]
        argv += ["--batch-size", str(self.args.batch_size)]
        argv += ["--cache-dir", str(self.folder / cache)] + (["--json", str(self.folder / report)] if report else [])
        out = open(self.folder / "log.txt", "a")  # noqa: SIM115 - closed with the process
        return subprocess.Popen(argv, cwd=self.folder, env=env, stdout=out, stderr=subprocess.STDOUT)

    def ended_count(self) -> int:
        return len(self.ended.read_text().splitlines()) if self.ended.exists() else 0

    def stored(self, cache: str) -> int:
        return sum(p.read_bytes().count(b"\n") for p in (self.folder / cache).glob("episodes/*/pack-*.jsonl"))

    def report(self, name: str) -> dict:
        return json.loads((self.folder / name).read_text())

    def kills(self, rng: random.Random) -> dict:
        start = time.monotonic()
        cold = self.start("slow:AGENT", "cold", "cold.json")
        first = None  # when the first episode ended: the start-up (imports, drawing cases) is over
        while cold.poll() is None:
            if first is None and self.ended.exists():
                first = time.monotonic() - start
            time.sleep(0.01)
        if cold.returncode != 0:
            raise SystemExit(f"{self.tree}: the cold run failed; see {self.folder / 'log.txt'}")
        duration = time.monotonic() - start
        first = duration if first is None else first
        episodes = self.report("cold.json")["meta"]["episodes_run"]
        self.ended.unlink()
        runs = []
        for _ in range(self.args.kills):
            delay = rng.uniform(first, duration)
            run = self.start("slow:AGENT", "warm")
            try:
                run.wait(timeout=delay)
                finished = True
            except subprocess.TimeoutExpired:
                os.kill(run.pid, signal.SIGKILL)
                run.wait()
                finished = False
            runs.append({"kill_after_s": round(delay, 2), "finished": finished, "stored": self.stored("warm")})
        final = self.start("slow:AGENT", "warm", "warm.json")
        if final.wait() != 0:
            raise SystemExit(f"{self.tree}: the final run failed; see {self.folder / 'log.txt'}")
        ended = self.ended_count()
        return {
            "episodes": episodes, "cold_run_s": round(duration, 2), "first_episode_ended_s": round(first, 2),
            "episodes_ended_over_all_runs": ended,
            "redone": ended - episodes, "most_stored_after_a_kill": max((r["stored"] for r in runs), default=0),
            "killed": sum(not r["finished"] for r in runs), "runs": runs,
        }  # fmt: skip

    def raising(self, every: int) -> dict:
        codes = [
            self.start("fussy:AGENT", f"fussy-{every}", f"fussy-{every}-{w}.json", every).wait()
            for w in ("cold", "warm")
        ]
        if codes != [0, 0]:
            return {"every": every, "exit_codes": codes, "differing_records": None}
        cold, warm = (self.report(f"fussy-{every}-{w}.json")["records"] for w in ("cold", "warm"))
        differ = sum(a != b for a, b in zip(cold, warm, strict=True))
        errors = sum("agent_error" in (r["outcome"], r["clean_outcome"]) for r in cold)
        return {
            "every": every, "exit_codes": codes, "records": len(cold), "differing_records": differ,
            "records_with_agent_error": errors,
        }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", action="append", default=[], help="another code tree to measure beside this one")
    p.add_argument("--n", type=int, default=40, help="cases per tier (default 40)")
    p.add_argument("--batch-size", type=int, default=64, help="eval's --batch-size (default 64)")
    p.add_argument("--kills", type=int, default=10, help="killed runs per tree (default 10)")
    p.add_argument("--pause", type=float, default=0.2, help="seconds the slow agent waits per batch (default 0.2)")
    p.add_argument(
        "--every", type=int, action="append", help="the raising agent raises on 1 in EVERY conversations (default 50)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the kill times (default 0)")
    args = p.parse_args()
    trees = {"this": THIS, **{f"before:{b}": Path(b).resolve() for b in args.before}}
    figures: dict = {"argv": sys.argv[1:], "trees": {}}
    for label, tree in trees.items():
        with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
            bench = Tree(tree, Path(tmp), args)
            kills = bench.kills(random.Random(args.seed)) if args.kills else None
            raising = [bench.raising(every) for every in args.every or [50]]
        figures["trees"][label] = {"tree": str(tree), "kills": kills, "raising": raising}
        if kills is not None:
            print(
                f"{label}: {args.kills} kills ({kills['killed']} landed mid-run) of eval --n {args.n} "
                f"--batch-size {args.batch_size} "
                f"({kills['episodes']} episodes, {kills['cold_run_s']} s cold): {kills['redone']} episodes redone, "
                f"the cache held at most {kills['most_stored_after_a_kill']} after a kill"
            )
        for r in raising:
            print(
                f"{label}: --batch-size {args.batch_size}, raising on 1 in {r['every']} conversations, "
                f"exit codes {r['exit_codes']}: "
                f"{r['differing_records']} of {r.get('records')} records differ cold vs warm "
                f"({r.get('records_with_agent_error')} with an agent_error)"
            )
    write("resume", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
