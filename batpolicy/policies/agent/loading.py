"""``--policy agent:TARGET``: find the action function an agent policy runs.

``TARGET`` is one of:

- ``path/to/file.py:function`` (or ``path/to/file.py``, for its function ``act``);
- ``package.module:function``, importable from the current environment;
- ``path/to/agent.npz``: a saved agent, whose ``agent`` entry names the class that reads
  it (``package.module:Class``, with a ``load(path)`` class method returning the action
  function; :meth:`batpolicy.gym.pg.SoftmaxAgent.save` writes such files);
- ``fcfs``, ``sjf`` or ``easy``: :mod:`batpolicy.gym.baselines`' action functions.

Loading a file runs its code (as Python's ``import`` does): load only agents you trust.
Each failure is one :class:`~batpolicy.errors.ConfigError` naming the target.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.agent.policy import ActionFunction, AgentPolicy

__all__ = ["BASELINES", "PREFIX", "is_agent", "load_action", "make_agent_policy"]

PREFIX = "agent:"
#: Short names of the baselines' action functions.
BASELINES = {name: f"batpolicy.gym.baselines:{name}" for name in ("fcfs", "sjf", "easy")}


def is_agent(policy: str) -> bool:
    """Whether ``--policy`` names an agent.

    >>> is_agent("agent:fcfs"), is_agent("easy")
    (True, False)
    """
    return policy.startswith(PREFIX)


def _from_file(path: Path, function: str, target: str) -> Any:
    name = f"batpolicy_agent_{abs(hash(str(path.resolve()))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"agent '{target}': {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"agent '{target}': importing {path} raised "
                          f"{type(exc).__name__}: {exc}") from None
    return _attribute(module, function, target)


def _attribute(module: Any, name: str, target: str) -> Any:
    try:
        return getattr(module, name)
    except AttributeError:
        raise ConfigError(f"agent '{target}': {module.__name__} has no '{name}'") from None


def _from_module(module_name: str, attribute: str, target: str) -> Any:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"agent '{target}': cannot import {module_name}: {exc}") from None
    return _attribute(module, attribute, target)


def _saved(path: Path, target: str) -> Any:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            owner = str(data["agent"]) if "agent" in data.files else None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"agent '{target}': cannot read {path}: {exc}") from None
    if not owner or ":" not in owner:
        raise ConfigError(f"agent '{target}': {path} has no 'agent' entry naming "
                          "module:Class (how saved agents say who reads them)")
    cls = _from_module(*owner.split(":", 1), target)
    if not callable(getattr(cls, "load", None)):
        raise ConfigError(f"agent '{target}': {owner} has no load(path) method")
    return cls.load(path)


def load_action(target: str) -> ActionFunction:
    """The action function ``target`` names (module docstring).

    >>> load_action("fcfs").__name__
    'fcfs'
    """
    if not target:
        raise ConfigError("--policy agent: needs a target, e.g. agent:my_agent.py:act, "
                          "agent:saved.npz or agent:fcfs")
    target = BASELINES.get(target, target)
    head, sep, tail = target.rpartition(":")
    file_part, function = (head, tail) if sep else (target, "act")
    if target.endswith(".npz"):
        path = Path(target)
        if not path.is_file():
            raise ConfigError(f"agent '{target}': no such file {path}")
        act = _saved(path, target)
    elif file_part.endswith(".py"):
        path = Path(file_part)
        if not path.is_file():
            raise ConfigError(f"agent '{target}': no such file {path}")
        act = _from_file(path, function, target)
    elif sep:
        act = _from_module(file_part, function, target)
    else:
        raise ConfigError(f"agent '{target}': expected file.py[:function], "
                          "package.module:function, a saved .npz agent or a baseline "
                          f"({', '.join(BASELINES)})")
    if not callable(act):
        raise ConfigError(f"agent '{target}': {function} is not callable")
    return act


def make_agent_policy(target: str, params: Mapping[str, Any] | None = None) -> AgentPolicy:
    """``--policy agent:TARGET`` with its ``--param`` values."""
    return AgentPolicy(params, act=load_action(target), label=f"{PREFIX}{target}")
