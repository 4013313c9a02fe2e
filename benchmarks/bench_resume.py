"""Work lost to kills and results changed by cache state, in ``openagent eval``: code trees side by side.

    python benchmarks/bench_resume.py --before /tmp/before --n 40 --kills 10 --pause 1.0 --every 100
    python benchmarks/bench_resume.py --before /tmp/before --kills 0 --batch-size 16 --every 50 --every 100

Each code tree (this one, and each ``--before DIR``, e.g. from ``git worktree add /tmp/before fb3f57b``) runs
the command line (``python -m pytest_openagent.cli eval --n N --batch-size B``, the tree first on
``PYTHONPATH``) in a folder of its own, with two ``module:callable`` agents written there:

- **kills** (skipped with ``--kills 0``): ``slow:AGENT``, the oracle pausing ``--pause`` seconds per batch
  and logging each episode it is told has ended. A cold run to the end gives the episodes (E). On a fresh
  cache, ``--kills`` runs are each sent SIGKILL at a random point (seeded) of the work they have left: once
  ``k`` of their episodes ended, ``k`` drawn from 1 to (E - episodes stored) - 1 (or ``--at-most``), so
  every kill lands mid-run; then one run goes to the end. Episodes redone = every episode that ended, over
  all these runs, minus E: the work the kills lost. (Kills stop early once fewer than 2 episodes are left.)
- **raising**, once per ``--every``: ``fussy:AGENT``, the oracle raising on any batch that holds one of
  about ``1/EVERY`` of the conversations once it has a tool result. The eval runs cold, then warm on the
  same cache; the figure is how many measurement records differ between the two (the command's exit codes
  are shown too: 4 is a run that called the agent broken).

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
        if self.start("slow:AGENT", "cold", "cold.json").wait() != 0:
            raise SystemExit(f"{self.tree}: the cold run failed; see {self.folder / 'log.txt'}")
        duration = time.monotonic() - start
        episodes = self.report("cold.json")["meta"]["episodes_run"]
        self.ended.unlink()
        runs = []
        for _ in range(self.args.kills):
            left = episodes - self.stored("warm")  # what this run has to do
            if left < 2:
                break
            before, at = self.ended_count(), rng.randint(1, min(left - 1, self.args.at_most or left))
            run = self.start("slow:AGENT", "warm")
            while run.poll() is None and self.ended_count() - before < at:
                time.sleep(0.005)
            os.kill(run.pid, signal.SIGKILL)
            run.wait()
            runs.append({"left": left, "killed_after": at, "stored": self.stored("warm")})
        final = self.start("slow:AGENT", "warm", "warm.json")
        if final.wait() != 0:
            raise SystemExit(f"{self.tree}: the final run failed; see {self.folder / 'log.txt'}")
        ended = self.ended_count()
        return {
            "episodes": episodes, "cold_run_s": round(duration, 2), "episodes_ended_over_all_runs": ended,
            "redone": ended - episodes, "most_stored_after_a_kill": max((r["stored"] for r in runs), default=0),
            "killed": len(runs), "runs": runs,
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
    p.add_argument(
        "--at-most", type=int, default=None, help="kill each run once at most this many of its episodes ended"
    )
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
                f"{label}: {kills['killed']} kills mid-run of eval --n {args.n} "
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
