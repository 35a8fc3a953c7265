"""Copies benchmark (issue 22 item 4): the downstream-copies sweep against 1,000 projects.

One real hub (kube-apiserver + etcd from ``testbed/servers.py``, the hub CRDs plus NSO's
Connector and HTTPProxy) and one real upstream standing for Milo (its Project CRD, the same
two networking CRDs, the Gateway API). Each project has one upstream namespace holding an
owner of each of five kinds (Connector, HTTPProxy, Gateway, EndpointSlice, a gateway-sync
ConfigMap); the hub holds, in one ``ns-<uuid>`` namespace per project, each owner's anchor
and its copy. Every 50th project lost its Connector upstream (its copy is ``owner-gone``);
two projects are deleted (gone from the Project API, their control planes answer 404).

Upstream requests go through a FaultProxy serving Milo's control-plane path
(``/apis/resourcemanager.miloapis.com/v1alpha1/projects/<p>/control-plane``, stripped) and
adding 50 ms to every request. At each size, interleaved, ``--repeats`` times:

- ``gcjob sweep --sweep copies`` (dry run) with ``--upstream-server-template`` and the Project
  API derived from it: whole wall, peak RSS, and its upstream phase, from the proxy's log
  (first request received to last answer sent);
- the floor: exactly the upstream requests that run made (the proxy's log), replayed at
  gcjob's default ``--upstream-concurrency`` in flight, each on its own keep-alive connection,
  through the same proxy, in a child process, measured the same way.

    python bench/bench_copies.py                      # 200 then 1,000 projects, 3 repeats
    python bench/bench_copies.py --sizes 50 --repeats 1
    python bench/bench_copies.py --sizes 200 --copies-per-owner 1,10 --no-floor \
        --out bench/results-copies-memory.json         # memory: 1x then 10x the copies
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from harness import (
    ROOT,
    Obj,
    Post,
    Task,
    add_versions_option,
    clean_env,
    compile_gcjob,
    fill,
    gcjob_bin,
    gcjob_commit,
    kube_version,
    kube_versions,
    loadavg,
    machine,
    median_spread,
    post_task,
    replay,
    request_log,
    run_measured,
    server_versions,
    settle,
    span,
)

from gcjob.domain import (
    GATEWAY_SYNC_LABEL,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.settings import Settings
from testbed.faultproxy import Fault, FaultProxy, Target
from testbed.milo import CONTROL_PLANE, HUB_COPY_CRDS, MILO, MILO_CRDS, NET
from testbed.objects import gateway, namespace
from testbed.servers import ADMIN_TOKEN, HUB_CRDS, UPSTREAM_CRDS, running, write_kubeconfig

LATENCY_S = 0.05
IN_FLIGHT = Settings().upstream_concurrency  # gcjob reads at its default: the floor too
OWNER_GONE_EVERY = 50  # every 50th project lost its Connector upstream
DELETED = (7, 131)  # projects deleted (indices below the smallest size); the brake allows 3

# kind -> (group, apiVersion, collection path)
KINDS: dict[str, tuple[str, str, str]] = {
    "Connector": (NET, f"{NET}/v1alpha1", f"/apis/{NET}/v1alpha1/namespaces/{{ns}}/connectors"),
    "HTTPProxy": (NET, f"{NET}/v1alpha", f"/apis/{NET}/v1alpha/namespaces/{{ns}}/httpproxies"),
    "Gateway": (
        "gateway.networking.k8s.io",
        "gateway.networking.k8s.io/v1",
        "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/gateways",
    ),
    "EndpointSlice": (
        "discovery.k8s.io",
        "discovery.k8s.io/v1",
        "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
    ),
    "ConfigMap": ("", "v1", "/api/v1/namespaces/{ns}/configmaps"),
}
CONFIGMAPS = KINDS["ConfigMap"][2]


def project(p: int) -> str:
    return f"proj-{p:04d}"


def upstream_ns(p: int) -> str:
    return f"app-{p:04d}"


def hub_ns(p: int, replica: int = 0) -> str:
    """Project p's hub namespace; with --copies-per-owner K, replicas 1..K-1 are K-1 more
    namespaces, each holding every owner's anchor and copy again."""
    key = f"copies/{p}" if replica == 0 else f"copies/{p}/{replica}"
    return f"ns-{uuid.uuid5(uuid.NAMESPACE_URL, key)}"


def owner_name(kind: str, p: int) -> str:
    return f"{kind.lower()}-{p}"


