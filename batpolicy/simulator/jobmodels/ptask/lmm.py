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
  its first element there (``SHARED``) or keeps the larger weight (``FATPIPE``)
  (``expand_add_to_elem``), unless ``force_creation`` (the CPUs of a parallel task: a
  host listed twice gives two elements); a new element of an enabled variable joins the
  front of its constraint's enabled set (``expand_create_elem``), and enabling a
  variable moves its elements there, one after the other (``System::enable_var``): a
  constraint walks its enabled elements newest first;
- the solve runs rounds until every variable is saturated: each constraint shares its
  remaining capacity equally between its unsaturated variables (``FATPIPE``: one
  share), each variable grows by its smallest share over its weights (or up to its
  bound), each constraint's remaining capacity shrinks by ``weight * increment`` of
  every enabled element, one element after the other in the constraint's walk
  (``double_update`` with ``sg_maxmin_precision`` = 1e-5 at each step) and a
  constraint with nothing left saturates its variables. Like SimGrid, a variable that
  left the round keeps its last increment, which its constraints keep subtracting;
- like ``System::solve`` with selective update (``update_modified_set``), a solve
  re-computes only the variables connected (through shared constraints) to what
  changed since the last one.

The system keeps its constraints' bounds, policies and last ``remaining`` / ``usage``
in arrays indexed by :attr:`Constraint.gid` (given at the constraint's first
:meth:`FairBottleneck.expand`), so that a solve reads them without a Python loop.
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

SHARED = "SHARED"
FATPIPE = "FATPIPE"


def _arrays(var: Variable) -> tuple[Any, Any, Any, Any]:
    """``var``'s elements as arrays.

    The constraint index of every element; of the positive weights, the constraint
    indexes, the weights and the ranks at which the elements joined their constraints'
    enabled sets (:attr:`Element.serial`).
    """
    every = np.array([e.constraint.gid for e in var.elements], dtype=np.intp)
    positive = [e for e in var.elements if e.weight > 0]
    return (every, np.array([e.constraint.gid for e in positive], dtype=np.intp),
            np.array([e.weight for e in positive]),
            np.array([e.serial for e in positive], dtype=np.int64))


def double_update(value: float, delta: float, precision: float) -> float:
    """``value - delta``, zeroed below ``precision`` (``surf_interface.hpp``, ``double_update``)."""
    value -= delta
    return 0.0 if value < precision else value


@dataclass(slots=True, eq=False)
class Element:
    """A variable's use of a constraint (``lmm::Element``).

    ``serial``: the rank (in its system) at which it last joined the front of its
    constraint's enabled set, created by an enabled variable or enabled with its
    variable: its constraint walks its enabled elements by decreasing ``serial``.
    """

    constraint: Constraint
    variable: Variable
    weight: float
    serial: int = 0


class Constraint:
    """A resource of capacity ``bound`` (``lmm::Constraint``).

    ``remaining`` and ``usage`` are those of the last solve that met it (0 before).
    """

    __slots__ = ("_bound", "_policy", "_system", "elements", "gid", "id")

    def __init__(self, bound: float, policy: str = SHARED, id: Any = None) -> None:
        self._bound = bound
        self._policy = policy
        self.id = id
        #: enabled and disabled elements, in creation order, keyed by ``id(element)``
        self.elements: dict[int, Element] = {}
        #: its index in its system's arrays (-1: not in a system yet)
        self.gid = -1
        self._system: FairBottleneck | None = None

    def __repr__(self) -> str:
        return f"Constraint({self._bound!r}, {self._policy!r}, {self.id!r})"

    @property
    def bound(self) -> float:
        """Capacity (flop/s, byte/s)."""
        return self._bound

    @bound.setter
    def bound(self, value: float) -> None:
        """A new capacity: the next solve re-computes the constraint's part."""
        self._bound = value
        if self._system is not None:
            self._system._bounds[self.gid] = value
            self._system.touch_constraint(self)

    @property
    def policy(self) -> str:
        """``SHARED`` or ``FATPIPE``."""
        return self._policy

    @policy.setter
    def policy(self, value: str) -> None:
        """A new sharing policy: the next solve re-computes the constraint's part."""
        self._policy = value
        if self._system is not None:
            self._system._fatpipe[self.gid] = value == FATPIPE
            self._system.touch_constraint(self)

    @property
    def remaining(self) -> float:
        """Capacity left at the end of the last solve that met it."""
        system = self._system
        return 0.0 if system is None else float(system._remaining[self.gid])

    @property
    def usage(self) -> float:
        """Last share it offered its variables in the last solve that met it."""
        system = self._system
        return 0.0 if system is None else float(system._usage[self.gid])


@dataclass(slots=True, eq=False)
class Variable:
    """An action's rate (``lmm::Variable``): ``value`` after a solve."""

    penalty: float = 1.0
    bound: float = -1.0
    id: Any = None
    elements: list[Element] = field(default_factory=list)
    value: float = 0.0
    mu: float = 0.0
    # its elements as arrays (built at its first solve, dropped by expand): see _arrays
    arrays: tuple[Any, Any, Any, Any] | None = None
    # id(constraint) -> its first element on that constraint (System::expand's find_if)
    first: dict[int, Element] = field(default_factory=dict)


class FairBottleneck:
    """The variables and constraints of one system and their solve.

    Runtime complexity of :meth:`solve`: O(rounds x elements) array work, rounds <=
    variables, and O(variables) Python work.
    """

    def __init__(self) -> None:
        self.variables: dict[int, Variable] = {}  # insertion-ordered, keyed by id()
        self._touched_vars: dict[int, Variable] = {}
        self._touched_cnsts: dict[int, Constraint] = {}
        self._cnsts: list[Constraint] = []  # by Constraint.gid
        self._serial = 0  # the next rank an element joining an enabled set takes
        # per constraint, by gid (capacity grows by doubling): bound, FATPIPE or not, and
        # remaining / usage after the last solve that met it
        self._bounds = np.zeros(64)
        self._fatpipe = np.zeros(64, dtype=bool)
        self._remaining = np.zeros(64)
        self._usage = np.zeros(64)

    @property
    def modified(self) -> bool:
        """Whether something changed since the last solve."""
        return bool(self._touched_vars or self._touched_cnsts)

    def touch_constraint(self, cnst: Constraint) -> None:
        """Mark ``cnst`` changed: the next solve re-computes its part of the system."""
        self._touched_cnsts[id(cnst)] = cnst

    def _register(self, cnst: Constraint) -> None:
        """Give ``cnst`` its index in the system's arrays."""
        gid = len(self._cnsts)
        if gid == self._bounds.size:
            grow = gid * 2
            for name in ("_bounds", "_fatpipe", "_remaining", "_usage"):
                old = getattr(self, name)
                new = np.zeros(grow, dtype=old.dtype)
                new[:gid] = old
                setattr(self, name, new)
        self._cnsts.append(cnst)
        self._bounds[gid] = cnst.bound
        self._fatpipe[gid] = cnst.policy == FATPIPE
        cnst.gid = gid
        cnst._system = self

    def variable_new(self, ident: Any, penalty: float = 1.0, bound: float = -1.0) -> Variable:
        """A new variable (``System::variable_new``)."""
        var = Variable(penalty, bound, ident)
        self.variables[id(var)] = var
        self._touched_vars[id(var)] = var
        return var

    def variable_free(self, var: Variable) -> None:
        """Remove ``var`` and its elements (``System::variable_free``)."""
        touched = self._touched_cnsts
        for elem in var.elements:
            cnst = elem.constraint
            del cnst.elements[id(elem)]
            touched[id(cnst)] = cnst
        var.elements.clear()
        var.first.clear()
        del self.variables[id(var)]
        self._touched_vars.pop(id(var), None)

    def expand(self, cnst: Constraint, var: Variable, weight: float,
               force_creation: bool = False) -> None:
        """Make ``var`` use ``cnst`` with ``weight`` (``System::expand``)."""
        self._touched_vars[id(var)] = var
        var.arrays = None
        if cnst.gid < 0:
            self._register(cnst)
        if not force_creation:
            elem = var.first.get(id(cnst))
            if elem is not None:
                if cnst.policy == FATPIPE:
                    elem.weight = max(elem.weight, weight)
                else:
                    elem.weight += weight
                return
        elem = Element(cnst, var, weight, self._serial)
        self._serial += 1
        var.elements.append(elem)
        var.first.setdefault(id(cnst), elem)
        cnst.elements[id(elem)] = elem

    def update_variable_penalty(self, var: Variable, penalty: float) -> None:
        """Enable (penalty > 0) or disable (0) ``var`` (``System::update_variable_penalty``).

        Enabling moves its elements, in order, to the front of their constraints'
        enabled sets (``System::enable_var``).
        """
        if penalty != var.penalty:
            if var.penalty <= 0.0 < penalty:
                for elem in var.elements:
                    elem.serial = self._serial
                    self._serial += 1
                var.arrays = None
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
        every = []
        for var in variables:
            arrays = var.arrays
            if arrays is None:
                arrays = var.arrays = _arrays(var)
            every.append(arrays[0])
        # the parts: from the touched variables and constraints, along the elements
        ec = np.concatenate(every)
        ev = np.repeat(np.arange(len(variables)), [a.size for a in every])
        in_part = np.array([id(v) in touched_vars for v in variables], dtype=bool)
        cnst_in = np.zeros(len(self._cnsts), dtype=bool)
        cnst_in[[c.gid for c in touched_cnsts.values() if c.gid >= 0]] = True
        whole = bool(in_part.all())
        while not whole:
            cnst_in[ec[in_part[ev]]] = True
            grown = in_part.copy()
            grown[ev[cnst_in[ec]]] = True
            whole = bool(grown.all())  # everything: nothing further to look for
            if not whole and np.array_equal(grown, in_part):
                break
            in_part = grown
        self._do_solve(variables if whole else [variables[i] for i in np.flatnonzero(in_part)])

    def _do_solve(self, variables: list[Variable]) -> None:
        """``FairBottleneck::do_solve``, round for round, each round on arrays.

        The constraints are numbered in the order SimGrid meets them (the variables'
        order, each variable's elements in order). The arithmetic of SimGrid's loops:
        per element ``usage / weight``, a minimum per variable, ``value += mu``; each
        constraint's remaining capacity less ``weight * mu`` of its enabled elements one
        after the other, newest first as SimGrid walks them (``numpy.subtract.at``
        subtracts in its input's order), zeroed below ``sg_maxmin_precision`` (SimGrid
        zeroes it at each step: once it is below, later subtractions keep it there, so
        zeroing once at the end gives the same value); a FATPIPE constraint walked
        element by element as SimGrid walks it. Runtime complexity: O(elements) array
        work per round, O(variables) Python work per solve.
        """
        growing: list[Variable] = []
        met: list[Any] = []  # constraint indexes of the variables SimGrid walks, in order
        for var in variables:
            var.value = 0.0
            arrays = var.arrays
            if arrays is None:
                arrays = var.arrays = _arrays(var)
            if var.penalty > 0.0:
                if arrays[2].size:
                    growing.append(var)
                else:
                    var.value = 1.0
                met.append(arrays[0])
            elif arrays[1].size:
                met.append(arrays[0])
        if not growing:
            return
        every = np.concatenate(met)
        firsts = np.unique(every, return_index=True)[1]
        order = every[np.sort(firsts)]  # the constraints, as SimGrid's list holds them
        nc = order.size
        local = np.empty(len(self._cnsts), dtype=np.intp)
        local[order] = np.arange(nc)
        ng = len(growing)
        lengths = np.array([v.arrays[2].size for v in growing])  # type: ignore[index]
        ec = local[np.concatenate([v.arrays[1] for v in growing])]  # type: ignore[index]
        ew = np.concatenate([v.arrays[2] for v in growing])  # type: ignore[index]
        serial = np.concatenate([v.arrays[3] for v in growing])  # type: ignore[index]
        ev = np.repeat(np.arange(ng), lengths)
        seg = np.zeros(ng, dtype=np.intp)
        np.cumsum(lengths[:-1], out=seg[1:])
        # the elements as their constraints walk them: constraint by constraint, newest
        # first (an element of weight 0 subtracts 0: left out)
        walk = np.lexsort((-serial, ec))
        walk_c, walk_w, walk_v = ec[walk], ew[walk], ev[walk]
        remaining = self._bounds[order]
        fatpipe = self._fatpipe[order]
        any_fatpipe = bool(fatpipe.any())
        usage = np.zeros(nc)
        active = np.ones(nc, dtype=bool)
        bound = np.array([v.bound for v in growing])
        bounded = bound > 0
        value = np.zeros(ng)
        mu = np.zeros(ng)
        alive = np.ones(ng, dtype=bool)
        ec_on = ec  # the constraints of the growing variables' elements
        while True:
            nb = np.bincount(ec_on, minlength=nc)
            if any_fatpipe:
                nb = np.where(fatpipe & (nb > 0), 1, nb)
            drop = active & (nb == 0)
            if drop.any():
                remaining[drop] = 0.0
                usage[drop] = 0.0
                active &= ~drop
            usage[active] = remaining[active] / nb[active]
            inc = np.minimum.reduceat(usage[ec] / ew, seg)
            room = bound - value
            inc = np.where(bounded & (room < inc), room, inc)
            mu = np.where(alive, inc, mu)
            value = np.where(alive, value + inc, value)
            hit = alive & (value == bound)
            after = remaining.copy()
            np.subtract.at(after, walk_c, walk_w * mu[walk_v])
            after[after < MAXMIN_PRECISION] = 0.0
            if any_fatpipe:
                remaining = np.where(active & ~fatpipe, after, remaining)
                self._fatpipe_round(growing, mu, order, np.flatnonzero(active & fatpipe),
                                    usage, remaining)
            else:
                remaining = np.where(active, after, remaining)
            leaving = hit
            full = active & (remaining <= 0.0)
            if full.any():
                active &= ~full
                # the variables still growing on a saturated constraint leave
                on_full = np.zeros(ng, dtype=bool)
                on_full[ev[full[ec]]] = True
                leaving = leaving | (alive & on_full)
            if leaving.any():
                alive &= ~leaving
                if not alive.any():
                    break
                ec_on = ec[alive[ev]]
        for var, v, m in zip(growing, value.tolist(), mu.tolist(), strict=True):
            var.value = v
            var.mu = m
        self._remaining[order] = remaining
        self._usage[order] = usage

    def _fatpipe_round(self, growing: list[Variable], mu: Any, order: Any, fatpipes: Any,
                       usage: Any, remaining: Any) -> None:
        """A round's FATPIPE constraints (``fatpipes``, local indexes), as SimGrid walks them.

        ``usage`` becomes the smallest ``weight x mu`` of its enabled elements (their
        variables' last increment) and ``remaining`` shrinks by it.
        """
        for var, m in zip(growing, mu.tolist(), strict=True):
            var.mu = m
        cnsts = self._cnsts
        for j in fatpipes.tolist():
            use = float(usage[j])
            for elem in cnsts[order[j]].elements.values():
                if elem.variable.penalty > 0:
                    use = min(use, elem.weight * elem.variable.mu)
            usage[j] = use
            remaining[j] = double_update(float(remaining[j]), use, MAXMIN_PRECISION)
