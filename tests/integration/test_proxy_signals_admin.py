"""weft-proxy: signals, /drain_listeners?inboundonly and configuration error messages.

- Envoy's server (server.cc): SIGHUP is eaten ("caught and eating SIGHUP"), SIGUSR1 reopens
  the access logs as POST /reopen_logs does. weft used to die on both (exit 129 / 138).
- POST /drain_listeners (ListenersHandler::handlerDrainListeners): ?inboundonly stops only the
  listeners whose traffic_direction is INBOUND (Istio's agent sends
  drain_listeners?inboundonly&graceful); outbound listeners keep serving. ?graceful starts the
  drain sequence (/ready 503) and stops the listeners at its end; ?graceful&skip_exit never
  stops them; ?skip_exit without ?graceful is a 400 "skip_exit requires graceful". The process
  never exits for /drain_listeners.
- configuration errors name the file and the JSON path ("FILE: JSON.PATH: message", as every
  other bootstrap error): a directory given to -c, a bad access log format, an access log path
  that cannot be opened.
"""
import os
import signal
import socket
import subprocess
import time

import pytest

from procs import free_port
from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, proxy_path, route,
                      route_config, vhost, write_bootstrap)

assert proxy_factory  # fixture, imported for pytest

ALOG = ".access_log[0].typed_config"


def _direct_rc(body):
    return route_config([vhost("all", ["*"], [route(prefix="/", direct=(200, body))])])


def _bs(listeners):
    return bootstrap(listeners, [cluster("unused", [free_port()])])