def body(kind: str, ns: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    if kind == "Gateway":
        obj = gateway(ns, name)
    else:
        obj = {"apiVersion": KINDS[kind][1], "kind": kind, "metadata": {"name": name}}
    obj["metadata"]["namespace"] = ns
    if labels:
        obj["metadata"]["labels"] = dict(labels)
    if kind == "EndpointSlice":
        obj["addressType"] = "IPv4"
        obj["endpoints"] = [{"addresses": ["10.0.0.1"]}]
    if kind == "ConfigMap":
        obj["metadata"].setdefault("labels", {})[GATEWAY_SYNC_LABEL] = "true"
        obj["data"] = {"k": "v"}
    return obj


def gone(p: int, kind: str) -> bool:
    return p in DELETED or (kind == "Connector" and p % OWNER_GONE_EVERY == OWNER_GONE_EVERY // 2)


# ---------------------------------------------------------------------------------------------
# the world


def upstream_world(
    start: int, stop: int, uids: dict[tuple[int, str], str]
) -> tuple[list[Task], Iterator[Task]]:
    """Projects [start, stop): each a Project and a namespace (first), then its owners, each
    owner's uid recorded for its anchor. Deleted projects and gone owners are not made."""
    first: list[Task] = []
    for p in range(start, stop):
        if p in DELETED:
            continue
        project_obj = {
            "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
            "kind": "Project",
            "metadata": {"name": project(p)},
        }
        first += [
            post_task(MILO, project_obj),
            post_task("/api/v1/namespaces", namespace(upstream_ns(p))),
        ]

    def owner_task(p: int, kind: str) -> Task:
        def task(post: Post) -> None:
            ns, name = upstream_ns(p), owner_name(kind, p)
            made = post(KINDS[kind][2].format(ns=ns), body(kind, ns, name))
            uids[(p, kind)] = made["metadata"]["uid"]

        return task

    def rest() -> Iterator[Task]:
        for p in range(start, stop):
            for kind in KINDS:
                if not gone(p, kind):
                    yield owner_task(p, kind)

    return first, rest()


def copy_labels(p: int, kind: str) -> dict[str, str]:
    return {
        UPSTREAM_CLUSTER_LABEL: f"cluster-{project(p)}",
        UPSTREAM_GROUP_LABEL: KINDS[kind][0],
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAMESPACE_LABEL: upstream_ns(p),
        UPSTREAM_NAME_LABEL: owner_name(kind, p),
    }


def hub_world(
    places: list[tuple[int, int]], uids: dict[tuple[int, str], str]
) -> tuple[list[Task], Iterator[Task]]:
    """Per (project, replica) a namespace (first), then per owner its anchor and its copy,
    owned by it."""
    first = [post_task("/api/v1/namespaces", namespace(hub_ns(p, r))) for p, r in places]

    def group_task(p: int, replica: int, kind: str) -> Task:
        def task(post: Post) -> None:
            ns, labels = hub_ns(p, replica), copy_labels(p, kind)
            owner_uid = uids.get((p, kind)) or str(uuid.uuid4())  # a gone owner's uid: any
            anchor = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"anchor-{owner_uid}", "namespace": ns, "labels": labels},
            }
            made = post(CONFIGMAPS.format(ns=ns), anchor)
            copy = body(kind, ns, owner_name(kind, p), labels)
            copy["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": made["metadata"]["name"],
                    "uid": made["metadata"]["uid"],
                }
            ]
            post(KINDS[kind][2].format(ns=ns), copy)

        return task

    def rest() -> Iterator[Task]:
        for p, replica in places:
            for kind in KINDS:
                yield group_task(p, replica, kind)

    return first, rest()


# ---------------------------------------------------------------------------------------------
# runs


def summarise(stdout: str) -> Obj:
    """The run's summary record and its items' (action, reason) counts."""
    out: Obj = {"reasons": {}}
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("record") == "summary":
            out["summary"] = {
                "api_requests": record.get("api_requests"),
                "copies": (record.get("sweeps") or {}).get("copies"),
                "totals": record.get("totals"),
            }
        elif record.get("action") and record.get("reason"):
            key = f"{record['action']} {record['reason']}"
            out["reasons"][key] = out["reasons"].get(key, 0) + 1
    return out


