"""weft-app --catalog: the book's catalog API and its blowup faults over real sockets
(src/app/catalog.h). The module's logic has unit tests (tests/unit/test_app_catalog.c);
here: headers, framing, keep-alive, delays, early 500s and dropped connections.
"""
import http.client
import json
import os
import socket
import time

import pytest

from procs import RawReader, app_path, crash_report, start_app, stop_process

TIMEOUT = 10


@pytest.fixture
def app():
    """Factory: app(*args, env=None) starts weft-app --catalog; all are stopped after."""
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing: build weft-app or set WEFT_APP" % app_path())
    procs = []

    def start(*args, env=None):
        full_env = dict(os.environ)
        full_env.pop("WEFT_VERSION_LABEL", None)
        full_env.update(env or {})
        proc, port = start_app("--catalog", *args, env=full_env)
        procs.append(proc)
        return port

    yield start
    for proc in procs:
        rc = stop_process(proc)
        assert crash_report(proc) is None, crash_report(proc)
        assert rc == 0, proc.stderr_text()


def call(port, path, method="GET", body=None, conn=None):
    """(status, {lower-case header: value}, body); on conn when given (kept open)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        if conn is None:
            c.close()


def blowup(port, **fault):
    status, _, body = call(port, "/blowup", "POST", fault)
    assert status == 200, body
    return json.loads(body)


def test_items_list_lookup_and_headers(app):
    port = app("--name", "catalog", "--pod", "catalog-6cf4b-x1", "--version-label", "v1")
    status, h, body = call(port, "/items")
    assert status == 200
    assert h["content-type"] == "application/json"
    assert (h["x-weft-app"], h["x-weft-pod"], h["x-weft-version"]) == (
        "catalog", "catalog-6cf4b-x1", "v1")
    items = json.loads(body)
    assert [i["name"] for i in items] == ["Elinor Glasses", "Atlas Shirt", "Small Metal Shoes",
                                          "Red Dragon Watch"]
    assert set(items[0]) == {"id", "color", "department", "name", "price"}
    status, _, body = call(port, "/items/4?x=1")
    assert (status, json.loads(body)["color"]) == (200, "red")
    status, h, body = call(port, "/items/17")
    assert status == 404 and json.loads(body) == {"error": "item 17 not found"}
    assert h["content-type"] == "application/json"


def test_version_from_the_environment_and_v2_images(app):
    port = app(env={"WEFT_VERSION_LABEL": "v2"})
    status, h, body = call(port, "/items/1")
    assert status == 200 and h["x-weft-version"] == "v2"
    assert json.loads(body)["imageUrl"] == "http://lorempixel.com/640/480"
    port = app()
    assert "x-weft-version" not in call(port, "/healthz")[1]


def test_post_item_then_read_it_back_on_one_connection(app):
    port = app()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        status, _, body = call(port, "/items", "POST", {"name": "Blue Hat", "price": "9.50"},
                               conn=conn)
        assert status == 201
        item = json.loads(body)
        assert item == {"id": 5, "name": "Blue Hat", "price": "9.50"}
        status, _, body = call(port, "/items/5", conn=conn)
        assert (status, json.loads(body)) == (200, item)
        assert len(json.loads(call(port, "/items", conn=conn)[2])) == 5
        status, _, body = call(port, "/items", "POST", "{not json", conn=conn)
        assert status == 400 and "error" in json.loads(body)
        status, _, _ = call(port, "/items", "POST", {"id": 5}, conn=conn)
        assert status == 409
    finally:
        conn.close()


def test_oversized_post_is_413_and_the_connection_survives(app):
    port = app()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        big = json.dumps({"name": "x" * 20000})
        status, _, body = call(port, "/items", "POST", big, conn=conn)
        assert status == 413, body
        assert call(port, "/items/1", conn=conn)[0] == 200
    finally:
        conn.close()


def test_latency_blowup_delays_every_answer_but_blowup_and_healthz(app):
    port = app()
    state = blowup(port, active=True, type="latency", latencyMs=400, volatile=True)
    assert state == {"active": True, "type": "latency", "latencyMs": 400, "percentage": 100,
                     "volatile": True}
    assert json.loads(call(port, "/blowup")[2]) == state
    for path in ("/items", "/status/201", "/upload"):
        t0 = time.monotonic()
        status = call(port, path, "POST" if path == "/upload" else "GET",
                      b"abc" if path == "/upload" else None)[0]
        took = time.monotonic() - t0
        assert status in (200, 201) and 0.38 <= took < 3, (path, took)
    for path in ("/healthz", "/blowup"):
        t0 = time.monotonic()
        assert call(port, path)[0] == 200
        assert time.monotonic() - t0 < 0.3
    assert blowup(port, active=False) == {"active": False}
    t0 = time.monotonic()
    assert call(port, "/items")[0] == 200 and time.monotonic() - t0 < 0.3


def test_500_blowup_with_a_percentage(app):
    port = app("--seed", "7")
    blowup(port, active=True, type="500", percentage=50)
    codes = [call(port, "/items")[0] for _ in range(200)]
    assert set(codes) == {200, 500}
    assert 60 <= codes.count(500) <= 140, codes.count(500)
    status, h, body = call(port, "/items")
    blowup(port, active=True, type="500")
    status, h, body = call(port, "/items/1")
    assert status == 500 and "error" in json.loads(body)
    assert h["content-type"] == "application/json"


def test_500_blowup_answers_an_upload_before_reading_its_body(app):
    """A server that fails early: the 500 leaves after the head, then the connection closes
    (what makes a retrying proxy wait in its back-off while the client still sends)."""
    port = app()
    blowup(port, active=True, type="500")
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    try:
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 2097152\r\n\r\n"
                  + b"x" * 65536)
        r = RawReader(s)
        status = int(r.line().split(b" ")[1])
        headers = {}
        while True:
            line = r.line()
            if not line:
                break
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        assert status == 500
        assert headers[b"connection"] == b"close"
        r.exact(int(headers[b"content-length"]))
        # the rest of the body is read and thrown away; then EOF, not a reset
        try:
            s.sendall(b"x" * 65536)
        except OSError:
            pass
        s.shutdown(socket.SHUT_WR)
        assert s.recv(1) == b""
    finally:
        s.close()
    blowup(port, active=False)
    status, _, body = call(port, "/upload", "POST", b"y" * 1000)
    assert (status, body) == (200, b"received=1000\n")


def test_drop_blowup_closes_without_an_answer(app):
    port = app()
    blowup(port, active=True, type="drop")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        call(port, "/items")
    assert call(port, "/healthz")[0] == 200  # health probes still answer
    blowup(port, active=False)
    assert call(port, "/items")[0] == 200


def test_bad_blowup_is_400_and_keeps_the_state(app):
    port = app()
    blowup(port, active=True, type="500", percentage=100)
    status, _, body = call(port, "/blowup", "POST", {"active": True, "type": "meteor"})
    assert status == 400 and "type" in json.loads(body)["error"]
    assert json.loads(call(port, "/blowup")[2])["type"] == "500"


def test_test_endpoints_still_answer_in_catalog_mode(app):
    port = app()
    assert call(port, "/status/418")[0] == 418
    assert call(port, "/delay/10")[2] == b"delayed 10\n"
    assert call(port, "/nope")[0] == 404
    with pytest.raises(http.client.RemoteDisconnected):
        call(port, "/hangup")
