"""gcjob/kube/connect.py: the Project API's URL derived from Milo's control-plane template."""

from __future__ import annotations

import pytest

from gcjob.kube.connect import project_api_from_template

MILO = "https://milo.example.com/apis/resourcemanager.miloapis.com/v1alpha1/projects/{cluster}/control-plane"


@pytest.mark.parametrize(
    ("template", "api"),
    [
        (MILO, "https://milo.example.com"),
        (MILO + "/", "https://milo.example.com"),
        (
            "https://milo.example.com/prefix" + MILO[len("https://milo.example.com") :],
            "https://milo.example.com/prefix",
        ),
        ("https://k8s.example.com/clusters/{cluster}", None),
        (MILO + "/extra", None),
        (None, None),
    ],
)
def test_only_milos_control_plane_path_names_a_project_api(template, api):
    assert project_api_from_template(template) == api