class Bench:
    def __init__(self, hub_kubeconfig: str, up_kubeconfig: str, proxy: FaultProxy, work: Path):
        self.hub_kubeconfig = hub_kubeconfig
        self.up_kubeconfig = up_kubeconfig
        self.proxy = proxy
        self.work = work
        self.template = f"{proxy.url}{MILO}/{{cluster}}/control-plane"

    def sweep(self) -> tuple[Obj, list[Obj]]:
        cmd = [
            gcjob_bin(),
            "sweep",
            "--hub-kubeconfig",
            self.hub_kubeconfig,
            "--upstream-kubeconfig",
            self.up_kubeconfig,
            "--upstream-server-template",
            self.template,
            "--sweep",
            "copies",
            "--no-lock",
            "--min-age",
            "0s",
        ]
        self.proxy.clear_requests()
        load = loadavg()
        code, wall, rss, stdout, stderr = run_measured(cmd, clean_env())
        requests = self.proxy.requests
        up = span(requests)
        result: Obj = {
            "exit_code": code,
            "wall_s": round(wall, 3),
            "upstream_s": None if up is None else round(up, 3),
            "peak_rss_mib": round(rss, 1),
            "upstream_requests": len(requests),
            "upstream_mib": round(sum(len(r.response_body) for r in requests) / 2**20, 2),
            "loadavg_before": load,
            **summarise(stdout),
        }
        if code not in (0,):
            result["stderr_tail"] = stderr[-1500:]
        return result, request_log(requests)

    def floor(self, log: list[Obj]) -> Obj:
        path = self.work / "requests.json"
        path.write_text(json.dumps(log))
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--replay",
            str(path),
            self.proxy.url,
            str(self.proxy.ca_file),
        ]
        self.proxy.clear_requests()
        load = loadavg()
        code, wall, rss, stdout, stderr = run_measured(cmd, clean_env())
        requests = self.proxy.requests
        up = span(requests)
        lines = [line for line in stdout.splitlines() if line.strip()]
        child = json.loads(lines[-1]) if code == 0 and lines else {}
        result = {
            "exit_code": code,
            "wall_s": round(wall, 3),
            "upstream_s": None if up is None else round(up, 3),
            "client_s": round(child.get("seconds", 0.0), 3),
            "peak_rss_mib": round(rss, 1),
            "upstream_requests": len(requests),
            "statuses": child.get("statuses"),
            "loadavg_before": load,
        }
        if code != 0:
            result["stderr_tail"] = stderr[-1500:]
        return result


def by_kind(log: list[Obj]) -> dict[str, int]:
    """The upstream requests by what they asked for (the path's shape, names left out)."""
    counts: dict[str, int] = {}
    for request in log:
        path = request["url"].split("?")[0]
        if path.startswith(MILO):
            parts = path[len(MILO) :].split("/")
            path = "/control-plane/" + "/".join(parts[3:]) if len(parts) > 2 else "project GET"
        shape = "/".join(
            "*" if part.startswith(("proj-", "app-")) or part.split("-")[-1].isdigit() else part
            for part in path.split("/")
        )
        key = f"{request['method']} {shape}{' (list)' if '?' in request['url'] else ''}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def measure(bench: Bench, size: Obj, repeats: int, *, floor: bool) -> None:
    """`repeats` sweeps (each beside its floor, unless not `floor`), into `size`."""
    sweeps: list[Obj] = []
    floors: list[Obj] = []
    for i in range(repeats):
        result, log = bench.sweep()
        sweeps.append(result)
        if i == 0:
            size["upstream_requests_by_shape"] = by_kind(log)
        if not floor:
            print(
                f"  #{i}: sweep exit {result['exit_code']} {result['wall_s']}s "
                f"({result['upstream_requests']} upstream req) {result['peak_rss_mib']} MiB "
                f"load {result['loadavg_before']}",
                flush=True,
            )
            continue
        floor_result = bench.floor(log)
        floors.append(floor_result)
        ratio = (
            result["upstream_s"] / floor_result["upstream_s"]
            if result["upstream_s"] and floor_result["upstream_s"]
            else None
        )
        print(
            f"  #{i}: sweep exit {result['exit_code']} {result['wall_s']}s "
            f"(upstream {result['upstream_s']}s, {result['upstream_requests']} req) "
            f"{result['peak_rss_mib']} MiB | floor {floor_result['upstream_s']}s "
            f"({floor_result['upstream_requests']} req, client {floor_result['client_s']}s) "
            f"| ratio {ratio and round(ratio, 3)}",
            flush=True,
        )
    size["sweeps"] = sweeps
    size["floors"] = floors
    ratios = [
        s["upstream_s"] / f["upstream_s"]
        for s, f in zip(sweeps, floors, strict=False)  # no floors: none
        if s["upstream_s"] and f["upstream_s"]
    ]
    size["summary"] = {
        "sweep_wall_s": median_spread([s["wall_s"] for s in sweeps]),
        "sweep_upstream_s": median_spread([s["upstream_s"] or 0.0 for s in sweeps]),
        "floor_upstream_s": median_spread([f["upstream_s"] or 0.0 for f in floors])
        if floors
        else None,
        "ratio": median_spread(ratios) if ratios else None,
        "sweep_peak_rss_mib": median_spread([s["peak_rss_mib"] for s in sweeps]),
    }
    print(f"  {json.dumps(size['summary'])}", flush=True)


