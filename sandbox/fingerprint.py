"""Agent fingerprints: the part of an episode's cache key that says which agent ran it.

A fingerprint covers what decides an agent's behaviour, so that a changed agent is never served
old episodes and an unchanged one, in another process, finds its own:

- an object agent (a class instance, ``module:Class`` or ``module:instance``): the agent's own code
  (:func:`sandbox.agent_code.code_digest` of the modules its class and its bases come from: their
  files and every module of the project they import, transitively), the files it declares, and its
  configuration, its public attributes as they are when it is first fingerprinted;
- a plain function: its code (bytecode, constants, names, defaults, recursively into nested code),
  the values of its closure cells and of the constants and helper functions of its module that it
  names, and the own code of the modules of the other functions, classes and modules it names; for
  ``module:function`` the own code of its module too (its file and what it imports);
- a checkpoint (``hf:``): the bytes of its weights, config, tokenizer and adapter files
  (:func:`checkpoint_digest`).

An agent's own ``fingerprint()`` method wins over all of this. An agent (a class, an instance or a
function) may also set ``openagent_version`` (see :data:`VERSION_ATTRIBUTE`) to replace the source
part by a version that its author bumps, and ``openagent_files`` (:data:`sandbox.agent_code.FILES_ATTRIBUTE`)
to put prompt or data files in the key.

Values go into a key only by a deterministic description (never a memory address, never ``hash()``,
which is salted per process); an object with no stable description counts by its type name. The
key holds a digest, not the values, so secrets among an agent's attributes never reach a report.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import re
import sys
import types
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import Any

from sandbox.agent_code import FILES_ATTRIBUTE, code_digest, declared_files, file_digest, is_own_code

VERSION_ATTRIBUTE = "openagent_version"
"""Set it on an agent's class, instance or function (``openagent_version = "2"``) to key its cache by
that version instead of by its source. The configuration (an instance's public attributes) and the
declared files still count. Worth it when the source hash would invalidate too often or too rarely:
a module that reads data at import from somewhere it cannot declare, or a project whose unrelated
edits should not rerun a slow agent. Bump it when behaviour changes."""

CHECKPOINT_FILES = (
    "*.safetensors", "*.bin", "*.pt", "*.gguf", "*.index.json", "config.json", "generation_config.json",
    "tokenizer*", "special_tokens_map.json", "added_tokens.json", "vocab.*", "merges.txt", "*.model",
    "chat_template*", "adapter_*", "*.py",
)  # fmt: skip
"""What decides a checkpoint's replies: weights (and their indexes), configs, tokenizer files, chat
template, LoRA adapter files, remote code."""
_NOT_BEHAVIOUR = frozenset({"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"})

_MAX_DEPTH = 6
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_STDLIB = frozenset(sys.stdlib_module_names) | {"builtins"}


class _Memo:
    """A value computed once per live object: weakly by the object, or by id while it lives."""

    def __init__(self) -> None:
        self.weak: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self.by_id: dict[int, tuple[Any, str]] = {}

    def get(self, obj: Any, compute: Callable[[Any], str]) -> str:
        try:
            return self.weak[obj]
        except KeyError:
            pass
        except TypeError:  # unhashable (a dataclass with eq) or not weak-referenceable
            hit = self.by_id.get(id(obj))
            if hit is not None and (hit[0]() if isinstance(hit[0], weakref.ref) else hit[0]) is obj:
                return hit[1]
        value = compute(obj)
        try:
            self.weak[obj] = value
        except TypeError:
            ident, by_id = id(obj), self.by_id
            try:
                ref: Any = weakref.ref(obj, lambda _: by_id.pop(ident, None))
            except TypeError:
                ref = obj  # neither hashable nor weak-referenceable: held, so its id is not reused
            by_id[ident] = (ref, value)
        return value


_objects, _functions, _module_functions = _Memo(), _Memo(), _Memo()


def agent_key(agent: Any) -> str:
    """The fingerprint of an agent object: its own ``fingerprint()``, else its source and configuration.

    Computed once per object (configuration as it is then, so a counter the agent keeps does not
    change its key; give a changed configuration a new object). A plain function must be wrapped
    first (``sandbox.agent.fingerprint`` does: ``as_agent``), or it would be keyed as ``function``.
    """
    own = getattr(agent, "fingerprint", None)
    if callable(own):
        return str(own())
    return _objects.get(agent, _object_key)


def function_key(fn: Callable[..., Any], name: str | None = None, module_source: bool = False) -> str:
    """The fingerprint of a function agent: ``function:MODULE.NAME@DIGEST`` of its code.

    ``module_source`` adds the bytes of the function's module file (for ``module:function`` specs,
    where helpers, prompts and constants of that module decide behaviour too).
    """
    module = getattr(fn, "__module__", None) or "?"
    name = name or getattr(fn, "__qualname__", None) or type(fn).__qualname__
    memo = _module_functions if module_source else _functions
    digest = memo.get(fn, lambda f: _function_digest(f, module_source))
    return f"function:{module}.{name}@{digest}"


def checkpoint_digest(directory: str | os.PathLike[str]) -> str:
    """A digest of the files of a checkpoint directory that decide its replies (:data:`CHECKPOINT_FILES`).

    By content, so a rewritten weight file changes it and a copy or a ``touch`` does not. Hashing
    costs about a second per GB, once per file version per process (:func:`file_digest`).
    """
    directory = Path(directory)
    names = sorted(
        {p.name for pattern in CHECKPOINT_FILES for p in directory.glob(pattern) if p.is_file()} - _NOT_BEHAVIOUR
    )
    digest = hashlib.sha256()
    for name in names:
        digest.update(f"{name}\0{file_digest(directory / name)}\0".encode())
    return digest.hexdigest()[:16]


def _object_key(agent: Any) -> str:
    cls = type(agent)
    version = getattr(agent, VERSION_ATTRIBUTE, None)
    source = f"version={version}" if version is not None else _class_source(cls)
    config = _describe(_public_attributes(agent), 0, set())
    files = code_digest((), declared_files(agent) + declared_files(cls)) if _declares(agent) else ""
    digest = hashlib.sha256(f"{source}\0{config}\0{files}".encode()).hexdigest()[:16]
    return f"{cls.__module__}.{cls.__qualname__}@{digest}"


def _public_attributes(obj: Any) -> dict[str, Any]:
    values = dict(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                values.setdefault(slot, getattr(obj, slot))
    return {k: v for k, v in values.items() if not k.startswith("_") and k not in (VERSION_ATTRIBUTE, FILES_ATTRIBUTE)}


def _declares(obj: Any) -> bool:
    return getattr(obj, FILES_ATTRIBUTE, None) is not None


def _class_source(cls: type) -> str:
    """The source of the modules that the class and its bases come from (the standard library's excepted)."""
    parts = []
    for module_name in dict.fromkeys(klass.__module__ for klass in cls.__mro__):
        if module_name.partition(".")[0] in _STDLIB:
            continue
        source = _module_source(module_name)
        if source is None:  # a class made in a notebook or by exec: its methods' code
            source = _class_body(cls, module_name)
        parts.append(f"{module_name}={source}")
    return ";".join(parts)


def _module_source(module_name: str) -> str | None:
    """The module's file and the project's own modules it imports (:func:`~sandbox.agent_code.code_digest`)."""
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    return f"{file_digest(path)}+{code_digest([module_name])}"


def _class_body(cls: type, module_name: str) -> str:
    parts = []
    for klass in cls.__mro__:
        if klass.__module__ != module_name:
            continue
        for name, value in sorted(vars(klass).items()):
            if name in ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"):
                continue
            value = getattr(value, "__func__", value)  # staticmethod, classmethod
            if isinstance(value, property):
                value = (value.fget, value.fset, value.fdel)
            parts.append(f"{name}={_describe(value, 0, set())}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _function_digest(fn: Any, module_source: bool) -> str:
    version = getattr(fn, VERSION_ATTRIBUTE, None)
    if version is not None:
        blob = f"version={version}"
    else:
        blob = _callable(fn, 0, set())
        if module_source:
            module = getattr(fn, "__module__", None)
            blob += f"\0module={_module_source(module) if module else None}"
    if _declares(fn):
        blob += f"\0files={code_digest((), declared_files(fn))}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _callable(fn: Any, depth: int, seen: set[int]) -> str:
    if isinstance(fn, types.FunctionType):
        return _function(fn, depth, seen)
    if isinstance(fn, types.MethodType):
        owner = fn.__self__
        config = _describe(_public_attributes(owner), depth + 1, seen) if not isinstance(owner, type) else ""
        return f"method({_callable(fn.__func__, depth, seen)},{_type_name(type(owner))},{config})"
    if isinstance(fn, functools.partial):
        return f"partial({_callable(fn.func, depth, seen)},{_describe((fn.args, fn.keywords), depth + 1, seen)})"
    if isinstance(fn, types.BuiltinFunctionType | type):
        return _type_name(fn) if isinstance(fn, type) else f"builtin:{fn.__module__}.{fn.__qualname__}"
    # A callable object: its class's source and its configuration, as for an object agent.
    return f"object({_object_key(fn)})"


def _function(fn: types.FunctionType, depth: int, seen: set[int]) -> str:
    if id(fn) in seen or depth > _MAX_DEPTH:
        return f"fn:{fn.__module__}.{fn.__qualname__}"
    seen.add(id(fn))
    parts = [
        _code(fn.__code__),
        _describe(fn.__defaults__, depth + 1, seen),
        _describe(fn.__kwdefaults__, depth + 1, seen),
    ]
    for cell in fn.__closure__ or ():
        try:
            parts.append(_describe(cell.cell_contents, depth + 1, seen))
        except ValueError:
            parts.append("<empty cell>")
    # Module-level names it uses: helper functions of its own module, and constants. Mutable globals
    # (a list that counts calls) are left out, so that a run does not change the next run's key.
    scope = fn.__globals__
    for name in sorted(set(_names(fn.__code__))):
        if name not in scope:
            continue
        value = scope[name]
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            parts.append(f"{name}={_function(value, depth + 1, seen)}")
        elif (foreign := _foreign_module(value, fn.__module__)) is not None:
            parts.append(f"{name}=code({foreign}:{code_digest([foreign])})")  # a helper of the project's own
        elif _immutable(value):
            parts.append(f"{name}={_describe(value, depth + 1, seen)}")
    return "fn(" + "|".join(parts) + ")"


def _foreign_module(value: Any, own: str | None) -> str | None:
    """The module a function, class or module that a function names comes from, when it is the project's own
    code other than the function's module."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
    elif isinstance(value, types.FunctionType | type):
        name = value.__module__
    else:
        return None
    return name if name != own and is_own_code(name) else None


def _code(code: types.CodeType) -> str:
    """A code object's behaviour: not its file name, name or line numbers (moving it changes nothing)."""
    consts = ",".join(_code(c) if isinstance(c, types.CodeType) else _describe(c, 0, set()) for c in code.co_consts)
    fields = (
        code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
        code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
    )  # fmt: skip
    return f"code({hashlib.sha256(code.co_code).hexdigest()},{fields!r},[{consts}])"


def _names(code: types.CodeType) -> Iterable[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _immutable(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | complex | str | bytes | enum.Enum):
        return True
    if isinstance(value, tuple | frozenset):
        return all(_immutable(v) for v in value)
    return False


def _describe(value: Any, depth: int, seen: set[int]) -> str:
    """A deterministic text for a value: the same in every process, with no memory address."""
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{_type_name(type(value))}.{value.name}"
    if isinstance(value, type):
        return _type_name(value)
    if isinstance(value, PurePath):
        return f"path({value.as_posix()!r})"
    if isinstance(value, types.ModuleType):
        return f"module({value.__name__}:{code_digest([value.__name__]) if is_own_code(value.__name__) else ''})"
    if depth > _MAX_DEPTH or id(value) in seen:
        return _type_name(type(value))
    if isinstance(value, types.FunctionType | types.MethodType | functools.partial | types.BuiltinFunctionType):
        return _callable(value, depth, seen)
    seen = seen | {id(value)}
    deeper = depth + 1
    if isinstance(value, tuple | list):
        return f"{type(value).__name__}[" + ",".join(_describe(v, deeper, seen) for v in value) + "]"
    if isinstance(value, set | frozenset):
        return f"{type(value).__name__}{{" + ",".join(sorted(_describe(v, deeper, seen) for v in value)) + "}"
    if isinstance(value, dict):
        items = sorted(f"{_describe(k, deeper, seen)}:{_describe(v, deeper, seen)}" for k, v in value.items())
        return "dict{" + ",".join(items) + "}"
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        return f"{_type_name(type(value))}({_describe(fields, deeper, seen)})"
    dump = getattr(value, "model_dump", None)  # a pydantic model
    if callable(dump) and hasattr(type(value), "model_fields"):
        try:
            return f"{_type_name(type(value))}({_describe(dump(), deeper, seen)})"
        except Exception:  # a model that cannot dump counts by its type
            return _type_name(type(value))
    if type(value).__repr__ is not object.__repr__:
        try:
            text = repr(value)
        except Exception:  # a repr that fails counts by its type
            return _type_name(type(value))
        if not _ADDRESS.search(text):
            return f"{_type_name(type(value))}:{text}"
    return _type_name(type(value))


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
