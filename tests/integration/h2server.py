"""A prior-knowledge HTTP/2 server (Python's h2, which nobody on the project wrote) for
weft-proxy's upstream HTTP/2 tests. Behaviour per path:

  /echo          200, JSON {method, path, authority, headers, body_bytes, conn, stream},
                 trailers x-trl: yes
  /slow?ms=N     /echo after N ms (streams stay open concurrently)
  /big?n=N       200 with N bytes (content-length), sent as the client's window allows
  /rst           RST_STREAM INTERNAL_ERROR before any header
  /refuse        RST_STREAM REFUSED_STREAM before any header
  /goaway-once   the first time: GOAWAY(last_stream_id below this stream); the streams
                 below it finish, then the connection closes; later: /echo
  /trailers-only 200 HEADERS with END_STREAM, grpc-status 14 in them
  /sink          reads a request body without ever opening the window again
  /h1            (server mode "h1") any request is answered with HTTP/1.1 bytes

Stats: conns (connections accepted), max_active (most streams open at once on one
connection), active.
"""
import json
import socket
import struct
import threading
import time
from urllib.parse import parse_qs, urlparse

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings


class H2Server:
    def __init__(self, max_streams=None, mode="h2", tls=None, host="127.0.0.1", port=0):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.max_streams = max_streams
        self.mode = mode
        self.alpn = []  # per TLS connection: the protocol ALPN chose
        self.ctx = None
        if tls:  # (certificate file, key file): TLS with ALPN h2 only
            import ssl
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(tls[0], tls[1])
            self.ctx.set_alpn_protocols(["h2"])
        self.lock = threading.Lock()
        self.conns = 0
        self.max_active = 0
        self.max_by_conn = {}  # connection number -> most streams open at once on it
        self.goaway_done = False
        self.received = 0
        self.big_sent = 0
        self.stop = False
        self.socks = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()

    def close(self):
        self.stop = True
        try:
            self.sock.close()
        except OSError:
            pass

    def drop(self):
        """Closes every connection (the proxy reads end of stream)."""
        for s in list(self.socks):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self):
        while not self.stop:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.socks.append(s)
                self.conns += 1
                n = self.conns
            t = threading.Thread(target=self._serve, args=(s, n), daemon=True)
            t.start()

    def _serve(self, s, n):
        if self.ctx:
            try:
                s = self.ctx.wrap_socket(s, server_side=True)
            except OSError:
                s.close()
                return
            self.alpn.append(s.selected_alpn_protocol())
        if self.mode == "h1":
            s.recv(65536)
            s.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            time.sleep(0.5)
            s.close()
            return
        Conn(self, s, n).run()


