#!/usr/bin/python3
"""Idle keep-alive connection memory of a proxy process (bench/run_proxy.sh, phase "idle").

usage: idle_conns.py --port P --path /128 [--count 2000] [--settle 0.5] [--tls] PID...

Reads Rss and Pss (KiB) from /proc/PID/smaps_rollup, summed over the PIDs (nginx: master and
worker), then opens COUNT connections to 127.0.0.1:P one after the other, sends one
keep-alive GET on each and reads its whole response (Content-Length), and keeps every
connection open. After --settle seconds it reads the memory again, checks that the proxy
has closed none of the connections, closes them all and prints one JSON object:
  {"count", "ok", "failed", "closed_by_peer", "rss_before_kb", "pss_before_kb",
   "rss_after_kb", "pss_after_kb", "rss_kib_per_conn", "pss_kib_per_conn"}
KiB per connection = (after - before) / ok. Kernel socket memory is not in RSS.
--tls: every connection does a TLS handshake first (no certificate check, no session
resumption: each one a full handshake), as bench/run_proxy_tls.sh measures idle TLS connections.
Exit status 0, or 1 when a connection or request failed (the JSON is printed anyway).
"""
import argparse
import json
import select
import socket
import ssl
import sys
import time


def smaps(pids):
    rss = pss = 0
    for pid in pids:
        try:
            with open("/proc/%d/smaps_rollup" % pid, encoding="ascii") as f:
                for line in f:
                    key, _, rest = line.partition(":")
                    if key == "Rss":
                        rss += int(rest.split()[0])
                    elif key == "Pss":
                        pss += int(rest.split()[0])
        except OSError:
            pass
    return rss, pss


def read_response(sock):
    """Reads one HTTP/1.1 response with a Content-Length body; returns the status code."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the response headers")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        if name.strip().lower() == "connection" and value.strip().lower() == "close":
            raise ConnectionError("the proxy answered Connection: close")
    if length is None:
        raise ConnectionError("no Content-Length in the response")
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the end of the body")
        body += chunk
    return status


def client_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def open_conns(port, path, count, tls=False):
    request = ("GET %s HTTP/1.1\r\nHost: bench\r\n\r\n" % path).encode("ascii")
    socks, failed = [], 0
    ctx = client_context() if tls else None
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5.0)
        try:
            s.connect(("127.0.0.1", port))
            if ctx:
                s = ctx.wrap_socket(s, server_hostname="bench")
            s.sendall(request)
            if read_response(s) != 200:
                raise ConnectionError("status not 200")
            socks.append(s)
        except (OSError, ValueError, IndexError) as e:
            failed += 1
            if failed == 1:
                sys.stderr.write("idle_conns.py: %s\n" % e)
            s.close()
    return socks, failed


def closed_by_peer(socks):
    """Counts connections that are readable now: EOF or an unexpected byte from the proxy."""
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLIN | select.POLLRDHUP)
    return len(poller.poll(0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", default="/128")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--settle", type=float, default=0.5)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("pids", type=int, nargs="+")
    args = ap.parse_args()
    rss0, pss0 = smaps(args.pids)
    socks, failed = open_conns(args.port, args.path, args.count, args.tls)
    time.sleep(args.settle)
    rss1, pss1 = smaps(args.pids)
    closed = closed_by_peer(socks)
    ok = len(socks)
    for s in socks:
        s.close()
    out = {
        "count": args.count, "ok": ok, "failed": failed, "closed_by_peer": closed,
        "rss_before_kb": rss0, "pss_before_kb": pss0,
        "rss_after_kb": rss1, "pss_after_kb": pss1,
        "rss_kib_per_conn": round((rss1 - rss0) / ok, 3) if ok else None,
        "pss_kib_per_conn": round((pss1 - pss0) / ok, 3) if ok else None,
    }
    print(json.dumps(out))
    return 0 if failed == 0 and closed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
