"""weft-proxy stats: the stats matcher (StatsConfig.stats_matcher, operator report B016),
histograms in /stats, /stats?format=json and /stats/prometheus (reference §6.1-6.5),
histogram_bucket_settings, and `promtool check metrics` on the live Prometheus output.
"""
import json
import re
import shutil
import subprocess
import time

import pytest

from procs import backend_app, start_app, stop_process
from proxyfix import (bootstrap, cluster, listener, proxy_factory, proxy_path, simple_routes,
                      write_bootstrap)

QUANTILES = ["0", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "100"]
NUM = r"(?:nan|-?\d+(?:\.\d+)?(?:e[-+]\d+)?)"
SUMMARY_RE = re.compile(r"^(\S+): " + " ".join(
    r"P%s\((%s),(%s)\)" % (re.escape(q), NUM, NUM) for q in QUANTILES) + "$")


def _summary(value):
    """[(interval, cumulative), ...] of a /stats histogram value (P0 .. P100)."""
    m = SUMMARY_RE.match("x: " + value)
    assert m, value
    g = m.groups()[1:]
    return [(float(g[i]), float(g[i + 1])) for i in range(0, len(g), 2)]


@pytest.fixture
def app(backend_app):
    return backend_app


def _bs(app, stats_config=None):
    bs = bootstrap([listener(simple_routes())], [cluster("backend", [app])])
    if stats_config is not None:
        bs["stats_config"] = stats_config
    return bs


def _text(p, query=""):
    status, _, body = p.admin("/stats" + query)
    assert status == 200, body
    return body.decode()


def _lines(p, query=""):
    return dict(line.split(": ", 1) for line in _text(p, query).splitlines() if ": " in line)


def _prom(p):
    status, _, body = p.admin("/stats/prometheus")
    assert status == 200, body
    return body.decode()


def _traffic(p, paths):
    """Sends the requests, then waits until the proxy has finished them all: a stream's stats
    and histograms are recorded when it ends, which may be just after the client has its
    answer."""
    done = "http.ingress_http.downstream_rq_completed"
    before = p.stats().get(done)  # None when a stats matcher left it out
    for path in paths:
        status, _, _ = p.request("GET", path)
        want = int(path.split("/")[2]) if path.startswith("/status/") else 200
        assert status == want, (path, status)
    if before is not None:
        assert p.wait_stat(done, before + len(paths)).get(done) == before + len(paths)