def replay_main(path: str, url: str, ca_file: str) -> None:
    log = json.loads(Path(path).read_text())
    print(json.dumps(replay(url, ca_file, log, IN_FLIGHT)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,1000", help="projects, ascending")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--copies-per-owner",
        default="1",
        help="ascending, e.g. 1,10: each owner's anchor and copy in this many hub namespaces "
        "(the owners and the upstream reads stay the same); each is measured in turn",
    )
    parser.add_argument(
        "--no-floor", action="store_true", help="only the sweeps (memory), no replayed floor"
    )
    parser.add_argument("--threads", type=int, default=8, help="connections filling a server")
    parser.add_argument("--out", default=str(ROOT / "bench/results-copies.json"))
    add_versions_option(parser)
    parser.add_argument("--replay", nargs=3, metavar=("LOG", "URL", "CA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay:
        replay_main(*args.replay)
        return
    versions = kube_versions(args.kube_versions)
    compile_gcjob()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    per_owner = [int(k) for k in args.copies_per_owner.split(",") if k]
    started = time.perf_counter()
    doc: Obj = {
        "machine": machine(),
        "gcjob": gcjob_commit(),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kube_versions": versions,
        "latency_s": LATENCY_S,
        "in_flight": IN_FLIGHT,
        "kinds": list(KINDS),
        "deleted_projects": [project(p) for p in DELETED],
        "owner_gone_every": OWNER_GONE_EVERY,
        "repeats": args.repeats,
        "copies_per_owner": per_owner,
        "servers": [],
    }

    def save() -> None:
        """After every size: a long run stopped half-way keeps what it measured."""
        doc["total_s"] = round(time.perf_counter() - started, 1)
        Path(args.out).write_text(json.dumps(doc, indent=2, default=str) + "\n")

    for version in versions:
        print(f"Kubernetes {version}:", flush=True)
        run: Obj = {"loadavg_before": loadavg(), "sizes": []}
        doc["servers"].append(run)
        with kube_version(version):
            measure_version(args, sizes, per_owner, run, save)
        run["loadavg_after"] = loadavg()
        save()
    print(f"\nwrote {args.out} ({doc['total_s']}s)")


def measure_version(
    args: argparse.Namespace,
    sizes: list[int],
    per_owner: list[int],
    doc: Obj,
    save: Callable[[], None],
) -> None:
    """Every size on one pair of servers (kube_version() picks them): the hub, with the
    kube-controller-manager a Karmada hub runs beside it, and the upstream standing for Milo,
    a bare API server. Into `doc`."""
    uids: dict[tuple[int, str], str] = {}
    with (
        tempfile.TemporaryDirectory(prefix="gcjob-copies-") as tmp,
        running("copies-hub", (*HUB_CRDS, *HUB_COPY_CRDS), controllers=True) as hub,
        running("copies-upstream", (*UPSTREAM_CRDS, *MILO_CRDS)) as up,
    ):
        work = Path(tmp)
        doc.update(server_versions(hub, up))
        print(
            f"  hub {doc['server_version']} (etcd {doc['etcd_version']}, "
            f"{doc['controller_manager_version'] or 'no kube-controller-manager'}), "
            f"upstream {doc['upstream_server_version']}",
            flush=True,
        )
        proxy = FaultProxy(Target(up.url, up.ssl_context()), strip_prefix=CONTROL_PLANE).start(work)
        for p in DELETED:  # Milo's answer for a deleted project's control plane, 50 ms away too
            proxy.add_fault(
                Fault(
                    path=f"^{MILO}/{project(p)}/control-plane",
                    status=404,
                    body="404 page not found\n",
                    delay=LATENCY_S,
                    times=None,
                )
            )
        proxy.add_fault(Fault(delay=LATENCY_S, times=None))  # every other request
        up_kubeconfig = str(
            write_kubeconfig(
                work / "milo.yaml",
                context="milo",
                server=proxy.url,
                ca_file=proxy.ca_file,
                user={"token": ADMIN_TOKEN},
            )
        )
        bench = Bench(str(hub.write_kubeconfig(work / "hub.yaml")), up_kubeconfig, proxy, work)
        filled = 0
        placed: set[tuple[int, int]] = set()
        for n in sizes:
            print(f"N={n}: filling projects {filled}..{n} upstream ...", flush=True)
            fill_upstream = fill(up, *upstream_world(filled, n, uids), args.threads)
            filled = n
            for k in per_owner:
                places = [(p, r) for p in range(n) for r in range(k) if (p, r) not in placed]
                placed.update(places)
                size: Obj = {"projects": n, "copies_per_owner": k, "fill_upstream": fill_upstream}
                doc["sizes"].append(size)
                size["fill_hub"] = fill(hub, *hub_world(places, uids), args.threads)
                size["settle_s"] = settle(hub)  # the garbage collector, after the fill
                size["hub_objects"] = len(placed) * len(KINDS) * 2
                print(f"  {k} per owner: hub {size['fill_hub']}", flush=True)
                measure(bench, size, args.repeats, floor=not args.no_floor)
                save()
        proxy.stop()


if __name__ == "__main__":
    main()
