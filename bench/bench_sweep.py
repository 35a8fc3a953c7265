"""Benchmark: the real gcjob CLI sweeping a large Karmada hub on a real kube-apiserver + etcd.

For each size N it starts a real API server pair (``testbed/servers.py``, with its
``HUB_CRDS``), fills it over HTTPS with a bounded pool of keep-alive connections, and
measures, each in a fresh subprocess against that same server:

- a plain paginated (limit=500) metadata-only list of the collections gcjob lists, through the
  official kubernetes client (the floor this server and a Python client set);
- ``gcjob sweep --sweep companions --sweep bindings --no-lock --min-age 0s`` as a dry run
  (default brakes), as a dry run with the brakes lifted as for the delete run, then with
  ``--delete`` (wall time, peak RSS, API requests and outcomes from gcjob's summary);
- the pure decision function ``companion_verdict`` over N records (µs per decision).

It asserts nothing: it prints a table and writes JSON.

    python bench/bench_sweep.py [--sizes 10000,50000,100000] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from harness import (
    PAGE_SIZE,
    ROOT,
    Blobs,
    Obj,
    Post,
    Task,
    clean_env,
    companion,
    compile_gcjob,
    etcd_db_mib,
    fill,
    gcjob_bin,
    gcjob_commit,
    kube_version,
    kube_versions,
    loadavg,
    machine,
    post_task,
    read_lists,
    run_measured,
    server_versions,
)

from gcjob.domain import COMPANION_LABEL
from testbed import objects
from testbed.servers import HUB_CRDS, ApiServer, running

NAMESPACE_SIZE = 50  # companions per hub namespace: N/50 namespaces
ORPHAN_EVERY = 100  # one workload in 100 is gone: ~1% of companions are orphans
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


def companion_task(path: str, obj: Obj) -> Task:
    """Create a companion, then its binding naming the uid the server gave it."""

    def task(post: Post) -> None:
        stored = post(path, obj)
        post(RB_PATH.format(ns=obj["metadata"]["namespace"]), objects.binding_for(stored))

    return task


def workload(ns: str, name: str) -> Obj:
    labels = {"compute.datumapis.com/workload-name": name.removesuffix("-dfw")}
    return objects.workload(ns, name, labels=labels)


def hub_tasks(n: int, seed: int = 1) -> tuple[list[Task], Iterator[Task], Counter[str]]:
    """N companions (half ConfigMaps, half Secrets) referenced by N/2 workloads, one binding per
    companion, N/2 WorkloadDeployments, N unlabelled ConfigMaps, over N/50 namespaces.
    Returns the namespace tasks (to run first), the rest (lazily) and the counts."""
    rng = random.Random(seed)
    blobs = Blobs(rng)
    namespaces = [f"ns-{uuid.UUID(int=rng.getrandbits(128), version=4)}" for _ in range(n // 50)]
    counts: Counter[str] = Counter(Namespace=len(namespaces))
    first = [post_task("/api/v1/namespaces", objects.namespace(ns)) for ns in namespaces]
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
            cm = companion("ConfigMap", ns, f"app-config-{j}", referrers, blobs.config[j % 32])
            secret = companion("Secret", ns, f"db-creds-{j}", referrers, blobs.secret[j % 32])
            yield companion_task(CORE_PATH.format(ns=ns, plural="configmaps"), cm)
            yield companion_task(CORE_PATH.format(ns=ns, plural="secrets"), secret)
            # the orphans' workload is gone; an unrelated one keeps the WD count at N/2
            yield post_task(WD_PATH.format(ns=ns), workload(ns, f"batch-{j}-dfw" if orphan else wd))
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
            yield post_task(CORE_PATH.format(ns=ns, plural="configmaps"), plain)

    return first, rest(), counts


def populate(server: ApiServer, n: int) -> tuple[dict[str, int], Obj]:
    """Fill the hub; returns the object counts and how fast it went."""
    first, rest, counts = hub_tasks(n)
    return dict(counts), fill(server, iter(first), rest)


def global_resource_version(server: ApiServer) -> str:
    """etcd's revision as the server reports it on a list: unchanged means nothing was written."""
    page = server.request("GET", "/api/v1/namespaces?limit=1")
    return str(page["metadata"]["resourceVersion"])


# ---------------------------------------------------------------------------------------------
# subprocesses


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
    """Child: companion_verdict over N records (1% orphans), best of 3. Prints JSON."""
    from datetime import UTC, datetime, timedelta

    from gcjob.model import Companion, ObjectRef
    from gcjob.sweeps.companions.judge import companion_verdict

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
        verdicts = [companion_verdict(c, live, now, min_age) for c, live in records]
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
    with running(f"bench-{n}", HUB_CRDS, controllers=True) as server:
        out.update(server_versions(server))
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
        out["etcd_db_mib"] = etcd_db_mib(server)
    out["decide"] = run_decide(n)
    print(f"  decide          {out['decide'].get('us_per_decision')} µs/decision", flush=True)
    return out


def _row(r: Obj) -> str:
    return (
        f"exit {r.get('exit_code')}  {r.get('wall_s'):7.2f}s  {r.get('peak_rss_mib'):7.1f} MiB  "
        f"req {r.get('api_requests')}  "
        f"would-delete {r.get('would_delete', '-')}  deleted {r.get('deleted', '-')}  "
        f"load {r.get('loadavg_before', '')[:14]} -> {r.get('loadavg_after', '')[:14]}"
    )


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
    compile_gcjob()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results: list[Obj] = []
    started = time.perf_counter()
    doc: Obj = {
        "machine": machine(),
        "gcjob": gcjob_commit(),
        "page_size": PAGE_SIZE,
        "rounds": args.rounds,
        "results": results,
    }
    with (
        kube_version(kube_versions(None)[0]),
        tempfile.TemporaryDirectory(prefix="gcjob-bench-") as tmp,
    ):
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
