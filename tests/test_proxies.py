"""gcjob.urls.proxy_route: the one choice of a proxy for every HTTP client gcjob makes, per URL
as Go's net/http makes it (golang.org/x/net/http/httpproxy; the cases below are its own
tests'), and never a credential in cleartext to a proxy (issue 46, finding 6)."""

from __future__ import annotations

import base64
import ipaddress
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.publish import metrics, webhook
from gcjob.urls import (
    ProxyEnv,
    ProxyRefused,
    proxy_authorization,
    proxy_env,
    proxy_route,
    without_userinfo,
)
from testbed.forwardproxy import ForwardProxy
from tests.publish.test_metrics import summary as metrics_summary
from tests.publish.test_webhook import summary as webhook_summary

# httpproxy's TestProxyForURL: (config, request URL, the proxy chosen).
GO_PROXY_FOR_URL = [
    (ProxyEnv(http="127.0.0.1:8080"), "http://example.com", "http://127.0.0.1:8080"),
    (
        ProxyEnv(http="cache.corp.example.com:1234"),
        "http://example.com",
        "http://cache.corp.example.com:1234",
    ),
    (
        ProxyEnv(http="cache.corp.example.com"),
        "http://example.com",
        "http://cache.corp.example.com",
    ),
    (ProxyEnv(http="localhost"), "http://example.com", "http://localhost"),  # a proxy named so
    (
        ProxyEnv(http="https://cache.corp.example.com"),
        "http://example.com",
        "https://cache.corp.example.com",
    ),
    (ProxyEnv(http="http://127.0.0.1:8080"), "http://example.com", "http://127.0.0.1:8080"),
    (ProxyEnv(http="https://127.0.0.1:8080"), "http://example.com", "https://127.0.0.1:8080"),
    (ProxyEnv(http="socks5://127.0.0.1"), "http://example.com", "socks5://127.0.0.1"),
    (ProxyEnv(http="foo://host"), "http://example.com", "foo://host"),  # kept, refused on use
    # HTTP_PROXY for http, HTTPS_PROXY for https, and never the other way.
    (
        ProxyEnv(http="http.proxy.tld", https="secure.proxy.tld"),
        "http://insecure.tld/",
        "http://http.proxy.tld",
    ),
    (
        ProxyEnv(http="http.proxy.tld", https="secure.proxy.tld"),
        "https://secure.tld/",
        "http://secure.proxy.tld",
    ),
    (
        ProxyEnv(http="http.proxy.tld", https="https://secure.proxy.tld"),
        "https://secure.tld/",
        "https://secure.proxy.tld",
    ),
    (ProxyEnv(http="http.proxy.tld"), "https://secure.tld/", None),
    (ProxyEnv(http="http.proxy.tld"), "ftp://insecure.tld/", None),
    # HTTPS_PROXY is still used in a CGI process (Go's historical behaviour).
    (
        ProxyEnv(https="https://secure.proxy.tld", cgi=True),
        "https://secure.tld/",
        "https://secure.proxy.tld",
    ),
    (ProxyEnv(), "http://example.com", None),
    (ProxyEnv(no_proxy="example.com", http="proxy"), "http://example.com/", None),
    (ProxyEnv(no_proxy=".example.com", http="proxy"), "http://example.com/", "http://proxy"),
    (ProxyEnv(no_proxy="ample.com", http="proxy"), "http://example.com/", "http://proxy"),
    (ProxyEnv(no_proxy="example.com", http="proxy"), "http://foo.example.com/", None),
    (ProxyEnv(no_proxy=".foo.com", http="proxy"), "http://example.com/", "http://proxy"),
    (ProxyEnv(no_proxy=".示例.com", http="proxy"), "http://www.示例.com", None),
    (ProxyEnv(no_proxy="xn--fsq092h.com", http="proxy"), "http://www.示例.com", None),
    (ProxyEnv(no_proxy="示例.com", http="proxy"), "http://www.xn--fsq092h.com", None),
]


@pytest.mark.parametrize(("env", "url", "want"), GO_PROXY_FOR_URL)
def test_the_proxy_is_chosen_per_url_as_go_chooses_it(
    env: ProxyEnv, url: str, want: str | None
) -> None:
    assert proxy_route(url, env, credentials=False) == want