def _wait(cond, timeout=5, what="condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.03)


def _refused(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            return s.recv(1) == b""
    except OSError:
        return True


# ---------- signals ----------

def test_sighup_is_ignored(proxy_factory):
    proxy = proxy_factory(_bs([listener(_direct_rc("hi"))]))
    proxy.proc.send_signal(signal.SIGHUP)
    _wait(lambda: "SIGHUP" in proxy.stderr_text() or not proxy.alive(), what="SIGHUP handled")
    assert proxy.alive(), proxy.stderr_text()
    status, _, body = proxy.request("GET", "/")
    assert (status, body) == (200, b"hi")
    assert proxy.stop() == 0


def test_sigusr1_reopens_access_logs(proxy_factory):
    lst = listener(_direct_rc("hi"), access_logs=[access_log(fmt="%REQ(:PATH)%\n")])
    proxy = proxy_factory(_bs([lst]))
    assert proxy.request("GET", "/before")[0] == 200
    assert proxy.access_log_lines(1) == ["/before"]
    path = proxy.access_log_path()
    os.rename(path, path + ".1")  # what logrotate does
    proxy.proc.send_signal(signal.SIGUSR1)
    _wait(lambda: os.path.exists(path) or not proxy.alive(), what="the access log reopened")
    assert proxy.alive(), proxy.stderr_text()
    assert proxy.request("GET", "/after")[0] == 200
    assert proxy.access_log_lines(1) == ["/after"]
    with open(path + ".1") as f:
        assert f.read() == "/before\n"
    assert "Reopening access logs" in proxy.stderr_text()
    assert proxy.stop() == 0


# ---------- /drain_listeners ----------

def _two_directions():
    inbound = listener(_direct_rc("in"), name="inbound")
    inbound["traffic_direction"] = "INBOUND"
    outbound = listener(_direct_rc("out"), name="outbound")
    outbound["traffic_direction"] = "OUTBOUND"
    return _bs([inbound, outbound])


def test_drain_inboundonly_stops_only_inbound_listeners(proxy_factory):
    proxy = proxy_factory(_two_directions())
    pin, pout = proxy.ports["inbound"], proxy.ports["outbound"]
    status, _, body = proxy.request("GET", "/", port=pin)
    assert (status, body) == (200, b"in")
    status, _, body = proxy.admin("/drain_listeners?inboundonly", "POST")
    assert (status, body) == (200, b"OK\n")
    _wait(lambda: _refused(pin), what="the inbound listener to stop")
    for _ in range(3):
        status, _, body = proxy.request("GET", "/", port=pout)
        assert (status, body) == (200, b"out")
    assert proxy.admin("/ready")[0] == 200  # no drain sequence without ?graceful
    assert proxy.alive(), proxy.stderr_text()
    assert proxy.stop() == 0


def test_drain_inboundonly_graceful_stops_inbound_at_the_end_of_the_drain(proxy_factory):
    """Istio's agent: the drain sequence starts (not ready), the inbound listener keeps
    accepting for --drain-time-s and then stops; outbound serves on; the process stays up."""
    proxy = proxy_factory(_two_directions(), args=["--drain-time-s", "1"])
    pin, pout = proxy.ports["inbound"], proxy.ports["outbound"]
    t0 = time.monotonic()
    assert proxy.admin("/drain_listeners?inboundonly&graceful", "POST")[0] == 200
    status, _, body = proxy.admin("/ready")
    assert status == 503 and b"DRAINING" in body, body
    assert proxy.request("GET", "/", port=pin)[0] == 200  # within the drain period
    _wait(lambda: _refused(pin), timeout=5, what="the inbound listener to stop")
    assert time.monotonic() - t0 >= 0.9
    time.sleep(0.3)
    assert proxy.alive(), proxy.stderr_text()
    assert proxy.request("GET", "/", port=pout)[0] == 200
    assert proxy.stop() == 0


def test_drain_graceful_skip_exit_keeps_the_listeners(proxy_factory):
    proxy = proxy_factory(_two_directions(), args=["--drain-time-s", "1"])
    assert proxy.admin("/drain_listeners?graceful&skip_exit", "POST")[0] == 200
    assert proxy.admin("/ready")[0] == 503
    time.sleep(1.5)
    assert proxy.alive(), proxy.stderr_text()
    for port in proxy.ports.values():
        assert proxy.request("GET", "/", port=port)[0] == 200
    assert proxy.stop() == 0


def test_drain_skip_exit_requires_graceful(proxy_factory):
    proxy = proxy_factory(_two_directions())
    status, _, body = proxy.admin("/drain_listeners?skip_exit", "POST")
    assert (status, body) == (400, b"skip_exit requires graceful\n")
    for port in proxy.ports.values():
        assert proxy.request("GET", "/", port=port)[0] == 200


# ---------- configuration errors ----------

def _validate(path):
    return subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)


def _log_bs(tmp_path, logcfg):
    lst = listener(_direct_rc("x"), port=free_port(), access_logs=[logcfg])
    return write_bootstrap(bootstrap([lst], [cluster("unused", [free_port()])],
                                     admin_port=free_port()), str(tmp_path))


def test_config_path_is_a_directory(tmp_path):
    d = tmp_path / "somedir"
    d.mkdir()
    r = _validate(str(d))
    assert r.returncode == 1, r
    assert "%s: " % d in r.stderr and "is a directory" in r.stderr.lower(), r.stderr
    assert "expected" not in r.stderr, r.stderr


def test_bad_access_log_format_names_file_and_json_path(tmp_path):
    path = _log_bs(tmp_path, access_log(path=str(tmp_path / "a.log"), fmt="%BOGUS%\n"))
    r = _validate(path)
    assert r.returncode == 1, r
    want = ("%s: static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
            "%s.log_format.text_format_source.inline_string: " % (path, ALOG))
    assert want in r.stderr, r.stderr
    assert "BOGUS" in r.stderr


def test_bad_access_log_path_names_file_and_json_path(tmp_path):
    bad = str(tmp_path / "missing-dir" / "a.log")
    path = _log_bs(tmp_path, access_log(path=bad))
    r = _validate(path)
    assert r.returncode == 1, r
    want = ("%s: static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
            "%s.path: " % (path, ALOG))
    assert want in r.stderr, r.stderr
    assert bad in r.stderr and "No such file or directory" in r.stderr, r.stderr
    assert not os.path.exists(os.path.dirname(bad))


@pytest.mark.parametrize("kind", ["directory", "file-as-parent"])
def test_access_log_path_that_cannot_be_opened(tmp_path, kind):
    if kind == "directory":
        bad, why = str(tmp_path), "Is a directory"
    else:
        (tmp_path / "plain").write_text("")
        bad, why = str(tmp_path / "plain" / "a.log"), "Not a directory"
    r = _validate(_log_bs(tmp_path, access_log(path=bad)))
    assert r.returncode == 1, r
    assert ".typed_config.path: cannot open access log file '%s': %s" % (bad, why) in r.stderr, \
        r.stderr
