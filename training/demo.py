"""``openagent demo``: the product's loop on a model fine-tuned here (``training.demo_loop``: SFT, the gate in a real
pytest session, its failures turned into PAFT rows, PAFT against SFT continued, the gate on a fresh sample), or
with ``--table`` / ``--paper`` the earlier table of trained agents.

With ``--table`` it trains SFT on clean gold trajectories (one run, exported at several step counts, like the
paper's SFT-200/400/800 scaled to a CPU) and PAFT (continued from one SFT export, as the paper
does, with a share ``alpha`` of perturbed trajectories from the train pool), then evaluates them
beside the oracle and the static baseline with ``sandbox.evaluation.evaluate`` on the held-out test
split and the **eval** pool of perturbations: clean success, Δ of tiers 1-3, tier-4 refusal rate,
tool error rate; PAFT is compared case by case with the SFT export of the same compute, and the
table is drawn as a figure. ``--full`` adds the untrained base and two GRPO agents (completion-only
and refusal-aware rewards, ``training.rl_demo``). Trained checkpoints are reused on the next run
(``--retrain`` starts over); episodes are cached by the evaluation core's episode cache.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.errors import UsageError
from training.config import SFTConfig
from training.figure import SCOPES
from training.paired import paired
from training.progress import Progress

LOOP_FAMILIES = ("phone", "hours", "weather", "best_rated", "unknown_place")
"""The POI task families of one or two calls (one of them to refuse), which the loop and ``--table --quick`` train
and test on."""
QUICK_FAMILIES = ("weather", "best_rated")
"""The one-call families among them that need a tool, which the loop's ``--quick`` trains and tests on: SFT solves
them in a dozen steps, an agent that solves its tasks plays short episodes, so its gate is quick too, and the
gate's tool shifts bite them (with unknown_place, the gate's sample was mostly tasks to refuse, which the shifts
did not change: docs/experiments.md, "Session 47")."""


@dataclass
class DemoConfig:
    """What the demo trains and how it evaluates."""

    dir: str = field(default="", metadata={"help": "where checkpoints and the episode cache go (default: cache dir)"})
    base: str = field(
        default="default", metadata={"help": "base checkpoint directory, or 'default' for SmolLM2-135M-Instruct"}
    )
    sft_steps: list[int] = field(
        default_factory=lambda: [30, 40],
        metadata={"help": "SFT step counts to evaluate (one run, exported)", "items": "step counts (30,40)"},
    )
    paft_steps: int = field(default=10, metadata={"help": "PAFT steps, continued from SFT-<paft-from> (0: skip PAFT)"})
    paft_from: int = field(
        default=30,
        metadata={"help": "PAFT continues from this SFT-N, as the paper does (one of --sft-steps; 0: from the base)"},
    )
    rl_steps: int = field(default=12, metadata={"help": "with --full: GRPO steps of each RL agent, from SFT-<rl-from>"})
    rl_group: int = field(default=8, metadata={"help": "RL: sampled episodes per task (G); 4 tasks a step"})
    rl_from: int = field(default=30, metadata={"help": "RL starts from this SFT-N (one of --sft-steps; 0: the last)"})
    rl_tasks: int = field(default=12, metadata={"help": "RL: train tasks of each run (4 a step)"})
    rl_perturbed: float = field(default=0.0, metadata={"help": "RL: share of its train tasks perturbed (train pool)"})
    rl_sft_coef: float = field(
        default=10.0, metadata={"help": "RL: weight of the supervised term on the SFT data (0: GRPO alone)"}
    )
    batch_size: int = field(default=8, metadata={"help": "episodes per optimizer step"})
    episodes: int = field(default=800, metadata={"help": "distinct training tasks (train split)"})
    task_families: list[str] = field(
        default_factory=list,
        metadata={"help": "train and evaluate on tasks of these task families only (default: the loop "
                  f"{','.join(LOOP_FAMILIES)}, its --quick {','.join(QUICK_FAMILIES)}; --table: all, --table --quick "
                  "the loop's)", "items": "task family names"},
    )  # fmt: skip
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate (LoRA)"})
    lora_layers: int = field(default=0, metadata={"help": "LoRA on the last N decoder layers only (0: all)"})
    alpha: float = field(default=0.5, metadata={"help": "PAFT share of perturbed episodes (train pool)"})
    paft_families: list[str] = field(
        default_factory=lambda: ["error_feedback"],
        metadata={"help": "PAFT perturbation families (error_feedback, symbolic, semantic)", "items": "families"},
    )
    continued: bool = field(
        default=False,
        metadata={"help": "also continue SFT-<paft-from> for --paft-steps on clean episodes only (PAFT's compute) "
                  "and compare PAFT with it"},
    )  # fmt: skip
    n: int = field(default=10, metadata={"help": "evaluation cases per tier (test split, eval pool), plus clean twins"})
    eval_batch: int = field(
        default=32, metadata={"help": "evaluation: cases (and their clean twins) generated for at once"}
    )
    seed: int = field(default=0, metadata={"help": "seed of training and of the evaluation cases"})
    agents: list[str] = field(
        default_factory=lambda: ["sft", "paft", "oracle", "static"],
        metadata={"help": "rows of the table: base, sft, paft, rl (two: completion and refusal-aware), oracle, static"},
    )
    full: bool = field(
        default=False, metadata={"help": "the whole table: also the untrained base's row and the two RL rows"}
    )
    retrain: bool = field(default=False, metadata={"help": "train again even if checkpoints exist"})
    quick: bool = field(
        default=False,
        metadata={
            "help": "about 5 minutes: the loop's first half on the one-call families that need a tool (SFT-12 on "
            "96 episodes, the gate with 4 cases a tier, its shrunk failure and PAFT rows; no training on them); with "
            "--table: SFT-15 and the reference rows"
        },
    )
    table: bool = field(
        default=False,
        metadata={"help": "instead of the loop: the table of SFT exports (--sft-steps), PAFT from one (--paft-from) "
                  "and the reference rows, on every task family (--full adds the base and RL)"},
    )  # fmt: skip
    paper: bool = field(
        default=False,
        metadata={"help": "the paper's whole story as one table: SFT-50 and a converged SFT-100 on every family, "
                  "error-feedback PAFT-30 from SFT-100 against SFT continued as long, the two RL agents from SFT-50 "
                  "without the supervised term (boundary blindness), 20 cases a tier; about 2 h 35 min on a 2-core "
                  "Xeon (docs/experiments.md), resumable"},
    )  # fmt: skip
    loop_steps: int = field(
        default=80,
        metadata={"help": "the loop: at most this many SFT steps for the checkpoint the gate tests; it stops earlier "
                  "once it solves dev-split tasks at --clean-target (checked every 10 steps from half of them)"},
    )  # fmt: skip
    more_steps: int = field(
        default=16, metadata={"help": "the loop: steps of each arm (PAFT on the failures, SFT continued) from it"}
    )
    loop_episodes: int = field(default=320, metadata={"help": "the loop: distinct training tasks of its SFT"})
    gate_n: int = field(default=12, metadata={"help": "the loop: cases per tier of the gate's fixed measurement"})
    examples: int = field(default=4, metadata={"help": "the loop: examples Hypothesis tries per property test"})
    clean_target: float = field(
        default=0.8, metadata={"help": "the loop: the clean success the SFT checkpoint must reach (a gate criterion)"}
    )
    json: str = field(default="", metadata={"help": "also write the table (and each agent's report) to this file"})
    figure: str = field(
        default="", metadata={"help": "draw the table into this PNG (default DIR/demo.png; needs the plot extra)"}
    )

    def scaled(self) -> DemoConfig:
        if self.paper:
            return dataclasses.replace(
                self, table=True, full=True, sft_steps=[50, 100], paft_from=100, paft_steps=30, alpha=0.5,
                paft_families=["error_feedback"], continued=True, episodes=800, n=20, rl_from=50, rl_tasks=16,
                rl_perturbed=0.75, rl_sft_coef=0.0, task_families=[],
            )  # fmt: skip
        if not self.table:
            if self.quick:
                families = self.task_families or list(QUICK_FAMILIES)
                return dataclasses.replace(
                    self, loop_steps=12, loop_episodes=96, gate_n=4, examples=2, task_families=families
                )
            return dataclasses.replace(self, task_families=self.task_families or list(LOOP_FAMILIES))
        if not self.quick:
            return self
        # The untrained base's row is slow (it writes to its token limit every turn) and known (0%); one SFT
        # export shows the learning, the perturbed tiers the breaking.
        agents = [a for a in self.agents if a not in ("base", "paft", "rl")]
        families = self.task_families or list(LOOP_FAMILIES)
        return dataclasses.replace(
            self, sft_steps=[15], paft_steps=0, episodes=120, n=4, rl_steps=0, agents=agents, task_families=families
        )


AGENTS = ("base", "sft", "paft", "rl", "oracle", "static")
"""The rows ``--agents`` may name."""


def checked(cfg: DemoConfig) -> DemoConfig:
    """``cfg`` with its step counts sorted and unique, the base and RL rows added for ``--full``, scaled for
    ``--quick``; a :class:`UsageError` if a step count is below 1, a task or PAFT family is unknown, or
    ``--paft-from`` is not one of the step counts."""
    steps = sorted(set(cfg.sft_steps))
    if not steps or steps[0] < 1:
        raise UsageError(f"--sft-steps {','.join(map(str, cfg.sft_steps))!r}: give step counts of at least 1")
    if cfg.full and not cfg.paper:
        cfg = dataclasses.replace(cfg, table=True)
    cfg = dataclasses.replace(cfg, sft_steps=steps).scaled()
    agents = list(dict.fromkeys(["base", *cfg.agents, "rl"])) if cfg.full else cfg.agents
    cfg = dataclasses.replace(cfg, agents=agents)
    if not cfg.table:
        if cfg.loop_steps < 1 or cfg.more_steps < 1 or cfg.gate_n < 1 or cfg.examples < 1 or cfg.loop_episodes < 1:
            raise UsageError("--loop-steps, --more-steps, --loop-episodes, --gate-n and --examples must be at least 1")
        if not 0 < cfg.clean_target <= 1:
            raise UsageError(f"--clean-target must be in (0, 1], got {cfg.clean_target}")
    if cfg.task_families:  # an unknown family stops the demo before it trains
        from sandbox.domain import checked_families
        from sandbox.domains import get_domain

        checked_families(cfg.task_families, [f.name for f in get_domain("poi").families])
    unknown = [a for a in cfg.agents if a not in AGENTS]
    if unknown:  # checked here, whichever mode runs, so that a typo never starts a training
        raise UsageError(f"--agents: unknown agent {unknown[0]!r}; expected {', '.join(AGENTS[:-1])} or {AGENTS[-1]}")
    if cfg.paft_steps and "paft" in cfg.agents:
        from training.dataset import train_perturbations

        train_perturbations(cfg.paft_families)  # an unknown PAFT family too
        if cfg.paft_from and cfg.paft_from not in cfg.sft_steps:
            raise UsageError(
                f"--paft-from {cfg.paft_from} is not one of --sft-steps {cfg.sft_steps}: "
                "give one of them (0: from the base)"
            )
        if cfg.continued and not cfg.paft_from:
            raise UsageError("--continued continues an SFT export: give --paft-from one of --sft-steps (not 0)")
    return cfg


def _say(message: str) -> None:
    print(f"openagent demo: {message}", file=sys.stderr, flush=True)


def train_settings(cfg: DemoConfig) -> dict[str, Any]:
    """The ``SFTConfig`` options every training run of the demo shares."""
    return dict(
        batch_size=cfg.batch_size, episodes=cfg.episodes, task_families=cfg.task_families, lr=cfg.lr,
        lora_layers=cfg.lora_layers, warmup=3, seed=cfg.seed, save_every=2,
    )  # fmt: skip


def _train_configs(cfg: DemoConfig, root: Path) -> dict[str, SFTConfig]:
    common = train_settings(cfg)
    last = max(cfg.sft_steps)
    sft = SFTConfig(out=str(root / "sft"), base=cfg.base, steps=last, export_at=cfg.sft_steps[:-1], **common)
    runs = {"sft": sft}
    if cfg.paft_steps and "paft" in cfg.agents:
        start = str(sft_dir(cfg, runs, cfg.paft_from)) if cfg.paft_from else cfg.base
        runs["paft"] = SFTConfig(
            out=str(root / "paft"),
            base=start,
            steps=cfg.paft_steps,
            alpha=cfg.alpha,
            families=cfg.paft_families,
            **common,
        )
        if cfg.continued:
            runs["continued"] = SFTConfig(out=str(root / "sft-continued"), base=start, steps=cfg.paft_steps, **common)
    return runs


def paft_label(cfg: DemoConfig) -> str:
    start = f", from SFT-{cfg.paft_from}" if cfg.paft_from else ""
    return f"PAFT-{cfg.paft_steps} (α={cfg.alpha}, {'+'.join(cfg.paft_families)}{start})"


def continued_label(cfg: DemoConfig) -> str:
    return f"SFT continued {cfg.paft_steps} (from SFT-{cfg.paft_from})"


def rl_start(cfg: DemoConfig) -> int:
    """The SFT step count the RL agents start from."""
    if cfg.rl_steps > 0 and cfg.rl_from and cfg.rl_from not in cfg.sft_steps:
        raise UsageError(
            f"--rl-from {cfg.rl_from} is not one of --sft-steps {cfg.sft_steps}: "
            "give one of them (0: the last), or --rl-steps 0"
        )
    return cfg.rl_from or max(cfg.sft_steps)


def sft_dir(cfg: DemoConfig, runs: dict[str, SFTConfig], steps: int) -> Path:
    """Where SFT-``steps`` is: the run's output for the last, its export ``step-N`` for the others."""
    out = Path(runs["sft"].out)
    return out if steps == max(cfg.sft_steps) else out / f"step-{steps}"


