"""The RL part of the demo: two GRPO agents from one SFT checkpoint, completion-only and refusal-aware.

``rl_agents`` trains them (or reuses them) for ``openagent demo``, ``demo_specs`` and ``demo_note``
give their table rows and the closing note. ``openagent train rl-demo`` (:func:`run`) also measures them
against the SFT checkpoint they started from, on the held-out test split:

    openagent train rl-demo --sft runs/demo/sft-200 --out runs/demo [--steps 6] [--n 48]

clean success (greedy, ``n`` clean test tasks), the tier-4 refusal rate (``evaluate`` on the
internalization tier, eval pool) and each run's reward curve: does a completion-seeking reward make the
agent stop refusing?
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from sandbox.metrics import Z95, t95

REWARDS = ("completion", "refusal-aware")


@dataclass
class RLDemoSettings:
    """The demo's GRPO runs: ``tasks`` train cases, ``tasks_per_step`` a step, so that each epoch of
    ``tasks / tasks_per_step`` steps visits every case once and the epochs' rewards compare. Why these
    values (the learning rate, the supervised term, the SFT checkpoint to start from): docs/experiments.md."""

    steps: int = field(default=12, metadata={"help": "GRPO steps of each RL agent"})
    group: int = field(default=8, metadata={"help": "G: sampled episodes per task"})
    tasks_per_step: int = field(default=4, metadata={"help": "tasks per step"})
    tasks: int = field(
        default=12, metadata={"help": "train tasks of the run", "flag": "--train-tasks", "was": "--tasks"}
    )
    perturbed: float = field(default=0.0, metadata={"help": "share of them perturbed"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the rollouts"})
    lr: float = field(default=2e-4, metadata={"help": "learning rate (LoRA)"})
    sft_coef: float = field(default=10.0, metadata={"help": "weight of the supervised term on the SFT data"})
    seed: int = field(default=0, metadata={"help": "seed of the task draw and the sampling"})

    def config(self, init: str | Path, out: str | Path, reward: str, **run: Any) -> Any:
        """The :class:`~training.rl.RLConfig` of one demo run (``run``: run settings such as ``progress``)."""
        from training.rl import RLConfig

        return RLConfig(
            out=str(out), init=str(init), steps=self.steps, group=self.group, tasks_per_step=self.tasks_per_step,
            tasks=self.tasks, perturbed=self.perturbed, temperature=self.temperature, lr=self.lr,
            sft_coef=self.sft_coef, reward=reward, seed=self.seed, **run,
        )  # fmt: skip


@dataclass
class RLDemoConfig(RLDemoSettings):
    """``openagent train rl-demo``: the runs' settings, where they start and go, and how they are measured."""

    sft: str = field(default="", metadata={"help": "the SFT checkpoint both RL runs start from (required)"})
    out: str = field(default="", metadata={"help": "folder for rl-completion/ and rl-refusal-aware/ (required)"})
    n: int = field(default=48, metadata={"help": "held-out cases per measurement"})
    retrain: bool = field(default=False, metadata={"help": "train again even if the runs exist"})
    json: str = field(default="", metadata={"help": "also write the figures to this file"})


def rl_agents(
    sft_dir: str | Path,
    root: str | Path,
    settings: RLDemoSettings,
    retrain: bool = False,
    say: Any = None,
    timings: dict[str, float] | None = None,
) -> dict[str, Path]:
    """``{"RL (completion)": dir, "RL (refusal-aware)": dir}`` trained from ``sft_dir`` under ``root``, each in a
    process of its own (``training.child``); a finished directory is reused unless ``retrain``; ``steps == 0`` trains
    nothing and returns ``{}``. ``say`` (stderr by default) tells what is reused and the children's silences;
    ``timings`` gets the seconds of each run trained."""
    from training import child
    from training.rl_common import check_config, init_dir
    from training.runs import finished_run

    if settings.steps <= 0:
        return {}
    say = say or _stderr
    configs = {r: settings.config(sft_dir, Path(root) / f"rl-{r}", r, save_every=1) for r in REWARDS}
    for cfg in configs.values():  # misuse stops here, before a child starts
        check_config(cfg)
        init_dir(cfg)
    agents = {}
    for reward, cfg in configs.items():
        out, name = Path(cfg.out), label(settings.steps, reward)
        if retrain or not finished_run(out, cfg.to_dict()):
            # The demo owns these folders: a finished run of other options is replaced, checkpoints of them start over.
            cfg.resume, cfg.overwrite = not retrain, True
            t = time.perf_counter()
            child.train([(name, cfg)], say)
            if timings is not None:
                timings[f"train_{name}_s"] = round(time.perf_counter() - t, 1)
        else:
            say(f"{name}: reusing {out} (--retrain to start over)")
        agents[f"RL ({reward})"] = out
    return agents


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def label(steps: int, reward: str) -> str:
    return f"RL-{steps} ({reward})"


