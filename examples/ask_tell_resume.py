"""Tutorial: the ask/tell workflow for an experiment rig.

The run keeps a journal and resumes after a crash.
"""

import os
import shutil
import tempfile
from pathlib import Path

from manibo import BayesianOptimizer
from manibo.problems import make_problem

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
problem = make_problem("arm-torus3", noise_std=0.01)  # joint angles of a 3-link planar arm
journal = Path(tempfile.mkdtemp()) / "arm.jsonl"

opt = BayesianOptimizer(problem.space, initial_design=5, seed=0, journal=journal)
for _ in range(6 if SMOKE_TEST else 20):
    x = opt.ask()  # (1, 3): angles in [0, 2π)
    y = problem(x)  # run the experiment (here: a simulator with noise)
    opt.tell(x, y)  # on disk before tell returns

del opt  # the notebook crashed...
resumed = BayesianOptimizer.resume(journal)
print(f"resumed with {len(resumed.history)} evaluations; best {resumed.best[1]:.4f}")
assert len(resumed.history) == (6 if SMOKE_TEST else 20)
resumed.run(lambda x: float(problem(x)), budget=len(resumed.history) + 2, progress=False)
assert len(resumed.history) == (8 if SMOKE_TEST else 22)
print(f"after the resumed run: {len(resumed.history)} evaluations; best {resumed.best[1]:.4f}")
resumed.close()
shutil.rmtree(journal.parent)  # this tutorial's journal only: keep your own
