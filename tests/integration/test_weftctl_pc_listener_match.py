"""`weftctl proxy-config listener` shows filter chains with their match as istioctl does
(issue 19 item 6; reference istioctl-troubleshooting.md §2.3, istioctl's
writer/envoy/configdump/listener.go): sniffing chains (raw_buffer + http/1.1,h2c), Istio mTLS
chains (known ALPN sets get istioctl's names, others are listed), TLS passthrough by SNI,
AUTO_PASSTHROUGH, the virtualInbound blackhole chain, inline routes, RDS, HCM without
either, the PassthroughCluster default chain. The dump mixes snake_case and lowerCamelCase as
real dumps do; `-o json` stays the dump's listeners in dump order.
"""
import json

from conftest import run_weftctl

HCM = "envoy.filters.network.http_connection_manager"
TCP = "envoy.filters.network.tcp_proxy"
HCM_T = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3." \
        "HttpConnectionManager"
TCP_T = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"


def tcp(cluster):
    return {"name": TCP, "typed_config": {"@type": TCP_T, "stat_prefix": cluster,
                                          "cluster": cluster}}


def rds(name):
    return {"name": HCM, "typed_config": {"@type": HCM_T, "stat_prefix": "x",
                                          "rds": {"route_config_name": name}}}


def inline(cluster, prefix="/"):
    return {"name": HCM, "typed_config": {"@type": HCM_T, "stat_prefix": "x", "route_config": {
        "virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
            {"match": {"prefix": prefix}, "route": {"cluster": cluster}}]}]}}}


