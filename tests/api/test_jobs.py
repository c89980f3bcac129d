"""The job endpoints: list jobs, read one, switch one on or off, run one now."""

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues.jobs.control import all_jobs
from nexus_queues.jobs.periodic_jobs import periodic_jobs
from nexus_queues.models import JobRun, PeriodicJobSettings, QueueSettings
from tests.api_client import Api, make_user
from tests.testapp.jobs import DigestJob, Heartbeat

pytestmark = pytest.mark.django_db

DIGESTS = "tests.testapp.jobs.DigestJob"
HEARTBEAT = "tests.testapp.jobs.Heartbeat"
WEEKLY = "tests.testapp.jobs.weekly_report"


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _queue_settings(queue: str) -> QueueSettings | None:
    return QueueSettings.objects.filter(queue=queue).first()


def _periodic_settings(name: str) -> PeriodicJobSettings | None:
    return PeriodicJobSettings.objects.filter(job=name).first()


@pytest.fixture
def viewer():
    """The API as a user who may view the periodic jobs and the digests' queue, and change neither."""
    return Api(make_user("viewer", "view_periodicjobsettings", "view_digestqueueitem"))


def test_list_jobs__every_job_with_its_state(admin):
    """Every registered job is listed, queue jobs then periodic ones, each with its schedule and state."""
    jobs = admin.get("jobs").json()
    assert [job["name"] for job in jobs] == [job.name() for job in all_jobs()]
    by_name = {job["name"]: job for job in jobs}
    digests = by_name[DIGESTS]
    assert _when(digests.pop("next_run")) == DigestJob.get_schedule().following(timezone.now())
    assert digests == {
        "name": DIGESTS, "kind": "queue", "queue": "digests", "category": "Scheduled",
        "schedule": DigestJob.get_schedule().describe(), "enabled": True, "last_run": None, "last_outcome": "",
    }
    heartbeat = by_name[HEARTBEAT]
    assert heartbeat["kind"] == "periodic" and heartbeat["queue"] is None and heartbeat["category"] == "Maintenance"
    assert heartbeat["schedule"] == Heartbeat.get_schedule().describe() and heartbeat["enabled"] is True
    assert by_name[WEEKLY]["category"] == "Reports" and "Europe/Stockholm" in by_name[WEEKLY]["schedule"]
    assert by_name["tests.testapp.jobs.GreetingJob"]["schedule"] == "Continuously"
    assert by_name["tests.testapp.jobs.GreetingJob"]["next_run"] is None


def test_list_jobs__only_those_the_user_may_view(viewer):
    """A job is listed only with the view permission of its queue's model, or of the periodic jobs' settings."""
    names = [job["name"] for job in viewer.get("jobs").json()]
    assert names == [DIGESTS, *(job.name() for job in periodic_jobs)]


def test_jobs__change_permission_implies_view():
    """A user who may change a job (its queue's model, or the periodic jobs') reads it, as the jobs page shows it."""
    api = Api(make_user("operator", "change_periodicjobsettings", "change_digestqueueitem"))
    assert [job["name"] for job in api.get("jobs").json()] == [DIGESTS, *(job.name() for job in periodic_jobs)]
    assert api.get(f"jobs/{DIGESTS}").status_code == 200 and api.get(f"jobs/{HEARTBEAT}").status_code == 200


def test_list_jobs__no_permission_lists_none():
    """A user without any view permission gets an empty list, not an error."""
    response = Api(make_user("nobody")).get("jobs")
    assert response.status_code == 200 and response.json() == []


def test_get_job__last_run_and_its_outcome(admin):
    """One job shows its latest run (by tick for a periodic job) with its outcome and correlation id."""
    now = timezone.now().replace(microsecond=0)  # the API's JSON has milliseconds
    for minutes, finished, errors in ((10, True, 0), (5, True, 1)):
        start = now - timedelta(minutes=minutes)
        JobRun.objects.create(
            job=HEARTBEAT, correlation_id=f"hb-{minutes}", worker="host:1", started_at=start, tick=start,
            finished_at=start + timedelta(seconds=1) if finished else None, errors=errors,
        )
    body = admin.get(f"jobs/{HEARTBEAT}").json()
    assert body["last_outcome"] == "failed"
    last = body["last_run"]
    assert last["correlation_id"] == "hb-5" and last["outcome"] == "failed"
    assert _when(last["started_at"]) == now - timedelta(minutes=5)
    assert _when(last["finished_at"]) == now - timedelta(minutes=5) + timedelta(seconds=1)


def test_get_job__unknown_is_404(admin):
    response = admin.get("jobs/tests.testapp.jobs.Nope")
    assert response.status_code == 404 and response.json() == {"detail": "No job named 'tests.testapp.jobs.Nope'."}


