"""Benchmark: the real gcjob CLI sweeping a large Karmada hub on a real kube-apiserver + etcd.

For each size N it starts a real API server pair (``tests/e2e/envtest.py``, the hub CRDs of
``tests/servers.py``), fills it over HTTPS with a bounded pool of keep-alive connections, and
measures, each in a fresh subprocess against that same server:

- a plain paginated (limit=500) metadata-only list of the collections gcjob lists, through the
  official kubernetes client (the floor this server and a Python client set);
- ``gcjob sweep --sweep companions --sweep bindings --no-lock --min-age 0s`` as a dry run
  (default brakes), as a dry run with the brakes lifted as for the delete run, then with
  ``--delete`` (wall time, peak RSS, API requests and outcomes from gcjob's summary);
- the pure decision function ``decide_companion`` over N records (µs per decision).

It asserts nothing: it prints a table and writes JSON.

    python bench/bench_sweep.py [--sizes 10000,50000,100000] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gcjob.domain import COMPANION_LABEL, POLICY_KEY, REFERRERS_ANNOTATION  # noqa: E402
from tests.e2e.envtest import ADMIN_TOKEN, ApiServer, crds_dir  # noqa: E402
from tests.e2e.objects import workload  # noqa: E402
from tests.servers import HUB_CRDS  # noqa: E402

Obj = dict[str, Any]

PAGE_SIZE = 500
NAMESPACE_SIZE = 50  # companions per hub namespace: N/50 namespaces
ORPHAN_EVERY = 100  # one workload in 100 is gone: ~1% of companions are orphans
POPULATE_THREADS = 8  # keep-alive connections filling the hub
POST_ATTEMPTS = 8  # a loaded 2-core machine makes the server time out now and then (504)
META_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
BASELINE_LISTS = (  # what gcjob lists for companions + bindings
    ("/api/v1/configmaps", f"{COMPANION_LABEL}=true"),
    ("/api/v1/secrets", f"{COMPANION_LABEL}=true"),
    ("/apis/compute.datumapis.com/v1alpha/workloaddeployments", None),
    ("/apis/work.karmada.io/v1alpha2/resourcebindings", None),
)
RB_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
WD_PATH = "/apis/compute.datumapis.com/v1alpha/namespaces/{ns}/workloaddeployments"
CORE_PATH = "/api/v1/namespaces/{ns}/{plural}"


# ---------------------------------------------------------------------------------------------
# the hub


def _blob(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()


class Blobs:
    """A few distinct payloads, reused: realistic sizes without generating MBs of randomness."""

    def __init__(self, rng: random.Random) -> None:
        self.secret = [
            {"username": _blob(rng, 24), "password": _blob(rng, 48), "tls.key": _blob(rng, 3000)}
            for _ in range(32)
        ]
        self.config = [{"app.conf": _blob(rng, 900), "env": _blob(rng, 200)} for _ in range(32)]
        self.plain = [{"data.txt": _blob(rng, 2048)} for _ in range(32)]


def _companion(kind: str, ns: str, name: str, referrers: list[str], data: Obj) -> Obj:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {
                COMPANION_LABEL: "true",
                "app.kubernetes.io/managed-by": "compute-operator",
            },
            "annotations": {REFERRERS_ANNOTATION: json.dumps(sorted(referrers))},
        },
        "data": data,
    }
    if kind == "Secret":
        obj["type"] = "Opaque"
    return obj


def _binding(companion: Obj) -> Obj:
    """The binding of a companion as the server stored it (its uid and resourceVersion)."""
    meta = companion["metadata"]
    kind = companion["kind"]
    ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": f"{name}-{kind.lower()}",
            "namespace": ns,
            "annotations": {
                POLICY_KEY: "city-dfw",
                "propagationpolicy.karmada.io/namespace": ns,
            },
            "labels": {"propagationpolicy.karmada.io/permanent-id": str(uuid.uuid4())},
            "finalizers": ["karmada.io/binding-controller"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": kind,
                    "name": name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": {
            "resource": {
                "apiVersion": "v1",
                "kind": kind,
                "namespace": ns,
                "name": name,
                "uid": uid,
                "resourceVersion": meta["resourceVersion"],
            },
            "clusters": [{"name": "cell-dfw-1"}],
            "placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"city": "dfw"}}}},
            "schedulerName": "default-scheduler",
        },
    }


def _workload(ns: str, name: str) -> Obj:
    return workload(
        ns, name, labels={"compute.datumapis.com/workload-name": name.removesuffix("-dfw")}
    )


Post = Callable[[str, Obj], Obj]
Task = Callable[[Post], None]


def _post_companion(path: str, obj: Obj) -> Task:
    """Create a companion, then its binding naming the uid the server gave it."""

    def task(post: Post) -> None:
        stored = post(path, obj)
        post(RB_PATH.format(ns=obj["metadata"]["namespace"]), _binding(stored))

    return task


def _post(path: str, obj: Obj) -> Task:
    def task(post: Post) -> None:
        post(path, obj)

    return task


def hub_tasks(n: int, seed: int = 1) -> tuple[list[Task], Iterator[Task], Counter[str]]:
    """N companions (half ConfigMaps, half Secrets) referenced by N/2 workloads, one binding per
    companion, N/2 WorkloadDeployments, N unlabelled ConfigMaps, over N/50 namespaces.
    Returns the namespace tasks (to run first), the rest (lazily) and the counts."""
    rng = random.Random(seed)
    blobs = Blobs(rng)
    namespaces = [f"ns-{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in range(n // 50)]
    counts: Counter[str] = Counter(Namespace=len(namespaces))
    first = [
        _post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        )
        for ns in namespaces
    ]
    pairs = n // 2
    per_ns = NAMESPACE_SIZE // 2  # workload pairs per namespace
    for j in range(pairs):
        orphan = j % ORPHAN_EVERY == ORPHAN_EVERY // 2
        counts["ConfigMap"] += 1
        counts["Secret"] += 1
        counts["ResourceBinding"] += 2
        counts["WorkloadDeployment"] += 1
        counts["orphaned companions"] += 2 * orphan
    counts["unlabelled ConfigMap"] += n

    def rest() -> Iterator[Task]:
        for j in range(pairs):
            ns = namespaces[(j // per_ns) % len(namespaces)]
            wd = f"web-{j}-dfw"
            orphan = j % ORPHAN_EVERY == ORPHAN_EVERY // 2
            referrers = [f"default/{wd}"]
            if j % 10 == 3 and not orphan:  # some companions are shared by two workloads
                referrers.append(f"default/web-{j - 1}-dfw")
            cm = _companion("ConfigMap", ns, f"app-config-{j}", referrers, blobs.config[j % 32])
            secret = _companion("Secret", ns, f"db-creds-{j}", referrers, blobs.secret[j % 32])
            yield _post_companion(CORE_PATH.format(ns=ns, plural="configmaps"), cm)
            yield _post_companion(CORE_PATH.format(ns=ns, plural="secrets"), secret)
            # the orphans' workload is gone; an unrelated one keeps the WD count at N/2
            yield _post(WD_PATH.format(ns=ns), _workload(ns, f"batch-{j}-dfw" if orphan else wd))
        for k in range(n):  # never to be read by gcjob
            ns = namespaces[k % len(namespaces)]
            plain = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"settings-{k}",
                    "namespace": ns,
                    "labels": {"app": f"svc-{k % 17}"},
                },
                "data": blobs.plain[k % 32],
            }
            yield _post(CORE_PATH.format(ns=ns, plural="configmaps"), plain)

    return first, rest(), counts


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

    def run(self, tasks: Iterator[Task]) -> None:
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


def populate(server: ApiServer, n: int) -> tuple[dict[str, int], Obj]:
    """Fill the hub; returns the object counts and how fast it went."""
    first, rest, counts = hub_tasks(n)
    populator = Populator(server)
    start = time.perf_counter()
    populator.run(iter(first))
    populator.run(rest)
    elapsed = time.perf_counter() - start
    rate = {
        "posts": populator.posts,
        "threads": populator.threads,
        "seconds": round(elapsed, 1),
        "posts_per_s": round(populator.posts / elapsed),
        "retries": populator.retries,
    }
    return dict(counts), rate


def global_resource_version(server: ApiServer) -> str:
    """etcd's revision as the server reports it on a list: unchanged means nothing was written."""
    page = server.request("GET", "/api/v1/namespaces?limit=1")
    return str(page["metadata"]["resourceVersion"])


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# subprocesses


