"""A suite worker's jobs: a Stop that comes right after its request, or after a kept suite, leaves nothing kept."""

from __future__ import annotations

import io

from staminad.suite.history import state_and_history
from staminad.suite.worker import Generate, _Jobs
from tests.suite.test_runner import SCENARIO


def _keep(job: int) -> Generate:
    state, history = state_and_history(SCENARIO, 3)
    return Generate(job=job, state=state, seed=SCENARIO.seed, turn=3, history=history, attempt=1, keep=True)


def test_a_stop_read_before_its_jobs_thread_starts_keeps_nothing() -> None:
    """The job is registered as its request is read, so a Stop read next is seen by the job once it runs."""
    jobs = _Jobs(io.BytesIO())
    stop = jobs.begin(1)
    jobs.stop(1)
    jobs.run(_keep(1), stop)
    assert jobs.kept == {} and jobs.running == {}


def test_a_stop_for_a_finished_keep_job_forgets_its_suite() -> None:
    """A caller cancelled as the reply came in sends Stop anyway: the suite kept for it is let go."""
    jobs = _Jobs(io.BytesIO())
    jobs.run(_keep(2), jobs.begin(2))
    assert list(jobs.kept) == [2]
    jobs.stop(2)
    assert jobs.kept == {} and jobs.running == {}
