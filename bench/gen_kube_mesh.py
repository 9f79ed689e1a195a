#!/usr/bin/env python3
"""gen_kube_mesh.py - one deterministic mesh as Kubernetes API objects and as a local-mesh folder,
for the pilot churn benchmark (bench/run_pilot_kube.sh).

Usage: bench/gen_kube_mesh.py [-n SERVICES] [-p PODS_PER_SERVICE] [-s NAMESPACES] [--vs-every K]
                              [--markers M] OUTDIR

SERVICES services (default 1000) in NAMESPACES namespaces (default 10, mesh-00 ...), each with
PODS_PER_SERVICE Pods (default 5: 5,000 Pods), as bench/gen_mesh.py shapes them: Service http
80 -> 8080 (every 5th also grpc-api 9090), Pods labelled app/version (services with a
VirtualService have v1 and v2 Pods, alternating), every K-th service (default 10) a
VirtualService (90/10 v1/v2, timeout, retries) and a DestinationRule (subsets v1, v2).

Written:
  OUTDIR/objects.json     the API objects, a JSON array in creation order: Namespaces (and
                          istio-system), Services, Pods (status.phase Running, status.podIP,
                          the Ready condition), one EndpointSlice per Service (label
                          kubernetes.io/service-name, managed-by the EndpointSlice controller,
                          one endpoint per Pod with its address, conditions ready/serving/
                          terminating and targetRef to the Pod), VirtualServices,
                          DestinationRules. tests/kubeapi/bulkload.py turns it into a state file.
  OUTDIR/folder/config/   the same Services and Istio config as YAML files, and
  OUTDIR/folder/pods/     the same Pods, one JSON file each (what `weft-pilot --config-dir`
                          reads; a Pod that is not ready has no status.podIP there, which is how
                          the Kubernetes source serves a Pod its EndpointSlice marks not ready).
  OUTDIR/proxies.txt      one line per Pod, "<pod> <ns> <podIP> <labels JSON>", the first Pod of
                          every Service first (so the first N clients are N services' Pods).
  OUTDIR/plan.json        for the churn driver (bench/pilot_churn.py): per Service its namespace,
                          name, EndpointSlice name and ports, and its Pods (name, IP, ready);
                          "marker": true on the M services (default 40, spread evenly) whose last
                          Pod starts NOT ready: each marked change makes one of them ready, so
                          its IP appears in EDS for the first time (the marker).

Everything is deterministic (no randomness, no clocks). Standard library only.
"""
import argparse
import json
import os
import sys


def service(ns, svc, i):
    ports = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    if i % 5 == 0:
        ports.append({"name": "grpc-api", "port": 9090, "targetPort": 9090, "protocol": "TCP"})
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": svc, "namespace": ns, "labels": {"app": svc, "service": svc}},
            "spec": {"selector": {"app": svc}, "ports": ports}}


def pod(ns, name, labels, ip, ready, folder=False):
    st = {"phase": "Running",
          "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ready or not folder:
        st["podIP"] = ip
        st["podIPs"] = [{"ip": ip}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "registry.example.com/%s:1.0.0"
                                     % labels["app"],
                                     "ports": [{"containerPort": 8080, "name": "http",
                                                "protocol": "TCP"}]}]},
            "status": st}


def slice_ports(svc_obj):
    return [{"name": p["name"], "port": p["targetPort"], "protocol": "TCP"}
            for p in svc_obj["spec"]["ports"]]


def slice_endpoints(ns, pods):
    """pods: [{"name", "ip", "ready"}] -> the EndpointSlice endpoints."""
    return [{"addresses": [p["ip"]],
             "conditions": {"ready": p["ready"], "serving": p["ready"], "terminating": False},
             "targetRef": {"kind": "Pod", "namespace": ns, "name": p["name"]}} for p in pods]


def endpoint_slice(ns, svc, name, ports, pods):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc,
                                    "endpointslice.kubernetes.io/managed-by":
                                        "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4", "ports": ports, "endpoints": slice_endpoints(ns, pods)}


def virtual_service(ns, svc):
    dest = lambda sub: {"host": svc, "subset": sub, "port": {"number": 80}}  # noqa: E731
    return {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
            "metadata": {"name": svc, "namespace": ns},
            "spec": {"hosts": [svc], "http": [
                {"name": "canary", "match": [{"headers": {"x-canary": {"exact": "true"}}}],
                 "route": [{"destination": dest("v2")}]},
                {"name": "default",
                 "route": [{"destination": dest("v1"), "weight": 90},
                           {"destination": dest("v2"), "weight": 10}],
                 "timeout": "5s", "retries": {"attempts": 3, "perTryTimeout": "2s",
                                              "retryOn": "5xx"}}]}}