def test_http_proxy_is_refused_in_a_cgi_process() -> None:
    env = ProxyEnv(http="http://10.1.2.3:8080", cgi=True)
    with pytest.raises(ProxyRefused, match="CGI environment"):
        proxy_route("http://example.com", env, credentials=False)


# httpproxy's TestUseProxy: each host on port 80, against this NO_PROXY.
GO_NO_PROXY = (
    "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, "
    "10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, "
    "2002:db8:a::45/64"
)
GO_USE_PROXY = [
    ("localhost", False),  # never proxied: localhost and loopback
    ("127.0.0.1", False),
    ("127.0.0.2", False),
    ("[::1]", False),
    ("[::2]", True),  # not a loopback address
    ("192.168.1.1", False),  # matches exact IPv4
    ("192.168.1.2", True),  # ports do not match
    ("192.168.1.3", False),  # matches exact IPv4:port
    ("192.168.1.4", True),  # no match
    ("10.0.0.2", False),  # matches IPv4/CIDR
    ("[2001:db8::52:0:1]", False),  # matches exact IPv6
    ("[2001:db8::52:0:2]", True),  # no match (its port is 443)
    ("[2001:db8::52:0:3]", False),  # matches exact [IPv6]:port
    ("[2002:db8:a::123]", False),  # matches IPv6/CIDR
    ("[fe80::424b:c8be:1643:a1b6]", True),  # no match
    ("barbaz.net", True),  # does not match as .barbaz.net
    ("www.barbaz.net", False),  # does match as .barbaz.net
    ("foobar.com", False),  # does match as foobar.com
    ("www.foobar.com", False),  # match because NO_PROXY includes "foobar.com"
    ("foofoobar.com", True),  # not match as a part of foobar.com
    ("baz.com", True),  # not match as a part of barbaz.com
    ("localhost.net", True),  # not match as suffix of address
    ("local.localhost", True),  # not match as prefix as address
    ("barbarbaz.net", True),  # not match, wrong domain
    ("wildcard.io", True),  # does not match as *.wildcard.io
    ("nested.wildcard.io", False),  # match as *.wildcard.io
    ("awildcard.io", True),  # not a match because of '*'
]


@pytest.mark.parametrize(("host", "proxied"), GO_USE_PROXY)
def test_no_proxy_matches_hosts_as_go_matches_them(host: str, proxied: bool) -> None:
    url = f"http://{host}:80/"
    chosen = proxy_route(url, ProxyEnv(http="proxy", no_proxy=GO_NO_PROXY), credentials=False)
    assert (chosen is not None) is proxied
    # `*` matches every host (TestAllNoProxy).
    assert proxy_route(url, ProxyEnv(http="proxy", no_proxy="*"), credentials=False) is None


def test_a_no_proxy_entry_without_a_host_is_ignored() -> None:
    # TestInvalidNoProxy: ":1" names no host; nothing is exempted.
    env = ProxyEnv(http="proxy", no_proxy=":1")
    assert proxy_route("http://example.com/", env, credentials=False) == "http://proxy"


@pytest.mark.parametrize(
    ("environ", "want"),
    [
        # TestFromEnvironment, TestFromEnvironmentWithRequestMethod, ...LowerCase
        (
            {"HTTP_PROXY": "httpproxy", "HTTPS_PROXY": "httpsproxy", "NO_PROXY": "noproxy"},
            ProxyEnv("httpproxy", "httpsproxy", "noproxy"),
        ),
        (
            {"HTTP_PROXY": "h", "HTTPS_PROXY": "s", "NO_PROXY": "n", "REQUEST_METHOD": "PUT"},
            ProxyEnv("h", "s", "n", cgi=True),
        ),
        (
            {"http_proxy": "httpproxy", "https_proxy": "httpsproxy", "no_proxy": "noproxy"},
            ProxyEnv("httpproxy", "httpsproxy", "noproxy"),
        ),
        # The upper-case name first; an empty value is not set; ALL_PROXY is not Go's.
        ({"HTTPS_PROXY": "upper", "https_proxy": "lower"}, ProxyEnv(https="upper")),
        ({"HTTPS_PROXY": "", "https_proxy": "lower"}, ProxyEnv(https="lower")),
        ({"NO_PROXY": "a", "no_proxy": "b"}, ProxyEnv(no_proxy="a")),
        ({"ALL_PROXY": "all", "all_proxy": "all", "REQUEST_METHOD": ""}, ProxyEnv()),
    ],
)
def test_the_environment_is_read_as_go_reads_it(environ: dict[str, str], want: ProxyEnv) -> None:
    assert proxy_env(environ) == want


