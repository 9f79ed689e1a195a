"""bench/soak/loadgen.py - the soak's paced HTTP/1.1 load (wrk2-like: every connection sends
on its own fixed schedule; a request that could not go out on time is counted and skipped,
never bunched), on one asyncio loop in a thread.

    targets = [Target("gateway", ("127.0.0.1", 30000), "catalog.istioinaction.io", "/items",
                      rate=100)]
    load = Load(targets); load.start(); ...; load.stop()
    targets[0].sent, .ok, .failures [(t0, t1, "status 503" | "ConnectionResetError: ...")],
    .latencies [seconds of each 2xx]

Each target gets CONNS keep-alive connections; a failed or "Connection: close" connection is
opened again for the next request. Times are time.time() seconds. Standard library only.
"""
import asyncio
import threading
import time

CONNS = 8


def now():
    return time.time()


class Target:
    def __init__(self, name, addr, host, path, rate):
        self.name, self.addr, self.host, self.path, self.rate = name, addr, host, path, rate
        self.sent = self.ok = 0
        self.failures = []  # (t0, t1, what)
        self.latencies = []
        self.scheduled = 0


class Load:
    """Paced HTTP/1.1 load on one asyncio loop in a thread: each of CONNS keep-alive
    connections per target sends on its own fixed schedule (rate / CONNS per second);
    a request that could not be sent on time is counted late and skipped, not bunched."""

    def __init__(self, targets):
        self.targets = targets
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = self.t1 = None

    def start(self):
        self.t0 = now()
        self.thread.start()

    def stop(self):
        self.stopping = True
        self.thread.join(30)
        self.t1 = now()

    def _run(self):
        asyncio.run(self._main())

    async def _main(self):
        tasks = [asyncio.ensure_future(self._conn(t, i)) for t in self.targets
                 for i in range(CONNS)]
        await asyncio.gather(*tasks)

    async def _conn(self, tg, i):
        interval = CONNS / tg.rate
        nxt = time.monotonic() + interval * i / CONNS
        reader = writer = None
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: weft-soak\r\n\r\n"
               % (tg.path, tg.host)).encode()
        while not self.stopping:
            delay = nxt - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            nxt += interval
            if time.monotonic() - nxt > 1.0:  # far behind: skip, never bunch
                nxt = time.monotonic() + interval
            if self.stopping:
                break
            tg.scheduled += 1
            t0 = now()
            tg.sent += 1
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(*tg.addr), 5)
                writer.write(req)
                status, close = await asyncio.wait_for(self._response(reader), 10)
                t1 = now()
                if 200 <= status < 300:
                    tg.ok += 1
                    tg.latencies.append(t1 - t0)
                else:
                    tg.failures.append((t0, t1, "status %d" % status))
                if close:
                    writer.close()
                    reader = writer = None
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                    ValueError) as e:
                tg.failures.append((t0, now(), "%s: %s" % (type(e).__name__, e)))
                if writer is not None:
                    writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    @staticmethod
    async def _response(reader):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, close = 0, False, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and "close" in value:
                close = True
        if chunked:
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                await reader.readexactly(size + 2)
                if size == 0:
                    break
        elif length:
            await reader.readexactly(length)
        return status, close