def listener(name, addr, port, chains, default=None):
    lst = {"name": name, "address": {"socket_address": {"address": addr, "port_value": port}},
           "filter_chains": chains}
    if default:
        lst["default_filter_chain"] = default
    return {"name": name, "active_state": {"listener": dict(lst, **{
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener"})}}


CAT = "catalog.shop.svc.cluster.local"
ISTIO_HTTP = ["istio-http/1.0", "istio-http/1.1", "istio-h2"]
LISTENERS = [
    # outbound, explicit HTTP port: sniffing match plus the PassthroughFilterChain default
    listener("0.0.0.0_80", "0.0.0.0", 80, [
        {"filter_chain_match": {"transport_protocol": "raw_buffer",
                                "application_protocols": ["http/1.1", "h2c"]},
         "filters": [rds("80")]}],
        default={"name": "PassthroughFilterChain", "filters": [tcp("PassthroughCluster")]}),
    # outbound auto (sniffed) port on a VIP: TCP chain and HTTP chain
    listener("10.96.0.9_8080", "10.96.0.9", 8080, [
        {"filter_chain_match": {"transport_protocol": "raw_buffer",
                                "application_protocols": ["http/1.1", "h2c"]},
         "filters": [rds(CAT + ":8080")]},
        {"filters": [tcp("outbound|8080||" + CAT)]}]),
    # gateway TLS PASSTHROUGH by SNI
    listener("0.0.0.0_443", "0.0.0.0", 443, [
        {"filter_chain_match": {"server_names": ["a.example.com"]},
         "filters": [tcp("outbound|443||a.shop.svc.cluster.local")]},
        {"filter_chain_match": {"server_names": ["b.example.com", "*.b.example.com"]},
         "filters": [tcp("outbound|443||b.shop.svc.cluster.local")]}]),
    # HTTP/1.0 enabled (the known set istioctl names "App: HTTP"), HCM with neither RDS nor
    # an inline route
    listener("0.0.0.0_9080", "0.0.0.0", 9080, [
        {"filter_chain_match": {"application_protocols": ["http/1.0", "http/1.1", "h2c"]},
         "filters": [{"name": HCM, "typed_config": {"@type": HCM_T, "stat_prefix": "x"}}]}]),
    # AUTO_PASSTHROUGH gateway chain, lowerCamelCase as istiod's debug dump writes it
    {"name": "0.0.0.0_15443", "activeState": {"listener": {
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
        "name": "0.0.0.0_15443",
        "address": {"socketAddress": {"address": "0.0.0.0", "portValue": 15443}},
        "filterChains": [{
            "filterChainMatch": {"serverNames": ["outbound_.80_._." + CAT],
                                 "transportProtocol": "tls",
                                 "applicationProtocols": ["istio-peer-exchange", "istio"]},
            "filters": [{"name": TCP, "typedConfig": {"@type": TCP_T, "statPrefix": "x",
                                                      "cluster": "outbound_.80_._." + CAT}}]},
            {"filterChainMatch": {"serverNames": ["outbound_.81_._." + CAT],
                                  "transportProtocol": "tls",
                                  "applicationProtocols": ["istio", *ISTIO_HTTP]},
             "filters": [{"name": TCP, "typedConfig": {"@type": TCP_T, "statPrefix": "x",
                                                       "cluster": "outbound_.81_._." + CAT}}]}]}}},
    # virtualInbound, PERMISSIVE, an auto port 9090 and the catch-alls (protocols.md §1.2)
    listener("virtualInbound", "0.0.0.0", 15006, [
        {"name": "virtualInbound-blackhole", "filter_chain_match": {"destination_port": 15006},
         "filters": [tcp("BlackHoleCluster")]},
        {"filter_chain_match": {"destination_port": 9090, "transport_protocol": "tls",
                                "application_protocols": ISTIO_HTTP},
         "filters": [inline("inbound|9090||")]},
        {"filter_chain_match": {"destination_port": 9090, "transport_protocol": "raw_buffer",
                                "application_protocols": ["http/1.1", "h2c"]},
         "filters": [inline("inbound|9090||")]},
        {"filter_chain_match": {"destination_port": 9090, "transport_protocol": "tls",
                                "application_protocols": ["istio-peer-exchange", "istio"]},
         "filters": [tcp("inbound|9090||")]},
        {"filter_chain_match": {"destination_port": 9090, "transport_protocol": "raw_buffer"},
         "filters": [tcp("inbound|9090||")]},
        {"filter_chain_match": {"destination_port": 9090, "transport_protocol": "tls"},
         "filters": [tcp("inbound|9090||")]},
        {"filter_chain_match": {"prefix_ranges": [{"address_prefix": "10.0.0.0",
                                                   "prefix_len": 8}],
                                "destination_port": 9091},
         "filters": [tcp("inbound|9091||")]},
        {"name": "virtualInbound-catchall-http",
         "filter_chain_match": {"transport_protocol": "raw_buffer",
                                "application_protocols": ["http/1.1", "h2c"]},
         "filters": [inline("InboundPassthroughCluster")]},
        {"name": "virtualInbound", "filters": [tcp("InboundPassthroughCluster")]}]),
    listener("health", "0.0.0.0", 15021, [
        {"filters": [inline("agent", prefix="/healthz/ready")]}]),
]

# (ADDRESSES, PORT, MATCH, DESTINATION) in istioctl's order: listeners by port, chains by
# DESTINATION descending (ties keep chain order here; istioctl leaves them unspecified)
ROWS = [
    ("0.0.0.0", "80", "Trans: raw_buffer; App: http/1.1,h2c", "Route: 80"),
    ("0.0.0.0", "80", "ALL", "PassthroughCluster"),
    ("0.0.0.0", "443", "SNI: b.example.com,*.b.example.com",
     "Cluster: outbound|443||b.shop.svc.cluster.local"),
    ("0.0.0.0", "443", "SNI: a.example.com", "Cluster: outbound|443||a.shop.svc.cluster.local"),
    ("10.96.0.9", "8080", "Trans: raw_buffer; App: http/1.1,h2c", "Route: %s:8080" % CAT),
    ("10.96.0.9", "8080", "ALL", "Cluster: outbound|8080||%s" % CAT),
    ("0.0.0.0", "9080", "App: HTTP", "HTTP"),
    ("0.0.0.0", "15006", "Addr: *:15006", "Non-HTTP/Non-TCP"),
    ("0.0.0.0", "15006", "Trans: raw_buffer; App: http/1.1,h2c", "InboundPassthroughCluster"),
    ("0.0.0.0", "15006", "ALL", "InboundPassthroughCluster"),
    ("0.0.0.0", "15006", "Addr: 10.0.0.0/8:9091", "Cluster: inbound|9091||"),
    ("0.0.0.0", "15006", "Trans: tls; App: istio-http/1.0,istio-http/1.1,istio-h2; Addr: *:9090",
     "Cluster: inbound|9090||"),
    ("0.0.0.0", "15006", "Trans: raw_buffer; App: http/1.1,h2c; Addr: *:9090",
     "Cluster: inbound|9090||"),
    ("0.0.0.0", "15006", "Trans: tls; App: TCP TLS; Addr: *:9090", "Cluster: inbound|9090||"),
    ("0.0.0.0", "15006", "Trans: raw_buffer; Addr: *:9090", "Cluster: inbound|9090||"),
    ("0.0.0.0", "15006", "Trans: tls; Addr: *:9090", "Cluster: inbound|9090||"),
    ("0.0.0.0", "15021", "ALL", "Inline Route: /healthz/ready*"),
    ("0.0.0.0", "15443",
     "SNI: outbound_.81_._.%s; Trans: tls; App: Istio HTTP Plain" % CAT, "Cluster: outbound_.81_._.%s" % CAT),
    ("0.0.0.0", "15443", "SNI: outbound_.80_._.%s; Trans: tls; App: TCP TLS" % CAT,
     "Cluster: outbound_.80_._.%s" % CAT),
]


def table(header, rows, padding):
    """Go text/tabwriter for rows that all have every cell: the last cell is never padded."""
    lines = [header, *rows]
    widths = [max(len(r[i]) for r in lines) + padding for i in range(len(header) - 1)]
    return "".join("".join(c.ljust(w) for c, w in zip(r, widths)) + r[-1] + "\n"
                   for r in lines)


def dump_file(tmp_path):
    d = {"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
                      "dynamic_listeners": LISTENERS}]}
    p = tmp_path / "dump.json"
    p.write_text(json.dumps(d))
    return p


def test_listener_table_shows_chain_matches_as_istioctl(tmp_path):
    p = dump_file(tmp_path)
    r = run_weftctl("proxy-config", "listener", "-f", p)
    assert r.returncode == 0, r.stderr
    want = table(("ADDRESSES", "PORT", "MATCH", "DESTINATION"), ROWS, 1)
    assert r.stdout == want, "got:\n%s\nwant:\n%s" % (r.stdout, want)
    # the filters pick listeners, the rows stay per chain
    r = run_weftctl("pc", "listeners", "-f", p, "--port", "15443")
    assert r.stdout == table(("ADDRESSES", "PORT", "MATCH", "DESTINATION"),
                             [x for x in ROWS if x[1] == "15443"], 1)


def test_listener_short_form_and_json_unchanged(tmp_path):
    p = dump_file(tmp_path)
    r = run_weftctl("pc", "l", "-f", p, "--verbose=false")
    assert r.returncode == 0, r.stderr
    types = [("0.0.0.0", "80", "HTTP+TCP"), ("0.0.0.0", "443", "TCP"),
             ("10.96.0.9", "8080", "HTTP+TCP"), ("0.0.0.0", "9080", "HTTP"),
             ("0.0.0.0", "15006", "HTTP+TCP"), ("0.0.0.0", "15021", "HTTP"),
             ("0.0.0.0", "15443", "TCP")]
    assert r.stdout == table(("ADDRESSES", "PORT", "TYPE"), types, 1)
    r = run_weftctl("pc", "listener", "-f", p, "-o", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [x["name"] for x in got] == [x["name"] for x in LISTENERS]  # dump order
    assert got[1]["filterChains"][0]["filterChainMatch"] == {
        "transportProtocol": "raw_buffer", "applicationProtocols": ["http/1.1", "h2c"]}


# ---- a real weft-pilot dump, checked against istioctl's rules written out in Python ----------

SVC = """\
apiVersion: v1
kind: Service
metadata: {name: catalog-grpc, namespace: shop}
spec:
  clusterIP: 10.96.0.9
  selector: {app: catalog-grpc}
  ports:
  - {name: http, port: 80, targetPort: 9090}
  - {name: grpc, port: 81, targetPort: 9091}
  - {name: tcp-db, port: 5432, targetPort: 5432}
  - {port: 8080, targetPort: 8080}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: catalog-grpc-1
  namespace: shop
  labels: {app: catalog-grpc}
spec:
  containers:
  - name: app
    ports: [{containerPort: 9090}, {containerPort: 9091}, {containerPort: 5432},
            {containerPort: 8080}]
status: {phase: Running, podIP: 127.10.0.5}
"""

KNOWN_ALPN = {
    ("http/1.0", "http/1.1", "h2c", "istio-http/1.0", "istio-http/1.1", "istio-h2"):
        "App: HTTP TLS",
    ("istio", "istio-http/1.0", "istio-http/1.1", "istio-h2"): "App: Istio HTTP Plain",
    ("istio-peer-exchange", "istio"): "App: TCP TLS",
    ("http/1.0", "http/1.1", "h2c"): "App: HTTP",
}


def oracle_match(m):
    """istioctl retrieveListenerMatches for one FilterChainMatch (snake_case)."""
    d = []
    if m.get("server_names"):
        d.append("SNI: " + ",".join(m["server_names"]))
    if m.get("transport_protocol"):
        d.append("Trans: " + m["transport_protocol"])
    if m.get("application_protocols"):
        a = tuple(m["application_protocols"])
        d.append(KNOWN_ALPN.get(a, "App: " + ",".join(a)))
    port = ":%d" % m["destination_port"] if "destination_port" in m else ""
    if m.get("prefix_ranges"):
        d.append("Addr: " + ",".join("%s/%d" % (p.get("address_prefix", ""),
                                                p.get("prefix_len", 0))
                                     for p in m["prefix_ranges"]) + port)
    elif port:
        d.append("Addr: *" + port)
    return "; ".join(d) or "ALL"


def oracle_cluster(c):
    return c if "Cluster" in c else "Cluster: " + c


def oracle_route_match(m):
    for k, f in (("prefix", "%s*"), ("path_separated_prefix", "PathPrefix:%s"), ("path", "%s")):
        if k in m:
            return f % m[k]
    return "regex " + m["safe_regex"]["regex"] if "safe_regex" in m else ""


def oracle_dest(filters):
    """istioctl getFilterType."""
    for f in filters:
        tc = f.get("typed_config", {})
        if f["name"] == HCM:
            rc = tc.get("route_config")
            if rc is not None:
                vhs = rc.get("virtual_hosts", [])
                if (len(vhs) == 1 and vhs[0].get("domains") == ["*"]
                        and len(vhs[0].get("routes", [])) == 1
                        and vhs[0]["routes"][0].get("match", {}).get("prefix") == "/"
                        and "cluster" in vhs[0]["routes"][0].get("route", {})):
                    return oracle_cluster(vhs[0]["routes"][0]["route"]["cluster"])
                parts = []
                for vh in vhs:
                    ms = ", ".join(oracle_route_match(r.get("match", {}))
                                   for r in vh.get("routes", []))
                    doms = vh.get("domains", [])
                    parts.append(ms if doms == ["*"] else "%s %s" % ("/".join(doms), ms))
                return "Inline Route: " + "; ".join(parts)
            if tc.get("rds", {}).get("route_config_name"):
                return "Route: " + tc["rds"]["route_config_name"]
            return "HTTP"
        if f["name"] == TCP and "BlackHoleCluster" not in json.dumps(tc):
            return oracle_cluster(tc.get("cluster", ""))
    return "Non-HTTP/Non-TCP"


def oracle_rows(dump):
    sec = [c for c in dump["configs"] if c["@type"].endswith("ListenersConfigDump")][-1]
    ls = [x["active_state"]["listener"] for x in sec.get("dynamic_listeners", [])
          if "active_state" in x] + [x["listener"] for x in sec.get("static_listeners", [])]

    def addr(lst):
        return lst.get("address", {}).get("socket_address", {}).get("address", "")

    def port(lst):
        return lst.get("address", {}).get("socket_address", {}).get("port_value", 0)

    def ltype(lst):
        chains = lst.get("filter_chains", []) + ([lst["default_filter_chain"]]
                                                 if "default_filter_chain" in lst else [])
        fs = [f for c in chains for f in c.get("filters", [])]
        h = sum(f["name"] == HCM for f in fs)
        t = sum(f["name"] == TCP and "BlackHoleCluster" not in json.dumps(f) for f in fs)
        return ("HTTP" if not t else "HTTP+TCP") if h else ("TCP" if t else "UNKNOWN")

    rows = []
    for lst in sorted(ls, key=lambda x: (port(x), addr(x), ltype(x))):
        chains = lst.get("filter_chains", []) + ([lst["default_filter_chain"]]
                                                 if "default_filter_chain" in lst else [])
        cr = [(oracle_match(c.get("filter_chain_match", {})), oracle_dest(c.get("filters", [])))
              for c in chains]
        for m, d in sorted(cr, key=lambda x: x[1], reverse=True):
            rows.append((addr(lst), str(port(lst)), m, d))
    return rows


def test_listener_table_of_a_real_pilot_dump(tmp_path):
    import urllib.request

    from procs import start_process, stop_process
    from test_pilot import pilot_path

    cfg, pods = tmp_path / "cfg", tmp_path / "pods"
    cfg.mkdir()
    pods.mkdir()
    (cfg / "svc.yaml").write_text(SVC)
    (pods / "pod.yaml").write_text(POD)
    proc, addrs = start_process([pilot_path(), "--config-dir", cfg, "--config-dir", pods,
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr",
                                 "127.0.0.1:0", "--debounce-after-ms", "50"], count=2)
    try:
        url = "http://127.0.0.1:%d/debug/config_dump?proxyID=catalog-grpc-1.shop" % addrs[1][1]
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
    finally:
        assert stop_process(proc) == 0, proc.stderr_text()
    p = tmp_path / "dump.json"
    p.write_text(text)
    dump = json.loads(text)
    rows = oracle_rows(dump)
    # the dump has the chains this test is about: per-port inbound chains matching on
    # transport protocol and Istio's ALPNs, and the outbound listeners of each port
    assert any(r[2].startswith("Trans: tls; App: ") for r in rows), rows
    assert any(r[2] == "Trans: raw_buffer" for r in rows), rows
    assert {"80", "81", "5432", "8080"} <= {r[1] for r in rows}
    r = run_weftctl("pc", "listener", "-f", p)
    assert r.returncode == 0, r.stderr
    assert r.stdout == table(("ADDRESSES", "PORT", "MATCH", "DESTINATION"), rows, 1), r.stdout