class Conn:
    def __init__(self, srv, s, n):
        self.srv, self.s, self.n = srv, s, n
        self.c = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8"))
        self.wlock = threading.Lock()
        self.streams = {}  # id -> [headers, body bytes]
        self.pending = {}  # id -> (data, offset) responses waiting for window
        self.active = 0
        self.closing = False

    def send(self):
        with self.wlock:
            out = self.c.data_to_send()
            if out:
                try:
                    self.s.sendall(out)
                except OSError:
                    pass

    def run(self):
        settings = {}
        if self.srv.max_streams:
            settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = self.srv.max_streams
        with self.wlock:
            self.c.initiate_connection()
            if settings:
                self.c.update_settings(settings)
        self.send()
        try:
            while True:
                data = self.s.recv(65536)
                if not data:
                    break
                with self.wlock:
                    events = self.c.receive_data(data)
                for e in events:
                    self.handle(e)
                self.send()
        except (OSError, h2.exceptions.ProtocolError) as e:
            self.error = e
        finally:
            self.s.close()

    def handle(self, e):
        if isinstance(e, h2.events.RequestReceived):
            self.streams[e.stream_id] = [dict(e.headers), 0, list(e.headers)]
            self.active += 1
            with self.srv.lock:
                self.srv.max_active = max(self.srv.max_active, self.active)
                self.srv.max_by_conn[self.n] = max(self.srv.max_by_conn.get(self.n, 0),
                                                   self.active)
        elif isinstance(e, h2.events.DataReceived):
            self.streams[e.stream_id][1] += len(e.data)
            with self.srv.lock:
                self.srv.received += len(e.data)
            if self.streams[e.stream_id][0].get(":path") != "/sink":  # /sink never reads
                with self.wlock:
                    self.c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
        elif isinstance(e, h2.events.StreamEnded):
            self.dispatch(e.stream_id)
        elif isinstance(e, h2.events.WindowUpdated):
            self.flush_pending()
        elif isinstance(e, h2.events.StreamReset):
            self.pending.pop(e.stream_id, None)

    def dispatch(self, sid):
        hdrs = self.streams[sid][0]
        u = urlparse(hdrs[":path"])
        q = parse_qs(u.query)
        path = u.path
        if path == "/slow":
            ms = int(q.get("ms", ["500"])[0])
            threading.Timer(ms / 1000.0, self.later, args=(sid,)).start()
            return
        if path == "/rst":
            self.reset(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif path == "/refuse":
            self.reset(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
        elif path == "/goaway-once":
            with self.srv.lock:
                first = not self.srv.goaway_done
                self.srv.goaway_done = True
            if first:  # streams below this one finish, then the connection closes
                # the GOAWAY frame by hand: h2's state machine would refuse to answer the
                # streams below it afterwards
                last = max(0, sid - 2)
                frame = struct.pack(">I", 8)[1:] + b"\x07\x00" + struct.pack(">III", 0, last, 0)
                self.send()
                with self.wlock:
                    self.s.sendall(frame)
                self.closing = True
                self.done(sid)
                return
            self.echo(sid)
        elif path == "/trailers-only":
            with self.wlock:
                self.c.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc"),
                                          ("grpc-status", "14"), ("grpc-message", "gone")],
                                    end_stream=True)
            self.done(sid)
        elif path == "/big":
            n = int(q.get("n", ["1000000"])[0])
            with self.wlock:
                self.c.send_headers(sid, [(":status", "200"), ("content-length", str(n))])
            self.pending[sid] = [b"b" * n, 0]
            self.flush_pending()
        else:
            self.echo(sid)

    def later(self, sid):
        self.echo(sid)
        self.send()

    def reset(self, sid, code):
        with self.wlock:
            self.c.reset_stream(sid, error_code=code)
        self.done(sid)

    def done(self, sid):
        self.active -= 1
        if self.closing and self.active <= 0:
            threading.Timer(0.2, self.shut).start()

    def shut(self):
        try:
            self.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def echo(self, sid):
        hdrs, nbytes, raw = self.streams[sid]
        body = json.dumps({"method": hdrs.get(":method"), "path": hdrs.get(":path"),
                           "authority": hdrs.get(":authority"), "scheme": hdrs.get(":scheme"),
                           "headers": raw, "body_bytes": nbytes, "conn": self.n,
                           "stream": sid}).encode()
        self.done(sid)  # before the frames can go out (the next stream may follow at once)
        with self.wlock:
            self.c.send_headers(sid, [(":status", "200"), ("content-type", "application/json")])
            self.c.send_data(sid, body)
            self.c.send_headers(sid, [("x-trl", "yes")], end_stream=True)

    def flush_pending(self):
        with self.wlock:
            for sid in list(self.pending):
                data, off = self.pending[sid]
                while off < len(data):
                    try:
                        w = min(self.c.local_flow_control_window(sid),
                                self.c.max_outbound_frame_size, len(data) - off)
                    except Exception:
                        self.pending.pop(sid, None)
                        break
                    if w <= 0:
                        break
                    self.c.send_data(sid, data[off:off + w], end_stream=off + w == len(data))
                    off += w
                    self.srv.big_sent += w
                if sid in self.pending:
                    self.pending[sid][1] = off
                    if off == len(data):
                        del self.pending[sid]
                        self.active -= 1
        self.send()
