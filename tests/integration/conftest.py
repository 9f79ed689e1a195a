"""Shared fixtures and helpers for the integration tests (pytest).

- The weftctl under test is $WEFTCTL, else build/weftctl under the project root.
- The shared, read-only reference data is $WEFT_SHARED, else ../shared next to the root.
- `run_weftctl(*args, stdin=None, timeout=60)` runs weftctl and returns a
  subprocess.CompletedProcess whose stdout and stderr are str (UTF-8; undecodable bytes
  replaced). A run that outlives `timeout` seconds raises subprocess.TimeoutExpired, which
  fails the test: nothing may hang.

Use either the fixtures (`weftctl`, `shared`, `run`) or import directly:
`from conftest import run_weftctl, ROOT`.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session", autouse=True)
def _private_state_home():
    """weft-pilot keeps its CA under $XDG_STATE_HOME/weft-pilot/ca when no --ca-dir is given:
    every process the tests start gets a state home of the session's own, removed at the end,
    so no test writes into the user's home."""
    d = tempfile.mkdtemp(prefix="weft-test-state-")
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = d
    yield d
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old
    shutil.rmtree(d, ignore_errors=True)


# A Service and a VirtualService routing to a subset no DestinationRule defines: the
# IST0101 case operators meet most (the destination's host is on line 15).
VS_BAD_SUBSET = """\
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog, namespace: shop}
spec:
  hosts: [catalog]
  http:
  - route:
    - destination: {host: catalog, subset: v1}
"""


def weftctl_path():
    """Absolute path of the weftctl under test (it may not exist)."""
    return os.path.abspath(os.environ.get("WEFTCTL") or os.path.join(ROOT, "build", "weftctl"))


def build_dir():
    """The build folder whose programs are under test: $WEFT_PILOT's, else ROOT/build (the
    bench scripts take a build folder, not a program)."""
    pilot = os.environ.get("WEFT_PILOT")
    return os.path.dirname(os.path.abspath(pilot)) if pilot else os.path.join(ROOT, "build")


def shared_path():
    """Absolute path of the shared reference data directory (it may not exist)."""
    return os.path.abspath(
        os.environ.get("WEFT_SHARED") or os.path.join(os.path.dirname(ROOT), "shared"))


def run_weftctl(*args, stdin=None, timeout=60, cwd=None, env=None):
    """Run weftctl with args (converted with str()).

    stdin: None (weftctl reads /dev/null), str or bytes. env: None inherits the environment.
    Returns CompletedProcess(args, returncode, stdout: str, stderr: str).
    """
    exe = weftctl_path()
    if not os.access(exe, os.X_OK):
        pytest.fail("%s is missing or not executable: run `make` first or set WEFTCTL" % exe)
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    kwargs = {"input": data} if data is not None else {"stdin": subprocess.DEVNULL}
    p = subprocess.run([exe, *[str(a) for a in args]], capture_output=True, timeout=timeout,
                       cwd=cwd, env=env, check=False, **kwargs)
    return subprocess.CompletedProcess(p.args, p.returncode,
                                       p.stdout.decode("utf-8", "replace"),
                                       p.stderr.decode("utf-8", "replace"))


@pytest.fixture(scope="session")
def weftctl():
    """Path of the weftctl under test; fails the test when it has not been built."""
    exe = weftctl_path()
    if not os.access(exe, os.X_OK):
        pytest.fail("%s is missing or not executable: run `make` first or set WEFTCTL" % exe)
    return exe


@pytest.fixture(scope="session")
def shared():
    """Path of the shared reference data (../shared); skips the test when it is absent."""
    path = shared_path()
    if not os.path.isdir(path):
        pytest.skip("shared data not found at %s (set WEFT_SHARED)" % path)
    return path


@pytest.fixture
def run():
    """run_weftctl as a fixture."""
    return run_weftctl
