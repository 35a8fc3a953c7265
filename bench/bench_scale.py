"""Scale benchmark: gcjob against a large hub and 1,000 upstream project control planes.

One real hub (kube-apiserver + etcd from ``testbed/servers.py``) grows to each size in turn
(10k companions by default; ``--big`` for 10k, 50k and 100k, the last with 250k unlabelled
ConfigMaps more), in the proportions of issue 9: per 20 companions, 15 ConfigMaps, 5 Secrets,
20 ResourceBindings, 18 WorkloadDeployments and 5 HTTPRoutes, written straight into etcd (see
EtcdFill). One real upstream server holds 1,000 projects (a namespace and 5 Gateways each)
and stands, through a loopback proxy that adds 50 ms to every request, behind
``--upstream-server-template``.

At each size, each in a fresh subprocess: the two floors (a paginated metadata-only list of
the hub collections the companions and bindings sweeps read, from etcd; one GET per
collection with resourceVersion=0, from the watch cache), then those two sweeps as a dry
run, once per ``--list-from`` mode when gcjob has the flag, then the full default sweep with
the upstream; at the first size, that sweep again one upstream cluster at a time. Columns:
wall, requests, MiB received (the hub's own response-size metrics, plus the proxy's byte
count for the upstream), peak RSS.
``--profile`` adds a cProfile run of the hub's sweeps at the largest size.

    python bench/bench_scale.py                 # 10k companions, 1,000 projects
    python bench/bench_scale.py --big           # 10k, 50k, 100k (+250k ConfigMaps): long
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

from harness import (
    ROOT,
    Blobs,
    Obj,
    Task,
    add_versions_option,
    blob,
    clean_env,
    companion,
    compile_gcjob,
    etcd_db_mib,
    fill,
    gcjob_bin,
    gcjob_commit,
    hold,
    kube_version,
    kube_versions,
    loadavg,
    machine,
    measure_child,
    median_spread,
    post_task,
    read_lists,
    received,
    replay,
    request_log,
    server_versions,
    settle,
    span,
)

from gcjob.domain import COMPANION_LABEL
from gcjob.settings import Settings
from gcjob.sweeps.companions.scan import COMPANION_SELECTOR
from testbed.faultproxy import Fault, FaultProxy, Target
from testbed.objects import binding_for, gateway, namespace, route, workload
from testbed.servers import (
    ADMIN_TOKEN,
    HUB_CRDS,
    UPSTREAM_CRDS,
    ApiServer,
    running,
    write_kubeconfig,
)

BLOCK = 20  # per 20 companions: 15 ConfigMaps, 5 Secrets, 20 bindings, 18 workloads, 5 routes
WORKLOADS_PER_BLOCK = 18
ROUTES_PER_BLOCK = 5
BLOCKS_PER_NAMESPACE = 3  # 60 companions in each hub namespace
ORPHAN_EVERY = 100  # 1% of companions name a workload that does not exist; 1% of routes a Gateway
OWNER_GONE_AT = 61  # and 1% of routes (r % ORPHAN_EVERY == 61) have no upstream HTTPRoute
GATEWAYS_PER_PROJECT = 5
LATENCY_S = 0.05
IN_FLIGHT = Settings().upstream_concurrency  # gcjob's default, and the routes floor's connections
TEMPLATE_PREFIX = r"^/projects/[^/]+/control-plane"
HUB_LISTS = (  # what gcjob's companions and bindings sweeps list on the hub, with its selectors
    ("/api/v1/configmaps", COMPANION_SELECTOR),
    ("/api/v1/secrets", COMPANION_SELECTOR),
    ("/apis/compute.datumapis.com/v1alpha/workloaddeployments", None),
    ("/apis/work.karmada.io/v1alpha2/resourcebindings", None),
)
HUB_SWEEPS = ("--sweep", "companions", "--sweep", "bindings")
CORE = "/api/v1/namespaces/{ns}/{plural}"
WD_PATH = "/apis/compute.datumapis.com/v1alpha/namespaces/{ns}/workloaddeployments"
ROUTE_PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/httproutes"
GW_PATH = "/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/gateways"


# ---------------------------------------------------------------------------------------------
# the worlds


def hub_namespace(block: int) -> str:
    return f"ns-{uuid.uuid5(uuid.NAMESPACE_URL, f'hub/{block // BLOCKS_PER_NAMESPACE}')}"


def project(index: int) -> str:
    return f"proj-{index:04d}"


def namespace_task(name: str) -> Task:
    return post_task("/api/v1/namespaces", namespace(name))


def hub_increment(
    start: int, stop: int, projects: int, blobs: Blobs, routes_only: bool = False
) -> tuple[list[str], Iterator[Obj]]:
    """Companions [start, stop) with their bindings, workloads and routes: the new namespaces
    and the objects, lazily. `start` and `stop` are multiples of BLOCK. Each companion carries
    the uid it is stored with, which its binding names. `routes_only`: the same routes and
    namespaces, nothing else (the routes sweep reads only these)."""
    blocks = range(start // BLOCK, stop // BLOCK)
    namespaces = sorted(
        {hub_namespace(b) for b in blocks} - {hub_namespace(b) for b in range(start // BLOCK)}
    )

    def objects() -> Iterator[Obj]:
        for block in blocks:
            ns = hub_namespace(block)
            for i in range(ROUTES_PER_BLOCK if routes_only else BLOCK):
                j = block * BLOCK + i
                w = block * WORKLOADS_PER_BLOCK + i % WORKLOADS_PER_BLOCK
                wd = f"gone-{j}-dfw" if j % ORPHAN_EVERY == ORPHAN_EVERY // 2 else f"web-{w}-dfw"
                if i % 4 == 3:
                    obj = companion(
                        "Secret", ns, f"db-creds-{j}", [f"default/{wd}"], blobs.secret[j % 32]
                    )
                else:
                    obj = companion(
                        "ConfigMap", ns, f"app-config-{j}", [f"default/{wd}"], blobs.config[j % 32]
                    )
                obj["metadata"]["uid"] = str(uuid.uuid4())
                obj["metadata"]["resourceVersion"] = ""
                binding = binding_for(obj)
                del binding["spec"]["resource"]["resourceVersion"]  # not known before storing
                del obj["metadata"]["resourceVersion"]
                if not routes_only:
                    yield obj
                    yield binding
                if i < WORKLOADS_PER_BLOCK and not routes_only:
                    name = f"web-{w}-dfw"
                    labels = {"compute.datumapis.com/workload-name": f"web-{w}"}
                    yield workload(ns, name, labels=labels)
                if i < ROUTES_PER_BLOCK:
                    r = block * ROUTES_PER_BLOCK + i
                    p = r % projects
                    gw = (
                        "gw-gone"
                        if r % ORPHAN_EVERY == 37
                        else f"gw-{(r // projects) % GATEWAYS_PER_PROJECT}"
                    )
                    yield route(
                        ns,
                        f"route-{r}",
                        cluster_label=f"cluster-{project(p)}",
                        upstream_namespace=project(p),
                        parents=[{"name": gw}],
                    )

    return namespaces, objects()


class EtcdFill:
    """Writes objects straight into the hub's etcd, as the API server stores them (JSON, which
    the server reads back as it reads its own protobuf), 100 to a transaction.

    Filling 565k objects by POST through a server on 2 shared cores takes about an hour; this
    takes minutes. To keep the objects what a POST would have stored, one sample of each kind
    is POSTed first, and its server-written metadata (managedFields, generation) is copied
    onto every object of that kind; each gets its own uid and creationTimestamp. The API server
    then serves them from etcd and from its watch cache like any others."""

    KEYS: ClassVar[dict[str, str]] = {  # kind -> etcd key prefix (core, then CRDs)
        "ConfigMap": "/registry/configmaps",
        "Secret": "/registry/secrets",
        "ResourceBinding": "/registry/work.karmada.io/resourcebindings",
        "WorkloadDeployment": "/registry/compute.datumapis.com/workloaddeployments",
        "HTTPRoute": "/registry/gateway.networking.k8s.io/httproutes",
    }
    PATHS: ClassVar[dict[str, str]] = {
        "ConfigMap": CORE.replace("{plural}", "configmaps"),
        "Secret": CORE.replace("{plural}", "secrets"),
        "ResourceBinding": "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings",
        "WorkloadDeployment": WD_PATH,
        "HTTPRoute": ROUTE_PATH,
    }
    BATCH = 100  # etcd allows 128 operations in one transaction by default

    def __init__(self, server: ApiServer) -> None:
        url = urlsplit(server.etcd_url)
        self.server = server
        self.connection = http.client.HTTPConnection(url.hostname or "", url.port)
        self.samples: dict[tuple[str, bool], Obj] = {}
        self.written = 0
        self.revisions: dict[str, int] = {}  # kind -> the etcd revision it was last written at

    def _server_metadata(self, obj: Obj) -> Obj:
        """managedFields and generation as the server writes them for this kind of object."""
        key = (obj["kind"], COMPANION_LABEL in (obj["metadata"].get("labels") or {}))
        if key not in self.samples:
            sample = json.loads(json.dumps(obj))
            meta = sample["metadata"]
            meta["namespace"] = "default"
            meta["name"] = f"bench-sample-{uuid.uuid4().hex[:8]}"
            for field in ("uid", "finalizers", "ownerReferences"):
                meta.pop(field, None)
            path = self.PATHS[obj["kind"]].format(ns="default")
            stored = self.server.request("POST", path, sample)
            self.server.request("DELETE", f"{path}/{meta['name']}")
            self.samples[key] = {
                k: v for k, v in stored["metadata"].items() if k in ("managedFields", "generation")
            }
        return self.samples[key]

    def write(self, objects: Iterator[Obj]) -> Obj:
        begin, written = time.perf_counter(), self.written
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        batch: list[Obj] = []
        kinds: set[str] = set()
        for obj in objects:
            meta = obj["metadata"]
            meta.update(self._server_metadata(obj))
            meta.setdefault("uid", str(uuid.uuid4()))
            meta["creationTimestamp"] = now
            key = f"{self.KEYS[obj['kind']]}/{meta['namespace']}/{meta['name']}"
            batch.append(
                {"requestPut": {"key": _b64(key.encode()), "value": _b64(json.dumps(obj).encode())}}
            )
            kinds.add(obj["kind"])
            if len(batch) == self.BATCH:
                self._commit(batch, kinds)
                batch, kinds = [], set()
        if batch:
            self._commit(batch, kinds)
        seconds = time.perf_counter() - begin
        return {"etcd_puts": self.written - written, "seconds": round(seconds, 1)}

    def _commit(self, batch: list[Obj], kinds: set[str]) -> None:
        body = json.dumps({"success": batch}).encode()
        self.connection.request("POST", "/v3/kv/txn", body, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        answer = response.read()
        if response.status != 200 or b'"succeeded":true' not in answer.replace(b" ", b""):
            raise RuntimeError(f"etcd txn: {response.status} {answer[:300]!r}")
        self.written += len(batch)
        revision = int(json.loads(answer)["header"]["revision"])
        self.revisions.update(dict.fromkeys(kinds, revision))

    def wait_for_caches(self, timeout: float = 300.0) -> float:
        """Until the server's watch cache of every kind holds the last write of that kind (a
        list at that resourceVersion, NotOlderThan, is served from the cache once it does)."""
        begin = time.perf_counter()
        for kind, revision in self.revisions.items():
            path = self.PATHS[kind]
            url = f"{path.format(ns='default')}?resourceVersion={revision}"
            url += "&resourceVersionMatch=NotOlderThan"
            while True:
                try:
                    self.server.request("GET", url)
                    break
                except Exception as exc:  # 504 "Too large resource version": not there yet
                    if time.perf_counter() - begin > timeout:
                        raise RuntimeError(f"the {kind} cache did not catch up: {exc}") from exc
                    time.sleep(1)
        return round(time.perf_counter() - begin, 1)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unlabelled(count: int, namespaces: list[str]) -> Iterator[Obj]:
    """ConfigMaps without the companion label, 256 bytes of data each (small, so that 250k
    of them stay well inside etcd's 2 GiB quota beside the rest): gcjob must never read them."""
    rng = random.Random(2)
    payloads = [{"settings.yaml": blob(rng, 256)} for _ in range(32)]
    for k in range(count):
        ns = namespaces[k % len(namespaces)]
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"settings-{k}",
                "namespace": ns,
                "labels": {"app": f"svc-{k % 17}"},
            },
            "data": payloads[k % 32],
        }
        yield obj