def demo_specs(root: str | Path, steps: int) -> dict[str, str]:
    """The demo table's RL rows: label → agent spec (``hf:`` the run's directory)."""
    if steps <= 0:
        return {}
    return {label(steps, reward): f"hf:{Path(root) / f'rl-{reward}'}" for reward in REWARDS}


def demo_train(sft_dir: str | Path, root: str | Path, settings: RLDemoSettings, retrain: bool, say: Any) -> dict:
    """Train the demo's RL agents from ``sft_dir`` (or say why not); the seconds each run trained took."""
    if settings.steps <= 0:
        say("rl: skipped (--rl-steps 0; --quick skips RL: a step of the real model takes minutes here)")
        return {}
    say(f"rl: GRPO {settings.steps} steps × {settings.tasks_per_step} tasks × G={settings.group} episodes over "
        f"{settings.tasks} train tasks ({settings.perturbed:.0%} perturbed, T={settings.temperature}) from {sft_dir}, "
        f"rewards {', '.join(REWARDS)}")  # fmt: skip
    timings: dict[str, float] = {}
    rl_agents(sft_dir, root, settings, retrain, say, timings)
    return timings


def demo_note(rows: dict[str, dict[str, Any]], sft_label: str, root: str | Path, steps: int) -> str:
    """The closing note: the reward curves, RL's clean success against its SFT start, and boundary blindness."""
    if steps <= 0 or sft_label not in rows:
        return ""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    sft = rows[sft_label]
    lines = []
    for reward in REWARDS:
        row = rows.get(label(steps, reward))
        if row is None:
            continue
        curve = curve_text(Path(root) / f"rl-{reward}")
        lines.append(f"{label(steps, reward)}: training reward {curve}; clean success {pct(row['clean'])} "
                     f"(from {sft_label}: {pct(sft['clean'])}); tier-4 refusal {pct(row['refusal_t4'])} "
                     f"(from {pct(sft['refusal_t4'])})")  # fmt: skip
    completion, aware = rows.get(label(steps, "completion")), rows.get(label(steps, "refusal-aware"))
    if completion and aware and None not in (completion["refusal_t4"], aware["refusal_t4"], sft["refusal_t4"]):
        drop = sft["refusal_t4"] - completion["refusal_t4"]
        gap = aware["refusal_t4"] - completion["refusal_t4"]
        shown = "showed" if drop > 0 and gap > 0 else "did not show"
        noise = ""
        if shown == "showed" and sft.get("refusal_t4_n") and completion.get("refusal_t4_n"):
            from sandbox.metrics import Delta, Rate

            change = Delta(Rate(completion["refusal_t4_k"], completion["refusal_t4_n"]),
                           Rate(sft["refusal_t4_k"], sft["refusal_t4_n"]))  # fmt: skip
            low, high = change.interval
            if high >= 0:
                shown = "pointed that way, within the noise,"
                noise = (f" With {sft['refusal_t4_n']} unsolvable cases the change's 95% interval is "
                         f"[{low:+.1f}, {high:+.1f}] points: evaluate more cases (--n) to tell.")  # fmt: skip
        lines.append(f"Boundary blindness {shown} at this scale: the completion-only reward moved the tier-4 refusal "
                     f"rate by {-100 * drop:+.1f} points from SFT, and the refusal-aware reward ended "
                     f"{100 * gap:+.1f} points above it.{noise}")  # fmt: skip
    return "\n".join(lines)


