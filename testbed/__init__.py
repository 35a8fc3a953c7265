"""The test bed: what the unit tests, the end-to-end tests and bench/ share (tests/README.md).

- servers: a real kube-apiserver + etcd (ApiServer, running, HUB_CRDS, UPSTREAM_CRDS)
- faultproxy: an HTTPS proxy in front of one that injects faults and logs requests
- endpoints: a server behind the proxy with a kubeconfig for gcjob (or a real cluster)
- fixtures: the pytest fixtures over them (hub, upstream, faults, gcjob_hub_args, ...)
- cluster: TestCluster, creating and reading objects on a server in test namespaces
- objects: Kubernetes objects as JSON (to create, or as a server returns them)
- model: gcjob.model's records, with safe defaults
- report: running gcjob (in-process or in a subprocess) and reading its report
- schemas: the JSON Schemas gcjob ships, compiled once
- paths: where the repository and its demo snapshot are
- hostile: a hostile plain-HTTP peer (drips, huge bodies), and a gcjob transport to one
- milo: Milo's Project API and projects' control planes behind a proxy; anchors and copies
- workers: how xdist's workers share the tests (a module with servers of its own on one)

Not part of gcjob's wheel: it lives beside tests/ and bench/, which import it from the
repository root.
"""