def upstream_world(projects: int, routes: int) -> tuple[list[Task], Iterator[Task]]:
    """Per project a namespace and its Gateways; and the upstream HTTPRoute each of the hub's
    first `routes` routes is a copy of (the routes sweep's owner-gone rule reads them), but
    1% (r % ORPHAN_EVERY == OWNER_GONE_AT): those routes are `owner-gone`."""

    def objects() -> Iterator[Task]:
        for p in range(projects):
            for g in range(GATEWAYS_PER_PROJECT):
                yield post_task(GW_PATH.format(ns=project(p)), gateway(project(p), f"gw-{g}"))
        for r in range(routes):
            if r % ORPHAN_EVERY == OWNER_GONE_AT:
                continue
            ns = project(r % projects)
            owner = route(
                ns,
                f"route-{r}",
                cluster_label="",
                upstream_namespace=ns,
                parents=[{"name": "gw-0"}],
            )
            owner["metadata"]["labels"] = {}
            yield post_task(ROUTE_PATH.format(ns=ns), owner)

    return [namespace_task(project(p)) for p in range(projects)], objects()


# ---------------------------------------------------------------------------------------------
# what the hub itself says it sent


METRIC = re.compile(r"^apiserver_response_sizes_(sum|count)\{(.*)\} (\S+)$")


