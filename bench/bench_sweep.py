"""Benchmark: the real gcjob CLI sweeping a large loopback Karmada hub.

For each size N it starts ``tests.fakekube.FakeKube``, fills it directly (``kube.create``, no
HTTP) with a realistic hub, and measures, each in a fresh subprocess:

- ``gcjob sweep --sweep companions --sweep bindings --no-lock`` as a dry run (default brakes),
  as a dry run with the brakes lifted as for the delete run, then with ``--delete`` (wall time,
  peak RSS, API requests, outcomes, response bytes the server sent, server handler time);
- a plain paginated metadata-only list of the same four resources through the official
  kubernetes client (the floor set by the loopback server and the client);
- the pure decision function ``decide_companion`` over N records (µs per decision).

It asserts nothing: it prints a table and writes JSON.

    python bench/bench_sweep.py [--sizes 10000,50000,100000] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import base64
import gc
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gcjob.domain import COMPANION_LABEL, POLICY_KEY, REFERRERS_ANNOTATION  # noqa: E402
from tests.e2e.objects import workload  # noqa: E402

Obj = dict[str, Any]

PAGE_SIZE = 500
NAMESPACE_SIZE = 50  # companions per hub namespace: N/50 namespaces
ORPHAN_EVERY = 100  # one workload in 100 is gone: ~1% of companions are orphans
ORPHAN_CREATED = "2026-01-01T00:00:00Z"
LIVE_CREATED = "2026-03-01T00:00:00Z"
HUB_CRDS = (  # as tests/e2e/conftest.py HUB_CRDS
    "karmada-work.karmada.io_resourcebindings.yaml",
    "datum-compute.datumapis.com_workloaddeployments.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
)
META_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
BASELINE_LISTS = (  # what gcjob lists for companions + bindings
    ("/api/v1/configmaps", f"{COMPANION_LABEL}=true"),
    ("/api/v1/secrets", f"{COMPANION_LABEL}=true"),
    ("/apis/compute.datumapis.com/v1alpha/workloaddeployments", None),
    ("/apis/work.karmada.io/v1alpha2/resourcebindings", None),
)


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


def _companion(kind: str, ns: str, name: str, referrers: list[str], created: str, data: Obj) -> Obj:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
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


def _binding(companion: Obj, created: str) -> Obj:
    meta = companion["metadata"]
    kind = companion["kind"]
    ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": f"{name}-{kind.lower()}",
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
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
                "resourceVersion": "1",
            },
            "clusters": [{"name": "cell-dfw-1"}],
            "placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"city": "dfw"}}}},
            "schedulerName": "default-scheduler",
        },
    }


def _workload(ns: str, name: str) -> Obj:
    obj = workload(
        ns, name, labels={"compute.datumapis.com/workload-name": name.removesuffix("-dfw")}
    )
    obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=LIVE_CREATED)
    return obj


def populate(kube: Any, n: int, seed: int = 1) -> dict[str, int]:
    """N companions (half ConfigMaps, half Secrets) referenced by N/2 workloads, one binding per
    companion, N/2 WorkloadDeployments, N unlabelled ConfigMaps, over N/50 namespaces."""
    rng = random.Random(seed)
    blobs = Blobs(rng)
    namespaces = [f"ns-{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in range(n // 50)]
    counts: Counter[str] = Counter()
    for ns in namespaces:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        counts["Namespace"] += 1
    pairs = n // 2
    per_ns = NAMESPACE_SIZE // 2  # workload pairs per namespace
    for j in range(pairs):
        ns = namespaces[(j // per_ns) % len(namespaces)]
        wd = f"web-{j}-dfw"
        orphan = j % ORPHAN_EVERY == ORPHAN_EVERY // 2
        referrers = [f"default/{wd}"]
        if j % 10 == 3 and not orphan:  # some companions are shared by two workloads
            referrers.append(f"default/web-{j - 1}-dfw")
        created = ORPHAN_CREATED if orphan else LIVE_CREATED
        cm = _companion(
            "ConfigMap", ns, f"app-config-{j}", referrers, created, blobs.config[j % 32]
        )
        secret = _companion("Secret", ns, f"db-creds-{j}", referrers, created, blobs.secret[j % 32])
        for obj in (cm, secret):
            kube.create(obj)
            kube.create(_binding(obj, created))
            counts[obj["kind"]] += 1
            counts["ResourceBinding"] += 1
            counts["orphans"] += orphan
        # the orphans' workload is gone; an unrelated one keeps the WD count at N/2
        kube.create(_workload(ns, f"batch-{j}-dfw" if orphan else wd))
        counts["WorkloadDeployment"] += 1
    for k in range(n):  # never to be read by gcjob
        ns = namespaces[k % len(namespaces)]
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"settings-{k}",
                    "namespace": ns,
                    "labels": {"app": f"svc-{k % 17}"},
                },
                "data": blobs.plain[k % 32],
            }
        )
        counts["unlabelled ConfigMap"] += 1
    return dict(counts)


# ---------------------------------------------------------------------------------------------
# the server's side of the measurements


@dataclass
class ServerStats:
    requests: int = 0
    body_bytes: int = 0
    handle_s: float = 0.0
    by_verb: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        with self.lock:
            self.requests, self.body_bytes, self.handle_s = 0, 0, 0.0
            self.by_verb = Counter()

    def snapshot(self) -> Obj:
        with self.lock:
            return {
                "requests": self.requests,
                "response_body_bytes": self.body_bytes,
                "handler_s": round(self.handle_s, 3),
                "by_verb": dict(self.by_verb),
            }


def instrument(kube: Any) -> ServerStats | None:
    """Replace the request log (a list that grows forever) with counters, and time the handler.

    Relies on FakeKube internals (`_record`, `_api.handle`); if they are gone the log is
    cleared after each run instead and the server-side columns are left out.
    """
    api = getattr(kube, "_api", None)
    if not hasattr(kube, "_record") or api is None or not hasattr(api, "handle"):
        return None
    stats = ServerStats()

    def record(rec: Any) -> None:
        verb = rec.method
        if verb == "GET":
            verb = "LIST" if "limit" in rec.query else "GET"
        with stats.lock:
            stats.requests += 1
            stats.by_verb[verb] += 1

    handle = api.handle

    def timed_handle(rec: Any) -> Any:
        start = time.perf_counter()
        resp = handle(rec)
        elapsed = time.perf_counter() - start
        with stats.lock:
            stats.handle_s += elapsed
            stats.body_bytes += len(resp.body)
        return resp

    kube._record = record
    api.handle = timed_handle
    return stats


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
    """mode: "dry-run" (default brakes), "dry-run-nobrake" (the brakes of "delete" lifted, so
    the dry run does every per-orphan read a delete run does), "delete"."""
    cmd = [gcjob_bin(), "sweep", "--hub-kubeconfig", kubeconfig]
    cmd += ["--sweep", "companions", "--sweep", "bindings", "--no-lock"]
    if mode == "delete":
        cmd += ["--delete"]
    if mode in ("delete", "dry-run-nobrake"):
        cmd += ["--max-deletions", "1000000", "--max-delete-percent", "100"]
        cmd += ["--delete-qps", "0"]
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
    }


def baseline_list_main(kubeconfig: str) -> None:
    """Child: a plain paginated metadata-only list of what gcjob lists, via the kubernetes
    client; each page is parsed and dropped. Prints {"pages": .., "items": ..}."""
    from kubernetes import config as kube_config

    api = kube_config.new_client_from_config(config_file=kubeconfig)
    pages = items = 0
    for path, selector in BASELINE_LISTS:
        token = None
        while True:
            query: list[tuple[str, Any]] = [("limit", PAGE_SIZE)]
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
            page = json.loads(resp.read())
            resp.response.release_conn()
            pages += 1
            items += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
    print(json.dumps({"pages": pages, "items": items}))


def run_baseline(kubeconfig: str) -> Obj:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--baseline-list", kubeconfig]
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
    }


def decide_main(n: int) -> None:
    """Child: decide_companion over N records (1% orphans), best of 3. Prints JSON."""
    from datetime import UTC, datetime, timedelta

    from gcjob.decide.companions import decide_companion
    from gcjob.model import Companion, ObjectRef

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


def start_hub() -> Any:
    from tests.fakekube import FakeKube
    from tests.fakekube.resources import crds_dir

    return FakeKube(crd_paths=[crds_dir() / name for name in HUB_CRDS]).start()


def fresh_hub(n: int) -> tuple[Any, ServerStats | None, dict[str, int], float]:
    kube = start_hub()
    start = time.perf_counter()
    gc.disable()  # the store holds millions of small dicts: no cyclic GC while building it
    try:
        counts = populate(kube, n)
    finally:
        gc.enable()
    gc.collect()
    gc.freeze()  # keep the store out of later collections: the server answers faster
    return kube, instrument(kube), counts, time.perf_counter() - start


def stop_hub(kube: Any) -> None:
    kube.stop()
    gc.unfreeze()
    gc.collect()


def measure(kube: Any, stats: ServerStats | None, fn: Any, *args: Any) -> Obj:
    if stats is not None:
        stats.reset()
    result: Obj = fn(*args)
    if stats is not None:
        server = stats.snapshot()
        result["server"] = server
        result["server_handler_share"] = (
            round(server["handler_s"] / result["wall_s"], 3) if result.get("wall_s") else None
        )
    else:
        kube.clear_requests()
    return result


def bench_size(n: int, workdir: Path) -> Obj:
    out: Obj = {"size": n, "runs": []}
    print(f"N={n}: populating ...", flush=True)
    kube, stats, counts, populate_s = fresh_hub(n)
    out["objects"] = counts
    out["populate_s"] = round(populate_s, 1)
    kubeconfig = kube.write_kubeconfig(workdir / f"hub-{n}.yaml")
    decided = counts.get("ConfigMap", 0) + counts.get("Secret", 0) + counts["ResourceBinding"]
    print(f"N={n}: {sum(counts.values()) - counts['orphans']} objects in {populate_s:.1f}s")
    populated_rv = kube.store.resource_version
    out["repopulated_for_delete"] = False
    for step in ("plain-list", "dry-run", "dry-run-nobrake", "delete"):
        if step == "plain-list":
            result = measure(kube, stats, run_baseline, kubeconfig)
        else:
            if step == "delete" and kube.store.resource_version != populated_rv:
                stop_hub(kube)  # something wrote to the hub: delete on a fresh population
                kube, stats, _, _ = fresh_hub(n)
                kubeconfig = kube.write_kubeconfig(workdir / f"hub-{n}.yaml")
                out["repopulated_for_delete"] = True
            result = measure(kube, stats, run_gcjob, kubeconfig, step, decided)
        out["runs"].append(result)
        print(f"  {step:15} {_row(result)}", flush=True)
    stop_hub(kube)
    del kube
    gc.collect()
    out["decide"] = run_decide(n)
    print(f"  decide          {out['decide'].get('us_per_decision')} µs/decision", flush=True)
    return out


def _row(r: Obj) -> str:
    server = r.get("server") or {}
    mib = server.get("response_body_bytes", 0) / 2**20
    return (
        f"exit {r.get('exit_code')}  {r.get('wall_s'):7.2f}s  {r.get('peak_rss_mib'):7.1f} MiB  "
        f"req {r.get('api_requests')}  "
        f"would-delete {r.get('would_delete', '-')}  deleted {r.get('deleted', '-')}  "
        f"sent {mib:.1f} MiB  server-handler {server.get('handler_s', '-')}s"
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
        f"{'N':>7} {'mode':15} {'wall s':>8} {'RSS MiB':>8} {'requests':>8} "
        f"{'decided/s':>10} {'would-del':>9} {'deleted':>7} {'sent MiB':>8} {'srv s':>6}"
    )
    print()
    print(head)
    print("-" * len(head))
    for res in results:
        for r in res["runs"]:
            server = r.get("server") or {}
            print(
                f"{res['size']:>7} {r['mode']:15} {r['wall_s']:>8.2f} {r['peak_rss_mib']:>8.1f} "
                f"{r.get('api_requests') or '-'!s:>8} {r.get('decisions_per_s') or '-'!s:>10} "
                f"{r.get('would_delete') or '-'!s:>9} {r.get('deleted') or '-'!s:>7} "
                f"{server.get('response_body_bytes', 0) / 2**20:>8.1f} "
                f"{server.get('handler_s', 0):>6.2f}"
            )
        d = res.get("decide", {})
        print(
            f"{res['size']:>7} {'decide':15} {d.get('best_s', 0):>8.3f} "
            f"{d.get('peak_rss_mib', 0):>8.1f} {'-':>8} {d.get('decisions_per_s', '-')!s:>10}"
            f"   ({d.get('us_per_decision')} µs/decision)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000,100000")
    parser.add_argument("--out", default=str(ROOT / "bench/results.json"))
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
    with tempfile.TemporaryDirectory(prefix="gcjob-bench-") as tmp:
        for n in sizes:
            results.append(bench_size(n, Path(tmp)))
    print_table(results)
    doc = {
        "machine": machine(),
        "page_size": PAGE_SIZE,
        "total_s": round(time.perf_counter() - started, 1),
        "results": results,
    }
    Path(args.out).write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({doc['total_s']}s)")


if __name__ == "__main__":
    main()
