"""A training run's output directory: finished or not, its checkpoints, and what a rerun may do with it.

The rules every ``train`` (SFT, PAFT, RL) follows for ``OUT``:

- **reuse**: ``OUT`` holds a finished run (its exported model and :data:`META_FILE`) of the same
  options (run settings such as ``threads`` aside): nothing is trained, ``OUT`` is returned as is.
- **refuse**: a finished run of other options is a :class:`~sandbox.errors.UsageError` naming each
  option that differs, unless ``overwrite``, which trains again from step 0 and replaces it.
- **resume**: no finished run, but checkpoints: training continues from the newest *intact* one. A
  truncated or corrupt checkpoint (weights cut short, optimizer state missing, unreadable
  ``state.json``) is skipped with a warning and the one before it used; with none intact the run
  starts from step 0, also with a warning. Checkpoints of other options are refused like a finished
  run (``--no-resume`` or ``overwrite`` start over). A resumed run keeps the precision its checkpoint
  records (``training.loop``).

Everything here is written atomically (a temp file or folder, then ``os.replace``), so an interrupted
run leaves either the old file or the new one, never half of one; the metadata file that marks a run
finished is written last.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.inference.model_dir import CheckpointError

META_FILE = "openagent-train.json"
CHECKPOINTS = "checkpoints"
WEIGHTS, LEGACY_WEIGHTS, OPTIMIZER, STATE = "trainable.safetensors", "trainable.pt", "optimizer.pt", "state.json"
RUN_SETTINGS = frozenset({"out", "progress", "threads", "resume", "save_every", "overwrite"})
"""Config fields that change how a run is carried out, not what it trains."""


def warn(message: str) -> None:
    print(f"openagent train: warning: {message}", file=sys.stderr, flush=True)


def say(message: str) -> None:
    print(f"openagent train: {message}", file=sys.stderr, flush=True)


# --- atomic writes ---------------------------------------------------------------------------------


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def sync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` to disk, so that renaming it into place publishes whole files."""
    for path in folder.rglob("*"):
        if path.is_file():
            _fsync(path)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same folder and ``os.replace``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: str | Path, obj: Any, indent: int | None = 1) -> None:
    write_text(path, json.dumps(obj, indent=indent, default=str) + "\n")


# --- finished runs ---------------------------------------------------------------------------------


def differences(saved: dict, config: dict, ignore: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """``"key: saved -> config"`` for each field that differs, run settings and ``ignore`` aside."""
    saved = json.loads(json.dumps(saved, default=str))
    config = json.loads(json.dumps(config, default=str))
    keys = sorted((set(saved) | set(config)) - RUN_SETTINGS - set(ignore))
    return [f"{k}: {saved.get(k)!r} -> {config.get(k)!r}" for k in keys if saved.get(k) != config.get(k)]


def read_meta(out: str | Path) -> dict | None:
    """The metadata of the finished run in ``out``, or ``None`` if there is none.

    Raises :class:`CheckpointError` if the file is there but unreadable: what ``out`` holds is then unknown."""
    meta_file = Path(out) / META_FILE
    if not meta_file.is_file():
        return None
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError) as err:
        raise CheckpointError(
            f"{meta_file}: cannot read the finished run's metadata ({err}). Pass --overwrite to train into "
            f"{out} again, or give another --out."
        ) from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{meta_file}: not a JSON object. Pass --overwrite to train into {out} again.")
    return meta


def peak_bytes(out: str | Path) -> int | None:
    """The peak memory of the process that finished the training in ``out``, if its metadata records it."""
    return (read_meta(out) or {}).get("peak_rss_bytes")


def finished_run(out: str | Path, config: dict) -> bool:
    """Whether ``out`` holds a finished run (its exported model) of ``config``, run settings aside."""
    try:
        meta = read_meta(out)
    except CheckpointError:
        return False
    return meta is not None and not differences(meta.get("config", {}), config)


