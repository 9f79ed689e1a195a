"""weft-proxy --mode validate on a bootstrap with a real Envoy field weft-proxy does not
implement: exit code 1 and a stderr line that names the field as Envoy's
(`not supported by weft-proxy (Envoy's <message>.<field>)`), while a misspelled name is still an
`unknown field` (weft's rule: never accept silently, and never call a real field a typo).
"""
import subprocess

import pytest

from proxyfix import bootstrap, cluster, listener, proxy_path, simple_routes, write_bootstrap


def _validate(tmp_path, bs):
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    return path, r


@pytest.mark.parametrize("key,message", [
    ("tcp_backlog_size", "static_resources.listeners[0].tcp_backlog_size: not supported by "
                         "weft-proxy (Envoy's envoy.config.listener.v3.Listener.tcp_backlog_size)"),
    ("tcpBacklogSize", "static_resources.listeners[0].tcp_backlog_size: not supported by "
                       "weft-proxy (Envoy's envoy.config.listener.v3.Listener.tcp_backlog_size)"),
    ("tcp_backlog_sise", "static_resources.listeners[0].tcp_backlog_sise: unknown field"),
])
def test_validate_names_unimplemented_envoy_field(tmp_path, key, message):
    lst = listener(simple_routes(), port=1)
    lst[key] = 8
    bs = bootstrap([lst], [cluster("backend", [2])], admin_port=3)
    path, r = _validate(tmp_path, bs)
    assert r.returncode == 1, (r.stdout, r.stderr)
    want = "error initializing configuration '%s': %s: %s" % (path, path, message)
    assert want in r.stderr.splitlines(), r.stderr


def test_validate_accepts_without_the_field(tmp_path):
    bs = bootstrap([listener(simple_routes(), port=1)], [cluster("backend", [2])], admin_port=3)
    _, r = _validate(tmp_path, bs)
    assert r.returncode == 0, r.stderr