def response_metrics(server: ApiServer) -> dict[tuple[str, str, str], list[float]]:
    """(verb, resource, scope) -> [bytes, responses] so far, from the server's /metrics
    (apiserver_response_sizes of GET and LIST answers; the scrape itself left out)."""
    text = server.request("GET", "/metrics", raw=True).decode()
    out: dict[tuple[str, str, str], list[float]] = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        if labels.get("subresource") == "/metrics" or labels.get("verb") == "WATCH":
            continue  # the scrape itself; the server's own informers' watches, as they end
        key = (
            labels.get("verb", ""),
            labels.get("resource") or labels.get("subresource", ""),
            labels.get("scope", ""),
        )
        entry = out.setdefault(key, [0.0, 0.0])
        entry[0 if match.group(1) == "sum" else 1] += float(match.group(3))
    return out


def metrics_delta(
    before: dict[tuple[str, str, str], list[float]], after: dict[tuple[str, str, str], list[float]]
) -> Obj:
    rows = {}
    for key, (size, count) in after.items():
        old = before.get(key, [0.0, 0.0])
        if count - old[1] > 0:
            rows[" ".join(key)] = {"responses": int(count - old[1]), "bytes": int(size - old[0])}
    return {
        "bytes": sum(r["bytes"] for r in rows.values()),
        "responses": sum(r["responses"] for r in rows.values()),
        "by_verb_resource_scope": rows,
    }


