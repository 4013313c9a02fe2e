"""How training uses a shared CPU: OpenMP's idle threads sleep, threads follow the CPUs the process may use, and
the third-party deprecation noise stays out of the user's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sandbox.errors import UsageError
from training import cpu

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import json, os; from training import cpu; w = cpu.prepare(); print(json.dumps([w, os.environ.get('OMP_WAIT_POLICY'), os.environ.get('KMP_BLOCKTIME'), 'torch' in __import__('sys').modules]))"  # noqa: E501


def _fresh_process(**env: str) -> list:
    """What :func:`cpu.prepare` does in a new process with ``env`` (torch not loaded)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME", cpu.POLICY_ENV)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_idle_openmp_threads_sleep_unless_the_user_or_the_old_policy_says_otherwise():
    assert _fresh_process() == ["passive", "PASSIVE", "0", False]
    assert _fresh_process(OMP_WAIT_POLICY="ACTIVE") == ["OMP_WAIT_POLICY=ACTIVE", "ACTIVE", "0", False]
    assert _fresh_process(OPENAGENT_CPU_POLICY="torch") == ["OpenMP's default", None, None, False]


def test_once_torch_has_loaded_the_wait_policy_is_reported_not_pretended(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(cpu, "_wait", None)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert cpu.prepare() == "OpenMP's default (torch had loaded before training began)"
    assert "OMP_WAIT_POLICY" not in os.environ


def test_an_unknown_policy_is_refused_even_once_prepared(monkeypatch):
    monkeypatch.setenv(cpu.POLICY_ENV, "greedy")
    with pytest.raises(UsageError, match=r"OPENAGENT_CPU_POLICY='greedy': expected one of shared, torch"):
        cpu.prepare()


def test_threads_follow_the_cpus_the_process_may_use(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(cpu, "CGROUP_CPU_MAX", quota)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert cpu.available_cpus() == 4  # no cgroup file: the affinity mask
    quota.write_text("max 100000\n")
    assert cpu.available_cpus() == 4
    quota.write_text("150000 100000\n")  # one and a half CPUs: two threads, each given its share
    assert cpu.available_cpus() == 2
    quota.write_text("20000 100000\n")
    assert cpu.available_cpus() == 1

    before = torch.get_num_threads()
    try:
        monkeypatch.setattr(cpu, "available_cpus", lambda: 1)
        use = cpu.configure()
        assert (use.threads, use.cpus, use.policy) == (1, 1, "shared") and torch.get_num_threads() == 1
        assert use.describe().startswith("1 CPU thread (1 CPUs available, OPENAGENT_CPU_POLICY=shared), OpenMP waits")
        assert cpu.configure(threads=2).threads == 2  # an explicit count wins
        monkeypatch.setenv(cpu.POLICY_ENV, "torch")
        assert cpu.configure().threads == 2  # torch's own choice, left as it is
    finally:
        torch.set_num_threads(before)


def test_lora_setup_hides_transformers_deprecation_of_gradient_checkpointing_and_nothing_else(tiny, monkeypatch):
    """peft asks the model ``is_gradient_checkpointing``, which transformers 5 deprecates with a FutureWarning a
    user cannot act on; the filter is that narrow: another warning raised there still shows."""
    pytest.importorskip("peft")
    import peft

    from training.config import SFTConfig
    from training.loop import load_model

    real = peft.get_peft_model

    def also_warns(*args, **kwargs):
        warnings.warn("something else is deprecated", FutureWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(peft, "get_peft_model", also_warns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(SFTConfig(lora=True), tiny)
    messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert messages == ["something else is deprecated"], messages


KEEP = """
import resource, sys
from training import cpu
if sys.argv[1] == "keep":
    assert cpu.keep_freed_memory()
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = bytearray(256 << 20)  # a training step's activations, freed and taken again each step
    del block
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults[-1])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_taken_again_without_faulting_its_pages_in():
    def faults(setting: str) -> int:
        done = subprocess.run([sys.executable, "-c", KEEP, setting], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        return int(done.stdout)

    pages = (256 << 20) // 4096
    assert faults("default") > pages // 2  # glibc hands a block this large back to the kernel when freed
    assert faults("keep") < pages // 100


RELEASE = """
import os
from training import cpu
assert cpu.keep_freed_memory()
resident = lambda: int(open(f"/proc/{os.getpid()}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
blocks = [bytearray(64 << 20) for _ in range(8)]  # a model and its passes, freed: malloc keeps them
del blocks
held = resident()
assert cpu.release_freed_memory()
print(held - resident())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_process_done_with_training_hands_the_freed_memory_it_kept_back():
    done = subprocess.run([sys.executable, "-c", RELEASE], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 256 << 20  # of the 512 MiB freed
