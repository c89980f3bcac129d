"""The worker loop in process: what one ``Worker.run()`` does with the jobs it is given."""

from datetime import timedelta

import pytest

from nexus_queues import enqueue_many
from nexus_queues.worker import Worker
from tests.testapp.jobs import GreetingJob
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker__first_pass_runs_the_jobs_whatever_the_peek_delay():
    """The first pass reads which jobs are enabled, even with a peek delay longer than the machine's uptime."""
    enqueue_many([Greeting(name="hello", times=i) for i in range(3)])
    Worker(job_classes=[GreetingJob], burst=True, listen=False, peek_delay=timedelta(days=36500)).run()
    assert not Greeting.model.objects.exists()
