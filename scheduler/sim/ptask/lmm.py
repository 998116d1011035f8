"""SimGrid 3.32's fair-bottleneck linear system, the solver ``ptask_L07`` runs by default.

Batsim 4.2.1 sets ``host/model:ptask_L07`` and nothing else; ``ptask_L07.cpp`` then
builds its system with the ``host/solver`` option, whose default is ``fairbottleneck``
(``surf_host_model_init_ptask_L07``, with selective update). This module follows
``src/kernel/lmm/fair_bottleneck.cpp`` (``FairBottleneck::do_solve``) and the parts of
``src/kernel/lmm/System.cpp`` it relies on:

- a :class:`Variable` (one per action) has a sharing penalty (0 while disabled: an
  action still paying its latency), a bound (``-1``: none) and one :class:`Element`
  per constraint it uses, with a consumption weight;
- a :class:`Constraint` (a CPU or a link) has a bound (flop/s or byte/s) and a sharing
  policy: ``SHARED`` (the weights of its variables add up) or ``FATPIPE`` (each
  variable gets the whole bound);
- ``System::expand``: a second expansion of a variable on the same constraint adds to
  its element (``SHARED``) or keeps the larger weight (``FATPIPE``)
  (``expand_add_to_elem``), unless ``force_creation`` (the CPUs of a parallel task: a
  host listed twice gives two elements); new elements go to the front of the
  constraint's enabled set (``expand_create_elem``);
- the solve runs rounds until every variable is saturated: each constraint shares its
  remaining capacity equally between its unsaturated variables (``FATPIPE``: one
  share), each variable grows by its smallest share over its weights (or up to its
  bound), each constraint's remaining capacity shrinks by ``weight * increment`` of
  every enabled element (``double_update`` with ``sg_maxmin_precision`` = 1e-5) and a
  constraint with nothing left saturates its variables. Like SimGrid, a variable that
  left the round keeps its last increment, which its constraints keep subtracting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Constraint", "Element", "FairBottleneck", "MAXMIN_PRECISION", "SURF_PRECISION",
           "Variable", "double_update"]

#: ``sg_maxmin_precision`` (``System.cpp``): ``--cfg=maxmin/precision``.
MAXMIN_PRECISION = 1e-5
#: ``sg_surf_precision`` (``System.cpp``): ``--cfg=surf/precision``.
SURF_PRECISION = 1e-9
_DBL_MAX = 1.7976931348623157e308

SHARED = "SHARED"
FATPIPE = "FATPIPE"


def _arrays(var: Variable) -> tuple[Any, Any, Any]:
    """``var``'s elements as arrays: every constraint index, and the positive weights'."""
    every = np.array([e.constraint.gid for e in var.elements], dtype=np.intp)
    positive = [e for e in var.elements if e.weight > 0]
    return (every, np.array([e.constraint.gid for e in positive], dtype=np.intp),
            np.array([e.weight for e in positive]))


def double_update(value: float, delta: float, precision: float) -> float:
    """``value - delta``, zeroed below ``precision`` (``surf_interface.hpp``, ``double_update``)."""
    value -= delta
    return 0.0 if value < precision else value


@dataclass(slots=True, eq=False)
class Element:
    """A variable's use of a constraint (``lmm::Element``)."""

    constraint: Constraint
    variable: Variable
    weight: float


@dataclass(slots=True, eq=False)
class Constraint:
    """A resource of capacity ``bound`` (``lmm::Constraint``)."""

    bound: float
    policy: str = SHARED
    id: Any = None
    elements: dict[int, Element] = field(default_factory=dict)  # enabled and disabled
    remaining: float = 0.0
    usage: float = 0.0
    gid: int = -1  # its index in its system (FairBottleneck's arrays)


@dataclass(slots=True, eq=False)
class Variable:
    """An action's rate (``lmm::Variable``): ``value`` after a solve."""

    penalty: float = 1.0
    bound: float = -1.0
    id: Any = None
    elements: list[Element] = field(default_factory=list)
    value: float = 0.0
    mu: float = 0.0
    # a solve's bookkeeping: still growing, its index in the solve's arrays
    growing: bool = False
    seen: int = -1
    # its elements as arrays (built at its first solve, dropped by expand): constraint
    # indexes of every element, and of the positive weights with those weights
    arrays: tuple[Any, Any, Any] | None = None


