"""Process helpers for integration tests that start real servers on loopback.

- `start_process(argv, count=1, timeout=10)` starts a program whose stdout announces each
  listener with a line "listening on ADDR:PORT" and returns (proc, [(host, port), ...]) once
  `count` such lines were read. stdout is drained afterwards by a thread into
  `proc.stdout_lines`; stderr goes to a temporary file (`proc.stderr_text()` reads it).
  The process is killed and an error raised if it exits or stays silent for `timeout` s.
- `start_app(*args)` starts weft-app ($WEFT_APP, else build/weft-app under the project root)
  with `--listen 127.0.0.1:0` added when args have no --listen; returns (proc, port).
- `stop_process(proc, timeout=10)` sends SIGTERM, waits, kills if it lingers, and returns the
  exit status (negative: killed by that signal).
- `free_port()` returns a TCP port that was free on 127.0.0.1 a moment ago (prefer port 0 and
  the announced port when the program supports it: this one can race).
- `rss_kb(pid)` / `hwm_kb(pid)`: VmRSS / VmHWM from /proc/PID/status, in KiB.

Every call has a timeout: nothing here can hang a test run.
"""
import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LISTENING = re.compile(rb"^listening on (\[[^\]]+\]|[^:\s]+):(\d+)\s*$")
CRASH_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


def app_path():
    """Absolute path of the weft-app under test (it may not exist)."""
    return os.path.abspath(os.environ.get("WEFT_APP") or os.path.join(ROOT, "build", "weft-app"))


def _drain(proc):
    for line in iter(proc.stdout.readline, b""):
        proc.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))


def _read_line(proc, deadline):
    """One stdout line (bytes), b"" at EOF; raises TimeoutError after deadline."""
    buf = proc._h5_buf
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no 'listening on' line in time")
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            proc._h5_buf = b""
            return buf
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    proc._h5_buf = rest
    return line + b"\n"


def start_process(argv, count=1, timeout=10, env=None, cwd=None):
    """Start argv and wait for `count` "listening on ADDR:PORT" lines on its stdout.

    Returns (proc, [(host, port), ...]) with host as printed (IPv6 without brackets).
    Raises RuntimeError (with the stderr text) when the process exits first, TimeoutError
    when the lines do not come within `timeout` seconds; the process is then killed.
    """
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd, bufsize=0)
    proc.stdout_lines = []
    proc._h5_err = err
    proc._h5_buf = b""
    proc.stderr_text = lambda: _stderr_text(proc)
    addrs = []
    deadline = time.monotonic() + timeout
    try:
        while len(addrs) < count:
            line = _read_line(proc, deadline)
            if not line:
                proc.wait(timeout=timeout)
                raise RuntimeError("%s exited with %s before listening:\n%s"
                                   % (argv[0], proc.returncode, proc.stderr_text()))
            proc.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
            m = LISTENING.match(line)
            if m:
                addrs.append((m.group(1).decode().strip("[]"), int(m.group(2))))
    except BaseException:
        _kill(proc)
        raise
    if proc._h5_buf:
        proc.stdout_lines.append(proc._h5_buf.decode("utf-8", "replace").rstrip("\n"))
    threading.Thread(target=_drain, args=(proc,), daemon=True).start()
    return proc, addrs


def _stderr_text(proc):
    f = proc._h5_err
    f.flush()
    pos = f.tell()
    f.seek(0)
    data = f.read()
    f.seek(pos)
    return data.decode("utf-8", "replace")


def _kill(proc):
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def stop_process(proc, timeout=10):
    """SIGTERM, wait up to timeout s (then SIGKILL); returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
    return proc.returncode


def start_app(*args, timeout=10, env=None):
    """Start weft-app with args (str() applied); returns (proc, port of the first listener).

    Adds `--listen 127.0.0.1:0` when args hold no --listen. Fails like start_process.
    """
    exe = app_path()
    if not os.access(exe, os.X_OK):
        raise FileNotFoundError("%s is missing or not executable: build it or set WEFT_APP"
                                % exe)
    args = [str(a) for a in args]
    listens = sum(1 for a in args if a == "--listen" or a.startswith("--listen="))
    if not listens:
        args = ["--listen", "127.0.0.1:0"] + args
        listens = 1
    proc, addrs = start_process([exe] + args, count=listens, timeout=timeout, env=env)
    return proc, addrs[0][1]


def crash_report(proc):
    """The stderr text when it shows a sanitizer report, else None."""
    text = proc.stderr_text()
    return text if any(m in text for m in CRASH_MARKERS) else None


def free_port(host="127.0.0.1"):
    """A port that was free on host a moment ago (racy: prefer port 0 when possible)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host, port, timeout=10):
    """Wait until a TCP connect to (host, port) succeeds; raises TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError("%s:%d did not accept connections" % (host, port))
            time.sleep(0.05)


def _status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def rss_kb(pid):
    """Resident set size of pid in KiB (VmRSS)."""
    return _status_kb(pid, "VmRSS")


def hwm_kb(pid):
    """Peak resident set size of pid in KiB (VmHWM)."""
    return _status_kb(pid, "VmHWM")


class RawReader:
    """Buffered reads from a raw socket: CRLF lines and exact byte counts (shared by the
    HTTP readers of the app and proxy tests). EOFError when the peer closes first."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def _fill(self):
        data = self.sock.recv(262144)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                break
            self._fill()
        line = bytes(self.buf[:i])
        del self.buf[:i + 2]
        return line

    def exact(self, n):
        parts, left = [], n
        while left:
            if not self.buf:
                self._fill()
            take = min(left, len(self.buf))
            parts.append(bytes(self.buf[:take]))
            del self.buf[:take]
            left -= take
        return b"".join(parts)


@contextlib.contextmanager
def running_apps(*names):
    """Starts one weft-app per name (--name NAME); yields {name: port}; stops them all."""
    procs, ports = [], {}
    try:
        for name in names:
            p, port = start_app("--name", name)
            procs.append(p)
            ports[name] = port
        yield ports
    finally:
        for p in procs:
            stop_process(p)


@pytest.fixture
def backend_app():
    """One weft-app named "backend"; yields its port (import the fixture into a module)."""
    with running_apps("backend") as ports:
        yield ports["backend"]
