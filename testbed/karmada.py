"""A Karmada hub: the hub's servers with Karmada's own controllers and webhook beside them, so
that the bindings gcjob judges are the ones Karmada makes, and Karmada takes them apart.

On the 1.36 servers (builds.KARMADA_KUBE_VERSION): etcd, kube-apiserver and the
kube-controller-manager a Karmada hub runs (servers.HUB_CONTROLLERS), serving the hub's kinds
(servers.HUB_CRDS) but with Karmada v1.16.0's own CRDs (every one in the module's
`charts/karmada/_crds/bases`: the controller manager waits for each kind it watches, and hangs
at start-up without one) in place of the ResourceBinding CRD of `tests/crds` (Karmada master's
schema); karmada-webhook serving on loopback with a certificate made here, and the module's
`artifacts/deploy/webhook-configuration.yaml` pointed at it (applied before any
PropagationPolicy is created: its mutating webhook gives a policy its permanent id); then
karmada-controller-manager with `--controllers=binding` (the resource detector always runs),
leader election and its ports off, and no controller that needs a member cluster (Karmada's
Cluster API is an aggregated API server the test bed does not run). Binaries, CRDs and the
webhook configuration: what `tools/build_test_servers.py` built into the cache
(testbed/karmada/, build.json `files`).

`KarmadaHub.stop_controllers()` / `start_controllers()` stop and start
karmada-controller-manager (a test's "Karmada is not running"); its webhook stays. The webhook
configurations are removed before the webhook stops (else every later delete on the hub would
fail closed on them).
"""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
import yaml

from testbed import builds
from testbed.servers import (
    HUB_CRDS,
    ApiServer,
    AssetsMissing,
    EnvtestError,
    NotFound,
    crds_dir,
    free_port,
    spawn,
    stop_process,
)

# tests/crds's ResourceBinding is Karmada master's schema: Karmada's own goes in instead.
MASTER_BINDING_CRD = "karmada-work.karmada.io_resourcebindings.yaml"
KARMADA_HUB_CRDS = tuple(crd for crd in HUB_CRDS if crd != MASTER_BINDING_CRD)
KARMADA_READY_TIMEOUT = 90.0
WEBHOOK_SERVICE_URL = "https://karmada-webhook.karmada-system.svc:443"
WEBHOOK_CONFIGURATIONS = (
    ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
    ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
)
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies"
BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings"
PROBE_NAMESPACE = "karmada-probe"
SKIP_VERSION = (
    "Karmada's controllers run on the Kubernetes {wanted} test servers only (Karmada v1.16.0, "
    "testbed/karmada/); this session runs {running} (GCJOB_KUBE_VERSION): docs/testing.md"
)
SKIP_REAL_HUB = (
    "GCJOB_E2E_HUB_KUBECONFIG is set: the Karmada tests stop and start Karmada's controllers, "
    "on the test bed's own Karmada hub only (docs/testing.md)"
)
SKIP_ASSETS = (
    "KUBEBUILDER_ASSETS is set: the Karmada hub runs only on the servers built here "
    "(docs/testing.md)"
)


@dataclass(frozen=True)
class KarmadaFiles:
    """What the Karmada hub runs: the module's two binaries, its CRDs and its webhook
    configuration, from the build cache."""

    controller_manager: Path
    webhook: Path
    crds: Path
    webhook_configuration: Path
    origin: str


def unavailable() -> str | None:
    """Why this session has no Karmada hub (a test is then skipped, saying so), else None."""
    if os.environ.get("GCJOB_E2E_HUB_KUBECONFIG"):
        return SKIP_REAL_HUB
    if os.environ.get("KUBEBUILDER_ASSETS"):
        return SKIP_ASSETS
    running = builds.kube_version()
    if running != builds.KARMADA_KUBE_VERSION:
        return SKIP_VERSION.format(wanted=builds.KARMADA_KUBE_VERSION, running=running)
    return None


