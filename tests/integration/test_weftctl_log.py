"""`weftctl log explain` (issue 6 part 5): access log lines in Istio's TEXT format, Envoy's
default format, a --format string and JSON lines are explained in plain words; --summary
groups failures; -o json carries the same facts; unknown values are reported as unknown; and
over a live gateway's JSON access log, the 503 NC of a VirtualService that routes to
undefined subsets is explained as a missing cluster with `weftctl analyze` as the next step.
"""
import json

from conftest import run_weftctl, shared_path
from meshfix import mesh, wait_for  # noqa: F401 (fixture)
from test_mesh_catalog import catalog_mesh, gateway_get

ISTIO_NC = ('[2026-08-22T19:00:53.123Z] "GET /items HTTP/1.1" 503 NC cluster_not_found - "-" 0 0 0 '
            '- "-" "curl/8.0" "rid-1" "catalog.istioinaction.io" "-" '
            'outbound|80|version-v1|catalog.istioinaction.svc.cluster.local - 10.10.0.5:8080 '
            '10.10.0.1:5555 - -\n')
ISTIO_UF = ('[2026-08-22T19:00:54.000Z] "GET / HTTP/1.1" 503 URX,UF '
            'upstream_reset_before_response_started{remote_connection_failure|delayed_connect_'
            'error:_Connection_refused} - "delayed connect error: Connection refused" 0 91 3 - '
            '"-" "curl" "rid-2" "inventory" "127.0.0.21:8080" '
            'outbound|80||inventory.shop.svc.cluster.local - 127.0.0.1:80 127.0.0.1:4444 - '
            'default\n')
ENVOY_NR = ('[2026-08-22T19:00:55.000Z] "GET /admin HTTP/1.1" 404 NR 0 0 0 - "-" "curl/8.0" '
            '"rid-3" "admin.example.internal" "-"\n')
OK_LINE = ('[2026-08-22T19:00:56.000Z] "GET / HTTP/1.1" 200 - via_upstream - "-" 0 12 3 2 "-" '
           '"curl" "rid-4" "catalog" "10.0.0.1:3000" outbound|80||catalog.shop.svc.cluster.local '
           '- - - - default\n')
JSON_507 = json.dumps({"response_code": 507, "response_flags": None, "method": "POST",
                       "response_code_details": "request_payload_exceeded_retry_buffer_limit",
                       "path": "/upload", "authority": "catalog", "upstream_cluster":
                       "outbound|80||catalog.shop.svc.cluster.local", "route_name": "default"})

SEEDS = {
    "NC": "The route names a cluster that does not exist",
    "NR": "No route matched the request",
    "UT": "route timeout",
    "UF": "could not open a connection",
    "UH": "no healthy endpoint",
    "URX": "retries were used up",
    "UC": "closed the connection while the request was in flight",
    "DC": "The client closed its connection",
}


def explain(*args, stdin=None):
    return run_weftctl("log", "explain", *args, stdin=stdin)


def test_istio_text_and_envoy_default_lines(tmp_path):
    log = tmp_path / "access.log"
    log.write_text(ISTIO_NC + "some application output\n" + ISTIO_UF + ENVOY_NR + OK_LINE)
    r = explain(str(log))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "line 1: 503 NC cluster_not_found\n" in out
    assert "NC (NoClusterFound): The route names a cluster that does not exist in this proxy." in out
    assert "a subset without a DestinationRule" in out and "weftctl analyze" in out
    assert "line 3: 503 URX,UF upstream_reset_before_response_started{" in out
    assert "URX (UpstreamRetryLimitExceeded)" in out and "UF (UpstreamConnectionFailure)" in out
    assert "reset reason remote_connection_failure:" in out
    assert "transport failure reason: delayed connect error: Connection refused" in out
    assert "line 4: 404 NR -\n" in out and "NR (NoRouteFound): No route matched" in out
    assert "line 5" not in out  # 200 is not a failure
    assert "1 lines were not access log lines" in r.stderr


def test_seed_flags_explained(tmp_path):
    lines = "".join(
        '[2026-08-22T19:00:53Z] "GET / HTTP/1.1" %d %s 0 0 1 - "-" "c" "id" "h" "-"\n'
        % (0 if f == "DC" else 504 if f == "UT" else 503, f) for f in SEEDS)
    r = explain("-", stdin=lines)
    assert r.returncode == 0, r.stderr
    for flag, text in SEEDS.items():
        assert "%s (" % flag in r.stdout and text in r.stdout, flag


def test_json_lines_and_507(tmp_path):
    r = explain(stdin=JSON_507 + "\n")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "line 1: 507 - request_payload_exceeded_retry_buffer_limit\n" in out
    assert "The request needed a retry and its body was larger than the retry buffer." in out
    assert ("Raise the buffer limit for the route or listener, or turn proxy retries off for "
            "large uploads and retry in the client with an idempotency key.") in out