def reuse_finished(out: str | Path, config: dict, overwrite: bool = False) -> bool:
    """``True`` if ``out`` holds a finished run of ``config``, to be reused as it is (unless ``overwrite``).

    A finished run of other options raises :class:`CheckpointError` naming them, unless ``overwrite``: then
    what it wrote (its metadata, exports and leftover checkpoints) is removed and ``False`` returned."""
    out = Path(out)
    try:
        meta = read_meta(out)
    except CheckpointError:
        if not overwrite:
            raise
        meta = {}
    if meta is None:
        return False
    changes = differences(meta.get("config", {}), config)
    if not overwrite:
        if not changes:
            say(f"{out} holds a finished run of these options ({meta.get('steps', '?')} steps): reusing it, "
                 "nothing trained (--overwrite trains again)")  # fmt: skip
            shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)  # left if the run died right after its export
            return True
        raise CheckpointError(
            f"{out} holds a finished run with other options ({'; '.join(changes)}). "
            "Rerun with its options to reuse it, give another --out, or pass --overwrite to replace it."
        )
    say(f"{out}: replacing the finished run in it (--overwrite)")
    # The marker goes first: a replacement interrupted half way must not pass for the finished old run.
    (out / META_FILE).unlink(missing_ok=True)
    for export_dir in out.glob("step-*"):
        if (export_dir / META_FILE).is_file():
            shutil.rmtree(export_dir, ignore_errors=True)
    clear_checkpoints(out)
    return False


# --- the finished model ---------------------------------------------------------------------------


def export(model: Any, tokenizer: Any, target: Path, meta: dict) -> None:
    """A plain ``save_pretrained`` directory (LoRA merged in) plus the metadata file, written atomically: into a
    temp folder, then renamed (or, into an existing ``target``, each file replaced, the metadata file last, so
    that ``target`` never looks finished with half a model)."""
    plain = model
    if hasattr(model, "merge_and_unload"):
        plain = copy.deepcopy(model).merge_and_unload()
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    plain.config.use_cache = True
    plain.save_pretrained(tmp)
    plain.config.use_cache = False
    tokenizer.save_pretrained(tmp)
    write_json(tmp / META_FILE, meta)
    sync_tree(tmp)
    if target.exists() and target.resolve() != tmp.resolve():
        # The output directory also holds checkpoints/ and step-N/: replace only what export writes.
        (target / META_FILE).unlink(missing_ok=True)
        for item in sorted(tmp.iterdir(), key=lambda p: p.name == META_FILE):
            os.replace(item, target / item.name)
        tmp.rmdir()
    else:
        os.rename(tmp, target)


# --- checkpoints -----------------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """A resumable checkpoint read whole into memory (so a corrupt one is found before anything is loaded)."""

    path: Path
    step: int
    history: list[dict]
    config: dict | None
    trainable: dict[str, Any]
    optimizer: dict
    scheduler: dict
    segments: list[dict] = field(default_factory=list)
    """What each stretch of the run computed with (:class:`training.loop.Loop`), oldest first; empty in checkpoints
    written before the run recorded it."""


def checkpoint_dirs(out: str | Path) -> list[Path]:
    """``OUT/checkpoints/step-N`` folders, oldest first (by N)."""

    def step_of(p: Path) -> int:
        digits = p.name.removeprefix("step-")
        return int(digits) if digits.isdigit() else -1

    found = [p for p in (Path(out) / CHECKPOINTS).glob("step-*") if p.is_dir() and step_of(p) >= 0]
    return sorted(found, key=step_of)


def latest_checkpoint(out: str | Path) -> Path | None:
    """The newest checkpoint folder with a ``state.json`` (not checked further: see :func:`resume_point`)."""
    done = [p for p in checkpoint_dirs(out) if (p / STATE).is_file()]
    return done[-1] if done else None


def clear_checkpoints(out: str | Path) -> None:
    shutil.rmtree(Path(out) / CHECKPOINTS, ignore_errors=True)


