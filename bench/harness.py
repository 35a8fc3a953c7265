"""What the benchmarks share: the servers of each Kubernetes version they run on, payloads,
filling a real API server over HTTPS, measuring one child process, the machine and the commit
they ran on. Public names only: bench_sweep.py and bench_scale.py
import from here and from the test bed (testbed/), never from each other."""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import platform
import random
import re
import shlex
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the test bed lives beside gcjob, not in its wheel
    sys.path.insert(0, str(ROOT))

from testbed import builds, objects  # noqa: E402
from testbed.measure import MEASURE_HELPER  # noqa: E402
from testbed.servers import ADMIN_TOKEN, ApiServer, binaries  # noqa: E402

Obj = dict[str, Any]

PAGE_SIZE = 500
POPULATE_THREADS = 8  # keep-alive connections filling a server
POST_ATTEMPTS = 8  # a loaded 2-core machine makes the server time out now and then (504)
META_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


# ---------------------------------------------------------------------------------------------
# the servers: which version, and what they said they are


def add_versions_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kube-versions",
        metavar="V[,V...]",
        help="the Kubernetes versions to measure on, one after the other in this run, each "
        "with the servers tools/build_test_servers.py builds for it (built first if they are "
        f"not; default ${builds.VERSION_ENV}, else {builds.DEFAULT_KUBE_VERSION}; testbed/kube/ "
        f"holds {', '.join(builds.kube_versions())})",
    )


def kube_versions(given: str | None) -> list[str]:
    """The versions `--kube-versions` names, else the test bed's (testbed/builds.py). With
    $KUBEBUILDER_ASSETS the servers are those binaries, whatever version is asked for: naming
    versions then is refused, not ignored."""
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if given and assets:
        raise SystemExit(
            f"--kube-versions picks the built servers, KUBEBUILDER_ASSETS={assets} others: "
            "unset one of them"
        )
    versions = [v.strip().removeprefix("v") for v in (given or "").split(",") if v.strip()]
    versions = versions or [builds.kube_version()]
    try:
        for version in versions:  # before anything is started: one that is not there
            builds.kube_module(version)
    except builds.BuildError as error:
        raise SystemExit(str(error)) from None
    return versions


@contextlib.contextmanager
def kube_version(version: str) -> Iterator[None]:
    """Inside: testbed/servers.py starts the servers of `version` ($GCJOB_KUBE_VERSION, as in
    the tests), built first if they are not (tools/build_test_servers.py's build, under its
    lock; cached, it takes a second). With $KUBEBUILDER_ASSETS, those binaries."""

    def say(line: str) -> None:
        print(f"  build-test-servers: {line}", flush=True)

    if not os.environ.get("KUBEBUILDER_ASSETS"):
        try:
            modules = [builds.ETCD, builds.kube_module(version)]
            with builds.locked(say):
                for module in modules:
                    builds.build(module, say)
        except builds.BuildError as error:
            raise SystemExit(f"the servers of Kubernetes {version}: {error}") from None
    before = os.environ.get(builds.VERSION_ENV)
    os.environ[builds.VERSION_ENV] = version
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(builds.VERSION_ENV, None)
        else:
            os.environ[builds.VERSION_ENV] = before


def server_versions(hub: ApiServer, upstream: ApiServer | None = None) -> Obj:
    """What the run measured against, as the servers it started answer: each API server's
    /version and its etcd's /version; the kube-controller-manager's `--version` when it ran
    beside the hub; where the binaries came from."""
    found = binaries()

    def etcd(server: ApiServer) -> Obj:
        with urllib.request.urlopen(f"{server.etcd_url}/version", timeout=10) as answer:
            said: Obj = json.loads(answer.read())
        return said

    out: Obj = {
        "kube_version": builds.kube_version(),  # what was asked for; below, what was served
        "assets": found.origin,
        "server_version": hub.request("GET", "/version").get("gitVersion"),
        "etcd_version": etcd(hub).get("etcdserver"),
        "controller_manager_version": None,
    }
    if upstream is not None:
        out["upstream_server_version"] = upstream.request("GET", "/version").get("gitVersion")
        out["upstream_etcd_version"] = etcd(upstream).get("etcdserver")
    if hub.collects_garbage and found.controller_manager is not None:
        said = subprocess.run(
            [str(found.controller_manager), "--version"],
            capture_output=True,
            text=True,
            check=False,
        )
        out["controller_manager_version"] = said.stdout.strip()
    return out


REQUESTS = re.compile(r"^apiserver_request_total\{(.*)\} (\S+)$")


