"""A real kube-apiserver and etcd, and on a hub the kube-controller-manager a Karmada hub runs:
for the unit tests that need a server, the end-to-end tests and bench/.

Binaries: those `tools/build_test_servers.py` built from the Go modules in testbed/ for
$GCJOB_KUBE_VERSION (default 1.36; testbed/builds.py finds them), unless $KUBEBUILDER_ASSETS
names a folder holding kube-apiserver and etcd (and maybe kube-controller-manager): then those.
CRDs: `$GCJOB_CRDS_DIR`, else `tests/crds` (kept in the repository as published: see its README
for where each came from).

Each `ApiServer` is one etcd + kube-apiserver pair on free loopback ports in its own temporary
directory, with RBAC and a token file: `admin-token` is a
`system:masters` administrator; more users can be given (`users=`), for tests that prove a
Role grants exactly enough. `start_controllers()` starts kube-controller-manager beside it with
the controllers Karmada's hub runs (HUB_CONTROLLERS), once its CRDs are installed; an upstream
project control plane stays a bare API server. Children die with the test process
(PR_SET_PDEATHSIG), so an interrupted session leaves no stray server behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from testbed import builds
from testbed.paths import PROJECT_ROOT

ADMIN_TOKEN = "admin-token"
CRDS = PROJECT_ROOT / "tests" / "crds"
READY_TIMEOUT = 90.0
PR_SET_PDEATHSIG = 1

# The CRD files (in crds_dir()) each kind of server serves: a Karmada hub the compute and
# Gateway API kinds too, an upstream project control plane Gateway API.
HUB_CRDS = (
    "karmada-work.karmada.io_resourcebindings.yaml",
    "datum-compute.datumapis.com_workloaddeployments.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
)
UPSTREAM_CRDS = (
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
)


# The controllers Karmada's hub runs in its kube-controller-manager (Karmada's "Configure
# Controllers" guide): deleted namespaces finish, ownerReferences cascade, tokens are minted.
HUB_CONTROLLERS = ("namespace", "garbagecollector", "serviceaccount-token")
COLLECTOR_TIMEOUT = 90.0


class EnvtestError(Exception):
    pass


class NotFound(EnvtestError):
    """A 404 from the server."""


class AssetsMissing(EnvtestError):
    """No kube-apiserver/etcd to start: the whole session says so once, not once a test."""


@dataclass(frozen=True)
class Binaries:
    """The servers' executables, and where they came from (`origin`, for the session header)."""

    apiserver: Path
    etcd: Path
    controller_manager: Path | None  # None: KUBEBUILDER_ASSETS holds none
    origin: str


def binaries() -> Binaries:
    """$KUBEBUILDER_ASSETS's, when set; else those tools/build_test_servers.py built for
    $GCJOB_KUBE_VERSION."""
    given = os.environ.get("KUBEBUILDER_ASSETS")
    if given:
        folder = Path(given)
        if not ((folder / "kube-apiserver").is_file() and (folder / "etcd").is_file()):
            raise AssetsMissing(f"KUBEBUILDER_ASSETS={given} holds no kube-apiserver and etcd")
        manager = folder / "kube-controller-manager"
        return Binaries(
            folder / "kube-apiserver",
            folder / "etcd",
            manager if manager.is_file() else None,
            f"KUBEBUILDER_ASSETS={given}",
        )
    try:
        module = builds.kube_module()
        kube, etcd = builds.built(module), builds.built(builds.ETCD)
    except builds.BuildError as error:
        raise AssetsMissing(str(error)) from None
    if kube is None or etcd is None:
        raise AssetsMissing(
            f"the test servers of Kubernetes {builds.kube_version()} are not built: run "
            f"`python3 tools/build_test_servers.py {builds.kube_version()}` first (docs/testing.md)"
        )
    return Binaries(
        kube / "kube-apiserver",
        etcd / "etcd",
        kube / "kube-controller-manager",
        f"{module.path.relative_to(PROJECT_ROOT)} ({module.required('k8s.io/kubernetes')}), "
        f"etcd {builds.ETCD.required('go.etcd.io/etcd/server/v3')}",
    )


def kubectl() -> Path:
    """The kubectl built with the servers of $GCJOB_KUBE_VERSION (the tests render cronjobs/
    with its kustomize and read what operators read with it): nothing taken from the machine.
    With KUBEBUILDER_ASSETS set, the kubectl in that folder."""
    given = os.environ.get("KUBEBUILDER_ASSETS")
    if given:
        found = Path(given) / "kubectl"
        if not found.is_file():
            raise AssetsMissing(f"KUBEBUILDER_ASSETS={given} holds no kubectl")
        return found
    try:
        kube = builds.built(builds.kube_module())
    except builds.BuildError as error:
        raise AssetsMissing(str(error)) from None
    if kube is None or not (kube / "kubectl").is_file():
        raise AssetsMissing(
            f"kubectl {builds.kube_version()} is not built: run "
            f"`python3 tools/build_test_servers.py {builds.kube_version()}` first (docs/testing.md)"
        )
    return kube / "kubectl"