# Run by a small fresh interpreter between this (large) process and the measured child. Linux
# keeps the peak RSS of a process image across exec, so a child spawned straight from this
# process would report this process's peak; spawned from the helper it starts from the
# helper's ~10 MiB. RUSAGE_CHILDREN of the helper is then the measured child's own peak.
MEASURE_HELPER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.call(sys.argv[2:])
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as f:
    json.dump({"rc": rc, "wall": wall, "maxrss_kib": peak}, f)
"""


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[int, float, float, str, str]:
    """(exit code, wall s, peak RSS MiB, stdout, stderr) of one child, measured by a fresh
    helper process (see MEASURE_HELPER)."""
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
    return (
        int(measured.get("rc", -1)),
        float(measured.get("wall", 0.0)),
        measured.get("maxrss_kib", 0) / 1024,
        stdout,
        stderr,
    )


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GCJOB_") and k != "KUBECONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def gcjob_bin() -> str:
    for candidate in (ROOT / ".venv/bin/gcjob", Path(sys.executable).parent / "gcjob"):
        if candidate.exists():
            return str(candidate)
    raise SystemExit("gcjob is not installed: activate the venv (pip install -e .)")


def run_gcjob(kubeconfig: str, mode: str, decided: int) -> Obj:
    """mode: "dry-run" (defaults: brakes, and a 10m grace, so orphans would be marked),
    "dry-run-nobrake" (the brakes of "delete" lifted and no grace, so the dry run does every
    per-orphan read a delete run does), "delete"."""
    cmd = [gcjob_bin(), "sweep", "--hub-kubeconfig", kubeconfig]
    # the real server stamps creationTimestamp now: orphans are told by their missing
    # WorkloadDeployment, not by age
    cmd += ["--sweep", "companions", "--sweep", "bindings", "--no-lock", "--min-age", "0s"]
    if mode == "delete":
        cmd += ["--delete"]
    if mode in ("delete", "dry-run-nobrake"):
        cmd += ["--max-deletions", "1000000", "--max-delete-percent", "100"]
        # --grace 0s: delete on the first look (the default 10m grace would only mark)
        cmd += ["--delete-qps", "0", "--grace", "0s"]
    load_before = loadavg()
    code, wall, rss, stdout, stderr = run_measured(cmd, clean_env())
    lines = [line for line in stdout.splitlines() if line.strip()]
    summary: Obj = {}
    try:
        summary = json.loads(lines[-1]) if lines else {}
    except ValueError:
        summary = {}
    if summary.get("record") != "summary":
        print(f"  gcjob exit {code}: no summary; stderr tail:\n{stderr[-2000:]}", file=sys.stderr)
        summary = {}
    totals = summary.get("totals", {})
    return {
        "mode": mode,
        "exit_code": code,
        "wall_s": round(wall, 3),
        "peak_rss_mib": round(rss, 1),
        "api_requests": summary.get("api_requests", {}).get("total"),
        "would_delete": totals.get("would-delete"),
        "deleted": totals.get("deleted"),
        "totals": totals,
        "sweeps": summary.get("sweeps"),
        "report_records": len(lines),
        "decided": decided,
        "decisions_per_s": round(decided / wall) if wall else None,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }


def baseline_list_main(kubeconfig: str) -> None:
    """Child: a plain paginated metadata-only list of what gcjob lists, via the kubernetes
    client; each page is parsed and dropped. Prints {"pages": .., "items": .., "bytes": ..}
    (bytes: response bodies as received, decompressed if the server compressed them)."""
    read = read_lists(kubeconfig, BASELINE_LISTS, from_cache=False)
    print(json.dumps({"pages": read["requests"], "items": read["items"], "bytes": read["bytes"]}))


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


def run_baseline(kubeconfig: str) -> Obj:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--baseline-list", kubeconfig]
    load_before = loadavg()
    code, wall, rss, stdout, stderr = run_measured(cmd, clean_env())
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"  baseline list failed ({code}):\n{stderr[-2000:]}", file=sys.stderr)
        result = {}
    return {
        "mode": "plain-list",
        "exit_code": code,
        "wall_s": round(wall, 3),
        "peak_rss_mib": round(rss, 1),
        "api_requests": result.get("pages"),
        "items": result.get("items"),
        "received_mib": round(result["bytes"] / 2**20, 1) if "bytes" in result else None,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }


def decide_main(n: int) -> None:
    """Child: decide_companion over N records (1% orphans), best of 3. Prints JSON."""
    from datetime import UTC, datetime, timedelta

    from gcjob.model import Companion, ObjectRef
    from gcjob.sweeps.companions.judge import decide_companion

    now = datetime(2026, 11, 21, tzinfo=UTC)
    live_created = datetime(2026, 3, 1, tzinfo=UTC)
    orphan_created = datetime(2026, 1, 1, tzinfo=UTC)
    records: list[tuple[Companion, frozenset[str]]] = []
    index: dict[str, frozenset[str]] = {}
    for i in range(n):
        j = i // 2
        ns = f"ns-{j // 25:08d}"
        orphan = j % ORPHAN_EVERY == ORPHAN_EVERY // 2
        keys = [f"default/web-{j}-dfw"]
        if j % 10 == 3 and not orphan:
            keys.append(f"default/web-{j - 1}-dfw")
        if ns not in index:
            base = j - j % 25
            index[ns] = frozenset(
                f"batch-{k}-dfw" if k % ORPHAN_EVERY == ORPHAN_EVERY // 2 else f"web-{k}-dfw"
                for k in range(base, base + 25)
            )
        ref = ObjectRef(
            api_version="v1",
            kind="Secret" if i % 2 else "ConfigMap",
            namespace=ns,
            name=f"{'db-creds' if i % 2 else 'app-config'}-{j}",
            uid=str(uuid.UUID(int=i)),
            resource_version=str(i + 1),
            created=orphan_created if orphan else live_created,
        )
        records.append((Companion(ref, json.dumps(sorted(keys))), index[ns]))
    min_age = timedelta(minutes=5)
    runs = []
    orphans = 0
    for _ in range(3):
        start = time.perf_counter()
        verdicts = [decide_companion(c, live, now, min_age) for c, live in records]
        runs.append(time.perf_counter() - start)
        orphans = sum(v.delete for v in verdicts)
    best = min(runs)
    print(
        json.dumps(
            {
                "mode": "decide",
                "decisions": n,
                "orphans": orphans,
                "best_s": round(best, 4),
                "us_per_decision": round(best / n * 1e6, 3),
                "decisions_per_s": round(n / best),
            }
        )
    )


def run_decide(n: int) -> Obj:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--decide", str(n)]
    code, _wall, rss, stdout, stderr = run_measured(cmd, clean_env())
    try:
        result: Obj = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"  decide failed ({code}):\n{stderr[-2000:]}", file=sys.stderr)
        return {"mode": "decide", "exit_code": code}
    result["peak_rss_mib"] = round(rss, 1)
    return result


# ---------------------------------------------------------------------------------------------
# driver


READ_ONLY_STEPS = ("plain-list", "dry-run", "dry-run-nobrake")


def bench_size(n: int, workdir: Path, rounds: int) -> Obj:
    out: Obj = {"size": n, "runs": []}
    print(f"N={n}: starting a kube-apiserver + etcd and populating ...", flush=True)
    with ApiServer(f"bench-{n}") as server:
        server.install_crds(crds_dir() / crd for crd in HUB_CRDS)
        out["server_version"] = server.request("GET", "/version").get("gitVersion")
        out["loadavg_before_populate"] = loadavg()
        counts, rate = populate(server, n)
        out["loadavg_after_populate"] = loadavg()
        out["objects"] = counts
        out["populate"] = rate
        kubeconfig = str(server.write_kubeconfig(workdir / f"hub-{n}.yaml"))
        decided = counts["ConfigMap"] + counts["Secret"] + counts["ResourceBinding"]
        print(
            f"N={n}: {rate['posts']} objects in {rate['seconds']}s "
            f"({rate['posts_per_s']}/s over {rate['threads']} connections)",
            flush=True,
        )
        populated_rv = global_resource_version(server)
        # the read-only runs in interleaved rounds (the machine is shared: one sample each
        # would say more about the neighbours than about gcjob), then one delete run
        steps = [(r, step) for r in range(1, rounds + 1) for step in READ_ONLY_STEPS]
        for r, step in [*steps, (rounds, "delete")]:
            if step == "delete":
                # the dry runs must not have written: the delete run sees the same hub
                out["unchanged_before_delete"] = global_resource_version(server) == populated_rv
            if step == "plain-list":
                result = run_baseline(kubeconfig)
            else:
                result = run_gcjob(kubeconfig, step, decided)
            result["round"] = r
            out["runs"].append(result)
            print(f"  {r} {step:15} {_row(result)}", flush=True)
        out["etcd_db_mib"] = _etcd_db_mib(server)
    out["decide"] = run_decide(n)
    print(f"  decide          {out['decide'].get('us_per_decision')} µs/decision", flush=True)
    return out


def _etcd_db_mib(server: ApiServer) -> float | None:
    db = server.workdir / "etcd" / "member" / "snap" / "db"
    return round(db.stat().st_size / 2**20, 1) if db.exists() else None


def _row(r: Obj) -> str:
    return (
        f"exit {r.get('exit_code')}  {r.get('wall_s'):7.2f}s  {r.get('peak_rss_mib'):7.1f} MiB  "
        f"req {r.get('api_requests')}  "
        f"would-delete {r.get('would_delete', '-')}  deleted {r.get('deleted', '-')}  "
        f"load {r.get('loadavg_before', '')[:14]} -> {r.get('loadavg_after', '')[:14]}"
    )


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


def print_table(results: list[Obj]) -> None:
    head = (
        f"{'N':>7} # {'mode':15} {'wall s':>8} {'RSS MiB':>8} {'requests':>8} "
        f"{'decided/s':>10} {'would-del':>9} {'deleted':>7} {'x floor':>7}"
    )
    print()
    print(head)
    print("-" * len(head))
    for res in results:
        floors = {r["round"]: r["wall_s"] for r in res["runs"] if r["mode"] == "plain-list"}
        for r in res["runs"]:
            floor = floors.get(r["round"])
            ratio = r["wall_s"] / floor if floor else 0  # against the floor of the same round
            print(
                f"{res['size']:>7} {r['round']} {r['mode']:15} "
                f"{r['wall_s']:>8.2f} {r['peak_rss_mib']:>8.1f} "
                f"{r.get('api_requests') or '-'!s:>8} {r.get('decisions_per_s') or '-'!s:>10} "
                f"{r.get('would_delete') or '-'!s:>9} {r.get('deleted') or '-'!s:>7} "
                f"{ratio:>7.2f}"
            )
        d = res.get("decide", {})
        print(
            f"{res['size']:>7} - {'decide':15} {d.get('best_s', 0):>8.3f} "
            f"{d.get('peak_rss_mib', 0):>8.1f} {'-':>8} {d.get('decisions_per_s', '-')!s:>10}"
            f"   ({d.get('us_per_decision')} µs/decision)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000,100000")
    parser.add_argument("--out", default=str(ROOT / "bench/results.json"))
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the read-only runs")
    parser.add_argument("--baseline-list", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--decide", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_list:
        baseline_list_main(args.baseline_list)
        return
    if args.decide:
        decide_main(args.decide)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results: list[Obj] = []
    started = time.perf_counter()
    doc: Obj = {
        "machine": machine(),
        "page_size": PAGE_SIZE,
        "rounds": args.rounds,
        "results": results,
    }
    with tempfile.TemporaryDirectory(prefix="gcjob-bench-") as tmp:
        for n in sizes:
            results.append(bench_size(n, Path(tmp), args.rounds))
            doc["total_s"] = round(time.perf_counter() - started, 1)
            # written after every size: a long run stopped half-way keeps what it measured
            text = json.dumps(doc, indent=2, default=str) + "\n"
            Path(args.out).write_text(text, encoding="utf-8")
    print_table(results)
    print(f"\nwrote {args.out} ({doc['total_s']}s)")


if __name__ == "__main__":
    main()
