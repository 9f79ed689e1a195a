#!/usr/bin/env python3
"""gen_mesh.py - a deterministic local mesh for the pilot scale benchmark (run_pilot_scale.sh).

Usage: bench/gen_mesh.py [-n SERVICES] [-s NAMESPACES] [--vs-every K] OUTDIR

Writes, for SERVICES services (default 1000) spread over NAMESPACES namespaces (default 10,
named mesh-00 ...), in the shapes `weftctl up` / tests/integration/meshfix.py use:

  OUTDIR/config/namespaces.yaml          the Namespace objects
  OUTDIR/config/<ns>.<svc>.yaml          Service (http 80 -> 8080; every 5th service also
                                         grpc 9090), Deployment (app, version labels); every
                                         K-th service (default 10) also a VirtualService
                                         (mesh, 90/10 v1/v2, timeout, retries) and a
                                         DestinationRule (subsets v1 and v2, a traffic policy)
  OUTDIR/pods/<ns>.<pod>.json            one Pod per replica, labels app/version, status.podIP
                                         10.10.X.Y (services with a VirtualService have a v1
                                         and a v2 pod, the others one v1 pod)
  OUTDIR/proxies.txt                     one line per pod: "<pod> <ns> <podIP> <labels JSON>"
                                         (what the load client turns into node ids and metadata)
  OUTDIR/changes/                        the files the benchmark swaps in, as pairs A/B:
      vs.target, vs-a.yaml, vs-b.yaml    the first VirtualService's file with weights 90/10 (A,
                                         as generated) and 50/50 (B): a config (full) change
      pod.target, pod-a.json, pod-b.json the LAST pod (not one of the first 1000 proxies) with
                                         its generated IP (A) and another (B): endpoint-only

Everything is deterministic (no randomness, no clocks). Standard library only.
"""
import argparse
import json
import os
import sys


def service_yaml(ns, svc, i, has_vs, replicas):
    grpc = i % 5 == 0
    out = [
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\n"
        "  labels: {app: %s, service: %s}\nspec:\n  selector: {app: %s}\n  ports:\n"
        "  - {name: http, port: 80, targetPort: 8080, protocol: TCP}\n" % (svc, ns, svc, svc, svc)
    ]
    if grpc:
        out.append("  - {name: grpc-api, port: 9090, targetPort: 9090}\n")
    out.append(
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\n"
        "  labels: {app: %s}\nspec:\n  replicas: %d\n  selector:\n    matchLabels: {app: %s}\n"
        "  template:\n    metadata:\n      labels: {app: %s, version: v1}\n    spec:\n"
        "      containers:\n      - name: app\n        image: registry.example.com/%s:1.0.0\n"
        "        ports:\n        - {containerPort: 8080, name: http}\n"
        % (svc, ns, svc, replicas, svc, svc, svc))
    return "".join(out)


def vs_yaml(ns, svc, w1):
    return (
        "---\napiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata:\n"
        "  name: %s\n  namespace: %s\nspec:\n  hosts:\n  - %s\n  http:\n"
        "  - name: canary\n    match:\n    - headers:\n        x-canary: {exact: \"true\"}\n"
        "    route:\n    - destination: {host: %s, subset: v2, port: {number: 80}}\n"
        "  - name: default\n    route:\n"
        "    - destination: {host: %s, subset: v1, port: {number: 80}}\n      weight: %d\n"
        "    - destination: {host: %s, subset: v2, port: {number: 80}}\n      weight: %d\n"
        "    timeout: 5s\n    retries: {attempts: 3, perTryTimeout: 2s, retryOn: 5xx}\n"
        % (svc, ns, svc, svc, svc, w1, svc, 100 - w1))


def dr_yaml(ns, svc):
    return (
        "---\napiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\nmetadata:\n"
        "  name: %s\n  namespace: %s\nspec:\n  host: %s\n  trafficPolicy:\n"
        "    loadBalancer: {simple: LEAST_REQUEST}\n"
        "    connectionPool: {http: {http1MaxPendingRequests: 100, maxRequestsPerConnection: 10}}\n"
        "    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s}\n"
        "  subsets:\n  - name: v1\n    labels: {version: v1}\n"
        "  - name: v2\n    labels: {version: v2}\n" % (svc, ns, svc))


