"""Projects benchmark (issue 33): the routes and copies sweeps together against 1,000 and
10,000 projects 50 ms away, beside the floor of the fewest requests a project needs.

One real hub and one real upstream standing for Milo (its Project CRD, the networking CRDs,
the Gateway API), behind a FaultProxy that strips Milo's control-plane path and adds 50 ms to
every request: every project's control plane is that one server, under its own URL. Upstream,
one namespace `app` holds a Gateway `gw`, a Connector `conn` and the HTTPRoute `route` on
`gw`: what every project's hub objects ask about (three kinds in one namespace, the usual
project). Each project is a Project in Milo's API and, on the hub, a namespace holding a copy
of `gw` and of `conn` (each owned by its anchor ConfigMap) and a copy of `route`: the copies
sweep asks about the Gateway and the Connector, the routes sweep about the Gateway and the
HTTPRoute. Every 50th project's Connector copy names a Connector that is gone
(`owner-gone`); two projects are deleted (not in the Project API, their control planes answer
404). The hub's objects are written straight into its etcd (bench_scale.EtcdFill).

At each size, `--repeats` times, interleaved:

- `gcjob sweep --sweep routes --sweep copies` (dry run, `--min-age 0s`): wall time, peak RSS,
  CPU (user and system), its upstream requests and their span at the proxy;
- the floor: the fewest upstream requests these projects need, written from the world, not
  from gcjob's log (per live project: `/apis` aggregated, one metadata-only list of each of
  the three kinds in `app`; per owner gone the GET that proves it and its namespace's; per
  deleted project its `/apis` 404; the Project API's list and a GET per project not listed),
  replayed at the same concurrency through the same proxy by a child process.

Bytes received, beside requests: the upstreams' response bodies as the proxy sent them (by
kind: discovery, lists, gets, the Project API) and the hub's from its own response-size
metrics, never gcjob's own count. Two floors: the request floor above (one whole discovery
document a project: its span is the time floor), and the byte floor, its bytes with one
discovery document per distinct surface and a `304 Not Modified` (no body) for the rest.

The CPU of the measured child, of the bench process (the proxy runs in it) and of each
server (kube-apiserver and etcd, from /proc) is recorded for each run: on 2 shared cores they
compete.

    python bench/bench_projects.py                         # 1,000, 3,000, 10,000 projects
    python bench/bench_projects.py --sizes 50 --repeats 1  # smoke test, ~1 min
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from bench_scale import EtcdFill, metrics_delta, response_metrics
from harness import (
    ROOT,
    Obj,
    byte_floor,
    clean_env,
    compile_gcjob,
    fill,
    gcjob_bin,
    hold,
    loadavg,
    machine,
    median_spread,
    post_task,
    received,
    replay,
    run_measured,
    span,
)

from gcjob.domain import (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.kube.requests import AGGREGATED_DISCOVERY, METADATA, METADATA_LIST
from gcjob.settings import Settings
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest, Target
from testbed.milo import CONTROL_PLANE, HUB_COPY_CRDS, MILO, MILO_CRDS, NET
from testbed.objects import gateway, namespace, route, upstream_route
from testbed.servers import (
    ADMIN_TOKEN,
    HUB_CRDS,
    UPSTREAM_CRDS,
    ApiServer,
    running,
    write_kubeconfig,
)

LATENCY_S = 0.05
OWNER_GONE_EVERY = 50
DELETED = (7, 131)  # below the smallest size; --max-projects-gone (3) lets them through
UPSTREAM_NS = "app"
GW = "gateway.networking.k8s.io"
PATHS = {
    "Gateway": f"/apis/{GW}/v1/namespaces/{{ns}}/gateways",
    "HTTPRoute": f"/apis/{GW}/v1/namespaces/{{ns}}/httproutes",
    "Connector": f"/apis/{NET}/v1alpha1/namespaces/{{ns}}/connectors",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
}
GROUPS = {"Gateway": GW, "Connector": NET}


class HubFill(EtcdFill):
    """EtcdFill, knowing the copies' kinds too."""

    KEYS = {  # noqa: RUF012 - extends the base's class table
        **EtcdFill.KEYS,
        "Gateway": f"/registry/{GW}/gateways",
        "Connector": f"/registry/{NET}/connectors",
    }
    PATHS = {**EtcdFill.PATHS, "Gateway": PATHS["Gateway"], "Connector": PATHS["Connector"]}  # noqa: RUF012


