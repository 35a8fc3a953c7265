"""gcjob.kube.access error messages: what an answer may put in the report (issue 12 G).

Pure: a Response is built as data, nothing is sent. (Kept out of tests/test_access.py, which
runs against the real API server and is being rewritten by the lead.)
"""

from __future__ import annotations

import json

import pytest

from gcjob.kube import requests
from gcjob.kube.access import _api_error
from gcjob.kube.resources import SECRETS
from gcjob.kube.transport import Response

REQUEST = requests.get(SECRETS, "ns-a", "db-creds", metadata_only=True)


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Login: password=hunter2</body></html>",
        json.dumps({"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}).encode(),
        b"hunter2 plain text from a proxy",
    ],
)
def test_a_non_status_body_is_never_echoed(body: bytes) -> None:
    error = _api_error(Response(500, {}, body), REQUEST)
    assert "hunter2" not in str(error) and "aHVudGVyMg" not in str(error)
    assert f"not a Kubernetes Status ({len(body)} bytes)" in str(error)


def test_a_status_message_is_quoted() -> None:
    status = {"kind": "Status", "reason": "Forbidden", "message": "secrets is forbidden"}
    error = _api_error(Response(403, {}, json.dumps(status).encode()), REQUEST)
    assert "secrets is forbidden" in str(error)
    assert error.reason == "Forbidden"