def _wait(cond, what, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def _wait_lines(p, name, pred, what):
    """_lines(p) once pred(_lines(p).get(name, "")) holds."""
    return _wait(lambda: (lambda d: d if pred(d.get(name, "")) else None)(_lines(p)), what)


# ---------------------------------------------------------------- histograms


def test_histograms_text_json_prometheus(app, proxy_factory):
    p = proxy_factory(_bs(app))
    _traffic(p, ["/status/200", "/delay/30", "/status/503"])

    # a downstream connection per request: cx_length is recorded when each one closes
    lis = "listener.127.0.0.1_%d.downstream_cx_length_ms" % p.port
    lines = _wait_lines(p, lis, lambda v: "P0(" in v, "listener downstream_cx_length_ms")
    for name in ["cluster.backend.upstream_rq_time", "cluster.backend.upstream_cx_connect_ms",
                 "http.ingress_http.downstream_rq_time",
                 "http.ingress_http.downstream_cx_length_ms", lis]:
        m = SUMMARY_RE.match("%s: %s" % (name, lines[name]))
        assert m, (name, lines[name])
    # the upstream connection is still pooled: never closed, never measured
    assert lines["cluster.backend.upstream_cx_length_ms"] == "No recorded values"
    # P100 of upstream_rq_time is the slowest request (the 30 ms delay), P0 the fastest
    q = _summary(lines["cluster.backend.upstream_rq_time"])
    assert q[-1][1] >= 30 and q[0][1] <= q[-1][1]
    assert [c for _, c in q] == sorted(c for _, c in q)

    # histograms come after every counter and gauge, sorted
    names = [ln.split(":")[0] for ln in _text(p).splitlines()]
    first_hist = names.index("cluster.backend.upstream_cx_connect_ms")
    assert "server.live" in names[:first_hist]
    assert names[first_hist:] == sorted(names[first_hist:])

    status, _, body = p.admin("/stats?format=json")
    doc = json.loads(body)
    hist = doc["stats"][-1]["histograms"]
    assert hist["supported_quantiles"] == [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100]
    by_name = {h["name"]: h["values"] for h in hist["computed_quantiles"]}
    rq = by_name["cluster.backend.upstream_rq_time"]
    assert len(rq) == 10 and all(set(v) == {"cumulative", "interval"} for v in rq)
    assert rq[-1]["cumulative"] >= 30
    assert all(v["cumulative"] is None for v in by_name["cluster.backend.upstream_cx_length_ms"])

    prom = _prom(p)
    assert "# TYPE envoy_cluster_upstream_rq_time histogram\n" in prom
    buckets = re.findall(r'^envoy_cluster_upstream_rq_time_bucket\{envoy_cluster_name="backend",'
                         r'le="([^"]+)"\} (\d+)$', prom, re.M)
    assert [b for b, _ in buckets] == ["0.5", "1", "5", "10", "25", "50", "100", "250", "500",
                                       "1000", "2500", "5000", "10000", "30000", "60000",
                                       "300000", "600000", "1800000", "3600000", "+Inf"]
    counts = [int(c) for _, c in buckets]
    assert counts == sorted(counts) and counts[-1] == 3
    assert dict(buckets)["25"] in ("2", "1", "0") and dict(buckets)["3600000"] == "3"
    assert re.search(r'^envoy_cluster_upstream_rq_time_count\{envoy_cluster_name="backend"\} 3$',
                     prom, re.M)
    s = re.search(r'^envoy_cluster_upstream_rq_time_sum\{envoy_cluster_name="backend"\} (\d+)$',
                  prom, re.M)
    assert s and int(s.group(1)) >= 30
    assert re.search(r'^envoy_http_downstream_rq_time_bucket\{envoy_http_conn_manager_prefix='
                     r'"ingress_http",le="\+Inf"\} 3$', prom, re.M)
    # histograms after the counters and gauges
    assert prom.index("# TYPE envoy_cluster_upstream_rq_time histogram") > \
        prom.index("# TYPE envoy_server_live gauge")


def test_histogram_interval_after_flush_interval(app, proxy_factory):
    """The interval column becomes a number once a flush interval (5 s) has passed."""
    p = proxy_factory(_bs(app))
    _traffic(p, ["/status/200"])
    # the stream's time is recorded as it is freed, a loop turn after downstream_rq_completed
    deadline = time.monotonic() + 3
    while True:
        line = _lines(p)["http.ingress_http.downstream_rq_time"]
        if SUMMARY_RE.match("x: " + line) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert SUMMARY_RE.match("x: " + line), line
    time.sleep(5.2)
    q = _summary(_lines(p)["http.ingress_http.downstream_rq_time"])
    assert q[0][0] == q[0][0]  # not NaN: the interval that just closed held the request


def test_usedonly_and_filter_apply_to_histograms(app, proxy_factory):
    p = proxy_factory(_bs(app))
    _traffic(p, ["/status/200"])
    used = _text(p, "?usedonly")
    assert "cluster.backend.upstream_rq_time: P0(" in used
    assert "upstream_cx_length_ms: No recorded values" not in used
    only = _text(p, "?filter=upstream_rq_time$")
    assert only.startswith("cluster.backend.upstream_rq_time: ")
    assert len(only.splitlines()) == 1


def test_histogram_bucket_settings(app, proxy_factory):
    p = proxy_factory(_bs(app, {"histogram_bucket_settings": [
        {"match": {"prefix": "cluster.backend.upstream_rq_time"}, "buckets": [100, 1, 10, 10]},
        {"match": {"safe_regex": {"regex": "http\\..*"}}, "buckets": [2.5]}]}))
    _traffic(p, ["/status/200", "/delay/20"])
    prom = _prom(p)
    les = re.findall(r'^envoy_cluster_upstream_rq_time_bucket\{[^}]*le="([^"]+)"\}', prom, re.M)
    assert les == ["1", "10", "100", "+Inf"]
    les = re.findall(r'^envoy_http_downstream_rq_time_bucket\{[^}]*le="([^"]+)"\}', prom, re.M)
    assert les == ["2.5", "+Inf"]
    les = re.findall(r'^envoy_cluster_upstream_cx_connect_ms_bucket\{[^}]*le="([^"]+)"\}', prom,
                     re.M)
    assert les[0] == "0.5" and len(les) == 20  # the defaults


# ---------------------------------------------------------------- stats matcher (B016)


def _matcher(*patterns, kind="inclusion_list"):
    return {"stats_matcher": {kind: {"patterns": list(patterns)}}}


def test_b016_prometheus_name_in_matcher_includes_nothing(app, proxy_factory):
    """B016: patterns match Envoy's dotted names; a Prometheus-style name matches nothing."""
    p = proxy_factory(_bs(app, _matcher(
        {"safe_regex": {"regex": "envoy_cluster_upstream_rq_total"}})))
    _traffic(p, ["/status/200"])
    assert "upstream_rq_total" not in _text(p)
    assert "envoy_cluster_upstream_rq_total" not in _prom(p)
    assert json.loads(p.admin("/stats?format=json")[2]) == {"stats": []}


def test_b016_dotted_name_in_matcher_includes_the_stat(app, proxy_factory):
    p = proxy_factory(_bs(app, _matcher(
        {"safe_regex": {"regex": "cluster\\..*\\.upstream_rq_total"}}, {"prefix": "server."})))
    _traffic(p, ["/status/200", "/status/200"])
    lines = _wait_lines(p, "cluster.backend.upstream_rq_total", lambda v: v == "2",
                        "upstream_rq_total 2")
    assert lines["server.live"] == "1"
    # nothing else exists: other cluster stats, status codes, HCM, listener, histograms
    assert all(n == "cluster.backend.upstream_rq_total" or n.startswith("server.")
               for n in lines), sorted(lines)
    prom = _prom(p)
    assert 'envoy_cluster_upstream_rq_total{envoy_cluster_name="backend"} 2\n' in prom
    assert "envoy_cluster_upstream_rq{" not in prom and "histogram" not in prom


def test_status_code_stats_filtered_by_full_name(app, proxy_factory):
    p = proxy_factory(_bs(app, _matcher({"exact": "cluster.backend.upstream_rq_200"},
                                        {"prefix": "cluster.backend.upstream_rq_time"},
                                        kind="exclusion_list")))
    _traffic(p, ["/status/200", "/status/404"])
    lines = _wait_lines(p, "cluster.backend.upstream_rq_4xx", lambda v: v == "1",
                        "upstream_rq_4xx")
    assert "cluster.backend.upstream_rq_200" not in lines
    assert lines["cluster.backend.upstream_rq_2xx"] == "1"  # the class still counts the 200
    assert lines["cluster.backend.upstream_rq_404"] == "1"
    assert "cluster.backend.upstream_rq_time" not in lines
    assert "cluster.backend.upstream_cx_connect_ms" in lines
    prom = _prom(p)
    assert 'response_code="200"' not in prom and 'envoy_response_code="404"' in prom
    assert "envoy_cluster_upstream_rq_time" not in prom


def test_ignore_case_matcher(app, proxy_factory):
    p = proxy_factory(_bs(app, _matcher({"suffix": ".SERVER.LIVE", "ignore_case": True},
                                        {"prefix": "Server.", "ignore_case": True})))
    lines = _lines(p)
    assert lines and all(k.startswith("server.") for k in lines), sorted(lines)
    assert lines["server.live"] == "1"


def test_reject_all(app, proxy_factory):
    p = proxy_factory(_bs(app, {"stats_matcher": {"reject_all": True}}))
    _traffic(p, ["/status/200", "/delay/5"])
    assert _text(p) == ""
    assert _prom(p) == ""
    assert json.loads(p.admin("/stats?format=json")[2]) == {"stats": []}
    status, _, _ = p.request("GET", "/status/200")
    assert status == 200


@pytest.mark.parametrize("stats_config,message", [
    ({"stats_matcher": {}},
     "stats_config.stats_matcher: exactly one of reject_all, inclusion_list, exclusion_list"),
    (_matcher(), "stats_config.stats_matcher.inclusion_list.patterns: value must contain at "
                 "least 1 item(s)"),
    (_matcher({"safe_regex": {"regex": "(a"}}),
     "stats_config.stats_matcher.inclusion_list.patterns[0].safe_regex.regex: error parsing "
     "regexp"),
    (_matcher({"prefix": "a"}, {"safe_regex": {"regex": "(a)\\1"}}, kind="exclusion_list"),
     "stats_config.stats_matcher.exclusion_list.patterns[1].safe_regex.regex: error parsing "
     "regexp: invalid escape sequence"),
    (_matcher({"safe_regex": {"regex": "a"}, "ignore_case": True}),
     "stats_config.stats_matcher.inclusion_list.patterns[0]: ignore_case has no effect for "
     "safe_regex."),
    (_matcher({"prefix": ""}),
     "stats_config.stats_matcher.inclusion_list.patterns[0].prefix: value length must be at "
     "least 1 characters"),
    (_matcher({"prefix": "a", "exact": "b"}),
     "stats_config.stats_matcher.inclusion_list.patterns[0]: exactly one of exact, prefix"),
    ({"stats_matcher": {"reject_all": True, "inclusion_list": {"patterns": [{"exact": "a"}]}}},
     "stats_config.stats_matcher: exactly one of"),
    ({"histogram_bucket_settings": [{"match": {"prefix": "x"}, "buckets": [1, 0]}]},
     "stats_config.histogram_bucket_settings[0].buckets[1]: value must be greater than 0"),
    ({"histogram_bucket_settings": [{"buckets": [1]}]},
     "stats_config.histogram_bucket_settings[0].match: value is required"),
    ({"histogram_bucket_settings": [{"match": {"prefix": "x"}, "buckets": [1], "bins": 3}]},
     "stats_config.histogram_bucket_settings[0].bins: unknown field"),
])
def test_stats_config_errors_name_the_json_path(tmp_path, stats_config, message):
    bs = bootstrap([listener(simple_routes(), port=1)], [cluster("backend", [2])], admin_port=3)
    bs["stats_config"] = stats_config
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r.stdout
    assert message in r.stderr, r.stderr


# ---------------------------------------------------------------- promtool

# promtool's naming lints that Envoy's own metric names fail (Envoy prints no HELP, counters
# such as upstream_rq_completed have no _total suffix, gauges such as membership_total do,
# and *_ms names abbreviate units). Anything else, and every parse error, fails the test.
ENVOY_NAMING_LINTS = (
    "no help text",
    'counter metrics should have "_total" suffix',
    'non-counter metrics should not have "_total" suffix',
    "metric names should not contain abbreviated units",
    'use base unit "seconds" instead of "milliseconds"',
)


def test_prometheus_output_passes_promtool(app, proxy_factory):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package 'prometheus'; scripts/setup "
                    "installs it)")
    p = proxy_factory(_bs(app, {"histogram_bucket_settings": [
        {"match": {"prefix": "http."}, "buckets": [0.1, 0.25, 1e-3, 7]}]}))
    _traffic(p, ["/status/200", "/status/404", "/status/503", "/delay/10"])
    body = _prom(p)
    assert "histogram" in body and "counter" in body and "gauge" in body
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                       text=True, timeout=30)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode in (0, 3), "promtool rejected the exposition (rc %d):\n%s" % (
        r.returncode, out)
    bad = [ln for ln in out.splitlines() if ln and not ln.endswith(ENVOY_NAMING_LINTS)]
    assert not bad, "promtool problems beyond Envoy's naming lints:\n" + "\n".join(bad)
