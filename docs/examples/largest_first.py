"""The policy of docs/add_a_policy.md, unit-tested offline on four jobs.

Its code is the example package's module (``my_package/policies.py`` beside this file),
imported from there so that the doc, the package and this test show one policy.
"""

import sys
from pathlib import Path

from batpolicy.testing import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent / "my_package"))
from my_package.policies import LargestFirst  # noqa: E402

schedule = simulate(LargestFirst({"max_res": 3}),
                    [(0, 1, 10), (0, 3, 10), (0, 2, 10), (5, 4, 10)], machines=4)
for job in ("0", "1", "2", "3"):
    print(job, schedule.state(job).value, schedule.start(job), schedule.machines(job))
print("mean waiting time:", schedule.metrics["mean_waiting_time"])