def destination_rule(ns, svc):
    return {"apiVersion": "networking.istio.io/v1beta1", "kind": "DestinationRule",
            "metadata": {"name": svc, "namespace": ns},
            "spec": {"host": svc, "trafficPolicy": {
                "loadBalancer": {"simple": "LEAST_REQUEST"},
                "connectionPool": {"http": {"http1MaxPendingRequests": 100,
                                            "maxRequestsPerConnection": 10}},
                "outlierDetection": {"consecutive5xxErrors": 5, "interval": "10s",
                                     "baseEjectionTime": "30s"}},
                "subsets": [{"name": "v1", "labels": {"version": "v1"}},
                            {"name": "v2", "labels": {"version": "v2"}}]}}


def docs_yaml(objs):
    """JSON documents are YAML documents."""
    return "".join("---\n%s\n" % json.dumps(o, sort_keys=True) for o in objs)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="services (default 1000)")
    ap.add_argument("-p", type=int, default=5, help="Pods per service (default 5)")
    ap.add_argument("-s", type=int, default=10, help="namespaces (default 10)")
    ap.add_argument("--vs-every", type=int, default=10,
                    help="every K-th service gets a VirtualService + DestinationRule")
    ap.add_argument("--markers", type=int, default=40,
                    help="services whose last Pod starts not ready (marked changes)")
    ap.add_argument("out")
    a = ap.parse_args()
    if a.n < 2 or a.p < 2 or a.s < 1 or a.vs_every < 1 or a.n * a.p > 60000 or \
            not 1 <= a.markers < a.n:
        ap.error("bad sizes (services >= 2, pods per service >= 2, services * pods <= 60000, "
                 "1 <= markers < services)")
    cfg, pods_dir = os.path.join(a.out, "folder", "config"), os.path.join(a.out, "folder", "pods")
    for d in (cfg, pods_dir):
        os.makedirs(d, exist_ok=True)
    nss = ["mesh-%02d" % k for k in range(a.s)]
    nsobjs = [{"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": ns, "labels": {"istio-injection": "enabled"}}} for ns in nss]
    nsobjs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}})
    write(os.path.join(cfg, "namespaces.yaml"), docs_yaml(nsobjs))
    step = a.n // a.markers
    markers = {1 + k * step for k in range(a.markers)}
    svcs, pods, slices, istio, plan, proxies = [], [], [], [], [], []
    hostn = 0
    for i in range(a.n):
        ns, svc = nss[i % a.s], "svc-%04d" % i
        has_vs = i % a.vs_every == 0
        sobj = service(ns, svc, i)
        svcs.append(sobj)
        extra = [virtual_service(ns, svc), destination_rule(ns, svc)] if has_vs else []
        istio += extra
        write(os.path.join(cfg, "%s.%s.yaml" % (ns, svc)), docs_yaml([sobj] + extra))
        ppl = []
        for k in range(a.p):
            hostn += 1
            name = "%s-%d" % (svc, k)
            ip = "10.%d.%d.%d" % (10 + hostn // 62500, (hostn // 250) % 250, 1 + hostn % 250)
            labels = {"app": svc, "version": "v2" if has_vs and k % 2 else "v1"}
            ready = not (i in markers and k == a.p - 1)
            pods.append(pod(ns, name, labels, ip, ready))
            write(os.path.join(pods_dir, "%s.%s.json" % (ns, name)),
                  json.dumps(pod(ns, name, labels, ip, ready, folder=True), sort_keys=True))
            ppl.append({"name": name, "ip": ip, "ready": ready, "labels": labels})
            proxies.append((k, i, name, ns, ip, labels))
        sl_name = "%s-%05x" % (svc, (i * 2654435761) & 0xfffff)
        slices.append(endpoint_slice(ns, svc, sl_name, slice_ports(sobj), ppl))
        plan.append({"ns": ns, "name": svc, "slice": sl_name, "ports": slice_ports(sobj),
                     "marker": i in markers, "pods": ppl})
    write(os.path.join(a.out, "objects.json"), json.dumps(nsobjs + svcs + pods + slices + istio))
    write(os.path.join(a.out, "plan.json"), json.dumps({"services": plan}))
    proxies.sort(key=lambda p: (p[0], p[1]))
    with open(os.path.join(a.out, "proxies.txt"), "w") as f:
        for _, _, name, ns, ip, labels in proxies:
            f.write("%s %s %s %s\n" % (name, ns, ip, json.dumps(labels, sort_keys=True,
                                                                separators=(",", ":"))))
    print("mesh: %d services in %d namespaces, %d pods (%d start not ready: markers), "
          "%d VirtualServices -> %s" % (a.n, a.s, len(pods), a.markers, len(istio) // 2, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
