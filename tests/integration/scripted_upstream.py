"""A scripted HTTP/1.1 upstream for retry tests: each request it receives takes the next
action of a script (the last one repeats), so a test decides exactly how every attempt ends.

Actions:
  "200"          read the whole body (Content-Length or chunked), answer 200 with
                 "received=<n>" and keep the connection
  "503-early"    answer 503 right after the head, without reading the body, and close
  "reset"        close right after the head (no response)
  ("status", N)  read the body, answer N ("status=N"), keep the connection
  ("delay", MS, N)  read the body, wait MS milliseconds, answer N, keep the connection
  ("headers", N, {name: value})  read the body, answer N with these extra header fields
  ("stall", MS)  read the body, send a 200 head and half of a 10-byte body, wait MS
                 milliseconds, send the rest
  ("trailers", N, {name: value})  read the body, answer N chunked with these trailer fields
  ("grpc", PAYLOAD)  read the body, answer a gRPC call the HTTP/1.1 way: 200,
                 content-type application/grpc, chunked, one length-prefixed message
                 PAYLOAD (bytes), trailer grpc-status: 0
  ("grpc-only", CODE, MESSAGE)  read the body, answer trailers-only: 200, content-type
                 application/grpc, grpc-status CODE, grpc-message MESSAGE, no body

`up.requests` lists (method, target, headers dict, body bytes or None) per request;
`up.early` is set once a "503-early" answer went out. Binds 127.0.0.1 on a free port.
The `upstreams` fixture (import it into a test module) makes them and stops them after
the test: `up = upstreams(["503-early", "200"])`.
"""
import socket
import threading
import time

import pytest


class ScriptedUpstream:
    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        self.early = threading.Event()
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def count(self):
        with self.lock:
            return len(self.requests)

    def stop(self):
        self.stopped = True
        try:
            self.sock.close()
        except OSError:
            pass

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _next_action(self, req):
        with self.lock:
            i = len(self.requests)
            self.requests.append(req)
            return self.script[min(i, len(self.script) - 1)]

    @staticmethod
    def _read_head(c, buf):
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, buf
            buf += d
        head, rest = buf.split(b"\r\n\r\n", 1)
        return head, rest

    @staticmethod
    def _read_body(c, headers, rest):
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(rest) < n:
                d = c.recv(1 << 20)
                if not d:
                    break
                rest += d
            return rest[:n], rest[n:]
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in rest:
                    rest += c.recv(65536)
                line, rest = rest.split(b"\r\n", 1)
                size = int(line.split(b";")[0], 16)
                while len(rest) < size + 2:
                    rest += c.recv(65536)
                body += rest[:size]
                rest = rest[size + 2:]
                if size == 0:
                    return body, rest
        return b"", rest

    @staticmethod
    def _answer(c, status, body, extra=None):
        fields = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode())
                          for k, v in (extra or {}).items())
        c.sendall(b"HTTP/1.1 %d X\r\n%scontent-length: %d\r\n\r\n%s"
                  % (status, fields, len(body), body))

    def _serve(self, c):
        buf = b""
        try:
            while True:
                head, buf = self._read_head(c, buf)
                if head is None:
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for l in lines[1:]:
                    k, v = l.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                req = [method, target, headers, None]
                act = self._next_action(req)
                if act == "reset":
                    return
                if act == "503-early":
                    self._answer(c, 503, b"early")
                    self.early.set()
                    return
                body, buf = self._read_body(c, headers, buf)
                req[3] = body
                if act == "200":
                    self._answer(c, 200, b"received=%d" % len(body))
                elif act[0] == "status":
                    self._answer(c, act[1], b"status=%d" % act[1])
                elif act[0] == "headers":
                    self._answer(c, act[1], b"status=%d" % act[1], act[2])
                elif act[0] == "trailers":
                    fields = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode())
                                      for k, v in act[2].items())
                    c.sendall(b"HTTP/1.1 %d X\r\ntransfer-encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\n%s\r\n" % (act[1], fields))
                elif act[0] == "grpc":
                    frame = b"\x00" + len(act[1]).to_bytes(4, "big") + act[1]
                    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
                              b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n"
                              b"0\r\ngrpc-status: 0\r\n\r\n" % (len(frame), frame))
                elif act[0] == "grpc-only":
                    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
                              b"grpc-status: %d\r\ngrpc-message: %s\r\n"
                              b"content-length: 0\r\n\r\n" % (act[1], act[2].encode()))
                elif act[0] == "stall":
                    c.sendall(b"HTTP/1.1 200 X\r\ncontent-length: 10\r\n\r\nhello")
                    time.sleep(act[1] / 1000.0)
                    c.sendall(b"world")
                elif act[0] == "delay":
                    time.sleep(act[1] / 1000.0)
                    self._answer(c, act[2], b"status=%d" % act[2])
        except OSError:
            pass
        finally:
            c.close()


@pytest.fixture
def upstreams():
    made = []

    def make(script):
        up = ScriptedUpstream(script)
        made.append(up)
        return up

    yield make
    for up in made:
        up.stop()
