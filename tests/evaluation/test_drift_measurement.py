"""The fixed sample with drift: n drift cases per tier from their own seed, beside the same static cases as
without it, reported as ``<tier>-drift`` rows that gates and baselines read."""

from sandbox.evaluation import check, compare, draw_cases, evaluate


def test_drift_draws_n_more_cases_per_tier_and_leaves_the_static_ones_as_they_were():
    static = draw_cases(["perception", "reasoning"], n=6, seed=3)
    both = draw_cases(["perception", "reasoning"], n=6, seed=3, drift=True)
    assert [c.key() for c in both if not any(p.after for p in c.perturbations)] == [c.key() for c in static]
    moving = [c for c in both if any(p.after for p in c.perturbations)]
    assert len(moving) == 6, "reasoning cannot drift: no drift case, and no error"
    assert all(p.tier == "perception" and 1 <= p.after <= max(1, len(c.task.waves()) - 1)
               for c in moving for p in c.perturbations)  # fmt: skip


def test_drift_rows_sit_beside_the_static_ones_and_gates_read_them():
    report = evaluate("oracle", ["perception", "internalization"], n=4, seed=1, cache_dir=None, drift=True)
    rows = {r.scope: r for r in report.rows()}
    assert rows["perception"].episodes == rows["perception-drift"].episodes == 4
    assert rows["internalization-drift"].episodes == 4 and rows["all"].episodes == 16
    assert any(scope.endswith("-drift") and row.kind == "perturbation" for scope, row in rows.items())
    assert report.meta["drift"] is True
    assert check(report, "perception-drift.success>=0.5 internalization-drift.refusal>=0.5").verdict == "PASS"
    assert check(report, "interaction-drift.success>=0.5").verdict == "FAIL", "no episodes measured there"
    assert compare(report, report).verdict in ("PASS", "INCONCLUSIVE")
    assert any(c.text == "baseline perception-drift" for c in compare(report, report).checks)
