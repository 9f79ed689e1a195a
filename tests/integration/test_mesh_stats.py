"""The local mesh's stats_config (docs/local-mesh.md "Stats"): `weftctl up DIR
--print-bootstrap POD` prints the bootstrap `weftctl up` writes; its stats_config (Istio's
inclusion list and tag extraction, MeshConfig / annotation proxyStatsMatcher merged) is put
on a weft-proxy with free ports (proxyfix), so no fixed local-mesh port is used. Checks what
an Istio sidecar exposes: cluster_manager.* and server.* but no per-cluster upstream_cx_*,
Istio's tag labels (cluster_name, response_code, response_code_class) in /stats/prometheus,
and operator report B016 (a Prometheus-style name in proxyStatsMatcher includes nothing).
"""
import json
import re
import time

import pytest

from conftest import run_weftctl
from procs import backend_app  # noqa: F401 (fixture)
from proxyfix import bootstrap, cluster, listener, proxy_factory, simple_routes  # noqa: F401

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata:
      labels: {app: web}
      annotations:
        sidecar.istio.io/inject: "true"
%s
    spec:
      containers: [{name: web, image: web}]
"""

MESH = """\
defaultConfig:
  proxyStatsMatcher:
    inclusionRegexps: [%s]
"""


def manifests(tmp_path, annotations="", regexps=None):
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "web.yaml").write_text(DEPLOYMENT % annotations)
    if regexps is not None:
        (d / "mesh.yaml").write_text(MESH % ", ".join(json.dumps(r) for r in regexps))
    return d


def print_bootstrap(d, pod_prefix="web-"):
    """The bootstrap of the first planned pod whose name starts with pod_prefix."""
    state = d.parent / "state"
    p = run_weftctl("up", d, "--state", state, "--print-bootstrap", "?")
    assert p.returncode == 1, p.stderr
    names = re.findall(r" (\S+)\.shop\b", p.stderr)
    name = next(n for n in names if n.startswith(pod_prefix))
    p = run_weftctl("up", d, "--state", state, "--print-bootstrap", name)
    assert p.returncode == 0, p.stderr
    assert not state.exists()  # nothing written
    return json.loads(p.stdout)


def start(proxy_factory, app, stats_config):
    c = cluster("backend", [app])
    c["alt_stat_name"] = "backend;"  # as pilot names its clusters (Istio's "<name>;")
    bs = bootstrap([listener(simple_routes())], [c])
    bs["stats_config"] = stats_config
    return proxy_factory(bs)


def traffic(p, n=3):
    for _ in range(n):
        status, _, _ = p.request("GET", "/status/200")
        assert status == 200
    time.sleep(0.2)  # stream stats are recorded when the stream ends


def stats_text(p):
    status, _, body = p.admin("/stats")
    assert status == 200
    return body.decode()


def prom_text(p):
    status, _, body = p.admin("/stats/prometheus")
    assert status == 200
    return body.decode()


def test_default_inclusion_list_hides_per_cluster_stats(tmp_path, backend_app, proxy_factory):
    bs = print_bootstrap(manifests(tmp_path))
    sc = bs["stats_config"]
    assert sc["use_all_default_tags"] is False
    assert bs["static_resources"]["clusters"][0]["alt_stat_name"] == "xds-grpc;"
    p = start(proxy_factory, backend_app, sc)
    traffic(p)
    text = stats_text(p)
    assert re.search(r"^cluster_manager\.", text, re.M), text
    assert re.search(r"^server\.", text, re.M), text
    assert re.search(r"^listener_manager\.", text, re.M), text
    assert "upstream_cx_" not in text, text
    assert "cluster.backend;" not in text, text
    assert "http.ingress_http." not in text, text
    assert "control_plane." not in text, text
    prom = prom_text(p)
    assert "envoy_cluster_upstream_rq" not in prom, prom
    assert "envoy_cluster_name" not in prom  # Envoy's default tags are off


def test_mesh_matcher_adds_stats_with_istio_tags(tmp_path, backend_app, proxy_factory):
    d = manifests(tmp_path, regexps=[r"cluster\..*\.upstream_rq_.*"])
    p = start(proxy_factory, backend_app, print_bootstrap(d)["stats_config"])
    traffic(p)
    text = stats_text(p)
    assert re.search(r"^cluster\.backend;\.upstream_rq_200: 3$", text, re.M), text
    assert re.search(r"^cluster\.backend;\.upstream_rq_2xx: 3$", text, re.M), text
    assert "upstream_cx_total" not in text, text
    prom = prom_text(p)
    assert re.search(r'^envoy_cluster_upstream_rq\{cluster_name="backend",response_code="200"\} 3$',
                     prom, re.M), prom
    assert re.search(
        r'^envoy_cluster_upstream_rq\{cluster_name="backend",response_code_class="2xx"\} 3$',
        prom, re.M), prom
    assert "envoy_response_code" not in prom, prom


def test_annotation_replaces_mesh_list(tmp_path, backend_app, proxy_factory):
    anno = '        sidecar.istio.io/statsInclusionSuffixes: "upstream_cx_total"'
    d = manifests(tmp_path, annotations=anno, regexps=[r"cluster\..*\.upstream_rq_total"])
    bs = print_bootstrap(d)
    p = start(proxy_factory, backend_app, bs["stats_config"])
    traffic(p)
    text = stats_text(p)
    # the suffix annotation adds upstream_cx_total; MeshConfig's regexps still apply
    assert re.search(r"^cluster\.backend;\.upstream_cx_total: 1$", text, re.M), text
    assert re.search(r"^cluster\.backend;\.upstream_rq_total: 3$", text, re.M), text


@pytest.mark.parametrize("regex,included", [
    ("envoy_cluster_upstream_rq_total", False),  # the Prometheus name: matches nothing (B016)
    (r"cluster\..*\.upstream_rq_total", True),   # the Envoy name
])
def test_b016_prometheus_names_match_nothing(tmp_path, backend_app, proxy_factory, regex,
                                             included):
    p = start(proxy_factory, backend_app,
              print_bootstrap(manifests(tmp_path, regexps=[regex]))["stats_config"])
    traffic(p)
    text = stats_text(p)
    assert ("cluster.backend;.upstream_rq_total: 3" in text) == included, text
    prom = prom_text(p)
    assert ('envoy_cluster_upstream_rq_total{cluster_name="backend"} 3' in prom) == included, prom
    assert re.search(r"^cluster_manager\.", text, re.M)  # the default set is there either way


def test_bad_annotation_regex_stops_only_its_pod(tmp_path):
    d = manifests(tmp_path, annotations='        sidecar.istio.io/statsInclusionRegexps: "(x"')
    (d / "ok.yaml").write_text((DEPLOYMENT % "").replace("name: web,", "name: ok,"))
    p = run_weftctl("up", d, "--state", tmp_path / "state", "--print-bootstrap", "?")
    assert p.returncode == 1
    assert re.search(r"Error: pod web-\S+\.shop is not started \(the other pods run\): "
                     r"\S+/web\.yaml:\d+:\d+: Deployment "
                     r"shop/web: spec\.template\.metadata\.annotations\[sidecar\.istio\.io/"
                     r"statsInclusionRegexps\]: item 0 \"\(x\": error parsing regexp: "
                     r"missing closing \)", p.stderr), p.stderr
    ok = print_bootstrap(d, pod_prefix="ok-")
    assert ok["stats_config"]["stats_matcher"]["inclusion_list"]["patterns"]


def test_bad_mesh_regex_fails_up(tmp_path):
    d = manifests(tmp_path, regexps=["envoy_("])
    p = run_weftctl("up", d, "--state", tmp_path / "state", "--print-bootstrap", "?")
    assert p.returncode == 1
    assert re.search(r"Error: \S+/mesh\.yaml: defaultConfig\.proxyStatsMatcher\."
                     r"inclusionRegexps\[0\] \"envoy_\(\": error parsing regexp", p.stderr), \
        p.stderr


def test_unparsable_proxy_config_stops_only_its_pod(tmp_path):
    """A proxy.istio.io/config that does not parse stops only its workload's pods (Istio's
    injector refuses them), with file:line, the workload, the annotation and the parse
    error; the other pods run."""
    d = manifests(tmp_path, annotations="        proxy.istio.io/config: 'proxyStatsMatcher: [1'")
    (d / "ok.yaml").write_text((DEPLOYMENT % "").replace("name: web,", "name: ok,"))
    p = run_weftctl("up", d, "--state", tmp_path / "state", "--print-bootstrap", "?")
    assert p.returncode == 1
    assert re.search(r"Error: pod web-\S+\.shop is not started .*: \S+/web\.yaml:\d+:\d+: "
                     r"Deployment shop/web: spec\.template\.metadata\.annotations\[proxy\.istio\."
                     r"io/config\]: does not parse \(line \d+, column \d+ of the value\): yaml: ",
                     p.stderr), p.stderr
    assert "Deployment shop/ok" not in p.stderr, p.stderr
    ok = print_bootstrap(d, pod_prefix="ok-")
    assert ok["stats_config"]["stats_matcher"]["inclusion_list"]["patterns"]


@pytest.mark.parametrize("matcher,why", [
    ("{exclusionRegexps: [x]}", r"proxyStatsMatcher\.exclusionRegexps: unknown field"),
    ("{inclusionPrefixes: [5]}",
     r"proxyStatsMatcher\.inclusionPrefixes\[0\]: want a string, not integer"),
])
def test_annotation_matcher_refused_like_protobuf_json(tmp_path, matcher, why):
    """proxy.istio.io/config's proxyStatsMatcher is decoded as a ProxyStatsMatcher: an unknown
    field or a number where a string goes stops that workload's pods, never ignored."""
    d = manifests(tmp_path, annotations="        proxy.istio.io/config: |\n"
                                        "          proxyStatsMatcher: %s" % matcher)
    (d / "ok.yaml").write_text((DEPLOYMENT % "").replace("name: web,", "name: ok,"))
    p = run_weftctl("up", d, "--state", tmp_path / "state", "--print-bootstrap", "?")
    assert p.returncode == 1
    assert re.search(r"Error: pod web-\S+\.shop is not started .*\S+/web\.yaml:\d+:\d+: "
                     r"Deployment shop/web: spec\.template\.metadata\.annotations\[proxy\.istio\."
                     r"io/config\]: " + why, p.stderr), p.stderr
    assert print_bootstrap(d, pod_prefix="ok-")["stats_config"]


@pytest.mark.parametrize("matcher,where,why", [
    ("    exclusionRegexps: [x]\n", ":3:5:",
     r"defaultConfig\.proxyStatsMatcher\.exclusionRegexps: unknown field"),
    ("    inclusionPrefixes: [5]\n", ":3:25:",
     r"defaultConfig\.proxyStatsMatcher\.inclusionPrefixes\[0\]: want a string, not integer"),
])
def test_mesh_matcher_refused_like_protobuf_json(tmp_path, matcher, where, why):
    """MeshConfig defaultConfig.proxyStatsMatcher, decoded as Istio does: an unknown field or a
    number in a list of strings fails `up`, naming mesh.yaml:line:col and the field."""
    d = manifests(tmp_path)
    (d / "mesh.yaml").write_text("defaultConfig:\n  proxyStatsMatcher:\n" + matcher)
    p = run_weftctl("up", d, "--state", tmp_path / "state", "--print-bootstrap", "?")
    assert p.returncode == 1
    assert re.search(r"Error: \S+/mesh\.yaml" + where + " MeshConfig: " + why, p.stderr), \
        p.stderr
    assert "is not started" not in p.stderr
