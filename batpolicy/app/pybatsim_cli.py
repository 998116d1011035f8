"""``batpolicy simulate --policy pybatsim:NAME``: a pybatsim scheduler in the simulator's process.

Every ``simulate`` option works as with our own policies (inputs, Batsim flags, job
models, transforms, outputs, ``--record``, progress); the scheduler is a
:class:`~.pybatsim.driver.PybatsimScheduler` instead of a dispatcher. pybatsim's launcher
options are policy parameters (:func:`~.pybatsim.loader.pybatsim_options`). The scheduler
is loaded, and refused if it is not one, before any input is read.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from batpolicy.errors import InvalidDecision

__all__ = ["make_pybatsim_scheduler", "pybatsim_logging", "simulate_pybatsim"]

log = logging.getLogger(__name__)

#: pybatsim's loggers (``batsim.batsim`` logs every message at INFO, as ``pybatsim -v info``).
PYBATSIM_LOGGER = "batsim"


def make_pybatsim_scheduler(policy: str, params: Mapping[str, Any], *, paranoid: bool = False,
                            ) -> tuple[Any, dict[str, Any]]:
    """The driver for ``policy`` (``pybatsim:...``) and what ``metrics.json`` says of it."""
    from batpolicy.simulator.pybatsim.driver import PybatsimScheduler
    from batpolicy.simulator.pybatsim.loader import load_scheduler, pybatsim_options

    spec = pybatsim_options(policy, params)
    scheduler = load_scheduler(spec)
    driver = PybatsimScheduler(scheduler, spec.label, protect=spec.protect, paranoid=paranoid)
    describe = {"policy": spec.label, "params": {"options": dict(spec.options),
                                                 "protect": spec.protect},
                "scheduler": f"pybatsim {type(scheduler).__name__}, in-process"}
    return driver, describe


@contextmanager
def pybatsim_logging(verbose: bool) -> Iterator[None]:
    """Keep pybatsim's logging at WARNING (``pybatsim -v warning``) unless ``-v``; restore it.

    pybatsim logs each whole message at INFO; under batpolicy's INFO default that would
    print the conversation.
    """
    logger = logging.getLogger(PYBATSIM_LOGGER)
    previous = logger.level
    if not verbose and logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


def simulate_pybatsim(args: argparse.Namespace, run: Callable[..., int],
                      sim_options: Callable[[argparse.Namespace], Any]) -> int:
    """``simulate`` with a pybatsim scheduler: ``run`` and ``sim_options`` are simulate's own.

    An invalid decision found by the simulator's Batsim-side checks (after the one
    checker accepted it) is reported naming the scheduler too.
    """
    from batpolicy.policies.registry import parse_params

    driver, describe = make_pybatsim_scheduler(args.policy, parse_params(args.param),
                                               paranoid=args.paranoid)
    if args.expected_ends != "walltime":
        log.warning("--expected-ends %s is a hint for batpolicy's policies; a pybatsim "
                    "scheduler only knows what Batsim sends", args.expected_ends)
    with pybatsim_logging(bool(getattr(args, "verbose", 0))):
        try:
            return run(args, driver, sim_options(args), {**describe, "job_model":
                       args.job_model or ["profile"]}, driver.dispatcher.state,
                       nb_decisions=lambda: driver.nb_decisions)
        except InvalidDecision as exc:
            if exc.policy == driver.label:
                raise
            raise InvalidDecision(f"pybatsim scheduler '{driver.label[9:]}': {exc} (Batsim "
                                  "would abort here)", policy=None) from None
