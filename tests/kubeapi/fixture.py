"""Helpers for tests that run the test API server (kubeapi.py): start and stop it, make a test
CA with a server certificate for 127.0.0.1 and a client certificate (openssl CLI), write a
kubeconfig, and find the real clients (Debian's kubectl, any other kubectl on PATH)."""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
KUBEAPI = os.path.join(HERE, "kubeapi.py")
PY = "/usr/bin/python3"
DEBIAN_KUBECTL = os.path.join(
    os.environ.get("WEFT_DEBIAN_KUBECTL_DIR", "/usr/local/lib/weft/kubernetes-client"),
    "kubectl")


def kubectls():
    """[(label, path)]: Debian's kubectl (kubernetes-client: /usr/bin/kubectl when that package
    owns it, else where scripts/setup unpacked it) and any other kubectl on PATH."""
    out = []
    if os.access(DEBIAN_KUBECTL, os.X_OK):
        out.append(("debian", DEBIAN_KUBECTL))
    path = shutil.which("kubectl")
    if path:
        owner = subprocess.run(["dpkg-query", "-S", os.path.realpath(path)],
                               capture_output=True, text=True).stdout
        owner2 = subprocess.run(["dpkg-query", "-S", "/usr/bin/kubectl"],
                                capture_output=True, text=True).stdout
        label = "debian" if (owner or owner2).startswith("kubernetes-client:") else "path"
        if not any(p == path for _, p in out) and not (label == "debian" and out):
            out.append((label, path))
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30, **kw)


def make_certs(d):
    """A test CA, a server certificate for 127.0.0.1/localhost and a client certificate.
    Returns a dict of file paths."""
    p = {k: os.path.join(d, k) for k in ("ca.crt", "ca.key", "server.crt", "server.key",
                                          "client.crt", "client.key")}
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", p["ca.key"], "-out", p["ca.crt"], "-days", "2",
         "-subj", "/CN=weft-test-kube-ca"])
    for who, subj, ext in (
            ("server", "/CN=kube-apiserver",
             "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"),
            ("client", "/O=system:masters/CN=weft-test", "extendedKeyUsage=clientAuth")):
        csr = os.path.join(d, who + ".csr")
        extf = os.path.join(d, who + ".ext")
        with open(extf, "w") as f:
            f.write(ext + "\n")
        run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", p[who + ".key"], "-out", csr, "-subj", subj])
        run(["openssl", "x509", "-req", "-in", csr, "-CA", p["ca.crt"], "-CAkey", p["ca.key"],
             "-CAcreateserial", "-out", p[who + ".crt"], "-days", "2", "-extfile", extf])
    return p


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(path, server, token=None, ca=None, client=None, namespace="default",
                     context="test"):
    """A kubeconfig (JSON is YAML) with certificate-authority-data when ca is given and
    client-certificate-data/-key-data when client=(crt, key)."""
    cluster = {"server": server}
    if ca:
        cluster["certificate-authority-data"] = b64file(ca)
    user = {}
    if token:
        user["token"] = token
    if client:
        user["client-certificate-data"] = b64file(client[0])
        user["client-key-data"] = b64file(client[1])
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": "c", "cluster": cluster}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": context,
                         "context": {"cluster": "c", "user": "u", "namespace": namespace}}]}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


class KubeApi:
    """A running kubeapi.py. args: extra command-line arguments."""

    def __init__(self, args=(), port=0, log=None):
        self.args = list(args)
        self.port = port
        self.log = log
        self.proc = None
        self.url = None

    def start(self, timeout=10):
        cmd = [PY, KUBEAPI, "--port", str(self.port)] + self.args
        err = open(self.log, "a") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("kubeapi listening on "):
                break
            if self.proc.poll() is not None:
                raise RuntimeError("kubeapi.py exited: %s" % self.proc.returncode)
        if not line.startswith("kubeapi listening on "):
            self.stop()
            raise RuntimeError("kubeapi.py did not start")
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None

    def control(self, what):
        """POST /_test/<what> over plain HTTP (only for servers without TLS) or with an
        unverified TLS context."""
        import ssl
        ctx = ssl._create_unverified_context() if self.url.startswith("https") else None
        req = urllib.request.Request(self.url + "/_test/" + what, data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return json.loads(r.read())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    print(kubectls(), file=sys.stderr)