ENVOY_507 = ('[2026-08-22T19:00:57.000Z] "POST /upload HTTP/1.1" 507 - 1048576 0 12 - "-" '
             '"curl/8.0" "rid-5" "catalog" "-"\n')
ENVOY_FI = ('[2026-08-22T19:00:58.000Z] "GET /items HTTP/1.1" 500 FI 0 18 0 - "-" "curl/8.0" '
            '"rid-6" "catalog" "-"\n')


def test_507_in_envoy_default_format_and_fault_abort():
    """Issue 15 item 9: a 507 explained without a details field (Envoy's default format) from
    the status and the missing upstream host; fault_filter_abort known."""
    r = explain(stdin=ENVOY_507)
    assert r.returncode == 0, r.stderr
    assert "line 1: 507 - -\n" in r.stdout
    assert "request_payload_exceeded_retry_buffer_limit (inferred: " in r.stdout
    assert "The request needed a retry and its body was larger than the retry buffer." in r.stdout
    assert "the status most likely came from the upstream application" not in r.stdout
    r = explain("-o", "json", stdin=ENVOY_507)
    item = json.loads(r.stdout)["failures"][0]["explanations"][0]
    assert item["value"] == "request_payload_exceeded_retry_buffer_limit" and item["known"]
    assert "no upstream host" in item["inferred_from"]
    # an upstream's own 507 (it answered: x-envoy-upstream-service-time is logged) is not
    # guessed at
    r = explain(stdin=ENVOY_507.replace('"-"\n', '"10.0.0.1:80"\n').replace(" 12 - ", " 12 3 "))
    assert "inferred" not in r.stdout and "came from the upstream application" in r.stdout
    # the overflow as weft-proxy and Envoy log it: the attempt's upstream host, no service time
    r = explain(stdin=ENVOY_507.replace('"-"\n', '"10.0.0.1:80"\n'))
    assert "request_payload_exceeded_retry_buffer_limit (inferred: " in r.stdout
    assert "the upstream did not answer" in r.stdout
    line = ISTIO_NC.replace("503 NC cluster_not_found", "500 FI fault_filter_abort")
    r = explain(stdin=line + ENVOY_FI)
    assert r.returncode == 0, r.stderr
    assert "fault_filter_abort: The fault injection filter aborted the request on purpose" in r.stdout
    assert "unknown response code details" not in r.stdout


def test_custom_format(tmp_path):
    fmt = "%START_TIME% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_CLUSTER%"
    line = ("2026-08-22T19:00:53Z 503 UH no_healthy_upstream "
            "outbound|80|v2|catalog.shop.svc.cluster.local;\n")
    r = explain("--format", fmt, stdin=line)
    assert r.returncode == 0, r.stderr
    assert "UH (NoHealthyUpstream)" in r.stdout
    assert "upstream cluster: outbound|80|v2|catalog.shop.svc.cluster.local " in r.stdout
    jfmt = json.dumps({"code": "%RESPONSE_CODE%", "f": "%RESPONSE_FLAGS%"})
    r = explain("--format", jfmt, stdin='{"code": 504, "f": "UT"}\n')
    assert r.returncode == 0 and "UT (UpstreamRequestTimeout)" in r.stdout
    r = explain("--format", "%RESPONSE_CODE% %RESPONSE_FLAGS%", stdin="hello there\n")
    assert r.returncode == 1 and "no access log lines" in r.stderr


def test_blank_lines_and_empty_input():
    """Blank lines are neither access log lines nor skipped lines; an empty input has no
    failed request (exit 0), whatever its blank lines."""
    for text in ("", "\n\n", " \t\r\n"):
        r = explain(stdin=text)
        assert r.returncode == 0, (text, r.stderr)
        assert r.stdout == "No failed requests in 0 access log lines.\n"
        assert r.stderr == ""
    r = explain(stdin=OK_LINE + "\n \n\r\n")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = explain(stdin="junk\n\n\n")
    assert r.returncode == 1 and "(1 lines)" in r.stderr, r.stderr


def test_unknown_values_are_reported_as_unknown():
    line = json.dumps({"response_code": 503, "response_flags": "ZZ",
                       "response_code_details": "brand_new_detail"})
    r = explain(stdin=line + "\n")
    assert r.returncode == 0, r.stderr
    assert "ZZ: unknown response flag" in r.stdout
    assert "brand_new_detail: unknown response code details" in r.stdout
    r = explain("-o", "json", stdin=line + "\n")
    d = json.loads(r.stdout)
    ex = d["failures"][0]["explanations"]
    assert [(e["value"], e["known"]) for e in ex] == [("ZZ", False), ("brand_new_detail", False)]
    assert "meaning" not in ex[0]