# ---------------------------------------------------------------------------------------------
# the floors (children)


def floor_main(kubeconfig: str, mode: str) -> None:
    """Child: read HUB_LISTS metadata only. mode "etcd": paginated (limit=500), serial, each
    page parsed and dropped; mode "cache": one GET per collection with resourceVersion=0,
    the whole body read, then json.loads. Prints {"requests", "items", "bytes"}."""
    print(json.dumps(read_lists(kubeconfig, HUB_LISTS, from_cache=mode == "cache")))


# ---------------------------------------------------------------------------------------------
# runs


class Bench:
    def __init__(
        self,
        hub: ApiServer,
        hub_kubeconfig: str,
        up_kubeconfig: str,
        template: str,
        proxy: FaultProxy,
        workdir: Path,
    ) -> None:
        self.hub = hub
        self.hub_kubeconfig = hub_kubeconfig
        self.up_kubeconfig = up_kubeconfig
        self.template = template
        self.proxy = proxy
        self.workdir = workdir
        help_text = subprocess.run(
            [gcjob_bin(), "sweep", "--help"], capture_output=True, text=True, check=False
        ).stdout
        self.list_from = "--list-from" in help_text
        self.last_upstream: list[Obj] = []  # the proxy's log of the latest run (request_log)
        self.upstream_concurrency = "--upstream-concurrency" in help_text

    def measure(self, mode: str, cmd: list[str]) -> Obj:
        self.proxy.clear_requests()
        before = response_metrics(self.hub)
        load_before = loadavg()
        child = measure_child(cmd, clean_env())
        code, wall, rss, stdout, stderr = (
            child[k] for k in ("rc", "wall_s", "peak_rss_mib", "stdout", "stderr")
        )
        load_after = loadavg()
        hub = metrics_delta(before, response_metrics(self.hub))
        upstream = self.proxy.requests
        self.last_upstream = request_log(upstream)
        up_span = span(upstream)
        up_bytes = sum(len(r.response_body) for r in upstream)
        result: Obj = {
            "mode": mode,
            "exit_code": code,
            "wall_s": round(wall, 2),
            "peak_rss_mib": round(rss, 1),
            "cpu_s": round(child["cpu_s"], 2),
            "hub_responses": hub["responses"],
            "hub_mib": round(hub["bytes"] / 2**20, 1),
            "upstream_requests": len(upstream),
            "upstream_s": None if up_span is None else round(up_span, 3),
            "upstream_mib": round(up_bytes / 2**20, 2),
            "upstream_bytes": received(upstream),  # by kind: discovery, lists, gets
            "received_mib": round((hub["bytes"] + up_bytes) / 2**20, 1),
            "secret_gets": sum(
                v["responses"]
                for k, v in hub["by_verb_resource_scope"].items()
                if k.startswith("GET secrets")
            ),
            "hub_metrics": hub["by_verb_resource_scope"],
            "loadavg_before": load_before,
            "loadavg_after": load_after,
        }
        lines = [line for line in stdout.splitlines() if line.strip()]
        try:
            last = json.loads(lines[-1]) if lines else {}
        except ValueError:
            last = {}
        if mode.startswith("floor"):
            result["requests"] = last.get("requests")
            result["items"] = last.get("items")
            result["client_mib"] = round(last.get("bytes", 0) / 2**20, 1)
            if "statuses" in last:  # the routes floor's replay: what the answers were
                result["statuses"] = last["statuses"]
        elif last.get("record") == "summary":
            result["requests"] = last["api_requests"]["total"]
            by_target = last["api_requests"].get("by_target", {})
            result["hub_requests"] = by_target.get("hub")
            result["sweeps"] = {
                name: {k: s.get(k) for k in ("status", "scanned", "in_scope", "detail") if k in s}
                for name, s in (last.get("sweeps") or {}).items()
            }
            result["totals"] = last.get("totals")
            result["list_strategy"] = last.get("list_strategy")  # what auto chose, and why
        if code != 0 or "requests" not in result or result["requests"] is None:
            result["stderr_tail"] = stderr[-1500:]
        print(f"    {mode:28} {_row(result)}", flush=True)
        return result

    def floor(self, mode: str) -> Obj:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--floor", mode, self.hub_kubeconfig]
        return self.measure(f"floor-{mode}", cmd)

    def routes_floor(self, log: list[Obj]) -> Obj:
        """The routes sweep's floor: the upstream requests it made (`log`), replayed at
        IN_FLIGHT through the same proxy by a bare client (harness.replay)."""
        path = self.workdir / "routes-requests.json"
        path.write_text(json.dumps(log))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--replay", str(path)]
        cmd += [self.proxy.url, str(self.proxy.ca_file)]
        return self.measure("floor-routes (replay)", cmd)

    def sweep(self, mode: str, *extra: str) -> Obj:
        cmd = [
            gcjob_bin(),
            "sweep",
            "--hub-kubeconfig",
            self.hub_kubeconfig,
            "--upstream-kubeconfig",
            self.up_kubeconfig,
            "--upstream-server-template",
            self.template,
            "--no-lock",
            "--min-age",
            "0s",
            *extra,
        ]
        return self.measure(mode, cmd)

    def profile(self, out: Path) -> Obj:
        """The hub's two sweeps under cProfile (the routes sweep mostly waits on the 50 ms)."""
        cmd = [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(out),
            "-m",
            "gcjob",
            "sweep",
            "--hub-kubeconfig",
            self.hub_kubeconfig,
            "--sweep",
            "companions",
            "--sweep",
            "bindings",
            "--no-lock",
            "--min-age",
            "0s",
        ]
        result = self.measure("companions + bindings under cProfile", cmd)
        result["top"] = top_costs(out)
        return result