def project(p: int) -> str:
    return f"proj-{p:05d}"


def hub_ns(p: int) -> str:
    return f"ns-{uuid.uuid5(uuid.NAMESPACE_URL, f'projects/{p}')}"


def owner_gone(p: int) -> bool:
    return p % OWNER_GONE_EVERY == OWNER_GONE_EVERY // 2


def labels(p: int, kind: str, name: str) -> dict[str, str]:
    return {
        UPSTREAM_CLUSTER_LABEL: f"cluster-{project(p)}",
        UPSTREAM_GROUP_LABEL: GROUPS.get(kind, GW),
        UPSTREAM_KIND_LABEL: kind,
        UPSTREAM_NAMESPACE_LABEL: UPSTREAM_NS,
        UPSTREAM_NAME_LABEL: name,
    }


def connector(ns: str, name: str) -> Obj:
    return {
        "apiVersion": f"{NET}/v1alpha1",
        "kind": "Connector",
        "metadata": {"name": name, "namespace": ns},
    }


def hub_objects(start: int, stop: int, owners: dict[str, str]) -> Iterator[Obj]:
    """Projects [start, stop) on the hub: per project the copies of `gw` and `conn` (or of a
    Connector gone) with their anchors, and the copy of `route`."""
    for p in range(start, stop):
        ns = hub_ns(p)
        for kind, name in (
            ("Gateway", "gw"),
            ("Connector", "conn-gone" if owner_gone(p) else "conn"),
        ):
            owner_uid = owners.get(name) or str(uuid.uuid5(uuid.NAMESPACE_URL, f"gone/{p}"))
            anchor_uid = str(uuid.uuid4())
            yield {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"anchor-{owner_uid}",
                    "namespace": ns,
                    "uid": anchor_uid,
                    "labels": labels(p, kind, name),
                },
            }
            copy = gateway(ns, name) if kind == "Gateway" else connector(ns, name)
            copy["metadata"]["labels"] = labels(p, kind, name)
            copy["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": f"anchor-{owner_uid}",
                    "uid": anchor_uid,
                }
            ]
            yield copy
        yield route(
            ns,
            "route",
            cluster_label=f"cluster-{project(p)}",
            upstream_namespace=UPSTREAM_NS,
            parents=[{"name": "gw"}],
        )


def floor_log(n: int) -> list[Obj]:
    """The fewest upstream requests the first `n` projects need, as request_log writes them."""
    cache = "limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan"
    # The Project API's list as one read from the watch cache, as gcjob asks it: a server
    # that paginates it would need a page more each 500 projects (`?limit=500` alone read the
    # first 500 of them: the floor's bytes missed the rest until issue 50).
    log: list[Obj] = [{"method": "GET", "url": f"{MILO}?{cache}", "accept": METADATA_LIST}]
    for p in range(n):
        base = f"{MILO}/{project(p)}/control-plane"
        log.append({"method": "GET", "url": f"{base}/apis", "accept": AGGREGATED_DISCOVERY})
        if p in DELETED:
            log.append({"method": "GET", "url": f"{MILO}/{project(p)}", "accept": METADATA})
            continue
        for kind in ("Gateway", "HTTPRoute", "Connector"):
            path = PATHS[kind].format(ns=UPSTREAM_NS)
            log.append({"method": "GET", "url": f"{base}{path}?{cache}", "accept": METADATA_LIST})
        if owner_gone(p):
            for path in (
                PATHS["Connector"].format(ns=UPSTREAM_NS) + "/conn-gone",
                f"/api/v1/namespaces/{UPSTREAM_NS}",
            ):
                log.append({"method": "GET", "url": f"{base}{path}", "accept": METADATA})
    return log