def save_checkpoint(
    out: Path,
    step: int,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    history: list[dict],
    config: dict | None = None,
    segments: list[dict] | None = None,
) -> Path:
    """Trainable weights (safetensors), optimizer and schedule at ``step``, the run's config (which a resume
    must match) and its segments (what it computed with, which a resume keeps), written into a temp folder,
    synced, then renamed into place; keeps the newest two."""
    import torch
    from safetensors.torch import save_file

    root = Path(out) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"step-{step:06d}"
    tmp = root / f".step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    trainable = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
    save_file(trainable, tmp / WEIGHTS)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / OPTIMIZER)
    state = {"step": step, "history": history, "config": config, "segments": segments or []}
    (tmp / STATE).write_text(json.dumps(state, default=str) + "\n")
    for name in (WEIGHTS, OPTIMIZER, STATE):
        _fsync(tmp / name)
    if target.exists():
        old = root / f".step-{step:06d}.old"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)
    for stale in checkpoint_dirs(out)[:-2]:  # keep the last two: the newest may turn out unreadable
        shutil.rmtree(stale, ignore_errors=True)
    return target


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint in ``path``, read and checked whole; :class:`ValueError` says what is wrong with it."""
    import torch

    try:
        state = json.loads((path / STATE).read_text())
    except FileNotFoundError:
        raise ValueError(f"no {STATE}") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"{STATE} is not valid JSON ({err})") from None
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise ValueError(f"{STATE} records no step")
    try:
        if (path / WEIGHTS).is_file():
            from safetensors.torch import load_file

            trainable = load_file(path / WEIGHTS)
        elif (path / LEGACY_WEIGHTS).is_file():  # checkpoints written before the weights moved to safetensors
            trainable = torch.load(path / LEGACY_WEIGHTS, map_location="cpu", weights_only=True)
        else:
            raise ValueError(f"no {WEIGHTS}")
    except ValueError:
        raise
    except Exception as err:  # safetensors and torch raise many kinds on a file cut short
        raise ValueError(f"the weights are unreadable ({type(err).__name__}: {err})") from None
    if not (path / OPTIMIZER).is_file():
        raise ValueError(f"no {OPTIMIZER} (the optimizer state)")
    try:
        optim = torch.load(path / OPTIMIZER, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(f"the optimizer state is unreadable ({type(err).__name__}: {err})") from None
    if not isinstance(optim, dict) or not {"optimizer", "scheduler"} <= set(optim):
        raise ValueError(f"{OPTIMIZER} holds no optimizer and scheduler state")
    if not isinstance(trainable, dict) or not trainable:
        raise ValueError("the weights hold no tensors")
    segments = state.get("segments") or []
    if not isinstance(segments, list) or not all(isinstance(s, dict) for s in segments):
        raise ValueError(f"{STATE} records its segments as {type(segments).__name__}, not a list of objects")
    return Checkpoint(
        path, state["step"], list(state.get("history") or []), state.get("config"), trainable, optim["optimizer"],
        optim["scheduler"], segments,
    )  # fmt: skip


def resume_point(
    out: str | Path, config: dict, overwrite: bool = False, say: Callable[[str], None] = warn
) -> Checkpoint | None:
    """The newest intact checkpoint in ``out`` to resume from, or ``None`` to start from step 0.

    Unreadable checkpoints are skipped, each with a warning. An intact one of other options is a
    :class:`CheckpointError` naming them, unless ``overwrite`` (then the run starts over)."""
    dirs = checkpoint_dirs(out)
    for path in reversed(dirs):
        try:
            point = read_checkpoint(path)
        except ValueError as err:
            older = "an older one" if path != dirs[0] else "none older"
            say(f"checkpoint {path} is unusable ({err}); skipping it ({older})")
            continue
        changes = differences(point.config, config, ignore={"export_at"}) if point.config is not None else []
        if not changes:
            return point
        if overwrite:
            say(f"the checkpoints in {Path(out) / CHECKPOINTS} are of other options ({'; '.join(changes)}); "
                "starting over (--overwrite)")  # fmt: skip
            return None
        raise CheckpointError(
            f"the checkpoints in {out} were written by a run with other options ({'; '.join(changes)}). "
            "Rerun with the same options to resume it, or pass --no-resume or --overwrite (or another --out) to "
            "start over."
        )
    if dirs:
        say(f"no intact checkpoint in {Path(out) / CHECKPOINTS}; starting from step 0")
    return None


def restore(point: Checkpoint, model: Any, optimizer: Any, scheduler: Any) -> int:
    """Load ``point`` into the model, optimizer and schedule; the step it was taken at."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    wrong = [
        n for n, t in point.trainable.items() if n not in params or tuple(params[n].shape) != tuple(t.shape)
    ]  # fmt: skip
    if wrong or len(point.trainable) != len(params):
        missing = sorted(set(params) - set(point.trainable))
        raise CheckpointError(
            f"checkpoint {point.path} does not fit the model (unexpected or misshapen: {wrong[:3]}, missing: "
            f"{missing[:3]}). Pass --no-resume or --overwrite to start over."
        )
    model.load_state_dict(point.trainable, strict=False)
    optimizer.load_state_dict(point.optimizer)
    scheduler.load_state_dict(point.scheduler)
    return point.step
