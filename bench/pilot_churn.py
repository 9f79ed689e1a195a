#!/usr/bin/env python3
"""pilot_churn.py - endpoint churn for the pilot churn benchmark (bench/run_pilot_kube.sh): RATE
endpoint changes per second for SECONDS, a marked change among them MARKS times per second.

Usage: bench/pilot_churn.py --mesh DIR --clients N --ctl FIFO [--rate 50] [--batch 50]
                            [--seconds 20] [--marks-per-s 1]
                            (--api IP:PORT | --folder)

DIR is bench/gen_kube_mesh.py's output (plan.json, proxies.txt, folder/pods). One change flips
one endpoint's readiness, the way the EndpointSlice controller reports a Pod going (not) ready:
  --api     a JSON merge patch of the Service's EndpointSlice (its whole endpoints list, one
            endpoint's conditions ready/serving flipped) to the test API server, one write,
            over one kept-alive HTTP connection;
  --folder  the Pod's file in DIR/folder/pods rewritten (written aside, renamed over) with or
            without status.podIP (what the Kubernetes source serves for a ready / not ready Pod).
Churned Pods: every Pod but the first N of proxies.txt (the simulated sidecars' own Pods) and
the marker Services'. Changes go out in bursts of BATCH every BATCH/RATE s (BATCH 1 = evenly
spaced). The first change of a burst is a marked change when one is due: the next marker
Service's last Pod becomes ready (its IP appears in EDS). The marked change is not made here:
it is written as a "mark" command to FIFO (weft-xds-load's stdin, bench/xds_load.c), so that
the load client starts its clock and makes the change itself (one clock with the ACKs).

Output (stdout): one line "CHURN {json}": writes, marks, seconds, achieved rate, write latency
p50/p99/max (ms; the API server's answer, or the rename), behind (ms: the latest a burst
started against the schedule), errors. Exit 0, 1 when a write failed or marks ran out, 2 on a
bad command line.
"""
import argparse
import http.client
import json
import os
import sys
import time


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(p / 100.0 * len(v) + 0.999999) - 1))]


class Mesh:
    def __init__(self, d, clients):
        with open(os.path.join(d, "plan.json")) as f:
            self.services = json.load(f)["services"]
        with open(os.path.join(d, "proxies.txt")) as f:
            own = {tuple(ln.split()[:2]) for ln in list(f)[:clients]}
        self.churn = [(s, k) for s in self.services if not s["marker"]
                      for k, p in enumerate(s["pods"]) if (p["name"], s["ns"]) not in own]
        self.markers = [s for s in self.services if s["marker"]]
        self.d = d

    def endpoints(self, s):
        return [{"addresses": [p["ip"]],
                 "conditions": {"ready": p["ready"], "serving": p["ready"], "terminating": False},
                 "targetRef": {"kind": "Pod", "namespace": s["ns"], "name": p["name"]}}
                for p in s["pods"]]

    def pod_file(self, s, p):
        st = {"phase": "Running",
              "conditions": [{"type": "Ready", "status": "True" if p["ready"] else "False"}]}
        if p["ready"]:
            st.update(podIP=p["ip"], podIPs=[{"ip": p["ip"]}])
        return json.dumps({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": p["name"], "namespace": s["ns"],
                                        "labels": p["labels"]},
                           "spec": {"containers": [{"name": "app",
                                                    "image": "registry.example.com/%s:1.0.0"
                                                    % p["labels"]["app"],
                                                    "ports": [{"containerPort": 8080,
                                                               "name": "http",
                                                               "protocol": "TCP"}]}]},
                           "status": st}, sort_keys=True)

    def pod_path(self, s, p):
        return os.path.join(self.d, "folder", "pods", "%s.%s.json" % (s["ns"], p["name"]))


def slice_path(s):
    return "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices/%s" % (s["ns"], s["slice"])