def server_cpu(server: ApiServer) -> float:
    """CPU seconds (user + system) the server's processes (kube-apiserver, etcd) used so far."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for proc in server._processes:  # kube-apiserver, etcd (and a controller manager)
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def summarise(stdout: str) -> Obj:
    out: Obj = {"reasons": {}}
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("record") == "summary":
            out["sweeps"] = {k: v.get("status") for k, v in (record.get("sweeps") or {}).items()}
            out["api_requests"] = record.get("api_requests")
        elif record.get("action") and record.get("reason"):
            key = f"{record['action']} {record['reason']}"
            out["reasons"][key] = out["reasons"].get(key, 0) + 1
    return out


class Bench:
    def __init__(self, hub: ApiServer, up: ApiServer, proxy: FaultProxy, work: Path) -> None:
        self.hub, self.up, self.proxy, self.work = hub, up, proxy, work
        self.last_requests: list[RecordedRequest] = []  # the proxy's log of the last run
        self.hub_kubeconfig = str(hub.write_kubeconfig(work / "hub.yaml"))
        self.up_kubeconfig = str(
            write_kubeconfig(
                work / "milo.yaml",
                context="milo",
                server=proxy.url,
                ca_file=proxy.ca_file,
                user={"token": ADMIN_TOKEN},
            )
        )

    def cpu(self) -> dict[str, float]:
        return {
            "bench_and_proxy": own_cpu(),
            "hub": server_cpu(self.hub),
            "upstream": server_cpu(self.up),
        }

    def measured(self, cmd: list[str]) -> tuple[Obj, str]:
        self.proxy.clear_requests()
        hub_before = response_metrics(self.hub)
        load, before = loadavg(), self.cpu()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        code, wall, rss, stdout, stderr = run_measured(cmd, clean_env())
        after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        after = self.cpu()
        hub = metrics_delta(hub_before, response_metrics(self.hub))
        requests = self.last_requests = self.proxy.requests
        up = span(requests)
        result: Obj = {
            "exit_code": code,
            "wall_s": round(wall, 3),
            "upstream_s": None if up is None else round(up, 3),
            "peak_rss_mib": round(rss, 1),
            "upstream_requests": len(requests),
            # Bytes received: the upstreams' as the proxy sent them, the hub's as its own
            # response-size metrics say (the bench's own scrapes left out), never gcjob's count.
            "upstream_bytes": received(requests),
            "hub_bytes": {"bytes": hub["bytes"], "responses": hub["responses"]},
            "cpu_s": {
                "measured": round(
                    (after_children.ru_utime - children.ru_utime)
                    + (after_children.ru_stime - children.ru_stime),
                    1,
                ),
                **{k: round(after[k] - before[k], 1) for k in after},
            },
            "loadavg_before": load,
            "loadavg_after": loadavg(),
        }
        if code != 0:
            result["stderr_tail"] = stderr[-1500:]
        return result, stdout

    def sweep(self, n: int, concurrency: int) -> Obj:
        result, stdout = self.measured(self.command(concurrency))
        result.update(summarise(stdout))
        result["requests_a_project"] = round(result["upstream_requests"] / n, 2)
        return result

    def command(self, concurrency: int) -> list[str]:
        """The sweep measured: routes and copies, dry, at `concurrency` upstream reads."""
        template = f"{self.proxy.url}{MILO}/{{cluster}}/control-plane"
        return [
            gcjob_bin(),
            "sweep",
            *("--hub-kubeconfig", self.hub_kubeconfig),
            *("--upstream-kubeconfig", self.up_kubeconfig),
            *("--upstream-server-template", template),
            *("--sweep", "routes", "--sweep", "copies"),
            *("--no-lock", "--min-age", "0s", "--timeout", "30m"),
            *("--upstream-concurrency", str(concurrency)),
        ]

    def floor(self, n: int, concurrency: int) -> Obj:
        path = self.work / "floor.json"
        path.write_text(json.dumps(floor_log(n)))
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--replay",
            str(path),
            self.proxy.url,
            str(self.proxy.ca_file),
            str(concurrency),
        ]
        result, stdout = self.measured(cmd)
        lines = [line for line in stdout.splitlines() if line.strip()]
        child = json.loads(lines[-1]) if result["exit_code"] == 0 and lines else {}
        result["statuses"] = child.get("statuses")
        result["requests_a_project"] = round(result["upstream_requests"] / n, 2)
        # The byte floor: these requests with one discovery document a distinct surface.
        result["byte_floor"] = byte_floor(self.last_requests)
        return result


def measure(bench: Bench, n: int, repeats: int, concurrency: int) -> Obj:
    sweeps, floors = [], []
    for i in range(repeats):
        s = bench.sweep(n, concurrency)
        f = bench.floor(n, concurrency)
        sweeps.append(s)
        floors.append(f)
        ratio = s["upstream_s"] / f["upstream_s"] if s["upstream_s"] and f["upstream_s"] else None
        s["ratio"] = ratio and round(ratio, 3)
        s["bytes_ratio"] = round(s["upstream_bytes"]["bytes"] / f["byte_floor"], 3)
        live = n - len([p for p in DELETED if p < n])
        discovery = s["upstream_bytes"]["by_kind"].get("discovery", {}).get("bytes", 0)
        s["discovery_bytes_a_live_project"] = round(discovery / live, 1)
        print(
            f"  #{i} c={concurrency}: sweep exit {s['exit_code']} wall {s['wall_s']}s upstream "
            f"{s['upstream_s']}s {s['upstream_requests']} req ({s['requests_a_project']}/project) "
            f"{s['peak_rss_mib']} MiB cpu {s['cpu_s']} | floor {f['upstream_s']}s "
            f"{f['upstream_requests']} req cpu {f['cpu_s']} | ratio {s['ratio']} "
            f"| bytes {s['upstream_bytes']['bytes']} / floor {f['byte_floor']} "
            f"({s['bytes_ratio']}), discovery {s['discovery_bytes_a_live_project']} B a live "
            f"project, hub {s['hub_bytes']['bytes']} B | load {s['loadavg_before']}",
            flush=True,
        )
        print(f"     {s.get('sweeps')} {s.get('reasons')}", flush=True)
    ratios = [s["ratio"] for s in sweeps if s["ratio"]]
    return {
        "projects": n,
        "upstream_concurrency": concurrency,
        "sweeps": sweeps,
        "floors": floors,
        "summary": {
            "sweep_wall_s": median_spread([s["wall_s"] for s in sweeps]),
            "sweep_upstream_s": median_spread([s["upstream_s"] or 0.0 for s in sweeps]),
            "floor_upstream_s": median_spread([f["upstream_s"] or 0.0 for f in floors]),
            "ratio": median_spread(ratios) if ratios else None,
            "upstream_bytes": median_spread([s["upstream_bytes"]["bytes"] for s in sweeps]),
            "byte_floor": median_spread([f["byte_floor"] for f in floors]),
            "request_floor_bytes": median_spread([f["upstream_bytes"]["bytes"] for f in floors]),
            "bytes_ratio": median_spread([s["bytes_ratio"] for s in sweeps]),
            "upstream_bytes_a_project": round(
                median_spread([s["upstream_bytes"]["bytes"] for s in sweeps])["median"] / n, 1
            ),
            "discovery_bytes_a_live_project": median_spread(
                [s["discovery_bytes_a_live_project"] for s in sweeps]
            ),
            "hub_bytes": median_spread([s["hub_bytes"]["bytes"] for s in sweeps]),
            "sweep_peak_rss_mib": median_spread([s["peak_rss_mib"] for s in sweeps]),
            "requests_a_project": median_spread([s["requests_a_project"] for s in sweeps]),
            "floor_requests_a_project": floors[0]["requests_a_project"],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,3000,10000", help="projects, ascending")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--concurrency",
        default=str(Settings().upstream_concurrency),
        help="--upstream-concurrency values (default: gcjob's)",
    )
    parser.add_argument("--threads", type=int, default=8, help="connections filling a server")
    parser.add_argument("--out", default=str(ROOT / "bench/results-projects.json"))
    parser.add_argument(
        "--hold",
        action="store_true",
        help="fill every size, measure nothing, print the sweep command and keep the servers "
        "up until SIGINT or SIGTERM: for profiling by hand",
    )
    parser.add_argument("--replay", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay:
        path, url, ca, in_flight = args.replay
        print(json.dumps(replay(url, ca, json.loads(Path(path).read_text()), int(in_flight))))
        return
    compile_gcjob()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    concurrencies = [int(c) for c in args.concurrency.split(",") if c]
    started = time.perf_counter()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    doc: Obj = {
        "machine": machine(),
        "gcjob_commit": commit,
        "latency_s": LATENCY_S,
        "deleted_projects": [project(p) for p in DELETED],
        "owner_gone_every": OWNER_GONE_EVERY,
        "repeats": args.repeats,
        "sizes": [],
    }
    with (
        tempfile.TemporaryDirectory(prefix="gcjob-projects-") as tmp,
        running("projects-hub", (*HUB_CRDS, *HUB_COPY_CRDS)) as hub,
        running("projects-upstream", (*UPSTREAM_CRDS, *MILO_CRDS)) as up,
    ):
        work = Path(tmp)
        doc["server_version"] = hub.request("GET", "/version").get("gitVersion")
        doc["upstream_server_version"] = up.request("GET", "/version").get("gitVersion")
        proxy = FaultProxy(Target(up.url, up.ssl_context()), strip_prefix=CONTROL_PLANE).start(work)
        for p in DELETED:
            proxy.add_fault(
                Fault(
                    path=f"^{MILO}/{project(p)}/control-plane",
                    status=404,
                    body="404 page not found\n",
                    delay=LATENCY_S,
                    times=None,
                )
            )
        proxy.add_fault(Fault(delay=LATENCY_S, times=None))
        owners = {}
        up.request("POST", "/api/v1/namespaces", namespace(UPSTREAM_NS))
        for kind, obj in (
            ("Gateway", gateway(UPSTREAM_NS, "gw")),
            ("Connector", connector(UPSTREAM_NS, "conn")),
            ("HTTPRoute", upstream_route(UPSTREAM_NS, "route", ("gw",))),
        ):
            made = up.request("POST", PATHS[kind].format(ns=UPSTREAM_NS), obj)
            owners[obj["metadata"]["name"]] = made["metadata"]["uid"]
        bench = Bench(hub, up, proxy, work)
        etcd = HubFill(hub)
        filled = 0
        for n in sizes:
            print(f"N={n}: filling projects {filled}..{n} ...", flush=True)
            size: Obj = {"projects": n}
            project_posts = (
                post_task(
                    MILO,
                    {
                        "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
                        "kind": "Project",
                        "metadata": {"name": project(p)},
                    },
                )
                for p in range(filled, n)
                if p not in DELETED
            )
            size["fill_upstream"] = fill(up, [], project_posts, args.threads)
            namespaces = (
                post_task("/api/v1/namespaces", namespace(hub_ns(p))) for p in range(filled, n)
            )
            size["fill_hub_namespaces"] = fill(hub, [], namespaces, args.threads)
            size["fill_hub_etcd"] = etcd.write(hub_objects(filled, n, owners))
            size["wait_for_caches_s"] = etcd.wait_for_caches()
            filled = n
            print(f"  filled: {json.dumps(size)}", flush=True)
            if args.hold:
                continue
            for concurrency in concurrencies:
                measured = measure(bench, n, args.repeats, concurrency)
                measured.update({k: v for k, v in size.items() if k.startswith(("fill", "wait"))})
                doc["sizes"].append(measured)
                print(f"  {json.dumps(measured['summary'])}", flush=True)
                doc["total_s"] = round(time.perf_counter() - started, 1)
                Path(args.out).write_text(json.dumps(doc, indent=2, default=str) + "\n")
        if args.hold:
            hold(bench.command(concurrencies[0]))
        proxy.stop()
    if args.hold:
        return
    print(f"\nwrote {args.out} ({doc['total_s']}s)")


if __name__ == "__main__":
    main()
