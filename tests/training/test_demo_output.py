"""What ``openagent demo`` prints, on the reference agents (no model, no torch)."""

from __future__ import annotations

import re


def test_the_table_gives_each_tiers_success_beside_its_delta_named_as_the_figure_names_it():
    from sandbox.evaluation import evaluate
    from training.demo import format_table, summarize
    from training.figure import SCOPES

    rows = {agent: summarize(evaluate(agent, "all", n=4, cache_dir=None)) for agent in ("oracle", "static")}
    table = format_table(rows)
    header = table.splitlines()[0]
    for scope, name in SCOPES[1:]:
        assert f"{name} (Δ)" in header, header
        static = rows["static"]
        assert f"{100 * static[f'success_{scope}']:.1f}% ({static[f'delta_{scope}']:+.1f})" in table
    assert "tier-4 refusal" in header and "100.0% (+0.0)" in table and "bad calls" in header


def test_a_tier_whose_clean_twins_all_failed_shows_no_delta_and_unmeasured_tiers_no_column():
    from training.demo import format_table

    row = {"clean": 0.0, "success_perception": 0.0, "delta_perception": 0.0, "twins_perception": 0.0,
           "success_interaction": 0.5, "delta_interaction": -25.0, "twins_interaction": 0.75, "refusal_t4": None,
           "tool_errors": 0.1}  # fmt: skip
    table = format_table({"SFT-1": row})
    assert "0.0% (twins 0%)" in table and "(+0.0)" not in table and "50.0% (-25.0)" in table
    header = table.splitlines()[0]
    assert "tier 3" not in header and "tier-4 refusal" not in header


def test_evaluating_a_row_shows_progress_and_rates_in_percent(tmp_path, capsys):
    from training.demo import DemoConfig, evaluate_agents

    timings: dict[str, float] = {}
    evaluate_agents(DemoConfig(n=2), {"static": "static"}, tmp_path, timings)
    err = capsys.readouterr().err
    total = re.search(r"static: 1 of (\d+) episodes in \d+ s", err)
    assert total, err
    assert f"static: {total[1]} of {total[1]} episodes" in err
    assert re.search(r"static: clean 100\.0%, tier 1 \d+\.\d%, .*tier 4 \d+\.\d% in ", err), err