def test_the_issue_46_case_goes_straight_to_the_loopback_upstream() -> None:
    """HTTPS_PROXY set, the hub in NO_PROXY, an http:// loopback upstream template: the
    upstream's requests go to it directly (they went to the proxy, token and all); the hub's
    too; an https:// server elsewhere goes through the proxy's CONNECT tunnel."""
    env = proxy_env({"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "hub.corp"})
    upstream = "http://127.0.0.1:8001/clusters/p-1/apis"
    assert proxy_route(upstream, env, credentials=True) is None
    assert proxy_route("https://hub.corp:6443/apis", env, credentials=True) is None
    chosen = proxy_route("https://milo.corp/apis", env, credentials=True)
    assert chosen == "http://proxy.corp:3128"


@pytest.mark.parametrize("credentials", [True, False])
def test_an_http_request_with_a_credential_through_a_proxy_is_refused(credentials: bool) -> None:
    env = ProxyEnv(http="http://user:pw@proxy.corp:3128")
    url = "http://hub.corp:8080/apis"
    if not credentials:  # what carries no credential may go: the proxy reads nothing secret
        assert proxy_route(url, env, credentials=False) == "http://user:pw@proxy.corp:3128"
        return
    with pytest.raises(ProxyRefused) as refused:
        proxy_route(url, env, credentials=True)
    message = str(refused.value)
    assert "cleartext" in message and "proxy.corp:3128" in message
    assert "pw" not in message and "user" not in message and "\n" not in message


def test_a_kubeconfig_proxy_url_is_used_for_every_url_as_kubectl_uses_it() -> None:
    env = ProxyEnv(no_proxy="*")
    explicit = "http://proxy.corp:3128"
    assert proxy_route("https://127.0.0.1:6443", env, credentials=True, explicit=explicit) == (
        explicit
    )
    with pytest.raises(ProxyRefused, match="cleartext"):
        proxy_route("http://127.0.0.1:8080", env, credentials=True, explicit=explicit)


# -- a proxy's own credentials (issue 46, the audit of finding 6) ----------------------------


@pytest.mark.parametrize(
    ("proxy", "pair", "bare"),
    [
        ("http://user:pa55-w0rd@proxy.corp:3128", b"user:pa55-w0rd", "http://proxy.corp:3128"),
        # Percent-decoded to bytes, as Go's url.Parse; never latin-1, which has no `€`.
        ("http://user:p%E2%82%ACss@proxy:3128", "user:p€ss".encode(), "http://proxy:3128"),
        ("http://user:pä€ss@proxy", "user:pä€ss".encode(), "http://proxy"),  # written as is
        ("http://u%40corp:p%FFw@proxy", b"u@corp:p\xffw", "http://proxy"),  # a byte as it is
        ("user@proxy.corp:3128", b"user:", "proxy.corp:3128"),  # Go: no password is ""
        ("https://a:b:c@p.corp/x?y", b"a:b:c", "https://p.corp/x?y"),
        ("http://proxy.corp:3128", None, "http://proxy.corp:3128"),
    ],
)
def test_a_proxys_credentials_are_sent_as_go_sends_them(
    proxy: str, pair: bytes | None, bare: str
) -> None:
    want = None if pair is None else "Basic " + base64.b64encode(pair).decode()
    assert proxy_authorization(proxy) == want
    assert without_userinfo(proxy) == bare


# A password that latin-1 cannot hold (`€`) and a byte that is no UTF-8 (`%FF`): urllib3 and
# requests raised UnicodeEncodeError, urllib sent U+FFFD's bytes in place of the byte.
ODD_PASSWORD = "user:p%E2%82%AC%FFss"
ODD_PAIR = "user:p€".encode() + b"\xffss"


def test_a_proxy_password_outside_latin_1_reaches_the_webhooks_proxy_as_go_sends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The webhook's post raised UnicodeEncodeError (not a RequestException: the run ended,
    exit 70). Now the proxy is asked for its tunnel with Go's Proxy-Authorization; the
    tunnel's failure (no server behind this name) is a warning, as any failed post."""
    proxy = ForwardProxy(hosts={"hooks.gcjob.test": "127.0.0.1"})
    try:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("://", f"://{ODD_PASSWORD}@"))
        monkeypatch.delenv("https_proxy", raising=False)
        url = "https://hooks.gcjob.test:9/services/T0/B0/secret-token"
        assert webhook.notify(url, webhook_summary(), []) is False
    finally:
        proxy.stop()
    [connect] = proxy.requests
    assert connect.method == "CONNECT" and connect.target == "hooks.gcjob.test:9"
    assert connect.headers["proxy-authorization"] == "Basic " + base64.b64encode(ODD_PAIR).decode()