def test_get_job__without_view_permission_is_403():
    """A user who may view periodic jobs may not view a queue job whose queue they cannot view."""
    api = Api(make_user("periodic-only", "view_periodicjobsettings"))
    assert api.get(f"jobs/{HEARTBEAT}").status_code == 200
    response = api.get(f"jobs/{DIGESTS}")
    assert response.status_code == 403 and "view" in response.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "jobs"), ("get", f"jobs/{HEARTBEAT}"), ("patch", f"jobs/{HEARTBEAT}"), ("post", f"jobs/{HEARTBEAT}/run")],
)
def test_jobs__anonymous_is_401(method, path):
    """Every job endpoint needs credentials; nothing is stored without them."""
    api = Api()
    response = api.get(path) if method == "get" else api.send(method, path, {"enabled": False})
    assert response.status_code == 401 and "WWW-Authenticate" in response
    assert not PeriodicJobSettings.objects.exists()


def test_change_job__queue_job_off_and_on(admin):
    """Switching a queue job off stores processing off for its queue; switching it on stores it on again."""
    body = admin.patch(f"jobs/{DIGESTS}", {"enabled": False}).json()
    assert body["enabled"] is False and body["next_run"] is None
    assert _queue_settings("digests").processing_enabled is False
    body = admin.patch(f"jobs/{DIGESTS}", {"enabled": True}).json()
    assert body["enabled"] is True and body["next_run"] is not None
    assert _queue_settings("digests").processing_enabled is True


def test_change_job__periodic_job_off_and_on(admin):
    """Switching a periodic job off or on is stored in its settings row."""
    body = admin.patch(f"jobs/{HEARTBEAT}", {"enabled": False}).json()
    assert body["enabled"] is False and body["next_run"] is None
    assert _periodic_settings(HEARTBEAT).enabled is False
    assert admin.patch(f"jobs/{HEARTBEAT}", {"enabled": True}).json()["enabled"] is True
    assert _periodic_settings(HEARTBEAT).enabled is True


def test_change_job__view_only_is_403(viewer):
    """Switching needs the change permission; with only view, nothing is stored."""
    for name in (HEARTBEAT, DIGESTS):
        response = viewer.patch(f"jobs/{name}", {"enabled": False})
        assert response.status_code == 403 and "change" in response.json()["detail"]
    assert not PeriodicJobSettings.objects.exists() and not QueueSettings.objects.exists()


@pytest.mark.parametrize(
    ("body", "loc"),
    [({"enabled": "maybe"}, ["body", "enabled"]), ({}, ["body", "enabled"]),
     ({"enabled": False, "on": True}, ["body", "on"])],
)
def test_change_job__bad_body_is_422(admin, body, loc):
    """A body that is not one boolean ``enabled`` is refused, naming the field, and changes nothing."""
    response = admin.patch(f"jobs/{HEARTBEAT}", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert not PeriodicJobSettings.objects.exists()


def test_run_job__periodic_job_stores_the_request(admin):
    """Run now stores a run request for the workers and answers 202 with the job."""
    before = timezone.now()
    response = admin.post(f"jobs/{HEARTBEAT}/run", None)
    assert response.status_code == 202 and response.json()["name"] == HEARTBEAT
    assert before <= _periodic_settings(HEARTBEAT).run_requested_at <= timezone.now()


def test_run_job__queue_job_stores_a_start_request(admin):
    """Run now of a queue job stores a start request on its queue's settings."""
    before = timezone.now()
    response = admin.post(f"jobs/{DIGESTS}/run", None)
    assert response.status_code == 202 and response.json()["kind"] == "queue"
    assert before <= _queue_settings("digests").start_requested_at <= timezone.now()


def test_run_job__switched_off_is_409_and_stores_nothing(admin):
    """A switched-off job is not run: 409 saying to switch it on, and no request is stored."""
    for name in (HEARTBEAT, DIGESTS):
        admin.patch(f"jobs/{name}", {"enabled": False})
        response = admin.post(f"jobs/{name}/run", None)
        assert response.status_code == 409
        assert response.json() == {"detail": f"{name} is switched off: switch it on to run it."}
    assert _periodic_settings(HEARTBEAT).run_requested_at is None
    assert _queue_settings("digests").start_requested_at is None


def test_run_job__view_only_is_403(viewer):
    """Running needs the change permission; with only view, nothing is stored."""
    assert viewer.post(f"jobs/{HEARTBEAT}/run", None).status_code == 403
    assert viewer.post(f"jobs/{DIGESTS}/run", None).status_code == 403
    assert not PeriodicJobSettings.objects.exists() and not QueueSettings.objects.exists()


def test_run_job__unknown_is_404(admin):
    assert admin.post("jobs/tests.testapp.jobs.Nope/run", None).status_code == 404


def test_openapi__job_paths_name_the_jobs():
    """The description offers the job names for the job paths' ``name`` and still the queue names for the queues'."""
    schema = Client().get("/nexus/openapi.json").json()

    def names(path: str, method: str) -> list[str]:
        [name] = [p for p in schema["paths"][path][method]["parameters"] if p["name"] == "name"]
        return name["schema"]["enum"]

    for path, method in (("/nexus/jobs/{name}", "get"), ("/nexus/jobs/{name}", "patch"),
                         ("/nexus/jobs/{name}/run", "post")):
        assert names(path, method) == [job.name() for job in all_jobs()]
    assert "digests" in names("/nexus/queues/{name}", "get")
    assert {"Job", "JobRun", "JobChange"} <= set(schema["components"]["schemas"])