def ratio_rounds(bench: Bench, repeats: int, with_etcd: bool) -> Obj:
    """The first table's ratios, `repeats` interleaved rounds of: the hub floors (the
    watch cache; paginated from etcd unless `with_etcd` is false), the hub dry run with
    gcjob's defaults (and with --list-from pages, beside the paginated floor), the routes
    sweep, and its floor (the routes sweep's own upstream
    requests replayed at IN_FLIGHT). Hub: gcjob's wall time over the fastest floor's of the
    round. Routes: the sweep's upstream span over the replay's (the proxy's first request
    to its last answer), and wall over wall."""
    rounds = []
    for repeat in range(repeats):
        print(f"  round {repeat + 1} of {repeats}", flush=True)
        runs = {"floor-cache": bench.floor("cache")}
        if with_etcd:
            runs["floor-etcd"] = bench.floor("etcd")
        runs["hub"] = bench.sweep("hub dry run (defaults)", *HUB_SWEEPS)
        if with_etcd:
            # The read newer servers get (issue 24 item 1: pages from 1.34), over the floor
            # that reads the same pages. Here both come from etcd, so the ratio says what gcjob
            # adds to the same reads, not what the server's cache saves.
            runs["hub-pages"] = bench.sweep(
                "hub dry run --list-from pages", *HUB_SWEEPS, "--list-from", "pages"
            )
        runs["routes"] = bench.sweep("routes sweep (defaults)", "--sweep", "routes")
        runs["floor-routes"] = bench.routes_floor(bench.last_upstream)
        fastest = min(runs[k]["wall_s"] for k in ("floor-cache", "floor-etcd") if k in runs)
        row: Obj = {"runs": runs, "fastest_floor_s": fastest}
        row["hub_ratio"] = round(runs["hub"]["wall_s"] / fastest, 3)
        if "hub-pages" in runs:
            pages = runs["hub-pages"]["wall_s"] / runs["floor-etcd"]["wall_s"]
            row["pages_ratio"] = round(pages, 3)
        up, floor_up = runs["routes"]["upstream_s"], runs["floor-routes"]["upstream_s"]
        row["routes_ratio"] = round(up / floor_up, 3) if up and floor_up else None
        row["routes_wall_ratio"] = round(
            runs["routes"]["wall_s"] / runs["floor-routes"]["wall_s"], 3
        )
        pages_said = (
            f"; in pages {row['pages_ratio']}x the paginated floor" if "pages_ratio" in row else ""
        )
        print(
            f"    hub {row['hub_ratio']}x the fastest floor{pages_said}; routes "
            f"{row['routes_ratio']}x (wall {row['routes_wall_ratio']}x)",
            flush=True,
        )
        rounds.append(row)

    def spread(values: list[float | None]) -> Obj | None:
        present = [v for v in values if v is not None]
        return median_spread(present) if present else None

    walls = {
        name: spread([r["runs"][name]["wall_s"] for r in rounds if name in r["runs"]])
        for name in rounds[0]["runs"]
    }
    # The client's own CPU time (user + system) of each run: the neighbours on a shared
    # machine stretch every wall time, far less the CPU a process spends.
    cpus = {
        name: spread([r["runs"][name].get("cpu_s") for r in rounds if name in r["runs"]])
        for name in rounds[0]["runs"]
    }
    return {
        "rounds": rounds,
        "wall_s": walls,
        "cpu_s": cpus,
        "hub_peak_rss_mib": spread([r["runs"]["hub"]["peak_rss_mib"] for r in rounds]),
        "routes_upstream_s": spread([r["runs"]["routes"]["upstream_s"] for r in rounds]),
        "floor_routes_upstream_s": spread(
            [r["runs"]["floor-routes"]["upstream_s"] for r in rounds]
        ),
        "hub_ratio": spread([r["hub_ratio"] for r in rounds]),
        "pages_ratio": spread([r.get("pages_ratio") for r in rounds]),
        "routes_ratio": spread([r["routes_ratio"] for r in rounds]),
        "routes_wall_ratio": spread([r["routes_wall_ratio"] for r in rounds]),
    }


