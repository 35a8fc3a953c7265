"""Where gcjob may send something: checks of the URLs it is given, before the run starts, and
which proxy a request to a URL goes through (`proxy_route`), and how a proxy's own credentials
are sent (`proxy_authorization`) and kept out of every output (`keep_proxy_credentials`)."""

from __future__ import annotations

import base64
import encodings.idna
import functools
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, unquote_to_bytes, urlsplit

from gcjob.redact import keep_authorization, keep_secret

_LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def project_api_problem(url: str) -> str | None:
    """Why the Project API may not be `url`: it receives the upstream credentials, so
    https only (http to loopback), no userinfo, no path beyond the server's prefix query."""
    problem = outbound_problem(url, secret_in_url=False)
    if problem is not None:
        return problem
    parts = urlsplit(url)
    if parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        return "must be https:// (http:// would send the upstream token in cleartext)"
    if parts.query or parts.fragment:
        return "must not have a query or fragment"
    if "{" in url or "}" in url:
        # One server answers for every project: a template would make every project
        # not-answered, and nothing ever proven gone.
        return (
            "is a template: it must be the one server of Milo's Project API (the part of "
            "--upstream-server-template before /apis/resourcemanager.miloapis.com/...), "
            "without {cluster}"
        )
    return None


def outbound_problem(url: str, *, secret_in_url: bool) -> str | None:
    """Why gcjob must not send to `url`, or None. Never echoes the URL (it may hold a secret).

    `user:password@` is refused everywhere: it would reach a log line the moment a request
    failed. `secret_in_url`: the URL itself is a credential (a Slack webhook's path), so plain
    `http://` is allowed to loopback only."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port that is no number
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("https", "http"):
        return "must be an http(s) URL"
    if "@" in parts.netloc:
        return "must not carry credentials (user:password@)"
    if not parts.hostname:
        return "has no host"
    if secret_in_url and parts.scheme == "http" and not is_loopback(parts.hostname):
        return "must be https:// (http:// would send the URL, a credential, in cleartext)"
    return None


# -- Which proxy a request goes through ----------------------------------------------------
#
# One rule for every HTTP client gcjob makes (the hub's, each upstream cluster's, the
# Project API's, the Pushgateway's, the webhook's), chosen per URL as Go's net/http chooses
# (golang.org/x/net/http/httpproxy, what kubectl and every Go client of a cluster use):
# HTTPS_PROXY for an https:// URL, HTTP_PROXY for an http:// one, each variable's upper-case
# name first, then its lower-case one (the first that is not empty); NO_PROXY matched against
# the URL's host and port; localhost and loopback addresses never through a proxy. ALL_PROXY
# is not read (Go does not read it). A kubeconfig's `proxy-url` is that cluster's proxy for
# every URL, NO_PROXY and loopback included, as kubectl uses it.

_DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080"}
_PROXY_SCHEMES = frozenset(_DEFAULT_PORTS)
_CGI_REFUSAL = "refusing to use HTTP_PROXY value in CGI environment; see golang.org/s/cgihttpproxy"


class ProxyRefused(ValueError):
    """A request that must not be sent the way the environment says: its one-line why."""


@dataclass(frozen=True, slots=True)
class ProxyEnv:
    """The proxy settings as Go's httpproxy.FromEnvironment reads them. `cgi`: the process
    runs as a CGI handler (REQUEST_METHOD is set), where HTTP_PROXY may be a client's
    `Proxy:` header: it is refused."""

    http: str = ""
    https: str = ""
    no_proxy: str = ""
    cgi: bool = False


def proxy_env(environ: Mapping[str, str]) -> ProxyEnv:
    """The proxy settings of `environ` (os.environ), as FromEnvironment: `HTTP_PROXY` before
    `http_proxy`, and so on; an empty value is not set."""

    def first(*names: str) -> str:
        return next((environ[name] for name in names if environ.get(name)), "")

    return ProxyEnv(
        http=first("HTTP_PROXY", "http_proxy"),
        https=first("HTTPS_PROXY", "https_proxy"),
        no_proxy=first("NO_PROXY", "no_proxy"),
        cgi=bool(environ.get("REQUEST_METHOD")),
    )


def proxy_route(
    url: str, env: ProxyEnv, *, credentials: bool, explicit: str | None = None
) -> str | None:
    """The proxy a request to `url` goes through (None: straight to its server); `explicit`
    (a kubeconfig's `proxy-url`) is used for every URL when given. `credentials`: the request
    carries a credential (a bearer token, basic auth, a cookie; a webhook URL is one itself).

    Raises ProxyRefused when the request must not be sent: a credential in cleartext to a
    proxy (an http:// URL through one: the proxy reads the whole request; an https:// URL
    goes through a CONNECT tunnel, which it cannot read), or HTTP_PROXY in a CGI process.
    Messages never echo a URL or the proxy's userinfo."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        raise ProxyRefused("not a valid URL: not sent") from None
    proxy = explicit or _env_proxy(scheme, host, port, env)
    if proxy is not None and credentials and scheme == "http":
        raise ProxyRefused(
            f"refusing to send credentials in cleartext to the proxy {_proxy_host(proxy)} "
            f"(an http:// URL of {_shown_host(host)}): use https://, which goes through the "
            "proxy's CONNECT tunnel, or reach the server without that proxy"
        )
    return proxy


def proxy_authorization(proxy: str) -> str | None:
    """The `Proxy-Authorization` value for `proxy`'s `user:password@` (None without one), as
    Go's net/http makes it: Basic, the base64 of `user:password` percent-decoded to bytes (a
    character written as it is goes as UTF-8; `%FF` as the byte), never latin-1, which cannot
    hold `€` (urllib3's and requests' own encoding, issue 46: a UnicodeEncodeError ended the
    run). A user without a password is `user:`, as in Go."""
    userinfo = _userinfo(proxy)
    if userinfo is None:
        return None
    user, _, password = userinfo.partition(":")
    pair = unquote_to_bytes(user) + b":" + unquote_to_bytes(password)
    return "Basic " + base64.b64encode(pair).decode("ascii")


def without_userinfo(proxy: str) -> str:
    """`proxy` with its `user:password@` taken out: what a client is given, with the
    credentials sent as `proxy_authorization` says, not by the client's own encoding."""
    userinfo = _userinfo(proxy)
    if userinfo is None:
        return proxy
    head, sep, rest = proxy.partition("://")
    if not sep:
        head, rest = "", proxy
    return head + sep + rest[len(userinfo) + 1 :]


def keep_proxy_credentials(*proxies: str | None) -> None:
    """Redact by value, from every output from now on (redact.keep_secret), the credentials
    of each proxy URL (a `*_PROXY` value, a kubeconfig's `proxy-url`): its userinfo and
    password as written and percent-decoded, and its Proxy-Authorization value. Done at start
    for every proxy a request may go through, used or not: a proxy that echoes its own
    credentials in an error must not put them in the report."""
    for proxy in proxies:
        userinfo = _userinfo(proxy or "")
        if userinfo is None:
            continue
        password = userinfo.partition(":")[2]
        for value in (userinfo, password, unquote(userinfo), unquote(password)):
            keep_secret(value)
        keep_authorization(proxy_authorization(proxy or ""))


def _userinfo(proxy: str) -> str | None:
    """The `user:password` of a proxy URL, as written (a value without a scheme is taken as
    http://, as Go takes it); None without an `@`. Read as text, so that a proxy URL that does
    not parse (a bad port) still has its credentials kept."""
    _, sep, rest = proxy.partition("://")
    authority = rest if sep else proxy
    for end in "/?#":
        authority = authority.partition(end)[0]
    userinfo, at, _ = authority.rpartition("@")
    return userinfo if at else None


def _env_proxy(scheme: str, host: str, port: int | None, env: ProxyEnv) -> str | None:
    """Go's proxyForURL."""
    rules = _rules(env)
    if scheme == "https":
        proxy = rules.https
    elif scheme == "http":
        proxy = rules.http
        if proxy is not None and env.cgi:
            raise ProxyRefused(_CGI_REFUSAL)
    else:
        return None
    if proxy is None:
        return None
    shown_port = str(port) if port is not None else _DEFAULT_PORTS.get(scheme, "")
    return proxy if rules.use_proxy(_ascii(host), shown_port) else None


def _proxy_host(proxy: str) -> str:
    """The proxy as a message may name it: its host and port, never its userinfo."""
    try:
        parts = urlsplit(proxy)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an unparsable proxy URL)"
    return _shown_host(host) + (f":{port}" if port is not None else "")