def crds_dir() -> Path:
    path = Path(os.environ.get("GCJOB_CRDS_DIR") or CRDS)
    if not path.is_dir():
        raise AssetsMissing(f"no CRDs at {path}: set GCJOB_CRDS_DIR to a folder of CRD files")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(log_file: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    """A server's process, its output to `log_file`, dying with this one."""
    log = open(log_file, "ab")  # noqa: SIM115  # closed by the child's exit
    try:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,  # single-threaded at this point
            start_new_session=True,  # a terminal's Ctrl-C reaches pytest, which stops us
        )
    finally:
        log.close()


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout`."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def die_with_parent() -> None:
    # Runs in the child between fork and exec: if pytest is killed, so is the server.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ApiServer:
    """One running etcd + kube-apiserver pair. Use as a context manager, or start()/stop()."""

    def __init__(self, name: str, *, users: Sequence[tuple[str, str, str]] = ()) -> None:
        """`users`: extra (token, user, groups-comma-separated) lines for the token file."""
        self.name = name
        self.users = list(users)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"gcjob-envtest-{name}-"))
        self.port = 0
        self.etcd_port = 0
        self.collects_garbage = False  # kube-controller-manager runs beside it
        self._processes: list[subprocess.Popen[bytes]] = []

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ApiServer:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        found = binaries()
        work = self.workdir
        (work / "certs").mkdir()
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (work / "sa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        (work / "sa.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        lines = [f'{ADMIN_TOKEN},admin,admin,"system:masters"']
        lines += [f'{token},{user},{user},"{groups}"' for token, user, groups in self.users]
        (work / "tokens.csv").write_text("\n".join(lines) + "\n")

        self.etcd_port, peer_port, self.port = free_port(), free_port(), free_port()
        etcd_url = self.etcd_url
        peer_url = f"http://127.0.0.1:{peer_port}"
        self._spawn(
            "etcd",
            [
                str(found.etcd),
                "--name", self.name,
                "--data-dir", str(work / "etcd"),
                "--listen-client-urls", etcd_url,
                "--advertise-client-urls", etcd_url,
                "--listen-peer-urls", peer_url,
                "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"{self.name}={peer_url}",
                "--initial-cluster-state", "new",
                "--unsafe-no-fsync",
            ],
        )  # fmt: skip
        self._spawn(
            "kube-apiserver",
            [
                str(found.apiserver),
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={work / 'certs'}",
                f"--etcd-servers={etcd_url}",
                f"--token-auth-file={work / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={work / 'sa.pub'}",
                f"--service-account-signing-key-file={work / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--enable-priority-and-fairness=false",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ],
        )
        self._wait_ready()

    def start_controllers(self) -> bool:
        """kube-controller-manager beside this server, with the controllers a Karmada hub runs,
        as Karmada configures it: an administrator's kubeconfig straight to the server (never
        through a fault proxy), no leader election, the token controller signing with the
        server's key, no serving port (workers would collide on 10257). Start it once the
        CRDs are installed: the garbage collector watches the kinds served when it starts at
        once, and a kind served later only from its next discovery (every 30 s). Returns once
        the collector has collected a probe's dependent; False (nothing started) when the
        binaries have no kube-controller-manager (KUBEBUILDER_ASSETS)."""
        manager = binaries().controller_manager
        if manager is None:
            return False
        kubeconfig = self.write_kubeconfig(self.workdir / "controller-manager.kubeconfig")
        self._spawn(
            "kube-controller-manager",
            [
                str(manager),
                f"--kubeconfig={kubeconfig}",
                f"--controllers={','.join(HUB_CONTROLLERS)}",
                "--leader-elect=false",
                f"--service-account-private-key-file={self.workdir / 'sa.key'}",
                f"--root-ca-file={self.ca_file}",
                "--use-service-account-credentials=false",
                "--secure-port=0",
            ],
        )
        self._wait_collecting()
        self.collects_garbage = True
        return True

    def _wait_collecting(self) -> None:
        """Until the garbage collector deletes a ConfigMap whose owner is gone: it starts
        collecting once it has read every kind it watches (the CRDs' too)."""
        base = "/api/v1/namespaces/kube-system/configmaps"
        configmap = {"apiVersion": "v1", "kind": "ConfigMap"}
        owner = self.request("POST", base, {**configmap, "metadata": {"generateName": "gc-owner-"}})
        reference = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
        dependent = self.request(
            "POST",
            base,
            {
                **configmap,
                "metadata": {"generateName": "gc-dependent-", "ownerReferences": [reference]},
            },
        )
        self.request("DELETE", f"{base}/{owner['metadata']['name']}")
        deadline = time.monotonic() + COLLECTOR_TIMEOUT
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise EnvtestError(f"{self.name}: {process.args[0]} exited: {self.log_tail()}")
            try:
                self.request("GET", f"{base}/{dependent['metadata']['name']}")
            except NotFound:
                return
            time.sleep(0.2)
        raise EnvtestError(
            f"{self.name}: the garbage collector collected nothing in {COLLECTOR_TIMEOUT:.0f}s: "
            + self.log_tail()
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        self._processes.append(spawn(self.workdir / f"{name}.log", argv))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise EnvtestError(f"{self.name}: {process.args[0]} exited: {self.log_tail()}")
            with contextlib.suppress(OSError, EnvtestError):
                if self.request("GET", "/readyz", raw=True) == b"ok":
                    return
            time.sleep(0.2)
        raise EnvtestError(f"{self.name}: not ready after {READY_TIMEOUT:.0f}s: {self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        tails = []
        for name in ("etcd", "kube-apiserver", "kube-controller-manager"):
            path = self.workdir / f"{name}.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                tails.append(f"--- {name}.log\n" + "\n".join(text))
        return "\n".join(tails)

    def stop(self) -> None:
        # the controller manager, then the API server, then its etcd
        for process in reversed(self._processes):
            stop_process(process)
        self._processes.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- access ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        """The etcd behind this server (plain HTTP on loopback): bench/ writes into it."""
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def ca_file(self) -> Path:
        """The server's self-signed serving certificate bundle (its CA included)."""
        return self.workdir / "certs" / "apiserver.crt"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str = ADMIN_TOKEN,
        content_type: str = "application/json",
        raw: bool = False,
    ) -> Any:
        """One administrator request, for setting up the server. Raises EnvtestError on >= 400."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        context = self.ssl_context() if self.ca_file.exists() else _unverified()
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            error = NotFound if exc.code == 404 else EnvtestError
            raise error(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from exc
        return payload if raw else (json.loads(payload) if payload else None)

    def install_crds(self, paths: Iterable[Path], timeout: float = 60.0) -> None:
        """Create the CRDs and wait until each is Established and served."""
        crds = [  # a file may hold several CRDs, as YAML documents
            doc for p in paths for doc in yaml.safe_load_all(p.read_text()) if doc
        ]
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for crd in crds:
            self.request("POST", base, crd)
        deadline = time.monotonic() + timeout
        for crd in crds:
            name = crd["metadata"]["name"]
            while not self._crd_ready(base, crd):
                if time.monotonic() > deadline:
                    raise EnvtestError(f"{self.name}: CRD {name} not established in {timeout}s")
                time.sleep(0.1)

    def _crd_ready(self, base: str, crd: dict[str, Any]) -> bool:
        live = self.request("GET", f"{base}/{crd['metadata']['name']}")
        conditions = (live.get("status") or {}).get("conditions") or []
        if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return False
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        for version in (v["name"] for v in crd["spec"]["versions"] if v.get("served")):
            try:
                found = self.request("GET", f"/apis/{group}/{version}")
            except EnvtestError:
                return False
            if plural not in {r["name"] for r in found.get("resources") or []}:
                return False
        return True

    def write_kubeconfig(
        self,
        path: Path,
        *,
        context: str = "envtest",
        token: str = ADMIN_TOKEN,
        server: str | None = None,
        ca_file: Path | None = None,
    ) -> Path:
        """A kubeconfig for this server (or for `server`, e.g. a proxy, trusting `ca_file`)."""
        return write_kubeconfig(
            path,
            context=context,
            server=server or self.url,
            ca_file=ca_file or self.ca_file,
            user={"token": token},
        )


def write_kubeconfig(
    path: Path, *, context: str, server: str, ca_file: Path | None, user: dict[str, Any]
) -> Path:
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority"] = str(ca_file)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _unverified() -> ssl.SSLContext:
    # Only before the server has written its certificate: the first /readyz polls.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@contextlib.contextmanager
def running(
    name: str,
    crds: Iterable[str],
    *,
    users: Sequence[tuple[str, str, str]] = (),
    controllers: bool = False,
) -> Iterator[ApiServer]:
    """A started server serving `crds` (file names in crds_dir(): HUB_CRDS, UPSTREAM_CRDS),
    stopped on leaving; with `controllers` (a hub), kube-controller-manager beside it, started
    after the CRDs are installed (when the binaries have one: see `collects_garbage`)."""
    with ApiServer(name, users=users) as server:
        server.install_crds(crds_dir() / crd for crd in crds)
        if controllers:
            server.start_controllers()
        yield server
