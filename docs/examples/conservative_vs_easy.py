"""Conservative backfilling against EASY on one early end (docs/conservative.md).

4 machines; (subtime, res, runtime, walltime). Job 0 asks for 10 s and ends at 2. Job 2
needs every machine; job 3 is planned before it, where it delays nobody. When job 0 ends,
EASY (a reservation for job 2 only) starts job 2 as soon as job 1 ends; conservative
backfilling keeps job 3's reservation while re-placing job 2, then moves job 3 to now.
"""

from batpolicy.policies.registry import make_policy
from batpolicy.testing import simulate

jobs = [(0, 2, 2, 10), (0, 2, 4, 4), (1, 4, 5, 5), (1, 2, 6, 6)]
for policy in (make_policy("conservative", {"rjms_delay": "0"}), "easy"):
    schedule = simulate(policy, jobs, machines=4)
    name = policy if isinstance(policy, str) else policy.name
    print(name, {job: (schedule.start(job), schedule.machines(job)) for job in "0123"})
