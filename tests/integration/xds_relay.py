"""A TCP relay between a proxy and pilot's xDS (gRPC) port that can hold back pilot's
responses of one type, so a test decides when, say, the RDS response after an LDS update
arrives.

weft's xDS messages are JSON text in gRPC messages in HTTP/2 DATA frames (xds/h2_stream.h).
The relay passes the proxy's bytes through unchanged and cuts pilot's bytes into HTTP/2
frames (9-octet header: 24-bit length, type, flags, stream id; the connection preface is the
client's, so pilot's side starts with a frame). While holding, the first DATA frame whose
payload names the type (e.g. "envoy.config.route.v3.RouteConfiguration") and every frame of
the connection after it are queued, in order, until release(); nothing is reordered, HPACK
state stays consistent.

    relay = XdsRelay(pilot_port)        # listens on 127.0.0.1:relay.port
    relay.hold("envoy.config.route.v3.RouteConfiguration")
    ...
    relay.wait_held()                   # a frame of that type is held
    relay.release()
    relay.close()

It also decodes what pilot sends: every gRPC message of pilot's DATA frames (reassembled per
HTTP/2 stream, padding removed) is parsed as JSON and kept, in order, for the test to read:

    n = len(relay.responses())          # DiscoveryResponses so far (dicts)
    ...
    new = relay.responses()[n:]         # what pilot sent since

Standard library only; threads end when either side closes or at close().
"""
import json
import socket
import threading

FRAME_DATA = 0


class XdsRelay:
    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        self.cond = threading.Condition()
        self.word = None  # the type held back (bytes), None: pass everything
        self.queues = {}  # client socket -> frames held for it
        self.socks = []
        self.closed = False
        self.decoded = []  # pilot's gRPC messages, parsed (dicts), in arrival order
        self.partial = {}  # (client, stream id) -> bytes of an unfinished gRPC message
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    # ---- control ----
    def hold(self, type_word):
        with self.cond:
            self.word = type_word.encode()

    def held(self):
        with self.cond:
            return sum(len(q) for q in self.queues.values())

    def wait_held(self, timeout=15):
        with self.cond:
            if not self.cond.wait_for(lambda: any(self.queues.values()), timeout):
                raise AssertionError("the relay held no %s response in %ss" % (self.word,
                                                                            timeout))

    def responses(self):
        """pilot's messages decoded so far (a copy of the list)."""
        with self.cond:
            return list(self.decoded)

    def _decode(self, client, head, payload):
        """Keeps the gRPC messages of a DATA frame (called with the lock held)."""
        if head[3] != FRAME_DATA:
            return
        flags, sid = head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        if flags & 0x8 and payload:  # PADDED
            payload = payload[1:len(payload) - payload[0]]
        buf = self.partial.get((client, sid), b"") + payload
        while len(buf) >= 5:
            n = int.from_bytes(buf[1:5], "big")
            if len(buf) < 5 + n:
                break
            try:
                self.decoded.append(json.loads(buf[5:5 + n]))
            except ValueError:
                self.decoded.append({"undecodable": buf[5:5 + n][:200].decode("latin-1")})
            buf = buf[5 + n:]
        self.partial[(client, sid)] = buf

    def release(self):
        """Stops holding and sends what was held, in order."""
        with self.cond:
            self.word = None
            for client, q in self.queues.items():
                for frame in q:
                    try:
                        client.sendall(frame)
                    except OSError:
                        break
                q.clear()

    def close(self):
        with self.cond:
            self.closed = True
            socks = list(self.socks)
        for s in socks + [self.lsock]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in self.threads:
            t.join(timeout=5)

    # ---- pumps ----
    def _accept(self):
        while True:
            try:
                client, _ = self.lsock.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.cond:
                if self.closed:
                    client.close()
                    server.close()
                    return
                self.socks += [client, server]
                self.queues[client] = []
            for target in (self._up, self._down):
                t = threading.Thread(target=target, args=(client, server), daemon=True)
                self.threads.append(t)
                t.start()

    @staticmethod
    def _end(a, b):
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _up(self, client, server):
        """The proxy's bytes, unchanged."""
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                server.sendall(data)
        except OSError:
            pass
        self._end(client, server)

    @staticmethod
    def _read(sock, n):
        buf = b""
        while len(buf) < n:
            data = sock.recv(n - len(buf))
            if not data:
                return None
            buf += data
        return buf

    def _down(self, client, server):
        """Pilot's frames, held back from the first one of the held type on."""
        try:
            while True:
                head = self._read(server, 9)
                if head is None:
                    break
                length = int.from_bytes(head[:3], "big")
                payload = self._read(server, length) if length else b""
                if payload is None:
                    break
                frame = head + payload
                with self.cond:
                    self._decode(client, head, payload)
                    q = self.queues[client]
                    if self.word and (q or (head[3] == FRAME_DATA and self.word in payload)):
                        q.append(frame)
                        self.cond.notify_all()
                        continue
                    client.sendall(frame)
        except OSError:
            pass
        self._end(client, server)