class FairBottleneck:
    """The variables and constraints of one system and their solve.

    Runtime complexity of :meth:`solve`: O(rounds x elements), rounds <= variables.
    """

    def __init__(self) -> None:
        self.variables: dict[int, Variable] = {}  # insertion-ordered, keyed by id()
        self._touched_vars: dict[int, Variable] = {}
        self._touched_cnsts: dict[int, Constraint] = {}
        self._cnsts: list[Constraint] = []  # by Constraint.gid

    @property
    def modified(self) -> bool:
        """Whether something changed since the last solve."""
        return bool(self._touched_vars or self._touched_cnsts)

    def variable_new(self, ident: Any, penalty: float = 1.0, bound: float = -1.0) -> Variable:
        """A new variable (``System::variable_new``)."""
        var = Variable(penalty, bound, ident)
        self.variables[id(var)] = var
        self._touched_vars[id(var)] = var
        return var

    def variable_free(self, var: Variable) -> None:
        """Remove ``var`` and its elements (``System::variable_free``)."""
        for elem in var.elements:
            del elem.constraint.elements[id(elem)]
            self._touched_cnsts[id(elem.constraint)] = elem.constraint
        var.elements.clear()
        del self.variables[id(var)]
        self._touched_vars.pop(id(var), None)

    def expand(self, cnst: Constraint, var: Variable, weight: float,
               force_creation: bool = False) -> None:
        """Make ``var`` use ``cnst`` with ``weight`` (``System::expand``)."""
        self._touched_vars[id(var)] = var
        var.arrays = None
        if cnst.gid < 0:
            cnst.gid = len(self._cnsts)
            self._cnsts.append(cnst)
        if not force_creation:
            for elem in var.elements:
                if elem.constraint is cnst:
                    if cnst.policy == FATPIPE:
                        elem.weight = max(elem.weight, weight)
                    else:
                        elem.weight += weight
                    return
        elem = Element(cnst, var, weight)
        var.elements.append(elem)
        cnst.elements[id(elem)] = elem

    def update_variable_penalty(self, var: Variable, penalty: float) -> None:
        """Enable (penalty > 0) or disable (0) ``var`` (``System::update_variable_penalty``)."""
        if penalty != var.penalty:
            var.penalty = penalty
            self._touched_vars[id(var)] = var

    def update_variable_bound(self, var: Variable, bound: float) -> None:
        """Set ``var``'s bound (``System::update_variable_bound``)."""
        var.bound = bound
        self._touched_vars[id(var)] = var

    def solve(self) -> None:
        """Compute the ``value`` of the variables a change may have moved (``System::solve``).

        Variables interact only through the constraints they share, and the rounds of
        ``do_solve`` move each connected part of the system on its own: re-solving the
        parts that hold a changed variable or constraint gives every value a whole solve
        gives. Runtime complexity: O(variables) Python and O(elements) array work per
        step along the elements (a few), plus the parts' solve.
        """
        if not (self._touched_vars or self._touched_cnsts):
            return
        touched_vars, touched_cnsts = self._touched_vars, self._touched_cnsts
        self._touched_vars = {}
        self._touched_cnsts = {}
        variables = list(self.variables.values())
        if not variables:
            return
        for var in variables:
            if var.arrays is None:
                var.arrays = _arrays(var)
        # the parts: from the touched variables and constraints, along the elements
        ec = np.concatenate([v.arrays[0] for v in variables])  # type: ignore[index]
        ev = np.repeat(np.arange(len(variables)),
                       [v.arrays[0].size for v in variables])  # type: ignore[index]
        in_part = np.array([id(v) in touched_vars for v in variables], dtype=bool)
        cnst_in = np.zeros(len(self._cnsts), dtype=bool)
        cnst_in[[c.gid for c in touched_cnsts.values() if c.gid >= 0]] = True
        while True:
            cnst_in[ec[in_part[ev]]] = True
            grown = in_part.copy()
            grown[ev[cnst_in[ec]]] = True
            if np.array_equal(grown, in_part):
                break
            in_part = grown
        self._do_solve([variables[i] for i in np.flatnonzero(in_part)]
                       if not in_part.all() else variables)

    def _do_solve(self, variables: list[Variable]) -> None:
        """``FairBottleneck::do_solve``, round for round, each round on arrays.

        The arithmetic of SimGrid's loops: per element ``usage / weight``, a minimum per
        variable, ``value += mu``; a round's consumptions summed element after element
        in the variables' order (``numpy.bincount`` adds in its input's order), those of
        the variables that left the rounds added one by one in the order they left
        (``numpy.add.at``); the constraints in the order SimGrid meets them, a FATPIPE one
        and the saturated ones walked element by element as SimGrid walks them.
        Runtime complexity: O(elements) array work per round, O(variables) Python work
        per solve plus O(elements) for the saturated constraints.
        """
        growing: list[Variable] = []
        met: list[Any] = []  # constraint indexes of the variables SimGrid walks, in order
        for var in variables:
            var.value = 0.0
            arrays = var.arrays
            if arrays is None:
                arrays = var.arrays = _arrays(var)
            enabled = var.penalty > 0.0
            if enabled and arrays[2].size:
                var.seen = len(growing)  # its index in the arrays below
                growing.append(var)
                var.growing = True
                met.append(arrays[0])
            elif enabled:
                var.value = 1.0
                met.append(arrays[0])
            elif arrays[1].size:
                met.append(arrays[0])
        if not growing:
            return
        every = np.concatenate(met)
        firsts = np.unique(every, return_index=True)[1]
        order = every[np.sort(firsts)]  # the constraints, as SimGrid's list holds them
        nc = len(self._cnsts)
        listed = np.zeros(nc, dtype=bool)
        listed[order] = True
        rank = np.zeros(nc, dtype=np.intp)
        rank[order] = np.arange(order.size)
        lengths = np.array([v.arrays[1].size for v in growing])  # type: ignore[index]
        ec = np.concatenate([v.arrays[1] for v in growing])  # type: ignore[index]
        ew = np.concatenate([v.arrays[2] for v in growing])  # type: ignore[index]
        ev = np.repeat(np.arange(len(growing)), lengths)
        seg = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        cnsts = self._cnsts
        remaining = np.array([c.bound for c in cnsts])
        usage = np.zeros(nc)
        stale = np.zeros(nc)
        active = listed.copy()
        fatpipe = np.array([c.policy == FATPIPE for c in cnsts]) & listed
        any_fatpipe = bool(fatpipe.any())
        bound = np.array([v.bound for v in growing])
        value = np.zeros(len(growing))
        mu = np.zeros(len(growing))
        alive = np.ones(len(growing), dtype=bool)
        while True:
            on = alive[ev]
            nb = np.bincount(ec[on], minlength=nc)
            nb = np.where(fatpipe & (nb > 0), 1, nb)
            drop = active & (nb == 0)
            remaining[drop] = 0.0
            usage[drop] = 0.0
            active &= ~drop
            usage[active] = remaining[active] / nb[active]
            inc = np.minimum.reduceat(usage[ec] / ew, seg)
            room = bound - value
            inc = np.where((bound > 0) & (room < inc), room, inc)
            mu = np.where(alive, inc, mu)
            value = np.where(alive, value + inc, value)
            left = [growing[i] for i in np.flatnonzero(alive & (value == bound))]
            for var in left:
                var.growing = False
            consumed = np.bincount(ec[on], weights=ew[on] * mu[ev[on]], minlength=nc)
            after = remaining - (consumed + stale)
            after[after < MAXMIN_PRECISION] = 0.0
            remaining = np.where(active & ~fatpipe, after, remaining)
            if any_fatpipe:
                for i, var in enumerate(growing):
                    var.mu = float(mu[i])
                for j in np.flatnonzero(active & fatpipe):
                    cnst = cnsts[j]
                    use = float(usage[j])
                    for elem in cnst.elements.values():
                        if elem.variable.penalty > 0:
                            use = min(use, elem.weight * elem.variable.mu)
                    usage[j] = use
                    remaining[j] = double_update(float(remaining[j]), use, MAXMIN_PRECISION)
            full = np.flatnonzero(active & (remaining <= 0.0))
            for j in full[np.argsort(rank[full], kind="stable")]:
                active[j] = False
                for elem in cnsts[j].elements.values():
                    var = elem.variable
                    if var.growing and var.penalty > 0 and elem.weight > 0:
                        var.growing = False
                        left.append(var)
            for var in left:
                i = var.seen
                alive[i] = False
                arrays = var.arrays
                np.add.at(stale, arrays[1], arrays[2] * mu[i])  # type: ignore[index]
            if not alive.any():
                break
        for i, var in enumerate(growing):
            var.value = float(value[i])
            var.mu = float(mu[i])
            var.seen = -1
        for j in order:
            cnsts[j].remaining = float(remaining[j])
            cnsts[j].usage = float(usage[j])