def _agent_dirs(cfg: DemoConfig, runs: dict[str, SFTConfig]) -> dict[str, str]:
    """Row label → agent spec, in the table's order."""
    specs: dict[str, str] = {}
    for name in cfg.agents:
        if name == "base":
            specs["base (untrained)"] = f"hf:{cfg.base}"
        elif name == "sft":
            for steps in cfg.sft_steps:
                specs[f"SFT-{steps}"] = f"hf:{sft_dir(cfg, runs, steps)}"
        elif name == "paft" and "paft" in runs:
            specs[paft_label(cfg)] = f"hf:{runs['paft'].out}"
            if "continued" in runs:
                specs[continued_label(cfg)] = f"hf:{runs['continued'].out}"
        elif name == "rl" and "sft" in cfg.agents:
            from training.rl_demo import demo_specs

            specs.update(demo_specs(Path(runs["sft"].out).parent, cfg.rl_steps))
        elif name in ("oracle", "static"):
            specs[name] = name
    return specs


def summarize(report: Any) -> dict[str, Any]:
    """The table's figures from a plugin report: clean success, success and Δ per tier, tier-4 refusal, tool errors."""

    def value(rate: Any) -> float | None:
        return None if rate is None or rate.n == 0 else round(rate.value, 4)

    clean = report.row("clean")
    row: dict[str, Any] = {"clean": value(clean.clean) if clean else None, "clean_n": clean.clean.n if clean else 0}
    for tier, _ in SCOPES[1:]:
        r = report.row(tier)
        row[f"delta_{tier}"] = None if r is None else round(r.delta.points, 1)
    for scope, _ in SCOPES:
        r = report.row(scope)
        row[f"success_{scope}"] = None if r is None else value(r.clean if scope == "clean" else r.perturbed)
        if scope != "clean":
            row[f"twins_{scope}"] = None if r is None else value(r.clean)
    tier4 = report.row("internalization")
    row["refusal_t4"] = value(tier4.refusal) if tier4 else None
    row["refusal_t4_k"], row["refusal_t4_n"] = (tier4.refusal.k, tier4.refusal.n) if tier4 else (0, 0)
    everything = report.row("all")
    row["tool_errors"] = value(everything.tool_errors) if everything else None
    return row