def test_a_proxy_password_outside_latin_1_reaches_the_pushgateways_proxy_as_go_sends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = ForwardProxy(hosts={"pushgateway.gcjob.test": "127.0.0.1"})
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("://", f"://{ODD_PASSWORD}@"))
        monkeypatch.delenv("http_proxy", raising=False)
        pushed = metrics.push(
            "http://pushgateway.gcjob.test:9",  # nothing there: the proxy answers 502
            metrics_summary(),
            duration=1.0,
            finished=1_700_000_000.0,
        )
    finally:
        proxy.stop()
    assert pushed is False
    [put] = proxy.requests
    assert put.target.startswith("http://pushgateway.gcjob.test:9/metrics/job/gcjob")
    assert put.headers["proxy-authorization"] == "Basic " + base64.b64encode(ODD_PAIR).decode()


# -- properties ------------------------------------------------------------------------------

PROXIES = st.sampled_from(
    ["", "proxy.corp:3128", "http://proxy.corp", "https://p.corp:443", "socks5://s", "10.0.0.9"]
)
NO_PROXIES = st.lists(
    st.sampled_from(
        ["", "*", "corp", ".corp", "*.corp", "10.0.0.0/8", "::1", "127.0.0.1:80", "hub:6443"]
    ),
    max_size=4,
).map(",".join)
ENVS = st.builds(ProxyEnv, PROXIES, PROXIES, NO_PROXIES, st.booleans())
LOOPBACKS = st.one_of(
    st.just("localhost"),
    st.just("[::1]"),
    st.ip_addresses(v=4, network="127.0.0.0/8").map(str),
    st.ip_addresses(v=4, network="127.0.0.0/8").map(lambda ip: f"[::ffff:{ip}]"),
)
HOSTS = st.one_of(
    LOOPBACKS,
    st.sampled_from(["hub", "hub.corp", "milo.corp", "corp", "10.1.2.3", "[2001:db8::1]"]),
)
PORTS = st.sampled_from(["", ":80", ":443", ":6443"])


@given(ENVS, st.sampled_from(["http", "https"]), LOOPBACKS, PORTS)
def test_a_loopback_url_is_never_proxied_whatever_the_environment(
    env: ProxyEnv, scheme: str, host: str, port: str
) -> None:
    url = f"{scheme}://{host}{port}/apis"
    if env.cgi and scheme == "http" and env.http:  # Go refuses HTTP_PROXY there, before all
        with pytest.raises(ProxyRefused, match="CGI"):
            proxy_route(url, env, credentials=True)
        return
    assert proxy_route(url, env, credentials=True) is None


@given(
    ENVS,
    st.sampled_from(["http", "https"]),
    HOSTS,
    PORTS,
    st.booleans(),
    st.sampled_from([None, "http://proxy.corp:3128", "https://p.corp"]),
)
def test_a_credential_never_goes_in_cleartext_to_a_proxy(
    env: ProxyEnv, scheme: str, host: str, port: str, credentials: bool, explicit: str | None
) -> None:
    url = f"{scheme}://{host}{port}/apis"
    try:
        chosen = proxy_route(url, env, credentials=credentials, explicit=explicit)
    except ProxyRefused:
        return  # not sent at all
    if chosen is not None and credentials:
        assert scheme == "https"  # a CONNECT tunnel: the proxy cannot read it
    if chosen is not None and explicit is None:  # the environment's proxy, for this scheme
        value = env.https if scheme == "https" else env.http
        assert chosen in (value, "http://" + value)
        hostname = urlsplit(url).hostname or ""
        assert "*" not in env.no_proxy.split(",")
        try:
            assert not ipaddress.ip_address(hostname).is_loopback
        except ValueError:
            assert hostname != "localhost"