def settle(server: ApiServer, quiet_s: float = 5.0, most: int = 5, timeout: float = 60.0) -> float:
    """Wait until `server` has served at most `most` requests in `quiet_s` (these scrapes and
    watches left out): a hub's kube-controller-manager done with what a fill gave it (its
    garbage collector looks up the owners of dependents it saw first). What never stops (the
    server's own leases, the collector's discovery every 30 s) is a few requests a window.
    Seconds waited; gives up after `timeout`: a hub filled straight into etcd leaves the
    collector a backlog of owners to look up, which its queue's rate limit (10 a second)
    drains for minutes at 10k, so the runs then measure beside that trickle."""

    def served() -> float:
        text = server.request("GET", "/metrics", raw=True).decode()
        total = 0.0
        for line in text.splitlines():
            match = REQUESTS.match(line)
            if match and 'verb="WATCH"' not in match[1] and "/metrics" not in match[1]:
                total += float(match[2])
        return total

    begin = time.perf_counter()
    seen = [(begin, served())]
    while time.perf_counter() - begin < timeout:
        time.sleep(1)
        now = time.perf_counter()
        seen.append((now, served()))
        window = [total for at, total in seen if at >= now - quiet_s - 0.5]
        if now - begin >= quiet_s and seen[-1][1] - window[0] <= most:
            break
    return round(time.perf_counter() - begin, 1)