def clean_success(agent: Any, n: int, seed: int = 0, batch_size: int = 32, domain: str = "poi") -> tuple[Any, list]:
    """Success on ``n`` clean tasks of the held-out test split (every family, unsolvable ones included)."""
    from sandbox import success_rate, tasks
    from sandbox.case import Case
    from sandbox.evaluation import run_in_batches

    episodes = run_in_batches(agent, [Case(t) for t in tasks(domain, "test", n, seed)], batch_size)
    return success_rate(episodes), episodes


def format_paired(label: str, baseline: str, deltas: dict[str, Any]) -> str:
    parts = [f"{name} {deltas[scope]}" for scope, name in (*SCOPES, ("refusal", "tier-4 refusal")) if scope in deltas]
    return f"{label} minus {baseline}, paired on the same cases (points, 95% interval): " + "; ".join(parts)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


COLUMNS_LEGEND = (
    "each tier: success on its perturbed cases (Δ: points against the same tasks run clean; no Δ where the agent "
    "solved none of those clean twins, as a loss cannot show there); tier-4 refusal: of its unsolvable cases; bad "
    "calls: the share of tool calls naming an unknown tool or with invalid arguments"
)


def format_table(rows: dict[str, dict[str, Any]]) -> str:
    """The demo's table: clean success; each tier's success with its Δ against the same tasks' clean twins (none
    where the twins were all failed); tier-4 refusal (of its unsolvable cases); bad calls. The tiers are named as
    the figure names them; a tier no row measured is left out."""
    from tabulate import tabulate

    def beside(row: dict[str, Any], scope: str) -> str:
        delta, twins = row.get(f"delta_{scope}"), row.get(f"twins_{scope}")
        if delta is None or twins == 0:
            note = "" if row.get(f"success_{scope}") is None else " (twins 0%)"
            return pct(row.get(f"success_{scope}")) + note
        return pct(row.get(f"success_{scope}")) + f" ({delta:+.1f})"

    tiers = [(scope, f"{name} (Δ)") for scope, name in SCOPES if scope != "clean"
             and any(r.get(f"success_{scope}") is not None for r in rows.values())]  # fmt: skip
    refusal = any(r.get("refusal_t4") is not None for r in rows.values())
    headers = ["agent", "clean", *[h for _, h in tiers], *(["tier-4 refusal"] if refusal else []), "bad calls"]
    body = [
        [label, pct(r["clean"]), *[beside(r, scope) for scope, _ in tiers],
         *([pct(r["refusal_t4"])] if refusal else []), pct(r["tool_errors"])]
        for label, r in rows.items()
    ]  # fmt: skip
    return tabulate(body, headers=headers, disable_numparse=True) + "\n" + COLUMNS_LEGEND