def _shown_host(host: str) -> str:
    return " ".join(host.split())[:100] or "(no host)"


IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class _Domain:
    """A NO_PROXY name: `suffix` starts with a dot; `exact` also matches the name itself
    (`foo.com` matches foo.com and bar.foo.com; `.foo.com` and `*.foo.com` only bar.foo.com)."""

    suffix: str
    port: str
    exact: bool

    def matches(self, host: str, port: str) -> bool:
        named = host.endswith(self.suffix) or (self.exact and host == self.suffix[1:])
        return named and self.port in ("", port)


@dataclass(frozen=True, slots=True)
class _Rules:
    http: str | None
    https: str | None
    everything: bool  # NO_PROXY `*`
    networks: tuple[IpNetwork, ...]
    addresses: tuple[tuple[IpAddress, str], ...]  # an address, and its port ("" any)
    domains: tuple[_Domain, ...]

    def use_proxy(self, host: str, port: str) -> bool:
        """Go's useProxy: False for localhost, a loopback address, and what NO_PROXY names."""
        if host in _LOOPBACK_NAMES:  # Go: "localhost" only; its absolute form is the same name
            return False
        address = _ip(host)
        if address is not None and address.is_loopback:
            return False
        if self.everything:
            return False
        if address is not None:
            if any(address in network for network in self.networks):
                return False
            if any(address == ip and want in ("", port) for ip, want in self.addresses):
                return False
        return not any(domain.matches(host, port) for domain in self.domains)


