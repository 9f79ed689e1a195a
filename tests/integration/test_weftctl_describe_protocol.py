"""`weftctl describe` shows each port's protocol as istioctl does (`Port: http 80/HTTP targets
pod port 9090`, `auto-detect` for an unnamed port) and, as weft's addition on stderr, where
the protocol came from: the port name prefix, appProtocol, a well-known port number, or not
declared (sniffed) (issue 19 item 6; operator report B032; protocols.md §1.1). Offline: the
objects from -f, the pod's config dump from --config-dump.
"""
import json

from conftest import run_weftctl

MANIFEST = """\
apiVersion: v1
kind: Service
metadata: {name: catalog-grpc, namespace: shop}
spec:
  selector: {app: catalog-grpc}
  ports:
  - {name: http, port: 80, targetPort: 9090}
  - {name: grpc, port: 81, targetPort: 9091}
  - {name: web, port: 82, targetPort: 9092, appProtocol: grpc}
  - {name: tcp-db, port: 5432, targetPort: 5432}
  - {port: 8080, targetPort: 8080}
  - {name: db, port: 3306, targetPort: 3306}
  - {name: metrics, port: 9100, targetPort: 9100}
---
apiVersion: v1
kind: Pod
metadata:
  name: catalog-grpc-1
  namespace: shop
  labels: {app: catalog-grpc, version: v1}
spec:
  containers:
  - name: app
    image: test/grpc-echo
    ports:
    - {containerPort: 9090}
    - {containerPort: 9091}
    - {containerPort: 9092}
    - {containerPort: 5432}
    - {containerPort: 8080}
    - {containerPort: 3306}
    - {containerPort: 9100}
status:
  phase: Running
"""

EMPTY_DUMP = {"configs": [
    {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"},
    {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"},
    {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"}]}


def run(tmp_path, kind, name):
    m = tmp_path / "mesh.yaml"
    m.write_text(MANIFEST)
    d = tmp_path / "dump.json"
    d.write_text(json.dumps(EMPTY_DUMP))
    r = run_weftctl("describe", kind, name, "-n", "shop", "-f", m,
                    "--config-dump", "catalog-grpc-1.shop=%s" % d)
    assert r.returncode == 0, r.stderr
    return r


PORTS = ("Service: catalog-grpc\n"
         "   Port: http 80/HTTP targets pod port 9090\n"
         "   Port: grpc 81/GRPC targets pod port 9091\n"
         "   Port: web 82/GRPC targets pod port 9092\n"
         "   Port: tcp-db 5432/TCP targets pod port 5432\n"
         "   Port:  8080/auto-detect targets pod port 8080\n"
         "   Port: db 3306/TCP targets pod port 3306\n"
         "   Port: metrics 9100/UnsupportedProtocol targets pod port 9100\n")

SOURCES = [
    'weft: port http 80: protocol HTTP from the port name prefix "http"; HTTP/1.1 toward the '
    'app: an HTTP/2-only (gRPC) server needs the name grpc or http2, or appProtocol: grpc',
    'weft: port grpc 81: protocol GRPC from the port name prefix "grpc"; HTTP/2 toward the app',
    'weft: port web 82: protocol GRPC from appProtocol "grpc" (it wins over the port name); '
    'HTTP/2 toward the app',
    'weft: port tcp-db 5432: protocol TCP from the port name prefix "tcp"',
    "weft: port (unnamed) 8080: not declared: sniffed (auto-detection): HTTP/1.1 and HTTP/2 "
    "(h2c) are detected, anything else is TCP",
    "weft: port db 3306: protocol TCP from the well-known port number 3306 (a server-first "
    "protocol: not sniffed)",
    'weft: port metrics 9100: port name "metrics" names no protocol Istio knows: not declared: '
    "sniffed (auto-detection): HTTP/1.1 and HTTP/2 (h2c) are detected, anything else is TCP",
]


def test_describe_pod_port_protocols_and_where_they_came_from(tmp_path):
    r = run(tmp_path, "pod", "catalog-grpc-1")
    assert "--------------------\n" + PORTS in r.stdout, r.stdout
    assert "weft:" not in r.stdout  # stdout stays istioctl's
    got = [x for x in r.stderr.splitlines() if x.startswith("weft: port ")]
    assert got == SOURCES, r.stderr


def test_describe_service_port_protocols(tmp_path):
    r = run(tmp_path, "svc", "catalog-grpc")
    assert r.stdout.startswith(PORTS), r.stdout
    got = [x for x in r.stderr.splitlines() if x.startswith("weft: port ")]
    assert got == SOURCES, r.stderr
