"""weft-pilot's /debug index, /debug/list and /debug/mesh (istiod's handlers of the same
names, reference istioctl-troubleshooting.md §5), on a real weft-pilot process."""
import html.parser
import json

from test_pilot import dirs, get, get_json, pilot, pilot_exe, start_pilot_with_mesh  # noqa: F401
from procs import crash_report, stop_process


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.append(dict(attrs)["href"])


def test_debug_index_lists_every_served_endpoint(pilot):
    for path in ("/debug", "/debug/"):
        status, body = get(pilot.mon, path)
        assert status == 200, body
        assert body.lstrip().lower().startswith("<!doctype html>")
        links = Links()
        links.feed(body)
        assert "/debug/syncz" in links.hrefs and "/debug/mesh" in links.hrefs
        assert links.hrefs == sorted(links.hrefs)
        for href in links.hrefs:  # every endpoint listed answers (no dead link)
            assert get(pilot.mon, href)[0] != 404, href
    rows = get_json(pilot.mon, "/debug?format=json")
    assert [r["href"] for r in rows] == links.hrefs
    assert {"name": "/debug/mesh", "href": "/debug/mesh", "help": "Active mesh config"} in rows
    names = get_json(pilot.mon, "/debug/list")
    assert names == sorted(h[len("/debug/"):] for h in links.hrefs if h != "/debug/list")
    assert "syncz" in names and "config_dump" in names


def test_debug_mesh_defaults(pilot):
    mesh = get_json(pilot.mon, "/debug/mesh")
    assert mesh["rootNamespace"] == "istio-system"
    assert mesh["enableAutoMtls"] is True
    assert mesh["outboundTrafficPolicy"] == {"mode": "ALLOW_ANY"}
    assert mesh["defaultConfig"]["statusPort"] == 15020
    assert mesh["defaultConfig"]["drainDuration"] == "45s"


def test_debug_mesh_merges_the_mesh_file(pilot_exe, dirs, tmp_path):  # noqa: F811
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("accessLogFile: /dev/stdout\noutboundTrafficPolicy: {mode: REGISTRY_ONLY}\n"
                    "defaultConfig:\n  proxyMetadata: {ISTIO_META_DNS_CAPTURE: \"true\"}\n")
    proc = start_pilot_with_mesh(pilot_exe, dirs, mesh)
    try:
        got = get_json(proc.mon, "/debug/mesh")
        assert got["accessLogFile"] == "/dev/stdout"
        assert got["outboundTrafficPolicy"] == {"mode": "REGISTRY_ONLY"}
        assert got["rootNamespace"] == "istio-system"  # default kept
        # ProxyConfig merged field by field: the file's field added, the defaults kept
        assert got["defaultConfig"]["proxyMetadata"] == {"ISTIO_META_DNS_CAPTURE": "true"}
        assert got["defaultConfig"]["statusPort"] == 15020
        assert json.loads(get(proc.mon, "/debug/mesh")[1]) == got
    finally:
        rc = stop_process(proc)
        assert crash_report(proc) is None, proc.stderr_text()
        assert rc == 0, proc.stderr_text()
