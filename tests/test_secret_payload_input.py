"""Generated Secrets (hypothesis): no byte of a Secret's payload is kept, whatever field of
it carries the payload, and what is kept judges as the whole Secret does
(docs/threat-model.md, N5).

A payload rides in `data` and `stringData`, in `kubectl apply`'s last-applied-configuration,
in any label or annotation, in managedFields' `manager`, in `generateName`. gcjob keeps of a
Secret only the values its rules read (gcjob/domain.py SECRET_KEYS_READ, secret_as_kept), at
the point where a Secret enters it: the access layer's reads (on the real server:
tests/e2e/test_secret_payload_e2e.py) and the snapshot loader, which runs here end to end:
sweep, report, logs, metrics, the webhook's message, explain (JSON and text) and the deletion
record.
"""

from __future__ import annotations

import base64
import json
import logging
import string
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest

from gcjob.act.record import DeletionRecord
from gcjob.cli import cli
from gcjob.domain import (
    COMPANION_LABEL,
    GATEWAY_SYNC_LABEL,
    HELM_OWNER_LABEL,
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
    REFERRERS_ANNOTATION,
    SECRET_KEYS_READ,
    SERVICE_ACCOUNT_NAME_ANNOTATION,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    secret_as_kept,
)
from gcjob.kube import reduce
from gcjob.kube.access import KubeAccess
from gcjob.kube.resources import SECRETS
from gcjob.kube.snapshot import SnapshotStore
from gcjob.model import Sweep, Verdict
from gcjob.publish import metrics, webhook
from gcjob.reasons import Reason
from gcjob.sweeps.companions.scan import COMPANION_SELECTOR, LEFT_COMPANIONS_SELECTOR
from gcjob.sweeps.copies.scan import COPY_SELECTOR, replica
from testbed import objects

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NS = "ns-prop"
NAME = "db-creds"
CAPTURED = "2026-11-20T12:00:00Z"
READ_KEYS = {k.casefold() for keys in SECRET_KEYS_READ.values() for k in keys}

# A payload: starts with an upper-case letter, so no key, name or word gcjob writes (all
# lower case here) can hold it by chance; long enough that no output holds it by chance.
payloads = st.text(string.ascii_letters + string.digits, min_size=11, max_size=40).map(
    lambda s: "P" + s
)
_dns_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_prefix = st.lists(_dns_label, min_size=1, max_size=3).map(".".join)
_name_part = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,20}[a-z0-9])?", fullmatch=True)
# Any key a label or annotation may have (lower case), but the ones gcjob's rules read.
other_keys = st.one_of(
    _name_part, st.tuples(_prefix, _name_part).map("/".join), st.just(LAST_APPLIED)
).filter(lambda key: key.casefold() not in READ_KEYS)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@st.composite
def annotation_values(draw: st.DrawFn, payload: str) -> str:
    """A payload as an annotation carries one: bare, in JSON, among lines, or in Unicode."""
    how = draw(st.sampled_from(["bare", "json", "lines", "unicode"]))
    if how == "json":
        return json.dumps({"password": payload, "data": {"key": b64(payload)}})
    if how == "lines":
        return f"user: admin\npassword: {payload}\n"
    if how == "unicode":
        return f"mot de passe \u00e9 {payload} \u2603"
    return payload


