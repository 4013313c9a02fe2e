import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
"""``benchmarks/bites.py`` measures the static baseline's drops; the tests assert its verdicts and use its
sample of tasks (one module, so what the tests check is what the table prints)."""
sys.path.insert(0, str(BENCHMARKS))
