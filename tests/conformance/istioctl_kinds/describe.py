"""Runner for the `x describe` golden cases (input_kind kubernetes-objects+config-dumps).

istioctl reads the objects from the Kubernetes API and each pod's /config_dump through a
port-forward; weftctl describe reads the same inputs from files: `-f` takes the case's
cluster state (a Kubernetes List) and `--config-dump POD=FILE` each pod's dump (a value "{}"
in config_dumps_by_pod is a literal empty dump, written to a scratch file).
"""
import os
import subprocess

KINDS = ["kubernetes-objects+config-dumps"]


def run(case, ctx):
    argv = [ctx.weftctl] + case["command"].split() + list(case.get("args", []))
    argv += list(case.get("flags", []))
    argv += ["-f", ctx.path(case["input"])]
    if case.get("istio_namespace"):
        argv += ["--istioNamespace", case["istio_namespace"]]
    for pod, dump in sorted(case.get("config_dumps_by_pod", {}).items()):
        if dump.lstrip().startswith("{"):
            path = os.path.join(ctx.tmp, "%s-%s.dump.json" % (case["id"], pod))
            with open(path, "w", encoding="utf-8") as f:
                f.write(dump)
        else:
            path = ctx.path(dump)
        argv += ["--config-dump", "%s=%s" % (pod, path)]
    env = dict(os.environ, WEFTCTL_NOW=ctx.now)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr
