"""A first-come-first-served scheduler written for pybatsim, as pybatsim's documentation shows.

``myFcfs.py`` defines ``MyFcfs``, a ``batsim.batsim.BatsimScheduler`` (pybatsim's naming
rule: module ``fooBar``, class ``FooBar``). Jobs start strictly in submission order on the
lowest free machines; a job larger than the platform is rejected. The option
``decision_delay`` (``pybatsim -o '{"decision_delay": 2}'``) is the time each decision
takes: ``bs.consume_time`` moves pybatsim's clock, so the jobs start that much later.

Run it beside real Batsim (``pybatsim docs/examples/pybatsim/myFcfs.py``), over
``batpolicy fake-batsim``, or in-process:
``batpolicy simulate --policy pybatsim:docs/examples/pybatsim/myFcfs.py``.
"""

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class MyFcfs(BatsimScheduler):
    def onSimulationBegins(self):
        self.queue = []
        self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
        self.decision_delay = float(self.options.get("decision_delay", 0))

    def onJobSubmission(self, job):
        if job.requested_resources > self.bs.nb_compute_resources:
            self.bs.reject_jobs([job])
        else:
            self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= job.allocation

    def onNoMoreEvents(self):
        started = []
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(self.free)[:job.requested_resources])
            self.free -= job.allocation
            started.append(job)
        if started:
            self.bs.consume_time(self.decision_delay)
            self.bs.execute_jobs(started)
