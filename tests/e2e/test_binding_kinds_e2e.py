"""A binding is named after its object's kind without the kind's group
(`lower(name-kind)`), so a custom resource of kind `Secret` or `ConfigMap` has the very binding
name a core Secret or ConfigMap of that name would have. Its binding is never gcjob's."""

from __future__ import annotations

import uuid

import pytest

from testbed.cluster import TestCluster
from testbed.objects import binding, companion
from testbed.report import HubSweep, run_gcjob


@pytest.mark.parametrize("kind", ["Secret", "ConfigMap"])
def test_the_binding_of_a_custom_resource_named_like_a_core_kind_stays(
    hub: TestCluster, sweep: HubSweep, kind: str
) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    collection = hub.install_crd(group, kind, kind.lower() + "s")
    namespace = hub.namespace()
    custom = hub.create_at(
        collection.format(namespace=namespace),
        {
            "apiVersion": f"{group}/v1",
            "kind": kind,
            "metadata": {"name": "tls-cert", "namespace": namespace},
        },
    )
    name = f"tls-cert-{kind.lower()}"
    bound = binding(namespace, name, kind=kind, target="tls-cert")
    bound["spec"]["resource"]["apiVersion"] = f"{group}/v1"
    bound["spec"]["resource"]["uid"] = custom["metadata"]["uid"]
    hub.create(bound)

    result = sweep(namespace, "--sweep", "bindings", "--delete")

    assert result.outcome("ResourceBinding", name) == ("skipped", "resource-mismatch")
    assert f"apiVersion '{group}/v1'" in result.item("ResourceBinding", name)["detail"]
    assert hub.present("ResourceBinding", namespace, name)


def test_a_companion_goes_without_a_binding_that_binds_a_custom_resource_of_its_name(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    """The companion `app-config` is an orphan; `app-config-configmap` binds a custom
    `ConfigMap app-config`. The companion goes; the binding stays, this run and the next."""
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    collection = hub.install_crd(group, "ConfigMap", "configmaps")
    namespace = hub.namespace()
    custom = hub.create_at(
        collection.format(namespace=namespace),
        {
            "apiVersion": f"{group}/v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": namespace},
        },
    )
    hub.create(companion("ConfigMap", namespace, "app-config", ["p/gone"]))
    bound = binding(namespace, "app-config-configmap", kind="ConfigMap", target="app-config")
    bound["spec"]["resource"]["apiVersion"] = f"{group}/v1"
    bound["spec"]["resource"]["uid"] = custom["metadata"]["uid"]
    hub.create(bound)
    args = [*gcjob_hub_args, "--namespace", namespace, "--delete"]

    first = run_gcjob(*args, "--sweep", "companions")
    second = run_gcjob(*args, "--sweep", "bindings")

    assert first.outcome("ConfigMap", "app-config") == ("deleted", "orphaned")
    assert first.outcome("ResourceBinding", "app-config-configmap") == (
        "skipped",
        "binding-mismatch",
    )
    assert second.outcome("ResourceBinding", "app-config-configmap") == (
        "skipped",
        "resource-mismatch",
    )
    assert hub.present("ResourceBinding", namespace, "app-config-configmap")
