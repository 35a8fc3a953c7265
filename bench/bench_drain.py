"""A documented run: the rollout Job, with its shipped arguments and the real grace period
(`--grace` 10m, the default), clearing a backlog of 510 orphans among live objects on a real
kube-apiserver + etcd (issue 23 item 1). The e2e test (tests/e2e/test_drain_e2e.py) runs the
same with a 3-second grace; this is the run an operator waits for.

It asserts nothing: it prints what the Job did (its drain record, how long it took, what is
left on the hub) and writes JSON.

    python bench/bench_drain.py [--out bench/results-drain.json]

About 11 minutes: the grace period is the wait.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from harness import (
    ROOT,
    clean_env,
    compile_gcjob,
    gcjob_bin,
    gcjob_commit,
    kube_version,
    kube_versions,
    loadavg,
    machine,
    server_versions,
)

from gcjob.domain import ORPHANED_LABEL
from testbed.backlog import seed_backlog
from testbed.cluster import TestCluster
from testbed.servers import HUB_CRDS, kubectl, running


def rollout_args() -> list[str]:
    """The shipped rollout Job's arguments, as kustomize renders them."""
    rendered = subprocess.run(
        [kubectl(), "kustomize", str(ROOT / "cronjobs" / "rollout")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [job] = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Job"]
    args: list[str] = job["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results-drain.json"))
    out = Path(parser.parse_args().out)
    compile_gcjob()
    shipped = rollout_args()
    with (
        kube_version(kube_versions(None)[0]),
        tempfile.TemporaryDirectory() as work,
        running("drain-hub", HUB_CRDS, controllers=True) as server,
    ):
        kubeconfig = str(server.write_kubeconfig(Path(work) / "hub"))
        hub = TestCluster(kubeconfig, None)
        ns = hub.namespace("drain")
        orphans, live = seed_backlog(hub, ns)
        # The Job's arguments, pointed at this hub and kept to this namespace (the lock too).
        # --min-age 0s: these orphans were made a moment ago; a rollout's backlog is older.
        # The deletion record as the Job keeps it, in a directory here instead of its claim.
        record = Path(work) / "deletions"
        record.mkdir()
        args = [
            *(
                a
                for a in shipped
                if not a.startswith(("--hub-kubeconfig", "--upstream-", "--record-deletions"))
            ),
            *("--hub-kubeconfig", kubeconfig, "--namespace", ns, "--lock-namespace", ns),
            f"--record-deletions={record}",
            *("--min-age", "0s", "--sweep", "companions", "--sweep", "bindings"),
        ]
        load_before = loadavg()
        started = time.monotonic()
        done = subprocess.run(
            [gcjob_bin(), *args], capture_output=True, text=True, env=clean_env(), check=False
        )
        took = time.monotonic() - started
        records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        summary: dict[str, Any] = records[-1] if records else {}
        # Gone: deleted, or terminating (nothing here removes Karmada's finalizer from a
        # binding: the hub's controllers are Kubernetes', not Karmada's).
        left = [o for o in orphans if not hub.gone(o[0], ns, o[1])]
        live_gone = [o for o in live if not hub.present(o[0], ns, o[1])]
        now_live = [hub.get(kind, ns, name) for kind, name in live]
        live_marked = [
            o for o in now_live if o and ORPHANED_LABEL in (o["metadata"].get("labels") or {})
        ]
        result = {
            "machine": machine(),
            "gcjob": gcjob_commit(),
            "servers": server_versions(server),
            "args": args,
            "exit_code": done.returncode,
            "wall_seconds": round(took, 1),
            "load_before": load_before,
            "load_after": loadavg(),
            "orphans": len(orphans),
            "live": len(live),
            "orphans_left": len(left),
            "live_deleted": len(live_gone),
            "live_marked": len(live_marked),
            "drain": summary.get("drain"),
            "totals": summary.get("totals"),
            "exit_reason": summary.get("exit_reason"),
            "stderr_tail": done.stderr.splitlines()[-5:],
        }
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "args")}, indent=2))
    sys.exit(0)


if __name__ == "__main__":
    main()
