"""gcjob/sweeps/copies/explain.py, against the real hub and a Milo of our own: explain reads
the target's group as the sweep gathers it and reaches the sweep's conclusion for a copy and
its anchor, action, reason and detail (one plan)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gcjob.cli import cli
from testbed import schemas
from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
from testbed.milo import template
from testbed.report import run_gcjob
from tests.e2e.test_copies_e2e import args, milo, milo_kubeconfig, served  # noqa: F401
from tests.sweeps.copies.test_sweep import gone_and_live_groups


def test_explain_says_what_the_sweep_reports_of_a_gone_projects_copy_and_anchor(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    ns, anchor = gone_and_live_groups(hub, upstream, milo)
    swept = run_gcjob(*args(gcjob_hub_args, milo_kubeconfig, milo, ns))
    reported = {i["name"]: (i["action"], i["reason"], i["detail"]) for i in swept.items}
    common = [
        *("--hub-kubeconfig", hub_kubeconfig, "--upstream-kubeconfig", milo_kubeconfig),
        *("--upstream-server-template", template(milo), "--min-age", "0s", "--grace", "0s"),
        *("--namespace", ns, "--output", "json"),
    ]
    for target, name in ((f"connector/{ns}/web", "web"), (f"cm/{ns}/{anchor}", anchor)):
        result = CliRunner().invoke(cli, ["explain", target, *common], standalone_mode=False)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        doc = json.loads(result.stdout)
        schemas.EXPLAIN.validate(doc)
        verdict = doc["verdict"]
        assert doc["target"]["sweep"] == "copies"
        assert (verdict["action"], verdict["reason"], verdict["detail"]) == reported[name], target
    assert reported["web"][:2] == ("would-delete", "project-gone")