def replay_main(path: str, url: str, ca_file: str) -> None:
    """Child: the routes floor (Bench.routes_floor)."""
    log = json.loads(Path(path).read_text())
    print(json.dumps(replay(url, ca_file, log, IN_FLIGHT)))


def hold_servers(bench: Bench) -> None:
    """Keep the filled servers up for runs by hand, until interrupted."""
    hold(
        [
            gcjob_bin(),
            "sweep",
            *("--hub-kubeconfig", bench.hub_kubeconfig),
            *("--upstream-kubeconfig", bench.up_kubeconfig),
            *("--upstream-server-template", bench.template),
            *("--no-lock", "--min-age", "0s"),
        ]
    )


def top_costs(path: Path, count: int = 15) -> Obj:
    import pstats

    if not path.exists():
        return {}
    stats = pstats.Stats(str(path))
    rows = []
    for (filename, line, func), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
        rows.append(
            {
                "function": f"{where}:{line}({func})",
                "calls": calls,
                "tottime_s": round(tottime, 2),
                "cumtime_s": round(cumtime, 2),
            }
        )
    return {
        "total_s": round(stats.total_tt, 2),  # type: ignore[attr-defined]
        "by_tottime": sorted(rows, key=lambda r: -r["tottime_s"])[:count],
        "by_cumtime": sorted(rows, key=lambda r: -r["cumtime_s"])[:count],
    }


