"""The API over a real socket, as a service calls it."""

import json
import urllib.error
import urllib.request

import pytest

from nexus_queues.api_tokens import make_token
from tests.api_client import make_user

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)
def test_http__enqueue_and_read_over_a_socket(live_server):
    """A service enqueues and reads back over real HTTP, with a token."""
    token = make_token(make_user("svc", "add_greetingqueueitem", "view_greetingqueueitem"))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    post = urllib.request.Request(
        f"{live_server.url}/nexus/queues/greetings", data=b'[{"name": "a"}, {"name": "b"}]', headers=headers
    )
    with urllib.request.urlopen(post, timeout=10) as response:
        assert response.status == 201 and len(json.load(response)["stored"]) == 2
    read = urllib.request.Request(f"{live_server.url}/nexus/queues/greetings/messages", headers=headers)
    with urllib.request.urlopen(read, timeout=10) as response:
        assert [m["message"]["name"] for m in json.load(response)["items"]] == ["a", "b"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{live_server.url}/nexus/queues/greetings/messages", timeout=10)
    refused.value.close()
    assert refused.value.code == 401
