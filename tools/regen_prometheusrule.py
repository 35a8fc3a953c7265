"""Write cronjobs/monitoring/prometheusrule.yaml: the Prometheus Operator's PrometheusRule
holding the groups of cronjobs/monitoring/gcjob-alerts.yaml, which is the source (edit that,
then run this). tests/test_alert_rules.py fails when they drift.

    .venv/bin/python tools/regen_prometheusrule.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MONITORING = Path(__file__).resolve().parent.parent / "cronjobs" / "monitoring"
HEADER = (
    "# Generated from gcjob-alerts.yaml by tools/regen_prometheusrule.py: edit that file, then\n"
    "# run the tool. Add the label your Prometheus's ruleSelector matches (kube-prometheus-stack:\n"
    "# release: <its release name>) before applying it.\n"
)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (an expr over several lines) as literal blocks, as in the source."""


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def prometheus_rule(groups: list[dict[str, Any]]) -> str:
    manifest = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gcjob", "labels": {"app.kubernetes.io/name": "gcjob"}},
        "spec": {"groups": groups},
    }
    return HEADER + yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, width=100)


def main() -> None:
    source = yaml.safe_load((MONITORING / "gcjob-alerts.yaml").read_text())
    (MONITORING / "prometheusrule.yaml").write_text(prometheus_rule(source["groups"]))


if __name__ == "__main__":
    main()