class ApiWriter:
    def __init__(self, addr):
        self.host, self.port = addr.rsplit(":", 1)
        self.conn = None

    def patch(self, path, body):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=30)
            try:
                self.conn.request("PATCH", path, body=body,
                                  headers={"Content-Type": "application/merge-patch+json"})
                r = self.conn.getresponse()
                r.read()
                return r.status
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh", required=True)
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--ctl", required=True, help="weft-xds-load's command fifo")
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--marks-per-s", type=float, default=1.0)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--api", help="the test API server, IP:PORT (plain HTTP)")
    g.add_argument("--folder", action="store_true")
    a = ap.parse_args()
    if a.rate <= 0 or a.batch < 1 or a.seconds <= 0 or a.marks_per_s < 0 or a.clients < 1:
        ap.error("bad rates or sizes")
    mesh = Mesh(a.mesh, a.clients)
    if not mesh.churn:
        ap.error("no Pods to churn (every Pod is a client's or a marker's)")
    stage = os.path.join(a.mesh, "stage")
    os.makedirs(stage, exist_ok=True)
    api = ApiWriter(a.api) if a.api else None
    ctl = open(a.ctl, "w")
    period = a.batch / a.rate
    bursts = max(1, int(round(a.seconds * a.rate / a.batch)))
    mark_every = 1.0 / a.marks_per_s if a.marks_per_s else None
    lat, writes, marks, errors, behind = [], 0, 0, 0, 0.0
    nxt = 0  # next churn Pod (round robin)
    start = time.monotonic()
    next_mark = start
    for b in range(bursts):
        due = start + b * period
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        else:
            behind = max(behind, (now - due) * 1000)
        for w in range(a.batch):
            if w == 0 and mark_every and time.monotonic() >= next_mark:
                if marks >= len(mesh.markers):
                    sys.stderr.write("pilot_churn.py: out of marker services (%d)\n" % marks)
                    errors += 1
                    mark_every = None
                    continue
                s = mesh.markers[marks]
                p = s["pods"][-1]
                p["ready"] = True
                label = "m%d" % marks
                if api:
                    body = os.path.join(stage, "%s.json" % label)
                    with open(body, "w") as f:
                        json.dump({"endpoints": mesh.endpoints(s)}, f)
                    cmd = "mark %s \"%s\" http %s PATCH %s application/merge-patch+json %s" % (
                        label, p["ip"], a.api, slice_path(s), body)
                else:
                    src = os.path.join(stage, "%s.json" % label)
                    with open(src, "w") as f:
                        f.write(mesh.pod_file(s, p))
                    cmd = "mark %s \"%s\" rename %s %s" % (label, p["ip"], src,
                                                          mesh.pod_path(s, p))
                ctl.write(cmd + "\n")
                ctl.flush()
                marks += 1
                next_mark += mark_every
                writes += 1
                continue
            s, k = mesh.churn[nxt % len(mesh.churn)]
            nxt += 1
            p = s["pods"][k]
            p["ready"] = not p["ready"]
            t = time.monotonic()
            if api:
                st = api.patch(slice_path(s), json.dumps({"endpoints": mesh.endpoints(s)}))
                if st != 200:
                    errors += 1
                    sys.stderr.write("pilot_churn.py: PATCH %s: %d\n" % (slice_path(s), st))
            else:
                tmp = os.path.join(stage, "churn.json")
                with open(tmp, "w") as f:
                    f.write(mesh.pod_file(s, p))
                os.rename(tmp, mesh.pod_path(s, p))
            lat.append((time.monotonic() - t) * 1000)
            writes += 1
    end = start + bursts * period  # the last burst's period runs out as the others do
    if time.monotonic() < end:
        time.sleep(end - time.monotonic())
    elapsed = time.monotonic() - start
    ctl.close()
    out = {"writes": writes, "marks": marks, "seconds": round(elapsed, 2),
           "rate": round(writes / elapsed, 1), "target_rate": a.rate, "batch": a.batch,
           "write_p50_ms": round(pct(lat, 50), 2), "write_p99_ms": round(pct(lat, 99), 2),
           "write_max_ms": round(max(lat or [0]), 2), "behind_ms": round(behind, 1),
           "errors": errors}
    print("CHURN " + json.dumps(out), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
