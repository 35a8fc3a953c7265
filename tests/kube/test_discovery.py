"""gcjob/kube/discovery.py: a kind resolves to exactly one resource, or says why not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube.discovery import (
    listed_and_deleted,
    merge_versions,
    resolve,
    resources_by_kind,
    versions,
)
from gcjob.kube.resources import Resource

LIST = {
    "kind": "APIResourceList",
    "resources": [
        {"name": "connectors", "kind": "Connector", "namespaced": True},
        {"name": "connectors/status", "kind": "Connector", "namespaced": True},
        {"name": "httpproxies", "kind": "HTTPProxy", "namespaced": True},
        {"name": "proxies", "kind": "HTTPProxy", "namespaced": True},
        {"name": "widgets", "kind": "Widget", "namespaced": False},
    ],
}
GROUP = "networking.datumapis.com"


def test_a_subresource_is_not_a_kinds_resource():
    served = resources_by_kind(GROUP, "v1alpha1", LIST)
    assert resolve(served, GROUP, "Connector", True) == Resource(
        GROUP, "v1alpha1", "connectors", "Connector", True
    )


def test_two_resources_for_one_kind_resolve_to_nothing():
    served = resources_by_kind(GROUP, "v1alpha1", LIST)
    assert "more than one" in str(resolve(served, GROUP, "HTTPProxy", True))


def test_the_scope_must_match_what_the_labels_say():
    served = resources_by_kind(GROUP, "v1alpha1", LIST)
    assert "cluster-scoped" in str(resolve(served, GROUP, "Widget", True))
    assert isinstance(resolve(served, GROUP, "Widget", False), Resource)


def test_a_group_not_served_and_a_kind_not_served_say_so():
    assert "not served" in str(resolve(None, GROUP, "Connector", True))
    assert "not served" in str(resolve({}, GROUP, "Connector", True))


def test_every_version_the_preferred_first():
    body = {
        "preferredVersion": {"version": "v2"},
        "versions": [{"version": "v1"}, {"version": "v2"}],
    }
    assert versions(body) == ["v2", "v1"]
    assert versions({"versions": [{"version": "v1beta1"}]}) == ["v1beta1"]
    assert versions({"versions": []}) == []
    assert versions([]) == []


def test_a_kind_is_found_in_any_version_and_the_preferred_wins():
    v2 = resources_by_kind(
        GROUP,
        "v2",
        {"resources": [{"name": "connectors", "kind": "Connector", "namespaced": True}]},
    )
    v1 = resources_by_kind(
        GROUP,
        "v1",
        {
            "resources": [
                {"name": "connectors", "kind": "Connector", "namespaced": True},
                {"name": "httpproxies", "kind": "HTTPProxy", "namespaced": True},
            ]
        },
    )
    merged = merge_versions([v2, v1])
    assert resolve(merged, GROUP, "Connector", True) == Resource(
        GROUP, "v2", "connectors", "Connector"
    )
    assert resolve(merged, GROUP, "HTTPProxy", True) == Resource(
        GROUP, "v1", "httpproxies", "HTTPProxy"
    )


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(JSONISH, st.text(max_size=12), st.booleans())
def test_any_answer_is_read_without_an_exception(body, kind, namespaced):
    served = resources_by_kind(GROUP, "v1", body)
    result = resolve(served, GROUP, kind, namespaced)
    assert isinstance(result, (Resource, str))
    versions(body)


# -- what the namespace controller would delete (the namespaces sweep) ----------------------

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(st.lists(ANY_JSON, max_size=6))
def test_a_malformed_resource_list_raises_nothing_and_says_what_it_did_not_understand(
    entries: list[object],
) -> None:
    """The audit: verbs holding a map raised TypeError and ended the run. Whatever the hub's
    discovery holds, each entry is a kind to list, not one, or counted as not understood (the
    sweep then keeps the namespaces, naming the group)."""
    found, unreadable = listed_and_deleted("g", "v1", {"resources": entries})
    assert 0 <= unreadable <= len(entries)
    assert all(r.namespaced and r.group == "g" for r in found)


def test_listed_and_deleted_takes_namespaced_kinds_with_list_and_delete_only() -> None:
    body = {
        "resources": [
            {"name": "widgets", "kind": "Widget", "namespaced": True, "verbs": ["list", "delete"]},
            {"name": "widgets/status", "kind": "Widget", "namespaced": True, "verbs": ["get"]},
            {"name": "gadgets", "kind": "Gadget", "namespaced": True, "verbs": ["list"]},
            {"name": "nodes", "kind": "Node", "namespaced": False, "verbs": ["list", "delete"]},
            {"name": "bad", "kind": "Bad", "namespaced": True, "verbs": [{"a": 1}]},
            "not a map",
        ]
    }
    found, unreadable = listed_and_deleted("g", "v1", body)
    assert [r.plural for r in found] == ["widgets"]
    assert unreadable == 2
    assert listed_and_deleted("g", "v1", {"resources": "nope"}) == ([], 1)