def karmada_files() -> KarmadaFiles:
    """The Karmada module's build; AssetsMissing (one line) when it is not built."""
    try:
        folder = builds.built(builds.KARMADA)
    except builds.BuildError as error:
        raise AssetsMissing(str(error)) from None
    if folder is None:
        raise AssetsMissing(
            "Karmada's controllers are not built: run `python3 tools/build_test_servers.py "
            f"{builds.KARMADA_KUBE_VERSION}` first (docs/testing.md)"
        )
    return KarmadaFiles(
        folder / "karmada-controller-manager",
        folder / "karmada-webhook",
        folder / "crds",
        folder / "webhook-configuration.yaml",
        f"karmada {builds.KARMADA.required('github.com/karmada-io/karmada')}",
    )


def webhook_configurations(template: str, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Karmada's webhook configuration as it ships, every webhook's URL pointed at the webhook
    on this loopback port, trusting `ca_bundle` (PEM)."""
    text = template.replace("{{caBundle}}", base64.b64encode(ca_bundle).decode())
    documents = [doc for doc in yaml.safe_load_all(text) if doc]
    for document in documents:
        for hook in document["webhooks"]:
            url = hook["clientConfig"]["url"]
            assert url.startswith(WEBHOOK_SERVICE_URL), url
            hook["clientConfig"]["url"] = url.replace(
                WEBHOOK_SERVICE_URL, f"https://127.0.0.1:{port}"
            )
    return documents


def city_policy(namespace: str, name: str = "city-dfw") -> dict[str, Any]:
    """A PropagationPolicy as compute's federator makes one for a city: the companions
    (ConfigMaps and Secrets labelled as referenced data) of its namespace, to that city's
    cells."""
    selector = {"matchLabels": {"compute.datumapis.com/referenced-data": "true"}}
    city = name.removeprefix("city-")
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "v1", "kind": kind, "labelSelector": selector}
                for kind in ("ConfigMap", "Secret")
            ],
            "placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"city": city}}}},
        },
    }


class KarmadaHub:
    """A hub's servers (an ApiServer with kube-controller-manager) with karmada-webhook and
    karmada-controller-manager beside them. Use as a context manager."""

    def __init__(self) -> None:
        self.files = karmada_files()
        self.server = ApiServer("karmada-hub")
        self.work = self.server.workdir
        self.webhook_port = 0
        self._webhook: subprocess.Popen[bytes] | None = None
        self._controllers: subprocess.Popen[bytes] | None = None
        self._configured: list[tuple[str, str]] = []
        self._ca = trustme.CA()
        self.started_in = 0.0  # seconds from nothing to a binding made by Karmada

    def __enter__(self) -> KarmadaHub:
        started = time.monotonic()
        try:
            self.server.start()
            crds = [crds_dir() / crd for crd in KARMADA_HUB_CRDS]
            crds += sorted(self.files.crds.rglob("*.yaml"))
            self.server.install_crds(crds)
            self.server.start_controllers()
            self._start_webhook()
            self.start_controllers()
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - started
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def kubeconfig(self) -> Path:
        """An administrator's, straight to the server (never through a fault proxy)."""
        return self.work / "karmada.kubeconfig"

    # -- the webhook -----------------------------------------------------------------------

    def _start_webhook(self) -> None:
        self.server.write_kubeconfig(self.kubeconfig)
        certs = self.work / "karmada-webhook-certs"
        certs.mkdir()
        issued = self._ca.issue_cert("127.0.0.1")
        issued.cert_chain_pems[0].write_to_path(str(certs / "tls.crt"))
        for more in issued.cert_chain_pems[1:]:
            more.write_to_path(str(certs / "tls.crt"), append=True)
        issued.private_key_pem.write_to_path(str(certs / "tls.key"))
        self.webhook_port = free_port()
        self._webhook = spawn(
            self.work / "karmada-webhook.log",
            [
                str(self.files.webhook),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.webhook_port}",
                f"--cert-dir={certs}",
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
            ],
        )
        self._wait_webhook()
        template = self.files.webhook_configuration.read_text("utf-8")
        for document in webhook_configurations(
            template, self.webhook_port, self._ca.cert_pem.bytes()
        ):
            plural = next(p for p, kind in WEBHOOK_CONFIGURATIONS if kind == document["kind"])
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            self.server.request("POST", path, document)
            self._configured.append((path, document["metadata"]["name"]))

    def _wait_webhook(self) -> None:
        context = ssl.create_default_context()
        self._ca.configure_trust(context)
        url = f"https://127.0.0.1:{self.webhook_port}/readyz/"
        deadline = time.monotonic() + KARMADA_READY_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive()
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(url, context=context, timeout=5) as answer,
            ):
                if answer.status == 200:
                    return
            time.sleep(0.1)
        raise EnvtestError(f"karmada-webhook not ready in {KARMADA_READY_TIMEOUT:.0f}s")

    # -- karmada-controller-manager ---------------------------------------------------------

    @property
    def controllers_running(self) -> bool:
        return self._controllers is not None and self._controllers.poll() is None

    def start_controllers(self) -> None:
        """karmada-controller-manager: the resource detector and the binding controller.
        Returns once it has made the binding of a probe ConfigMap: it has read every kind it
        watches and propagates."""
        assert not self.controllers_running, "karmada-controller-manager is running"
        self._controllers = spawn(
            self.work / "karmada-controller-manager.log",
            [
                str(self.files.controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                "--controllers=binding",
                "--leader-elect=false",
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
            ],
        )
        self._wait_propagating()

    def stop_controllers(self) -> None:
        """Stops karmada-controller-manager: until start_controllers(), nothing makes a
        binding, and nothing removes Karmada's finalizer from a deleted one."""
        if self._controllers is not None:
            stop_process(self._controllers)
            self._controllers = None

    @contextlib.contextmanager
    def controllers_stopped(self) -> Iterator[None]:
        """karmada-controller-manager stopped inside the block, running again after it."""
        self.stop_controllers()
        try:
            yield
        finally:
            self.start_controllers()

    def _wait_propagating(self) -> None:
        request = self.server.request
        with contextlib.suppress(EnvtestError):  # there from an earlier start
            request("POST", "/api/v1/namespaces", {"metadata": {"name": PROBE_NAMESPACE}})
        with contextlib.suppress(EnvtestError):
            request(
                "POST", POLICIES.format(namespace=PROBE_NAMESPACE), city_policy(PROBE_NAMESPACE)
            )
        probe = request(
            "POST",
            f"/api/v1/namespaces/{PROBE_NAMESPACE}/configmaps",
            {
                "metadata": {
                    "generateName": "probe-",
                    "labels": {"compute.datumapis.com/referenced-data": "true"},
                }
            },
        )
        name = probe["metadata"]["name"]
        binding = f"{BINDINGS.format(namespace=PROBE_NAMESPACE)}/{name}-configmap"
        deadline = time.monotonic() + KARMADA_READY_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(NotFound):
                request("GET", binding)
                request(
                    "DELETE",
                    f"/api/v1/namespaces/{PROBE_NAMESPACE}/configmaps/{name}",
                    {"propagationPolicy": "Background"},
                )
                return
            time.sleep(0.1)
        raise EnvtestError(
            f"karmada-controller-manager made no binding in {KARMADA_READY_TIMEOUT:.0f}s: "
            + self.log_tail()
        )

    # -- all of it --------------------------------------------------------------------------

    def _check_alive(self) -> None:
        for name, process in (("karmada-webhook", self._webhook), ("", self._controllers)):
            if process is not None and process.poll() is not None:
                raise EnvtestError(
                    f"{name or 'karmada-controller-manager'} exited: {self.log_tail()}"
                )

    def pids(self) -> dict[str, int]:
        """The Karmada processes running, by name (to measure them)."""
        running = {
            "karmada-webhook": self._webhook,
            "karmada-controller-manager": self._controllers,
        }
        return {n: p.pid for n, p in running.items() if p is not None and p.poll() is None}

    def log_tail(self, lines: int = 15) -> str:
        tails = [self.server.log_tail(lines)]
        for name in ("karmada-webhook", "karmada-controller-manager"):
            path = self.work / f"{name}.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                tails.append(f"--- {name}.log\n" + "\n".join(text))
        return "\n".join(tails)

    def stop(self) -> None:
        """The controller manager; the webhook configurations, then the webhook (a webhook
        configured and not answering fails every request it covers: every delete on the
        hub); then the hub's servers."""
        self.stop_controllers()
        for path, name in self._configured:
            with contextlib.suppress(EnvtestError):
                self.server.request("DELETE", f"{path}/{name}")
        self._configured.clear()
        if self._webhook is not None:
            stop_process(self._webhook)
            self._webhook = None
        self.server.stop()
