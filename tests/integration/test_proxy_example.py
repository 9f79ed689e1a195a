"""The example in README and docs/proxy.md works as written: examples/proxy/bootstrap.json
validates, and served with a backend on 8081 it answers 200 through the proxy and 503 NC for
/missing, with the stats the README greps for. Runs on the example's fixed ports only when
they are free (it is the user's quick start; the other proxy tests use free ports)."""
import json
import os
import socket
import subprocess
import time
import urllib.request
import urllib.error

import pytest

from procs import start_app, stop_process, ROOT
from proxyfix import proxy_path

EXAMPLE = os.path.join(ROOT, "examples", "proxy", "bootstrap.json")


def _free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_example_bootstrap_validates():
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", EXAMPLE],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "configuration '%s' OK" % EXAMPLE


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_example_serves_as_the_readme_says():
    if not all(_free(p) for p in (8081, 10000, 15000)):
        pytest.skip("ports 8081/10000/15000 are in use on this machine")
    app, _ = start_app("--listen", "127.0.0.1:8081", "--name", "backend")
    proxy = subprocess.Popen([proxy_path(), "-c", EXAMPLE, "--concurrency", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if _get("http://127.0.0.1:15000/ready")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "proxy not ready"
            time.sleep(0.05)
        assert _get("http://127.0.0.1:10000/status/200")[0] == 200
        status, body = _get("http://127.0.0.1:10000/missing")
        assert (status, body) == (503, b"")
        stats = _get("http://127.0.0.1:15000/stats")[1].decode()
        assert "http.ingress_http.no_cluster: 1\n" in stats
        # config_dump says when the configuration was applied (this run, not the epoch)
        dump = json.loads(_get("http://127.0.0.1:15000/config_dump")[1])
        stamp = dump["configs"][0]["last_updated"]
        assert stamp.startswith(time.strftime("%Y-%m-%d", time.gmtime())), stamp
    finally:
        proxy.terminate()
        out, err = proxy.communicate(timeout=30)
        stop_process(app)
    assert proxy.returncode == 0, err.decode()
    # the stdout access logger wrote both requests (Envoy's default format)
    lines = out.decode().splitlines()
    assert any('"GET /missing HTTP/1.1" 503 NC ' in l for l in lines), lines
    assert any('"GET /status/200 HTTP/1.1" 200 - ' in l for l in lines), lines