@functools.lru_cache(maxsize=8)
def _rules(env: ProxyEnv) -> _Rules:
    """Go's config.init: the proxies parsed, NO_PROXY's entries sorted into matchers."""
    networks: list[IpNetwork] = []
    addresses: list[tuple[IpAddress, str]] = []
    domains: list[_Domain] = []
    http, https = _parse_proxy(env.http), _parse_proxy(env.https)
    for entry in env.no_proxy.split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return _Rules(http, https, True, (), (), ())
        network = _cidr(entry)
        if network is not None:
            networks.append(network)
            continue
        split = _split_host_port(entry)
        if split is not None:
            host, port = split
            if not host:
                continue  # no host part: malformed, ignored
            if host[0] == "[" and host[-1] == "]":
                host = host[1:-1]
        else:
            host, port = entry, ""
        address = _ip(host)
        if address is not None:
            addresses.append((address, port))
            continue
        if not host:
            continue
        if host.startswith("*."):
            host = host[1:]
        exact = not host.startswith(".")
        suffix = _ascii(host if not exact else "." + host)
        domains.append(_Domain(suffix, port, exact))
    return _Rules(http, https, False, tuple(networks), tuple(addresses), tuple(domains))


def _parse_proxy(value: str) -> str | None:
    """Go's parseProxy: a value without a scheme it knows is taken as `http://` + value
    (`proxy.corp:3128`, `localhost`); one that is no URL at all is no proxy, as in Go."""
    if not value:
        return None
    scheme, colon, _ = value.partition(":")
    known = colon and scheme.lower() in _PROXY_SCHEMES
    if not known and "://" not in value:
        value = "http://" + value
    try:
        urlsplit(value).port  # noqa: B018  # raises ValueError for a bad host or port
    except ValueError:
        return None
    return value


def _cidr(entry: str) -> IpNetwork | None:
    """`1.2.3.0/24`, `2001:db8::/32` (Go's ParseCIDR: a prefix length is required)."""
    address, slash, bits = entry.partition("/")
    if not slash or not bits.isdigit() or _ip(address) is None:
        return None
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def _split_host_port(text: str) -> tuple[str, str] | None:
    """Go's net.SplitHostPort, or None where it fails (no port; too many colons)."""
    last = text.rfind(":")
    if last < 0:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or end + 1 != last:
            return None
        host = text[1:end]
        if "[" in host or "]" in text[end + 1 :]:
            return None
    else:
        host = text[:last]
        if ":" in host or "[" in host or "]" in host:
            return None
    return host, text[last + 1 :]


def _ip(host: str) -> IpAddress | None:
    """An IP address literal as Go's ParseIP reads one (no zone); an IPv4-mapped IPv6
    address is its IPv4 address, as Go compares them."""
    if "%" in host:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _ascii(host: str) -> str:
    """A host name in its ASCII (punycode) form, label by label; as it is when it has none."""
    if host.isascii():
        return host
    try:
        return ".".join(
            label if label.isascii() else encodings.idna.ToASCII(label).decode("ascii")
            for label in host.split(".")
        )
    except UnicodeError:
        return host
