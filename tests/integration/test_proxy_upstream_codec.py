"""weft-proxy reading upstream responses as Envoy's HTTP/1 codec and pool do
(ClientConnectionImpl, HeaderUtility::shouldCloseConnection; reference §2 for the details):

- a reply that is not HTTP fails with its first bytes (502 UPE protocol_error), even when the
  upstream keeps the connection open without ever sending a blank line;
- a Transfer-Encoding other than exactly one chunked coding, a Transfer-Encoding or a
  non-zero Content-Length on a 1xx/204, and a repeated Content-Length are protocol errors;
  a 204's Content-Length: 0 is not forwarded;
- Proxy-Connection: close ends the upstream connection like Connection: close, and both
  count cluster.<c>.upstream_cx_close_notify.
"""
import socket
import threading
import time

import pytest

from proxyfix import (ISTIO_TEXT_FORMAT, access_log, bootstrap, cluster, listener,
                      proxy_factory, simple_routes)

assert proxy_factory  # fixture, imported for pytest

UPE = "upstream_reset_before_response_started{protocol_error}"


class Upstream:
    """Answers every request head with `answer`; keeps the connection open (hold seconds, or
    for more requests when keep_alive) and counts connections."""

    def __init__(self, answer, hold=0.0, keep_alive=False):
        self.answer, self.hold, self.keep_alive = answer, hold, keep_alive
        self.conns = 0
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            self.conns += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        c.settimeout(10)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(4096)
                    if not d:
                        return
                    buf += d
                buf = buf.split(b"\r\n\r\n", 1)[1]
                c.sendall(self.answer)
                if not self.keep_alive:
                    time.sleep(self.hold)
                    return
        except OSError:
            pass
        finally:
            c.close()

    def stop(self):
        self.stopped = True
        self.srv.close()


@pytest.fixture
def upstream():
    made = []

    def make(answer, **kw):
        u = Upstream(answer, **kw)
        made.append(u)
        return u
    yield make
    for u in made:
        u.stop()


def proxy_for(proxy_factory, port):
    lst = listener(simple_routes(), access_logs=[access_log("@LOG:istio@", fmt=ISTIO_TEXT_FORMAT)])
    return proxy_factory(bootstrap([lst], [cluster("backend", [port])]))


@pytest.mark.parametrize("answer", [b"hello", b"-ERR unknown command\r\n",
                                    b"SSH-2.0-OpenSSH_9.6\r\n"])
def test_a_reply_that_is_not_http_fails_at_once(proxy_factory, upstream, answer):
    u = upstream(answer, hold=5)
    p = proxy_for(proxy_factory, u.port)
    t0 = time.monotonic()
    status, _, _ = p.request("GET", "/x")
    assert status == 502 and time.monotonic() - t0 < 2
    line = p.istio_log(1)[0]
    assert (line["response_flags"], line["response_code_details"]) == ("UPE", UPE)


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nzz\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nzz",
    b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
])
def test_response_framing_envoy_refuses_is_502_upe(proxy_factory, upstream, answer):
    u = upstream(answer)
    p = proxy_for(proxy_factory, u.port)
    status, _, _ = p.request("GET", "/x")
    assert status == 502
    line = p.istio_log(1)[0]
    assert (line["response_flags"], line["response_code_details"]) == ("UPE", UPE)


def test_204_content_length_zero_is_not_forwarded(proxy_factory, upstream):
    u = upstream(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", keep_alive=True)
    p = proxy_for(proxy_factory, u.port)
    status, headers, body = p.request("GET", "/x")
    assert (status, body) == (204, b"")
    assert "content-length" not in {k.lower() for k in headers}, headers


@pytest.mark.parametrize("close_header", [b"Proxy-Connection: close", b"Connection: close"])
def test_close_headers_end_the_upstream_connection(proxy_factory, upstream, close_header):
    u = upstream(b"HTTP/1.1 200 OK\r\n" + close_header + b"\r\nContent-Length: 2\r\n\r\nok",
                 keep_alive=True)
    p = proxy_for(proxy_factory, u.port)
    for _ in range(2):
        assert p.request("GET", "/x")[:3:2] == (200, b"ok")
    st = p.wait_stat("cluster.backend.upstream_cx_close_notify", 2)
    assert st["cluster.backend.upstream_cx_total"] == 2, st
    assert u.conns == 2