def run_table(cfg: DemoConfig, root: Path) -> int:
    """Train (or reuse) every agent of the table, evaluate each, print the table; 0."""
    from training.demo_clock import peak_rss_gib
    from training.inference.base import prepare_default_base

    t0 = time.perf_counter()
    _agent_dirs(cfg, _train_configs(cfg, Path(cfg.dir or ".")))  # misuse stops the demo before it trains
    if "rl" in cfg.agents and "sft" in cfg.agents:
        rl_start(cfg)
    _say(f"working in {root} (seed {cfg.seed})")
    if cfg.base in ("", "default"):
        prepare_default_base()
    runs = _train_configs(cfg, root)

    timings = train_agents(cfg, runs, root)
    rows, reports = evaluate_agents(cfg, _agent_dirs(cfg, runs), root, timings)
    for steps in cfg.sft_steps:
        if f"SFT-{steps}" in rows:
            rows[f"SFT-{steps}"]["steps"] = steps
    for label in (paft_label(cfg), continued_label(cfg)):
        if label in rows:
            rows[label]["steps"] = cfg.paft_from + cfg.paft_steps
    if cfg.task_families:
        print(f"task families: {', '.join(cfg.task_families)} (training and evaluation)")
    print(format_table(rows))
    compared = paft_against(cfg, reports)
    if compared:
        print(format_paired(*compared))
    draw_figure(rows, Path(cfg.figure) if cfg.figure else root / "demo.png")
    if "rl" in cfg.agents:
        from training.rl_demo import REWARDS, demo_note
        from training.rl_demo import label as rl_label

        note = demo_note(rows, f"SFT-{rl_start(cfg)}", root, cfg.rl_steps)
        if note:
            print(note)
        completion, aware = (rl_label(cfg.rl_steps, reward) for reward in REWARDS)
        if completion in reports and aware in reports:
            print(format_paired(aware, completion, paired(reports[aware], reports[completion])))
    timings["total_s"] = round(time.perf_counter() - t0, 1)
    phases = (f"{name.removesuffix('_s').replace('_', ' ', 1)} {seconds / 60:.1f}" for name, seconds in timings.items())
    _say("minutes per phase (trained or measured in this run; a reused one is not listed): " + ", ".join(phases))
    peak = round(peak_rss_gib(), 2)
    _say(f"peak memory: {peak:.1f} GiB (this process or its largest child, in this run)")
    if cfg.json:
        from training.runs import write_json

        Path(cfg.json).parent.mkdir(parents=True, exist_ok=True)
        write_json(
            cfg.json,
            {
                "config": dataclasses.asdict(cfg),
                "rows": rows,
                "timings": timings,
                "peak_rss_gib": peak,
                "reports": {k: r.to_dict() for k, r in reports.items()},
            },
        )
        _say(f"table written to {cfg.json}")
    return 0