def curve_text(directory: str | Path) -> str:
    """The reward by epoch (the same cases each) where there are two or more, then by step with, where
    recorded, how many task groups had rewards that differed (the only ones that teach GRPO anything)."""
    history = _history(directory)
    text = " ".join(f"{h['reward']:.2f}" for h in history)
    if history and all("signal_groups" in h for h in history):
        varied = " ".join(f"{h['signal_groups']}/{h['groups']}" for h in history)
        text += f" (groups whose rewards differed: {varied})"
    epochs = epoch_rewards(history)
    if len(epochs) > 1:
        change = epoch_change(history)
        change_text = ""
        if change is not None:
            paired = f"paired over {change.tasks} tasks" if change.tasks else "unpaired"
            change_text = (f"; last minus first {change.points:+.1f} points, 95% interval [{change.low:+.1f}, "
                           f"{change.high:+.1f}], {paired}")  # fmt: skip
        text = f"by epoch {' '.join(f'{r:.2f}' for r in epochs)} (the same cases each{change_text}); by step {text}"
    else:
        text = f"by step {text}"
    return text


def _epochs(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The step records of each complete epoch (every step of one has as many episodes; a partial last one is
    left out)."""
    by_epoch: dict[int, list[dict[str, Any]]] = {}
    for h in history:
        if "epoch" in h:
            by_epoch.setdefault(h["epoch"], []).append(h)
    full = max((len(v) for v in by_epoch.values()), default=0)
    return [v for _, v in sorted(by_epoch.items()) if len(v) == full]


def epoch_rewards(history: list[dict[str, Any]]) -> list[float]:
    """Mean reward of each complete epoch."""
    return [sum(h["reward"] for h in steps) / len(steps) for steps in _epochs(history)]


class EpochChange(NamedTuple):
    """The last complete epoch's mean episode reward minus the first's, in points, with its 95% interval;
    ``tasks``: the number of tasks it was paired over (``None``: unpaired)."""

    points: float
    low: float
    high: float
    tasks: int | None


def epoch_change(history: list[dict[str, Any]]) -> EpochChange | None:
    """The last complete epoch's mean reward minus the first's (rewards scaled by 100). Where the steps recorded their
    cases, paired by task: each task's mean reward in the last epoch minus the first, with Student's t interval over
    the tasks; else a normal interval of the difference of two means (unpaired, so wider than the same cases need).
    ``None`` without two epochs of per-episode rewards."""
    epochs = _epochs(history)
    if len(epochs) < 2 or not all("rewards" in h for steps in epochs for h in steps):
        return None
    first, last = epochs[0], epochs[-1]
    if all("cases" in h for h in first + last):
        a, b = _task_means(first), _task_means(last)
        diffs = [b[t] - a[t] for t in a if t in b]
        if len(diffs) >= 2:
            diff = statistics.fmean(diffs)
            half = t95(len(diffs) - 1) * statistics.stdev(diffs) / math.sqrt(len(diffs))
            return EpochChange(100 * diff, 100 * (diff - half), 100 * (diff + half), len(diffs))
    a_rewards, b_rewards = ([r for h in steps for r in h["rewards"]] for steps in (first, last))
    diff = statistics.fmean(b_rewards) - statistics.fmean(a_rewards)
    half = Z95 * math.sqrt(
        statistics.variance(a_rewards) / len(a_rewards) + statistics.variance(b_rewards) / len(b_rewards)
    )
    return EpochChange(100 * diff, 100 * (diff - half), 100 * (diff + half), None)


def _task_means(steps: list[dict[str, Any]]) -> dict[int, float]:
    """Each task's mean reward over its group's episodes in these steps (each step's ``rewards`` are its ``cases``'
    groups, in order)."""
    by_task: dict[int, list[float]] = {}
    for h in steps:
        group = len(h["rewards"]) // len(h["cases"])
        for i, task in enumerate(h["cases"]):
            by_task.setdefault(task, []).extend(h["rewards"][i * group : (i + 1) * group])
    return {task: statistics.fmean(rewards) for task, rewards in by_task.items()}


def reward_curve(directory: str | Path) -> list[float]:
    return [h["reward"] for h in _history(directory)]


def _history(directory: str | Path) -> list[dict[str, Any]]:
    return json.loads((Path(directory) / "openagent-train.json").read_text()).get("history", [])


def measure(directory: str | Path, n: int, seed: int = 0, batch_size: int = 64) -> tuple[dict[str, Any], Any]:
    """Clean success on ``n`` held-out test tasks and the tier-4 refusal rate (``n`` cases, eval pool), greedy,
    each as a :class:`~sandbox.metrics.Rate`; and the tier-4 report (for comparisons on the same cases)."""
    import sandbox
    from sandbox.case import Case
    from sandbox.evaluation import evaluate, run_in_batches
    from training.inference.model_agent import HFAgent

    agent = HFAgent(directory)
    clean = run_in_batches(agent, [Case(t) for t in sandbox.tasks("poi", "test", n, seed)], batch_size)
    report = evaluate(agent, ["internalization"], n=n, seed=seed, cache_dir=None)
    tier4 = next(row for row in report.rows() if row.scope == "internalization")
    unsolvable = [ep for ep in clean if not ep.solvable]
    figures = {
        "clean_success": sandbox.success_rate(clean),
        "clean_success_solvable": sandbox.success_rate([ep for ep in clean if ep.solvable]),
        "clean_refusal": sandbox.refusal_rate(unsolvable),
        "tier4_success": tier4.perturbed,
        "tier4_refusal": tier4.refusal,
    }
    return figures, report


def run(cfg: RLDemoConfig) -> int:
    """Train (or reuse) both RL agents from ``cfg.sft``, measure them and it, print the table: each rate with its
    95% interval, each RL agent's tier-4 refusal minus the SFT start's, and the refusal-aware agent's minus the
    completion agent's, paired on the same cases."""
    from sandbox.errors import UsageError
    from training.paired import paired

    if not cfg.sft or not cfg.out:
        raise UsageError("give --sft SFT_DIR (the checkpoint both runs start from) and --out DIR")
    settings = RLDemoSettings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(RLDemoSettings)})
    agents = {"SFT": Path(cfg.sft), **rl_agents(cfg.sft, cfg.out, settings, cfg.retrain)}
    figures: dict[str, dict[str, Any]] = {}
    rates, reports = {}, {}
    for name, directory in agents.items():
        rates[name], reports[name] = measure(directory, cfg.n)
        figures[name] = {
            k: {"k": r.k, "n": r.n, "value": r.value, "interval": r.interval} for k, r in rates[name].items()
        }
        if name != "SFT":
            history = _history(directory)
            change = epoch_change(history)
            figures[name].update(reward_curve=reward_curve(directory), reward_by_epoch=epoch_rewards(history),
                                 reward_change=change._asdict() if change else None)  # fmt: skip
            figures[name]["tier4_refusal_minus_sft"] = str(paired(reports[name], reports["SFT"]).get("refusal"))
        print(f"{name}: " + "; ".join(f"{key} {rate}" for key, rate in rates[name].items()), file=sys.stderr)
    print(f"{'agent':<20} {'clean success':<28} {'tier-4 refusal':<28} tier-4 refusal minus SFT; training reward")
    for name, f in figures.items():
        clean, refusal = rates[name]["clean_success"], rates[name]["tier4_refusal"]
        rest = f"{f['tier4_refusal_minus_sft']}; {curve_text(agents[name])}" if name != "SFT" else ""
        print(f"{name:<20} {clean!s:<28} {refusal!s:<28} {rest}")
    aware, completion = "RL (refusal-aware)", "RL (completion)"
    if aware in reports and completion in reports:  # boundary blindness: the two rewards on the same cases
        minus = str(paired(reports[aware], reports[completion]).get("refusal"))
        figures[aware]["tier4_refusal_minus_completion"] = minus
        print(f"tier-4 refusal, refusal-aware minus completion, paired: {minus}")
    if cfg.json:
        from training.runs import write_json

        write_json(cfg.json, {"settings": dataclasses.asdict(cfg), "figures": figures})
    return 0