@st.composite
def secrets_with_payload(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A companion Secret applied the way `kubectl apply` does, its payload in arbitrary
    places; and every payload byte-sequence it carries (each value, and its base64)."""
    secret_values = draw(st.lists(payloads, min_size=1, max_size=3))
    label_values = draw(st.dictionaries(other_keys, payloads.map(lambda p: p[:63]), max_size=3))
    annotation_payloads = draw(st.dictionaries(other_keys, payloads, max_size=3))
    annotations = {
        key: draw(annotation_values(value)) for key, value in annotation_payloads.items()
    }
    obj = objects.companion(
        "Secret",
        NS,
        NAME,
        ["default/gone"],
        labels=label_values,
        annotations=annotations,
        data={f"k{i}": b64(v) for i, v in enumerate(secret_values)},
    )
    obj["stringData"] = {f"s{i}": v for i, v in enumerate(secret_values)}
    if draw(st.booleans()):
        manifest = json.loads(json.dumps(obj))
        obj["metadata"].setdefault("annotations", {})[LAST_APPLIED] = json.dumps(manifest)
    meta = obj["metadata"]
    meta.update(
        uid="uid-secret",
        resourceVersion="7",
        creationTimestamp="2026-11-01T00:00:00Z",
    )
    manager = draw(payloads)
    if draw(st.booleans()):
        meta["managedFields"] = [
            {
                "manager": manager,
                "operation": "Update",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {f"f:k{i}": {} for i in range(len(secret_values))}},
            }
        ]
    generate_name = draw(payloads)
    if draw(st.booleans()):
        meta["generateName"] = generate_name
    words = [
        *secret_values,
        *(b64(v) for v in secret_values),
        *label_values.values(),
        *annotation_payloads.values(),
        manager,
        generate_name,
    ]
    return obj, words


# The labels and annotations gcjob's rules read, with values a rule may or may not accept.
rule_values = st.one_of(
    st.sampled_from(["true", "false", "True", "", "helm", "cluster-p-1", "ns-a", "web", "Secret"]),
    st.text(max_size=12),
)
_protect_keys = st.sampled_from(
    [PROTECT_ANNOTATION, PROTECT_ANNOTATION.upper(), "GCJOB.datumapis.com/Protect"]
)


@st.composite
def secrets_with_rule_keys(draw: st.DrawFn) -> dict[str, Any]:
    """A Secret with the keys gcjob's rules read set to generated values (the protect key in
    any case, as a label too), beside keys no rule reads; its ownerReferences as found. The
    keys are listed here, not taken from SECRET_KEYS_READ: a key the rules read that the list
    lacked would then judge differently, which is what this test is to find."""
    obj, _ = draw(secrets_with_payload())
    meta = obj["metadata"]
    label_keys = [
        COMPANION_LABEL,
        ORPHANED_LABEL,
        HELM_OWNER_LABEL,
        UPSTREAM_CLUSTER_LABEL,
        UPSTREAM_GROUP_LABEL,
        UPSTREAM_KIND_LABEL,
        UPSTREAM_NAME_LABEL,
        UPSTREAM_NAMESPACE_LABEL,
        GATEWAY_SYNC_LABEL,
    ]
    annotation_keys = [
        REFERRERS_ANNOTATION,
        ORPHANED_SINCE_ANNOTATION,
        ORPHANED_REASON_ANNOTATION,
        ORPHANED_EVIDENCE_ANNOTATION,
        SERVICE_ACCOUNT_NAME_ANNOTATION,
    ]
    for place, keys in (("labels", label_keys), ("annotations", annotation_keys)):
        chosen = draw(st.lists(st.sampled_from(keys), unique=True))
        values = meta.setdefault(place, {})
        values.update({key: draw(rule_values) for key in chosen})
        if draw(st.booleans()):
            values[draw(_protect_keys)] = draw(rule_values)
        if draw(st.booleans()):
            values[draw(st.sampled_from(chosen or keys))] = draw(
                st.sampled_from([None, 7, ["x"], {"k": "v"}])  # not a string, as a dump may
            )
    if draw(st.booleans()):
        meta["ownerReferences"] = draw(
            st.one_of(
                st.just("not a list"),
                st.lists(
                    st.one_of(
                        st.just("not a reference"),
                        st.fixed_dictionaries(
                            {
                                "apiVersion": st.sampled_from(["v1", "apps/v1"]),
                                "kind": st.sampled_from(["ConfigMap", "Deployment"]),
                                "name": st.sampled_from(["anchor-x", "web"]),
                                "uid": st.just("u-1"),
                            },
                            optional={"controller": st.sampled_from([True, False, None, "yes"])},
                        ),
                    ),
                    max_size=2,
                ),
            )
        )
    if draw(st.booleans()):
        meta[draw(st.sampled_from(["labels", "annotations"]))] = draw(
            st.sampled_from(["not a map", ["a"], 3])
        )
    if draw(st.booleans()):
        meta["deletionTimestamp"] = draw(st.sampled_from(["2026-11-20T11:00:00Z", {"t": 1}]))
    return obj


def test_every_label_a_secret_is_listed_by_is_one_whose_value_is_kept() -> None:
    """A snapshot filters what it kept by the label selectors a live server filters by: each
    key a selector compares must keep its value."""
    for selector in (COMPANION_SELECTOR, LEFT_COMPANIONS_SELECTOR, COPY_SELECTOR):
        for term in selector.split(","):
            key = term.replace("!=", "=").partition("=")[0]
            assert key in SECRET_KEYS_READ["labels"], (selector, key)


@given(secrets_with_rule_keys())
def test_what_is_kept_of_a_secret_is_judged_as_the_whole_secret(obj: dict[str, Any]) -> None:
    kept = secret_as_kept(obj)

    assert reduce.companion(SECRETS)(kept) == reduce.companion(SECRETS)(obj)
    assert replica(SECRETS)(kept) == replica(SECRETS)(obj)
    for read in (reduce.uid_of, reduce.name_of, reduce.namespace_and_name, reduce.owners):
        assert read(kept) == read(obj)
    assert secret_as_kept(kept) == kept  # once is enough: applied twice, nothing changes


@given(secrets_with_payload())
def test_nothing_kept_of_a_secret_holds_a_byte_of_its_payload(
    generated: tuple[dict[str, Any], list[str]],
) -> None:
    obj, words = generated

    kept = json.dumps(secret_as_kept(obj), ensure_ascii=False)

    for word in words:
        assert word not in kept
    assert set(secret_as_kept(obj)["metadata"].get("annotations", {})) == set(
        obj["metadata"].get("annotations", {})
    )  # every key kept, by name


@pytest.fixture(autouse=True)
def keep_log_handlers() -> Iterator[None]:
    log = logging.getLogger("gcjob")
    handlers = list(log.handlers)
    yield
    log.handlers[:] = handlers


HUB_KINDS = (
    ("v1", "ConfigMap"),
    ("compute.datumapis.com/v1alpha", "WorkloadDeployment"),
    ("work.karmada.io/v1alpha2", "ResourceBinding"),
)


def snapshot(directory: Path, secret: dict[str, Any]) -> None:
    (directory / "snapshot.yaml").write_text(f'capturedAt: "{CAPTURED}"\nserver: prop-hub\n')
    hub = directory / "hub"
    hub.mkdir()
    uid = secret["metadata"]["uid"]
    bound = objects.binding(NS, f"{NAME}-secret", kind="Secret", target=NAME, target_uid=uid)
    bound["metadata"].update(uid="uid-rb", resourceVersion="8", creationTimestamp=CAPTURED)
    (hub / "objects.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [secret, bound]})
    )
    for api_version, kind in HUB_KINDS:
        (hub / f"{kind.lower()}s.json").write_text(
            json.dumps({"apiVersion": api_version, "kind": f"{kind}List", "items": []})
        )


@settings(max_examples=max(10, settings().max_examples // 4))
@given(secrets_with_payload(), st.sampled_from(["json", "text"]))
def test_no_secret_payload_reaches_a_report_a_log_an_explanation_or_a_record(
    generated: tuple[dict[str, Any], list[str]], log_format: str
) -> None:
    """A snapshot holding the Secret: the sweep's report (stdout and file) and logs, explain
    in JSON and text, what the loader holds, and the deletion record's entry of it."""
    obj, words = generated
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        snapshot(directory, obj)
        report = directory / "report.json"
        swept = CliRunner().invoke(
            cli,
            [
                *("sweep", "--snapshot", str(directory), "--report-file", str(report)),
                *("--sweep", "companions", "--sweep", "bindings", "--report-healthy"),
                *("--log-format", log_format, "--min-age", "0s", "--grace", "0s"),
            ],
        )
        explained = [
            CliRunner().invoke(
                cli,
                ["explain", f"secret/{NS}/{NAME}", "--snapshot", str(directory), *output],
            )
            for output in (["--output", "json"], [])
        ]
        outputs = [swept.stdout, swept.stderr, report.read_text()]
        for e in explained:
            outputs += [e.stdout, e.stderr]
        document = json.loads(report.read_text())
        items, summary = document["items"], document["summary"]
        judged = {(i["kind"], i["action"], i["reason"]) for i in items}
        assert ("Secret", "would-delete", "orphaned") in judged, items
        # What the run would push and post: the metrics and the webhook's message, made from
        # the report as the run makes them (gcjob/publish).
        outputs.append(json.dumps(webhook.message(summary, items)))
        registry = metrics.registry_of(summary, duration=1.0, finished=0.0)
        outputs.append(generate_latest(registry).decode())
        assert all(e.exit_code == 0 for e in explained), [e.output for e in explained]
        # The loader's memory of it, and the record a deleting run would write of it.
        store = SnapshotStore("prop", [], every_kind=True)
        store.add(json.loads(json.dumps(obj)))
        outputs.append(repr(store.__dict__))
        record = DeletionRecord(str(directory), "run-1", lambda: datetime(2026, 11, 20, tzinfo=UTC))
        seen = store.get(SECRETS, NS, NAME, lambda o: reduce.object_ref(o, SECRETS))
        assert seen is not None
        verdict = Verdict(seen, True, Reason.ORPHANED, "orphaned")
        kept = record.before(cast(KubeAccess, store), Sweep.COMPANIONS, verdict, SECRETS)
        record.close()
        assert kept is None, kept  # recorded: its delete could go out
        [written] = directory.glob("deletions-*.jsonl")
        outputs.append(written.read_text())
    for word in words:
        for output in outputs:
            assert word not in output
