"""gcjob.kube.access error messages: what an answer may put in the report (issue 12 G).

Pure: a Response is built as data, nothing is sent. (Kept out of tests/kube/test_access.py, which
runs against the real API server and is being rewritten by the lead.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.kube import requests
from gcjob.kube.access import KubeAccess, _api_error
from gcjob.kube.errors import MAX_MESSAGE_CHARS, Unavailable
from gcjob.kube.resources import CONFIGMAPS, SECRETS
from gcjob.kube.transport import Response
from gcjob.model import Action, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.redact import redact
from testbed.model import ref

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


# -- issue 20 item 10: a Status message is one redacted line, whatever it holds ---------------

SECRETS_IN_TEXT = ("Authorization: Bearer tok3n-abc", "https://user:pw0rd@example.com/x")


@pytest.mark.parametrize("secret", SECRETS_IN_TEXT)
def test_a_status_message_with_newlines_and_credentials_is_one_redacted_line(secret: str) -> None:
    status = {
        "kind": "Status",
        "reason": "Forbidden\nX",
        "message": f"gateways is forbidden:\n{secret}\r\n\tand more",
    }
    error = _api_error(Response(403, {}, json.dumps(status).encode()), REQUEST)
    text = str(error)
    assert "\n" not in text and "\r" not in text and "\t" not in text
    assert "tok3n-abc" not in text and "pw0rd" not in text
    assert "gateways is forbidden:" in text


@given(message=st.text(max_size=400), reason=st.text(max_size=40))
def test_every_error_message_is_one_redacted_line(message: str, reason: str) -> None:
    for secret in SECRETS_IN_TEXT:
        status = {"kind": "Status", "reason": reason, "message": f"{message} {secret} {message}"}
        error = _api_error(Response(403, {}, json.dumps(status).encode()), REQUEST)
        for text in (str(error), error.server_first()):
            assert text == " ".join(text.split())  # one line: no line break of any kind
            assert len(text) <= MAX_MESSAGE_CHARS
            assert "tok3n-abc" not in text and "pw0rd" not in text
        text = str(error)
        assert str(Unavailable(text + "\n" + secret)) == redact(text + " " + secret)


CREATE = requests.create(CONFIGMAPS, "ns-a", {"metadata": {"name": "app-config"}})


def test_a_403_for_a_namespace_being_deleted_names_no_grant_and_leads_with_its_reason() -> None:
    """The API server's NamespaceLifecycle refuses to create in a namespace being deleted with
    a 403 whose cause says so: no permission is missing, so none is named."""
    said = (
        'configmaps "app-config" is forbidden: unable to create new content in namespace ns-a '
        "because it is being terminated"
    )
    status = {
        "kind": "Status",
        "reason": "Forbidden",
        "message": said,
        "details": {
            "name": "app-config",
            "kind": "configmaps",
            "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}],
        },
    }
    error = _api_error(Response(403, {}, json.dumps(status).encode()), CREATE)

    assert "grant" not in str(error) and "being deleted" in str(error)
    assert error.server_first().startswith(said + " (HTTP 403 Forbidden on ")
    assert "grant" not in error.server_first()
    assert error.namespace_terminating  # told apart from a permission (issue 46 item 7)


def test_an_rbac_403_leads_with_the_servers_words_when_asked_and_names_the_grant() -> None:
    said = 'configmaps is forbidden: User "gcjob" cannot create resource "configmaps"'
    status = {"kind": "Status", "reason": "Forbidden", "message": said}
    error = _api_error(Response(403, {}, json.dumps(status).encode()), CREATE)

    assert str(error).startswith("HTTP 403 Forbidden on /api/v1/namespaces/ns-a/configmaps: ")
    assert f"forbidden: grant 'create' on /api/v1/namespaces/ns-a/configmaps: {said}" in str(
        error
    )  # as the sweeps' reports have it
    assert error.server_first() == (
        f"{said} (HTTP 403 Forbidden on /api/v1/namespaces/ns-a/configmaps; if RBAC refused "
        "it, grant 'create' on /api/v1/namespaces/ns-a/configmaps)"
    )
    assert not error.namespace_terminating
    assert not error.admission  # a permission: a delete RBAC refuses stays `delete-failed`


@pytest.mark.parametrize(
    "said",
    [
        # k8s.io/apiserver's words for a ValidatingAdmissionPolicy's and a webhook's refusal
        "configmaps \"app\" is forbidden: ValidatingAdmissionPolicy 'keep' with binding 'keep' "
        "denied request: kept by policy",
        'admission webhook "keep.example.com" denied the request: kept',
    ],
)
def test_a_403_from_admission_names_no_grant(said: str) -> None:
    status = {"kind": "Status", "reason": "Forbidden", "message": said}
    error = _api_error(Response(403, {}, json.dumps(status).encode()), CREATE)

    assert f"refused by an admission policy or webhook, not RBAC: {said}" in str(error)
    assert "grant" not in str(error) and "grant" not in error.server_first()
    assert not error.namespace_terminating
    assert error.admission  # the deleter keeps the object: admission-refused


def test_a_policys_default_422_is_admission_too() -> None:
    said = (
        "configmaps \"app\" is forbidden: ValidatingAdmissionPolicy 'keep' with binding 'keep' "
        "denied request: kept by policy"
    )
    status = {"kind": "Status", "reason": "Invalid", "message": said}
    error = _api_error(Response(422, {}, json.dumps(status).encode()), CREATE)
    assert error.admission and error.status == 422


@given(words=st.lists(st.from_regex(r"[a-z]{1,12}", fullmatch=True), min_size=60, max_size=120))
def test_a_long_rbac_refusal_is_cut_visibly_and_keeps_what_to_grant(words: list[str]) -> None:
    """issue 51 item 10: a long message is cut at a word's end with "…", never mid-word, and
    `server_first` cuts the server's words, not the grant after them."""
    said = 'configmaps is forbidden: User "gcjob" cannot create: ' + " ".join(words)
    status = {"kind": "Status", "reason": "Forbidden", "message": said}
    error = _api_error(Response(403, {}, json.dumps(status).encode()), CREATE)
    for text in (str(error), error.server_first()):
        assert len(text) <= MAX_MESSAGE_CHARS
        if len(said) > MAX_MESSAGE_CHARS:
            assert "…" in text
            shown = text.split("…")[0].split()[-1]
            assert shown in said.split()  # a whole word before the cut
    assert error.server_first().endswith(
        "(HTTP 403 Forbidden on /api/v1/namespaces/ns-a/configmaps; if RBAC refused it, "
        "grant 'create' on /api/v1/namespaces/ns-a/configmaps)"
    )