def pod_obj(name, ns, labels, ip):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "weft/app",
                                     "ports": [{"containerPort": 8080, "name": "http",
                                                "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": ip}}


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="services (default 1000)")
    ap.add_argument("-s", type=int, default=10, help="namespaces (default 10)")
    ap.add_argument("--vs-every", type=int, default=10,
                    help="every K-th service gets a VirtualService + DestinationRule")
    ap.add_argument("out")
    a = ap.parse_args()
    if a.n < 1 or a.s < 1 or a.vs_every < 1 or a.n > 60000:
        ap.error("bad sizes")
    cfg, pods, chg = (os.path.join(a.out, d) for d in ("config", "pods", "changes"))
    for d in (cfg, pods, chg):
        os.makedirs(d, exist_ok=True)
    nss = ["mesh-%02d" % k for k in range(a.s)]
    write(os.path.join(cfg, "namespaces.yaml"),
          "".join("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n"
                  "  labels: {istio-injection: enabled}\n" % ns
                  for ns in nss + ["istioinaction"]))
    proxies = []
    first_vs = None
    hostn = 0
    for i in range(a.n):
        ns, svc = nss[i % a.s], "svc-%04d" % i
        has_vs = i % a.vs_every == 0
        versions = ["v1", "v2"] if has_vs else ["v1"]
        text = service_yaml(ns, svc, i, has_vs, len(versions))
        if has_vs:
            text += dr_yaml(ns, svc)
            path = os.path.join(cfg, "%s.%s.yaml" % (ns, svc))
            if first_vs is None:
                first_vs = (path, text + vs_yaml(ns, svc, 50))
            text += vs_yaml(ns, svc, 90)
        write(os.path.join(cfg, "%s.%s.yaml" % (ns, svc)), text)
        for v in versions:
            hostn += 1
            name = "%s-%s-%d" % (svc, v, 0)
            ip = "10.10.%d.%d" % (hostn // 250, 1 + hostn % 250)
            labels = {"app": svc, "version": v}
            write(os.path.join(pods, "%s.%s.json" % (ns, name)),
                  json.dumps(pod_obj(name, ns, labels, ip), sort_keys=True))
            proxies.append((name, ns, ip, labels))
    # Proxies: one v1 pod of each service first (so the first N cover N services), the
    # v2 pods last.
    proxies.sort(key=lambda p: (p[3]["version"], p[1], p[0]))
    with open(os.path.join(a.out, "proxies.txt"), "w") as f:
        for name, ns, ip, labels in proxies:
            f.write("%s %s %s %s\n" % (name, ns, ip, json.dumps(labels, sort_keys=True,
                                                                separators=(",", ":"))))
    if first_vs:
        path, b_text = first_vs
        write(os.path.join(chg, "vs.target"), os.path.abspath(path) + "\n")
        with open(path) as f:
            write(os.path.join(chg, "vs-a.yaml"), f.read())
        write(os.path.join(chg, "vs-b.yaml"), b_text)
    name, ns, ip, labels = proxies[-1]
    ppath = os.path.join(pods, "%s.%s.json" % (ns, name))
    write(os.path.join(chg, "pod.target"), os.path.abspath(ppath) + "\n")
    write(os.path.join(chg, "pod-a.json"), json.dumps(pod_obj(name, ns, labels, ip),
                                                      sort_keys=True))
    write(os.path.join(chg, "pod-b.json"),
          json.dumps(pod_obj(name, ns, labels, "10.20.0.1"), sort_keys=True))
    print("mesh: %d services in %d namespaces, %d pods, %d VirtualServices -> %s"
          % (a.n, a.s, len(proxies), (a.n + a.vs_every - 1) // a.vs_every, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