def gcjob_commit() -> Obj:
    """The commit the measured gcjob is at, and what of the measured code differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    code = ("gcjob", "bench/*.py", "testbed", "pyproject.toml")  # not the docs
    changed = git("status", "--porcelain", "--", *code)
    return {
        "commit": git("rev-parse", "HEAD").strip() or None,
        "uncommitted": [line[3:] for line in changed.splitlines() if line.strip()],
    }


# ---------------------------------------------------------------------------------------------
# filling a server


def blob(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()


class Blobs:
    """A few distinct payloads, reused: realistic sizes without generating MBs of randomness."""

    def __init__(self, rng: random.Random) -> None:
        self.secret = [
            {"username": blob(rng, 24), "password": blob(rng, 48), "tls.key": blob(rng, 3000)}
            for _ in range(32)
        ]
        self.config = [{"app.conf": blob(rng, 900), "env": blob(rng, 200)} for _ in range(32)]
        self.plain = [{"data.txt": blob(rng, 2048)} for _ in range(32)]


def companion(kind: str, ns: str, name: str, referrers: list[str], data: Obj) -> Obj:
    """A companion as the compute operator copies it to the hub, with a realistic payload."""
    managed = {"app.kubernetes.io/managed-by": "compute-operator"}
    return objects.companion(kind, ns, name, referrers, labels=managed, data=data)


Post = Callable[[str, Obj], Obj]
Task = Callable[[Post], None]


def post_task(path: str, obj: Obj) -> Task:
    """POST `obj` to `path`, on whichever connection of the Populator is free."""

    def task(post: Post) -> None:
        post(path, obj)

    return task


class Populator:
    """Runs POST tasks on a bounded pool of threads, each with one keep-alive HTTPS connection
    to the server. Any failure stops the fill and is raised."""

    def __init__(self, server: ApiServer, threads: int = POPULATE_THREADS) -> None:
        self.server = server
        self.threads = threads
        self.posts = 0
        self.retries = 0  # POSTs sent again because the busy server did not answer in time
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []

    def run(self, tasks: Iterable[Task]) -> None:
        source = iter(tasks)
        workers = [
            threading.Thread(target=self._work, args=(source,), daemon=True)
            for _ in range(self.threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if self._errors:
            raise RuntimeError(f"populating failed: {self._errors[0]!r}") from self._errors[0]

    def _work(self, source: Iterator[Task]) -> None:
        context = self.server.ssl_context()
        connection = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=context)
        headers = {
            "Authorization": f"Bearer {ADMIN_TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }

        def send(method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
            nonlocal connection
            try:
                connection.request(method, path, data, headers)
                response = connection.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPSConnection(
                    "127.0.0.1", self.server.port, context=context
                )
                return 0, b"connection failed"

        def post(path: str, obj: Obj) -> Obj:
            """POST, retried on a busy server (504, 429, 5xx, a broken connection); a retry
            answered 409 means an earlier attempt applied: the stored object is read back."""
            data = json.dumps(obj).encode()
            for attempt in range(POST_ATTEMPTS):
                status, body = send("POST", path, data)
                if status == 409 and attempt:
                    name = obj["metadata"]["name"]
                    status, body = send("GET", f"{path}/{name}", None)
                if status < 300 and status:
                    break
                if status not in (0, 429) and status < 500:
                    raise RuntimeError(f"POST {path}: {status} {body[:300]!r}")
                with self._lock:
                    self.retries += 1
                time.sleep(min(30.0, 2.0**attempt))
            else:
                raise RuntimeError(f"POST {path}: {status} {body[:300]!r} ({POST_ATTEMPTS} tries)")
            with self._lock:
                self.posts += 1
            stored: Obj = json.loads(body)
            return stored

        try:
            while not self._errors:
                with self._lock:
                    task = next(source, None)
                if task is None:
                    return
                task(post)
        except BaseException as exc:  # handed to run(), which raises it
            with self._lock:
                self._errors.append(exc)
        finally:
            connection.close()


def fill(
    server: ApiServer, first: Iterable[Task], rest: Iterable[Task], threads: int = POPULATE_THREADS
) -> Obj:
    """Run the `first` tasks (namespaces), then the `rest`; how fast it went."""
    populator = Populator(server, threads)
    start = time.perf_counter()
    populator.run(first)
    populator.run(rest)
    seconds = time.perf_counter() - start
    return {
        "posts": populator.posts,
        "threads": populator.threads,
        "seconds": round(seconds, 1),
        "posts_per_s": round(populator.posts / seconds) if seconds else None,
        "retries": populator.retries,
    }


# ---------------------------------------------------------------------------------------------
# measuring


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return ""


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[int, float, float, str, str]:
    """(exit code, wall s, peak RSS MiB, stdout, stderr) of one child (measure_child)."""
    got = measure_child(cmd, env)
    return got["rc"], got["wall_s"], got["peak_rss_mib"], got["stdout"], got["stderr"]


def measure_child(cmd: list[str], env: dict[str, str]) -> Obj:
    """One child, measured by a fresh helper process (see MEASURE_HELPER): its exit code
    (`rc`), `wall_s`, `peak_rss_mib`, `cpu_s` (user + system: what the neighbours on a shared
    machine disturb less than the wall time), `stdout`, `stderr`."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile(suffix=".json") as meta,
    ):
        helper = [sys.executable, "-I", "-S", "-c", MEASURE_HELPER, meta.name, *cmd]
        subprocess.run(helper, stdout=out, stderr=err, env=env, check=False)
        measured = json.loads(Path(meta.name).read_text() or "{}")
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return {
        "rc": int(measured.get("rc", -1)),
        "wall_s": float(measured.get("wall", 0.0)),
        "peak_rss_mib": measured.get("maxrss_kib", 0) / 1024,
        "cpu_s": float(measured.get("cpu_s", 0.0)),
        "stdout": stdout,
        "stderr": stderr,
    }


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GCJOB_") and k != "KUBECONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def compile_gcjob() -> None:
    """Byte-compile gcjob as its image does (Dockerfile: compileall), so a measured run loads
    .pyc files and does not compile its sources on every start. Under
    PYTHONDONTWRITEBYTECODE (set here and in the image) an editable checkout has none: py-spy
    saw 1.7 s of a 7.5 s hub dry run compiling gcjob's sources (10k, load average 18). The
    floors import only installed packages, which pip compiled."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gcjob")], check=True)


def gcjob_bin() -> str:
    for candidate in (ROOT / ".venv/bin/gcjob", Path(sys.executable).parent / "gcjob"):
        if candidate.exists():
            return str(candidate)
    raise SystemExit("gcjob is not installed: activate the venv (pip install -e .)")


def read_lists(
    kubeconfig: str, lists: Sequence[tuple[str, str | None]], *, from_cache: bool
) -> dict[str, int]:
    """Metadata-only lists with the official client, one request at a time: paginated
    (limit=PAGE_SIZE) from etcd, or from the watch cache (resourceVersion=0, which a 1.25
    server answers whole). Each answer is read whole, parsed, counted and dropped."""
    from kubernetes import config as kube_config

    api = kube_config.new_client_from_config(config_file=kubeconfig)
    requests = items = received = 0
    for path, selector in lists:
        token = None
        while True:
            query: list[tuple[str, Any]] = []
            if from_cache:
                query += [("resourceVersion", "0"), ("resourceVersionMatch", "NotOlderThan")]
            else:
                query.append(("limit", PAGE_SIZE))
            if selector:
                query.append(("labelSelector", selector))
            if token:
                query.append(("continue", token))
            method, url, headers, body, post = api.param_serialize(
                method="GET",
                resource_path=path,
                query_params=query,
                header_params={"Accept": META_LIST_ACCEPT},
                auth_settings=["BearerToken"],
            )
            resp = api.call_api(method, url, header_params=headers, body=body, post_params=post)
            data = resp.read()
            resp.response.release_conn()
            page = json.loads(data)
            requests += 1
            received += len(data)
            items += len(page["items"] or [])  # a real server answers an empty list with null
            token = page["metadata"].get("continue")
            del page, data
            if not token:
                break
    return {"requests": requests, "items": items, "bytes": received}


def etcd_db_mib(server: ApiServer) -> float | None:
    db = server.workdir / "etcd" / "member" / "snap" / "db"
    return round(db.stat().st_size / 2**20, 1) if db.exists() else None


def machine() -> Obj:
    def sh(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return ""

    return {
        "nproc": sh(["nproc"]),
        "free_h": sh(["free", "-h"]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
        if Path("/proc/cpuinfo").exists()
        else "",
    }


# ---------------------------------------------------------------------------------------------
# the floor of an upstream phase: the same requests, replayed


def request_log(requests: Iterable[Any]) -> list[Obj]:
    """What a FaultProxy's request log (RecordedRequest) holds of each request, enough to send
    it again: method, the path with its query, the Accept header. In the order received."""
    from urllib.parse import urlencode

    out = []
    for rec in sorted(requests, key=lambda r: r.received):
        query = urlencode([(k, v) for k, vs in rec.query.items() for v in vs])
        out.append(
            {
                "method": rec.method,
                "url": rec.path + (f"?{query}" if query else ""),
                "accept": rec.accept or "application/json",
            }
        )
    return out


def request_kind(rec: Any) -> str:
    """What an upstream request was, for the bytes by kind: `discovery` (`/api`, `/apis`),
    `project-api` (Milo's Project API itself), `list` (a collection), `get` (one object)."""
    path = rec.path.rstrip("/")
    if path.endswith(("/apis", "/api")) or path in ("/apis", "/api"):
        return "discovery"
    if "/projects" in path and "/control-plane" not in path:
        return "project-api"
    return "list" if "limit" in rec.query else "get"


def received(requests: Iterable[Any]) -> Obj:
    """The bytes a FaultProxy sent back (response bodies, as the client asked: uncompressed
    JSON), by request kind: {kind: {"requests", "bytes", "not_modified"}}, and the total."""
    kinds: dict[str, Obj] = {}
    total = 0
    for rec in requests:
        size = len(rec.response_body)
        row = kinds.setdefault(request_kind(rec), {"requests": 0, "bytes": 0, "not_modified": 0})
        row["requests"] += 1
        row["bytes"] += size
        row["not_modified"] += rec.status == 304
        total += size
    return {"bytes": total, "by_kind": dict(sorted(kinds.items()))}


def byte_floor(requests: Iterable[Any]) -> int:
    """The fewest bytes the requests of a floor replay need (its proxy log): each discovery
    document once per distinct body (surface), a `304 Not Modified` (no body) for the
    others; every other answer as it was."""
    seen: set[bytes] = set()
    total = 0
    for rec in requests:
        body = rec.response_body
        if request_kind(rec) == "discovery" and rec.status == 200:
            if body in seen:
                continue
            seen.add(body)
        total += len(body)
    return total


def span(requests: Sequence[Any]) -> float | None:
    """From the first request a FaultProxy received to the last answer it sent (its
    RecordedRequest log): the upstream phase of a run, start-up and hub reads left out."""
    answered = [r.answered for r in requests if r.answered is not None]
    if not requests or not answered:
        return None
    return float(max(answered) - min(r.received for r in requests))


def replay(
    url: str, ca_file: str, requests: Sequence[Obj], in_flight: int, token: str = ADMIN_TOKEN
) -> Obj:
    """Send `requests` (request_log) to `url` with `in_flight` threads, each with one
    keep-alive HTTPS connection, each answer read whole and parsed as JSON: the floor of
    what any client can do with those requests. {"requests", "seconds", "bytes", "statuses"}."""
    from urllib.parse import urlsplit

    split = urlsplit(url)
    context = ssl.create_default_context(cafile=ca_file)
    lock = threading.Lock()
    source = iter(requests)
    statuses: dict[int, int] = {}
    received = [0]
    errors: list[BaseException] = []

    def work() -> None:
        connection = http.client.HTTPSConnection(split.hostname or "", split.port, context=context)
        try:
            while True:
                with lock:
                    request = next(source, None)
                if request is None:
                    return
                headers = {"Authorization": f"Bearer {token}", "Accept": request["accept"]}
                connection.request(request["method"], request["url"], None, headers)
                response = connection.getresponse()
                body = response.read()
                if body[:1] == b"{":
                    json.loads(body)
                with lock:
                    statuses[response.status] = statuses.get(response.status, 0) + 1
                    received[0] += len(body)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            connection.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=work, daemon=True) for _ in range(in_flight)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"replay failed: {errors[0]!r}") from errors[0]
    return {
        "requests": sum(statuses.values()),
        "seconds": seconds,
        "bytes": received[0],
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
    }


def median_spread(values: Sequence[float]) -> Obj:
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "median": round(median, 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
        "n": len(ordered),
    }


def hold(command: Sequence[str]) -> None:
    """Keep the filled servers up for runs by hand (`command`: the sweep the benchmark
    measures), until interrupted."""
    print(f"holding; the sweep measured:\n{shlex.join(command)}", flush=True)
    # Started in the background, a process ignores SIGINT: SIGTERM releases it too.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: signal.default_int_handler(signal.SIGINT, None))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("released", flush=True)