def _row(r: Obj) -> str:
    return (
        f"exit {r.get('exit_code')}  {r.get('wall_s', 0):7.2f}s  req {r.get('requests')!s:>6}  "
        f"hub {r.get('hub_mib')} MiB + up {r.get('upstream_mib')} MiB  "
        f"{r.get('peak_rss_mib', 0):6.1f} MiB RSS  "
        f"load {r.get('loadavg_before', '')[:4]}->{r.get('loadavg_after', '')[:4]}"
    )


# ---------------------------------------------------------------------------------------------
# driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="companions, ascending (default 10000)")
    parser.add_argument("--big", action="store_true", help="--sizes 10000,50000,100000")
    parser.add_argument(
        "--unlabelled",
        default="100000:250000",
        metavar="SIZE:COUNT",
        help="add COUNT unlabelled ConfigMaps before measuring SIZE",
    )
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument(
        "--etcd-max",
        type=int,
        default=None,
        metavar="N",
        help="run the etcd floor and --list-from etcd only at sizes up to N companions "
        "(each takes minutes at 100k; default: at every size)",
    )
    parser.add_argument("--threads", type=int, default=8, help="connections filling the hub")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the sweep at the largest size"
    )
    parser.add_argument("--out", default=str(ROOT / "bench/results-scale.json"))
    parser.add_argument(
        "--hold",
        action="store_true",
        help="fill every size, measure nothing, print the sweep command and keep the servers "
        "up until SIGINT or SIGTERM: for profiling by hand",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="interleaved rounds of the ratio runs (default 3)"
    )
    parser.add_argument(
        "--ratios-only",
        action="store_true",
        help="run only the ratio rounds (the first table of bench/README.md)",
    )
    parser.add_argument(
        "--routes-only",
        action="store_true",
        help="fill the hub with the routes (and their namespaces) only: the routes sweep's "
        "world, in a fraction of the time",
    )
    add_versions_option(parser)
    parser.add_argument("--floor", nargs=2, metavar=("MODE", "KUBECONFIG"), help=argparse.SUPPRESS)
    parser.add_argument("--replay", nargs=3, metavar=("LOG", "URL", "CA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        floor_main(args.floor[1], args.floor[0])
        return
    if args.replay:
        replay_main(*args.replay)
        return
    versions = kube_versions(args.kube_versions)
    if args.hold and len(versions) > 1:
        raise SystemExit("--hold keeps one version's servers up: name one in --kube-versions")
    compile_gcjob()
    sizes = [10000, 50000, 100000] if args.big else [int(s) for s in args.sizes.split(",") if s]
    started = time.perf_counter()
    doc: Obj = {
        "machine": machine(),
        "gcjob": gcjob_commit(),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kube_versions": versions,
        "projects": args.projects,
        "latency_s": LATENCY_S,
        "threads": args.threads,
        "servers": [],
    }

    def save() -> None:
        """After every measurement: a long run stopped half-way keeps what it measured."""
        doc["total_s"] = round(time.perf_counter() - started, 1)
        Path(args.out).write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")

    for version in versions:
        print(f"Kubernetes {version}:", flush=True)
        run: Obj = {"loadavg_before": loadavg(), "sizes": []}
        doc["servers"].append(run)
        with kube_version(version):
            measure_version(args, sizes, run, save)
        run["loadavg_after"] = loadavg()
        save()
    if not args.hold:
        print(f"\nwrote {args.out} ({doc['total_s']}s)")


def measure_version(
    args: argparse.Namespace, sizes: list[int], doc: Obj, save: Callable[[], None]
) -> None:
    """Every size on one pair of servers (kube_version() picks them): the hub, with the
    kube-controller-manager a Karmada hub runs beside it, and the upstream, a bare API server
    as a project control plane is. Into `doc`."""
    extra_at, extra_count = (int(x) for x in args.unlabelled.split(":"))
    blobs = Blobs(random.Random(1))
    with (
        tempfile.TemporaryDirectory(prefix="gcjob-scale-") as tmp,
        running("scale-hub", HUB_CRDS, controllers=True) as hub,
        running("scale-upstream", UPSTREAM_CRDS) as up,
    ):
        work = Path(tmp)
        doc.update(server_versions(hub, up))
        print(
            f"  hub {doc['server_version']} (etcd {doc['etcd_version']}, "
            f"{doc['controller_manager_version'] or 'no kube-controller-manager'}), "
            f"upstream {doc['upstream_server_version']}",
            flush=True,
        )
        print(
            f"upstream: {args.projects} projects x {GATEWAYS_PER_PROJECT} Gateways, "
            f"{sizes[-1] // BLOCK * ROUTES_PER_BLOCK} HTTPRoutes ...",
            flush=True,
        )
        routes = sizes[-1] // BLOCK * ROUTES_PER_BLOCK  # the hub's routes at the largest size
        doc["upstream_fill"] = fill(up, *upstream_world(args.projects, routes), args.threads)
        print(f"  {doc['upstream_fill']}", flush=True)
        proxy = FaultProxy(Target(up.url, up.ssl_context()), strip_prefix=TEMPLATE_PREFIX).start(
            work
        )
        proxy.add_fault(Fault(delay=LATENCY_S, times=None))  # every request, 50 ms
        up_kubeconfig = str(
            write_kubeconfig(
                work / "upstream.yaml",
                context="upstream",
                server=proxy.url,
                ca_file=proxy.ca_file,
                user={"token": ADMIN_TOKEN},
            )
        )
        template = f"{proxy.url}/projects/{{cluster}}/control-plane"
        hub_kubeconfig = str(hub.write_kubeconfig(work / "hub.yaml"))
        bench = Bench(hub, hub_kubeconfig, up_kubeconfig, template, proxy, work)
        doc["gcjob_flags"] = {
            "list_from": bench.list_from,
            "upstream_concurrency": bench.upstream_concurrency,
        }
        filled = 0
        etcd = EtcdFill(hub)
        for n in sizes:
            size: Obj = {"companions": n, "runs": []}
            doc["sizes"].append(size)
            print(f"N={n}: filling companions {filled}..{n} ...", flush=True)
            namespaces, hub_objects = hub_increment(
                filled, n, args.projects, blobs, routes_only=args.routes_only
            )
            size["fill_namespaces"] = fill(
                hub, [namespace_task(ns) for ns in namespaces], iter([]), args.threads
            )
            size["fill"] = etcd.write(hub_objects)
            if n == extra_at and extra_count:
                print(f"N={n}: {extra_count} unlabelled ConfigMaps ...", flush=True)
                every = sorted({hub_namespace(b) for b in range(n // BLOCK)})
                size["fill_unlabelled"] = etcd.write(unlabelled(extra_count, every))
                size["unlabelled"] = extra_count
            size["cache_catch_up_s"] = etcd.wait_for_caches()
            size["settle_s"] = settle(hub)  # the garbage collector, after the fill
            print(
                f"  {size['fill_namespaces']} {size['fill']} {size.get('fill_unlabelled', '')} "
                f"caches {size['cache_catch_up_s']}s, settled {size['settle_s']}s",
                flush=True,
            )
            filled = n
            size["etcd_db_mib"] = etcd_db_mib(hub)
            runs = size["runs"]
            if args.hold:
                continue
            skip_etcd = int(args.etcd_max is not None and n > args.etcd_max)
            print(f"N={n}: the ratios, {args.repeats} rounds", flush=True)
            size["ratios"] = ratio_rounds(bench, args.repeats, with_etcd=not skip_etcd)
            save()
            if args.ratios_only:
                continue
            steps: list[tuple[str, Callable[[], Obj]]] = [
                ("floor-etcd", lambda: bench.floor("etcd")),
                ("floor-cache", lambda: bench.floor("cache")),
            ][skip_etcd:]
            modes = ("cache", "etcd")[: 2 - skip_etcd] if bench.list_from else (None,)
            for mode in modes:
                flags = ("--list-from", mode) if mode else ()
                label = f"companions + bindings{f' --list-from {mode}' if mode else ''}"
                steps.append((label, lambda f=flags, t=label: bench.sweep(t, *HUB_SWEEPS, *f)))
            # The full sweep at every size: its memory grows with the hub. The serial
            # comparison only at the first: the upstream side does not grow with the hub.
            steps.append(
                ("sweep (all three, defaults)", lambda: bench.sweep("sweep (all three, defaults)"))
            )
            if n == sizes[0] and bench.upstream_concurrency:
                label = "sweep, --upstream-concurrency 1"
                steps.append((label, lambda t=label: bench.sweep(t, "--upstream-concurrency", "1")))
            if args.profile and n == sizes[-1]:
                steps.append(("profile", lambda: bench.profile(work / "sweep.prof")))
            for _label, step in steps:
                runs.append(step())
                save()
        if args.hold:
            hold_servers(bench)
        proxy.stop()


if __name__ == "__main__":
    main()