def test_summary_and_json(tmp_path):
    text = ISTIO_NC * 3 + ISTIO_UF + JSON_507 + "\n" + OK_LINE
    r = explain("--summary", stdin=text)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "5 failed requests in 6 access log lines"
    assert lines[2].split() == ["COUNT", "CODE", "FLAGS", "DETAILS", "UPSTREAM", "CLUSTER",
                                "ROUTE"]
    assert lines[3].split() == ["3", "503", "NC", "cluster_not_found",
                                "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local",
                                "-"]
    assert r.stdout.count("NC (NoClusterFound)") == 1
    r = explain("--summary", "-o", "json", stdin=text)
    d = json.loads(r.stdout)
    assert d["failed"] == 5 and d["groups"][0]["count"] == 3
    assert {e["value"] for e in d["explanations"]} >= {"NC", "URX", "UF", "cluster_not_found"}
    r = explain("-o", "json", stdin=ISTIO_NC)
    f = json.loads(r.stdout)["failures"][0]
    assert f["response_code"] == 503 and f["response_flags"] == "NC"
    assert f["explanations"][0]["name"] == "NoClusterFound"


def test_errors():
    r = explain("/nonexistent/access.log")
    assert r.returncode == 1 and "/nonexistent/access.log" in r.stderr
    r = explain("-o", "yaml", stdin="")
    assert r.returncode == 64
    r = run_weftctl("log", "tail")
    assert r.returncode == 64 and 'unknown command "tail"' in r.stderr
    r = explain(stdin="")
    assert r.returncode == 0 and "No failed requests in 0 access log lines." in r.stdout


def test_gateway_access_log_after_503_nc(mesh):
    gw, pods = catalog_mesh(mesh)
    status, _, _ = gateway_get(gw)
    assert status == 503
    gw.wait_log(lambda e: e.get("response_code") == 503)
    r = explain(gw.log_path)
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    assert " 503 NC cluster_not_found\n" in r.stdout
    assert "NC (NoClusterFound): The route names a cluster that does not exist" in r.stdout
    assert "a subset without a DestinationRule" in r.stdout and "weftctl analyze" in r.stdout
    assert "request: GET catalog.istioinaction.io/items" in r.stdout
    r = explain(gw.log_path, "--summary")
    assert r.returncode == 0 and "cluster_not_found" in r.stdout


RBAC_LINES = (
    '{"response_code":403,"response_flags":"-","response_code_details":'
    '"rbac_access_denied_matched_policy[none]","method":"GET","path":"/items"}\n'
    '{"response_code":403,"response_flags":"-","response_code_details":'
    '"rbac_access_denied_matched_policy[ns[default]-policy[httpbin]-rule[0]]",'
    '"method":"GET","path":"/admin"}\n')
AUTHZ_DUMP = shared_path() + "/corpus/istioctl-golden/upstream/istioctl/pkg/authz/testdata/configdump.yaml"


def test_rbac_denials_name_the_policy(tmp_path):
    """B036: `[none]` says ALLOW policies apply and none matched, and with the proxy's config
    dump lists them; a named id becomes the policy, namespace and rule, with its action."""
    log = tmp_path / "inbound.log"
    log.write_text(RBAC_LINES)
    r = explain(str(log))
    assert r.returncode == 0, r.stderr
    assert "authorization: no policy denied it: ALLOW policies apply to this workload" in r.stdout
    assert "weftctl x authz check <pod>" in r.stdout
    assert "authorization: AuthorizationPolicy httpbin in namespace default, rule 0" in r.stdout
    r = explain(str(log), "--config-dump", AUTHZ_DUMP)
    assert r.returncode == 0, r.stderr
    assert "ALLOW policies on the proxy: default/httpbin (1 rule)" in r.stdout
    assert "the proxy enforces it as ALLOW" in r.stdout
    r = explain(str(log), "--config-dump", AUTHZ_DUMP, "-o", "json")
    out = json.loads(r.stdout)
    kinds = [[e["kind"] for e in f["explanations"]] for f in out["failures"]]
    assert all("authorization" in k for k in kinds), kinds
    # the dump cannot be read / the pod cannot be found: exit 1 naming it, nothing explained
    r = explain(str(log), "--config-dump", str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "failed to get config dump from file" in r.stderr
    assert r.stdout == ""
    r = explain(str(log), "--pod", "catalog-1", "-n", "shop", "--pilot", "127.0.0.1:9")
    assert r.returncode == 1 and r.stderr.startswith("Error: "), r.stderr