def needs_sft(cfg: DemoConfig) -> bool:
    """Whether the SFT run is trained: for its rows, or as the start of PAFT or RL."""
    return "sft" in cfg.agents or ("paft" in cfg.agents and cfg.paft_from > 0) or "rl" in cfg.agents


def paft_against(cfg: DemoConfig, reports: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """PAFT against SFT of the same compute (SFT continued from PAFT's start with ``--continued``, else
    SFT-<paft-from + paft-steps>, else the longest SFT shown), paired."""
    label = paft_label(cfg)
    sft = [f"SFT-{s}" for s in cfg.sft_steps if f"SFT-{s}" in reports]
    same = [b for b in (continued_label(cfg), f"SFT-{cfg.paft_from + cfg.paft_steps}") if b in reports]
    baseline = same[0] if same else (sft[-1] if sft else None)
    if label not in reports or baseline is None:
        return None
    return label, baseline, paired(reports[label], reports[baseline])


def draw_figure(rows: dict[str, dict[str, Any]], path: Path) -> None:
    from training.figure import draw

    try:
        _say(f"figure written to {draw(rows, path)}")
    except UsageError as exc:  # matplotlib is an extra: the table stands without the figure
        _say(f"no figure: {exc}")


def train_agents(cfg: DemoConfig, runs: dict[str, SFTConfig], root: Path) -> dict[str, float]:
    """Train the SFT and PAFT runs and the RL agents, each unless a finished run of its options exists (or
    ``cfg.retrain``); the seconds each took. Each trains in a process of its own (``training.child``), so that its
    memory goes back when it ends; the runs that start from the SFT run (PAFT, SFT continued) train side by side
    where the machine has the CPUs and the memory for both (``child.side_by_side``)."""
    from training import child
    from training.runs import finished_run, peak_bytes

    timings: dict[str, float] = {}

    def fit(todo: list[tuple[str, SFTConfig]]) -> None:
        for name, run_cfg in todo:
            _say(f"{name}: training {run_cfg.steps} steps × {run_cfg.batch_size} episodes into {run_cfg.out}")
        t = time.perf_counter()
        child.train(todo, _say)
        timings[f"train_{'+'.join(name for name, _ in todo)}_s"] = round(time.perf_counter() - t, 1)

    todo = []
    for name, run_cfg in runs.items():
        if name == "sft" and not needs_sft(cfg):
            continue
        if finished_run(run_cfg.out, run_cfg.to_dict()) and not cfg.retrain:
            _say(f"{name}: reusing {run_cfg.out} (--retrain to start over)")
            continue
        # The demo owns its folder: a finished run of other options is replaced, checkpoints of them start over.
        run_cfg.resume, run_cfg.overwrite = not cfg.retrain, True
        todo.append((name, run_cfg))
    if todo and todo[0][0] == "sft":  # the others start from it
        fit(todo[:1])
        todo = todo[1:]
    threads, why = child.side_by_side(len(todo), peak_bytes(runs["sft"].out))
    names = " and ".join(name for name, _ in todo)
    if threads:
        for _, run_cfg in todo:
            run_cfg.threads = threads
        _say(f"{names} train side by side, {threads} CPU thread{'s' * (threads > 1)} each ({why})")
        fit(todo)
    else:
        if len(todo) > 1:
            _say(f"{names} train one after the other, not side by side: {why}")
        for run in todo:
            fit([run])
    if "rl" in cfg.agents and "sft" in cfg.agents:
        from training.rl_demo import RLDemoSettings, demo_train

        settings = RLDemoSettings(
            cfg.rl_steps, cfg.rl_group, tasks=cfg.rl_tasks, perturbed=cfg.rl_perturbed, sft_coef=cfg.rl_sft_coef,
            seed=cfg.seed,
        )  # fmt: skip
        timings.update(demo_train(sft_dir(cfg, runs, rl_start(cfg)), root, settings, cfg.retrain, _say))
    return timings


def evaluate_agents(
    cfg: DemoConfig, specs: dict[str, str], root: Path, timings: dict[str, float]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each row's figures and report: ``cfg.n`` cases per tier and their clean twins, test split, eval pool,
    through the episode cache in ``root``; the seconds each took go into ``timings``."""
    from sandbox.evaluation.evaluate import evaluate
    from sandbox.evaluation.specs import load_agent

    rows: dict[str, dict[str, Any]] = {}
    reports: dict[str, Any] = {}
    for label, spec in specs.items():
        _say(f"evaluating {label} ({spec}) on {cfg.n} cases per tier + clean twins, test split, eval pool")
        t = time.perf_counter()
        agent = load_agent(spec)
        report = evaluate(
            agent, "all", n=cfg.n, seed=cfg.seed, domain="poi", split="test", batch_size=cfg.eval_batch,
            cache_dir=root / "eval-cache", families=cfg.task_families or None, progress=Progress(label, _say),
        )  # fmt: skip
        del agent
        timings[f"eval_{label}_s"] = round(time.perf_counter() - t, 1)
        rows[label] = row = summarize(report)
        reports[label] = report
        tiers = ", ".join(f"{name} {pct(row[f'success_{scope}'])}" for scope, name in SCOPES[1:])
        _say(f"{label}: clean {pct(row['clean'])}, {tiers} in {timings[f'eval_{label}_s']} s")
    return rows, reports
