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

__all__ = ["Constraint", "Element", "FairBottleneck", "MAXMIN_PRECISION", "SURF_PRECISION",
           "Variable", "double_update"]

#: ``sg_maxmin_precision`` (``System.cpp``): ``--cfg=maxmin/precision``.
MAXMIN_PRECISION = 1e-5
#: ``sg_surf_precision`` (``System.cpp``): ``--cfg=surf/precision``.
SURF_PRECISION = 1e-9
_DBL_MAX = 1.7976931348623157e308

SHARED = "SHARED"
FATPIPE = "FATPIPE"


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
    # a solve's bookkeeping: elements of growing variables, consumption of the round and
    # of the variables that left the rounds, the solve that last met it
    nb: int = 0
    consumed: float = 0.0
    stale: float = 0.0
    seen: int = -1


@dataclass(slots=True, eq=False)
class Variable:
    """An action's rate (``lmm::Variable``): ``value`` after a solve."""

    penalty: float = 1.0
    bound: float = -1.0
    id: Any = None
    elements: list[Element] = field(default_factory=list)
    value: float = 0.0
    mu: float = 0.0
    # a solve's bookkeeping: still growing, the solve that last met it, in the system
    growing: bool = False
    seen: int = -1
    alive: bool = True


class FairBottleneck:
    """The variables and constraints of one system and their solve.

    Runtime complexity of :meth:`solve`: O(rounds x elements), rounds <= variables.
    """

    def __init__(self) -> None:
        self.variables: dict[int, Variable] = {}  # insertion-ordered, keyed by id()
        self._touched_vars: dict[int, Variable] = {}
        self._touched_cnsts: dict[int, Constraint] = {}
        self._stamp = 0  # one per solve: marks what it met (Constraint.seen, Variable.seen)

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
        var.alive = False
        self._touched_vars.pop(id(var), None)

    def expand(self, cnst: Constraint, var: Variable, weight: float,
               force_creation: bool = False) -> None:
        """Make ``var`` use ``cnst`` with ``weight`` (``System::expand``)."""
        self._touched_vars[id(var)] = var
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
        gives. Runtime complexity: O(size of those parts) plus their solve.
        """
        if not (self._touched_vars or self._touched_cnsts):
            return
        self._stamp += 1
        stamp = self._stamp
        stack_vars = list(self._touched_vars.values())
        stack_cnsts = list(self._touched_cnsts.values())
        self._touched_vars = {}
        self._touched_cnsts = {}
        size = 0
        while stack_vars or stack_cnsts:
            while stack_cnsts:
                cnst = stack_cnsts.pop()
                if cnst.seen == stamp:
                    continue
                cnst.seen = stamp
                for elem in cnst.elements.values():
                    if elem.variable.seen != stamp:
                        stack_vars.append(elem.variable)
            while stack_vars:
                var = stack_vars.pop()
                if var.seen == stamp or not var.alive:
                    continue
                var.seen = stamp
                size += 1
                for elem in var.elements:
                    if elem.constraint.seen != stamp:
                        stack_cnsts.append(elem.constraint)
        self._do_solve([v for v in self.variables.values() if v.seen == stamp]
                       if size < len(self.variables) else list(self.variables.values()))

    def _do_solve(self, variables: list[Variable]) -> None:
        """``FairBottleneck::do_solve``, round for round.

        The same arithmetic, with bookkeeping instead of rescans: each constraint counts
        its elements of unsaturated variables (``nb``), and the increments of variables
        that left the rounds (SimGrid keeps subtracting them) are summed once per
        constraint. Runtime complexity: O(elements) per round of the variables still
        growing, plus O(elements) once.
        """
        self._stamp += 1
        stamp = self._stamp
        growing: list[Variable] = []
        cnst_list: list[Constraint] = []
        for var in variables:
            var.value = 0.0
            enabled = var.penalty > 0.0
            if enabled and any(e.weight != 0.0 for e in var.elements):
                growing.append(var)
                var.growing = True
            elif enabled:
                var.value = 1.0
            if enabled or any(e.weight > 0 for e in var.elements):
                for elem in var.elements:
                    cnst = elem.constraint
                    if cnst.seen != stamp:
                        cnst.seen = stamp
                        cnst.nb = 0
                        cnst.stale = 0.0
                        cnst_list.append(cnst)
        for var in growing:
            for elem in var.elements:
                if elem.weight > 0:
                    elem.constraint.nb += 1
        for cnst in cnst_list:
            cnst.remaining = cnst.bound
            cnst.usage = 0.0
        while True:
            kept: list[Constraint] = []
            for cnst in cnst_list:
                nb = cnst.nb
                if nb > 0 and cnst.policy == FATPIPE:
                    nb = 1
                if nb == 0:
                    cnst.remaining = 0.0
                    cnst.usage = 0.0
                else:
                    cnst.usage = cnst.remaining / nb
                    cnst.consumed = 0.0
                    kept.append(cnst)
            cnst_list = kept
            left: list[Variable] = []
            for var in growing:
                min_inc = _DBL_MAX
                for elem in var.elements:
                    weight = elem.weight
                    if weight > 0:
                        inc = elem.constraint.usage / weight
                        if inc < min_inc:
                            min_inc = inc
                bound = var.bound
                if bound > 0 and bound - var.value < min_inc:
                    min_inc = bound - var.value
                var.mu = min_inc
                var.value += min_inc
                if var.value == bound:
                    self._leave(var, left)
            for var in growing:
                mu = var.mu
                for elem in var.elements:
                    if elem.weight:
                        elem.constraint.consumed += elem.weight * mu
            kept = []
            for cnst in cnst_list:
                if cnst.policy != FATPIPE:
                    cnst.remaining = double_update(cnst.remaining, cnst.consumed + cnst.stale,
                                                   MAXMIN_PRECISION)
                else:
                    for elem in cnst.elements.values():
                        if elem.variable.penalty > 0:
                            cnst.usage = min(cnst.usage, elem.weight * elem.variable.mu)
                    cnst.remaining = double_update(cnst.remaining, cnst.usage, MAXMIN_PRECISION)
                if cnst.remaining <= 0.0:
                    for elem in cnst.elements.values():
                        var = elem.variable
                        if var.growing and var.penalty > 0 and elem.weight > 0:
                            self._leave(var, left)
                else:
                    kept.append(cnst)
            cnst_list = kept
            for var in left:
                for elem in var.elements:
                    if elem.weight:
                        elem.constraint.stale += elem.weight * var.mu
            growing = [var for var in growing if var.growing]
            if not growing:
                break

    @staticmethod
    def _leave(var: Variable, left: list[Variable]) -> None:
        """``var`` stops growing: its constraints count one variable less."""
        var.growing = False
        for elem in var.elements:
            if elem.weight > 0:
                elem.constraint.nb -= 1
        left.append(var)