class Answers:
    """A transport that answers every request with one Response (nothing is sent)."""

    def __init__(self, response: Response) -> None:
        self.response = response

    def send(self, request: Any, **kwargs: Any) -> Response:
        return self.response


def _delete_answered(status: int, said: str, reason: str = "Forbidden") -> Outcome:
    body = {"kind": "Status", "status": "Failure", "reason": reason, "message": said}
    access = KubeAccess(Answers(Response(status, {}, json.dumps(body).encode())))  # type: ignore[arg-type]
    verdict = Verdict(ref(name="app", uid="uid-app", resource_version="7"), True, "orphaned", "")
    return Deleter(access, dry_run=False, budget=RunBudget(None)).delete(
        Sweep.COMPANIONS, verdict, CONFIGMAPS
    )


@pytest.mark.parametrize(
    "status,reason",
    [
        (400, "BadRequest"),  # what the API server makes of a webhook's denial with no code
        (409, "Conflict"),  # a webhook's own code: no precondition conflict
        (403, "Forbidden"),
        (422, "Invalid"),
    ],
)
def test_a_delete_admission_denies_with_any_4xx_is_admission_refused(
    status: int, reason: str
) -> None:
    said = 'admission webhook "keep.example.com" denied the request: kept'
    outcome = _delete_answered(status, said, reason)
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, Reason.ADMISSION_REFUSED)
    assert f"(HTTP {status})" in outcome.detail


def test_a_409_that_is_not_admissions_is_still_a_conflict() -> None:
    outcome = _delete_answered(409, "Precondition failed: UID in precondition", "Conflict")
    assert outcome.reason is Reason.CHANGED_SINCE_OBSERVED


@pytest.mark.parametrize(
    "said",
    [
        'configmaps "app" is forbidden: User "gcjob" cannot delete resource "configmaps": '
        'admission webhook "keep.example.com" denied the request',
        'configmaps "app" is forbidden: User "admission webhook "w" denied the request" cannot '
        'delete resource "configmaps"',
        'proxy says: admission webhook "keep.example.com" denied the request',
    ],
)
def test_rbac_or_unanchored_words_are_never_admission(said: str) -> None:
    outcome = _delete_answered(403, said)
    assert (outcome.action, outcome.reason) == (Action.FAILED, Reason.DELETE_FAILED)
    assert not _api_error(
        Response(403, {}, json.dumps({"kind": "Status", "message": said}).encode()), CREATE
    ).admission
