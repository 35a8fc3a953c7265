"""Kubeconfig files as hostile input (issue 20 item 1): a duplicate name is refused as kubectl
refuses it, and any file is either a usable configuration or one ConfigError line (exit 2).

Generated files never hold `exec`, `auth-provider` or file references: building a client must
not run a command or read a file the test did not write. Nothing is contacted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient
from kubernetes.config import incluster_config

from gcjob.kube.connect import MAX_KUBECONFIG_BYTES, UpstreamResolver, hub_client
from gcjob.kube.errors import ConfigError, UnknownCluster


@pytest.fixture(autouse=True)
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "no-token"))


def config_with(
    contexts: list[tuple[str, str]], clusters: list[str], users: list[str], current: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c, "cluster": {"server": f"https://{c}.invalid"}} for c in clusters],
        "users": [{"name": u, "user": {"token": f"tok-{u}"}} for u in users],
        "contexts": [{"name": n, "context": {"cluster": c, "user": users[0]}} for n, c in contexts],
        "current-context": current,
    }


def write(path: Path, config: Any) -> str:
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("listed", ["contexts", "clusters", "users"])
def test_a_duplicate_name_is_refused_naming_the_file_and_the_name(
    tmp_path: Path, listed: str
) -> None:
    config = config_with(
        [("single", "other"), ("hub", "real")], ["other", "real"], ["admin", "ops"], "hub"
    )
    first = config[listed][0]
    config[listed].append({**first})  # the same name again, as in the issue
    path = write(tmp_path / "dup.yaml", config)
    for load in (lambda: hub_client(path, None), lambda: UpstreamResolver(path, None)):
        with pytest.raises(ConfigError) as raised:
            load()
        message = str(raised.value)
        assert "\n" not in message
        assert path in message
        assert repr(first["name"]) in message and "duplicate" in message


def test_two_contexts_named_single_never_pick_the_first(tmp_path: Path) -> None:
    """The issue's file: the first `single` points at another API server."""
    config = config_with(
        [("single", "elsewhere"), ("single", "upstream")],
        ["elsewhere", "upstream"],
        ["u"],
        "single",
    )
    path = write(tmp_path / "upstreams.yaml", config)
    with pytest.raises(ConfigError, match="duplicate context name 'single'"):
        UpstreamResolver(path, None)


def test_the_same_name_in_two_lists_is_no_duplicate(tmp_path: Path) -> None:
    """kubectl allows a context, a cluster and a user that share one name."""
    config = config_with([("single", "single")], ["single"], ["single"], "single")
    resolver = UpstreamResolver(write(tmp_path / "kc.yaml", config), None)
    assert resolver.client_for("single").server == "https://single.invalid"


def test_a_duplicate_in_any_file_of_kubeconfig_env_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = write(tmp_path / "a.yaml", config_with([("hub", "c")], ["c"], ["u"], "hub"))
    bad = config_with([("x", "c")], ["c"], ["u"], "x")
    bad["users"].append({"name": "u", "user": {"token": "other"}})
    bad_path = write(tmp_path / "b.yaml", bad)
    monkeypatch.setenv("KUBECONFIG", f"{good}:{bad_path}")
    with pytest.raises(ConfigError, match="duplicate user name 'u'") as raised:
        hub_client(None, None)
    assert bad_path in str(raised.value)


@pytest.mark.parametrize("listed", ["contexts", "clusters", "users"])
def test_a_name_in_two_files_of_a_path_list_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    """The client merges a path list first-wins: `single` in a.yaml and b.yaml went to
    a.yaml's server, whatever b.yaml says (second audit F5)."""
    names = {"contexts": ("single", "hub"), "clusters": ("c", "d"), "users": ("u", "v")}
    shared = {"contexts": "single", "clusters": "c", "users": "u"}[listed]

    def one(suffix: str) -> dict[str, Any]:
        context, cluster, user = (
            n if k == listed else f"{n}-{suffix}" for k, (n, _) in names.items()
        )
        return config_with([(context, cluster)], [cluster], [user], context)

    first = write(tmp_path / "a.yaml", one("a"))
    second = write(tmp_path / "b.yaml", one("b"))
    for load in (
        lambda: UpstreamResolver(f"{first}:{second}", None),
        lambda: hub_client(f"{first}:{second}", None),
    ):
        with pytest.raises(ConfigError, match=f"{listed} name '{shared}' is in") as raised:
            load()
        assert second in str(raised.value) and first in str(raised.value)
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    with pytest.raises(ConfigError, match="is in"):
        hub_client(None, None)


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"# " + b"x" * MAX_KUBECONFIG_BYTES + b"\n")
    with pytest.raises(ConfigError, match="larger than"):
        hub_client(str(path), None)


def test_a_yaml_error_never_quotes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("users:\n- name: u\n  user: {token: s3cr3t-token\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        hub_client(str(path), None)
    assert "s3cr3t" not in str(raised.value) and "line" in str(raised.value)


# -- generated files -------------------------------------------------------------------------

NAMES = st.sampled_from(["single", "hub", "proj-a", "a/b", "", " ", "ü", "x" * 300, "0"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20)
)
ODD = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=5), SCALARS, max_size=3),
)
SERVERS = st.one_of(
    st.sampled_from(["https://127.0.0.1:1", "http://[::1]:1", "https://h.invalid", "", "::", "x"]),
    ODD,
)


@st.composite
def entries(draw: st.DrawFn, body: str) -> Any:
    name = draw(st.one_of(NAMES, ODD))
    if body == "cluster":
        inner: Any = st.fixed_dictionaries(
            {},
            optional={
                "server": SERVERS,
                "insecure-skip-tls-verify": st.one_of(st.booleans(), ODD),
                "certificate-authority-data": st.one_of(st.just("bm90IGEgY2VydA=="), ODD),
                "tls-server-name": ODD,
            },
        )
    elif body == "user":
        inner = st.fixed_dictionaries(
            {},
            optional={
                "token": st.one_of(st.text(max_size=30), ODD),
                "username": ODD,
                "password": ODD,
                "client-key-data": st.one_of(st.just("bm90IGEga2V5"), ODD),
                "client-certificate-data": st.one_of(st.just("bm90IGEgY2VydA=="), ODD),
            },
        )
    else:
        inner = st.fixed_dictionaries(
            {}, optional={"cluster": st.one_of(NAMES, ODD), "user": st.one_of(NAMES, ODD)}
        )
    entry = draw(
        st.fixed_dictionaries({}, optional={"name": st.just(name), body: st.one_of(inner, ODD)})
    )
    return draw(st.one_of(st.just(entry), ODD)) if draw(st.integers(0, 9)) == 0 else entry


def _named_list(body: str) -> Any:
    return st.one_of(st.lists(entries(body), max_size=4), ODD)


KUBECONFIGS = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.one_of(st.just("v1"), ODD),
        "kind": st.one_of(st.just("Config"), ODD),
        "clusters": _named_list("cluster"),
        "users": _named_list("user"),
        "contexts": _named_list("context"),
        "current-context": st.one_of(NAMES, ODD),
    },
)


def _duplicated(config: Any) -> set[str]:
    """The names given twice in one list, as gcjob must refuse them."""
    found: set[str] = set()
    if not isinstance(config, dict):
        return found
    for key in ("clusters", "users", "contexts"):
        entries = config.get(key)
        if not isinstance(entries, list):
            continue
        names = [e.get("name") for e in entries if isinstance(e, dict)]
        found |= {n for n in names if isinstance(n, str) and n and names.count(n) > 1}
    return found


def _file_bytes(draw: st.DrawFn) -> tuple[bytes, Any]:
    kind = draw(st.integers(0, 9))
    if kind == 0:  # raw bytes: non-UTF-8, binary, truncated YAML
        return draw(st.binary(max_size=200)), None
    if kind == 1:  # a document that is no mapping
        document: Any = draw(ODD)
    else:
        document = draw(KUBECONFIGS)
    text = yaml.safe_dump(document, allow_unicode=draw(st.booleans()))
    return text.encode("utf-8"), document


@st.composite
def kubeconfig_files(draw: st.DrawFn) -> tuple[bytes, Any]:
    return _file_bytes(draw)


def _is_one_line_config_error(error: ConfigError, path: str) -> bool:
    message = str(error)
    return bool(message) and "\n" not in message and path in message


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kubeconfig_files())
def test_any_kubeconfig_is_usable_or_one_config_error_line(
    tmp_path: Path, generated: tuple[bytes, Any]
) -> None:
    raw, document = generated
    path = tmp_path / "generated.yaml"
    path.write_bytes(raw)
    duplicates = _duplicated(document)
    for context in (None, "single"):
        try:
            client = hub_client(str(path), context)
        except ConfigError as error:
            assert _is_one_line_config_error(error, str(path)), str(error)
        else:
            assert isinstance(client, ApiClient)
            assert not duplicates, f"a file with duplicate names {duplicates} was used"
    try:
        resolver = UpstreamResolver(str(path), None)
    except ConfigError as error:
        assert _is_one_line_config_error(error, str(path)), str(error)
        return
    assert not duplicates, f"a file with duplicate names {duplicates} was used"
    for cluster in ("single", "hub", "proj-a", "a/b"):
        try:
            resolver.client_for(cluster)
        except (ConfigError, UnknownCluster) as error:
            assert "\n" not in str(error)
