"""A third-party web application nobody on weft wrote runs unmodified in the local mesh behind
the ingress gateway (issue 20; docs/local-mesh.md "`weft-local.yaml`: images to local
commands").

The application is json-server 0.17.4 from npm (pinned in tests/thirdparty, installed by
scripts/setup with `npm ci`), a small Express REST server over a JSON file. A Deployment
`inventory` in `istioinaction` (image `thirdparty/json-server:0.17`) and its Service (80 ->
3000) are mapped by the folder's weft-local.yaml to `node .../json-server/lib/cli/bin.js`
with `weftArgs: false`: weftctl adds nothing of its own, the container's `args` follow the
command, as a container runtime appends them to an image's entrypoint, with `$(POD_LOCALHOST)`
expanded as the kubelet expands `$(VAR)` from the container's environment. A Gateway and a
VirtualService route `inventory.istioinaction.io` to it. Through 127.0.0.1:30000:

- GET /items answers the db.json the test wrote (a copy in the test's own folder), served by
  json-server (Express's `X-Powered-By`);
- POST /items creates an item (201, id 3), a later GET sees it, and json-server wrote it to
  the file;
- the gateway's access log has both requests on the inventory cluster, and
  `weftctl proxy-config route` shows the gateway's route for the host.

Run in explicit mode, and in `--pod-network netns` mode (root, `ip` and `nsenter`), where the
test also checks that `down` leaves no namespace, link or route.

Like the other local-mesh tests, run as root inside a network namespace of your own
(`unshare -n sh -c 'ip link set lo up && ...'`): the mesh binds fixed ports. Skipped, with the
reason, when json-server or node is not installed (no registry when scripts/setup ran).
"""
import http.client
import json
import os
import re
import shutil

import pytest

from test_localmesh_netns import assert_clean, need_netns
from test_weftctl_up import (ROOT, gateway_log_entries, kill_leftovers, need_fixed_ports,
                             proxy_status_synced, supervisor_log, wait_for, weftctl)

THIRDPARTY = os.path.join(ROOT, "tests", "thirdparty")
JSON_SERVER = os.path.join(THIRDPARTY, "node_modules", "json-server", "lib", "cli", "bin.js")
HOST = "inventory.istioinaction.io"
CLUSTER = "outbound|80||inventory.istioinaction.svc.cluster.local"

DB = {"items": [{"id": 1, "name": "hammer", "stock": 4},
                {"id": 2, "name": "saw", "stock": 0}]}

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: istioinaction
  labels: {istio-injection: enabled}
"""

# As one would deploy json-server's image: the db file and where to listen as args. In the
# local mesh the app must listen on its pod's localhost (beside its sidecar), which the pod
# gives it as POD_LOCALHOST.
INVENTORY = """\
apiVersion: v1
kind: Service
metadata: {name: inventory, namespace: istioinaction, labels: {app: inventory}}
spec:
  selector: {app: inventory}
  ports: [{name: http, port: 80, targetPort: 3000}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: inventory, namespace: istioinaction}
spec:
  replicas: 1
  selector: {matchLabels: {app: inventory}}
  template:
    metadata: {labels: {app: inventory, version: v1}}
    spec:
      containers:
      - name: inventory
        image: thirdparty/json-server:0.17
        env:
        - {name: DB_FILE, value: "%(db)s"}
        args: ["$(DB_FILE)", "--host", "$(POD_LOCALHOST)", "--port", "3000"]
        ports: [{containerPort: 3000, name: http}]
"""

ROUTING = """\
apiVersion: networking.istio.io/v1beta1
kind: Gateway
metadata: {name: inventory-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [inventory.istioinaction.io]
---
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata: {name: inventory-vs-from-gw, namespace: istioinaction}
spec:
  hosts: [inventory.istioinaction.io]
  gateways: [inventory-gateway]
  http:
  - route:
    - destination: {host: inventory, port: {number: 80}}
"""

LOCAL_IMAGES = """\
apiVersion: weft.dev/v1
kind: LocalImages
images:
  thirdparty/json-server:
    command: [node, "%(bin)s"]
    weftArgs: false
"""

MESH_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |-
    accessLogFile: /dev/stdout
    accessLogEncoding: JSON
"""


def need_json_server():
    if not shutil.which("node"):
        pytest.skip("node is not installed (scripts/setup installs Debian's nodejs)")
    if not os.path.exists(JSON_SERVER):
        pytest.skip("json-server is not installed in tests/thirdparty: scripts/setup runs "
                    "`npm ci --prefix tests/thirdparty`, which needs the npm registry "
                    "(see tests/thirdparty/npm-ci.log)")


def inventory_folder(tmp_path):
    """The manifests folder, and the db file json-server serves (outside the folder: weftctl
    loads every .json in it as manifests)."""
    data = tmp_path / "data"
    data.mkdir()
    db = data / "db.json"
    db.write_text(json.dumps(DB))
    d = tmp_path / "inventory"
    d.mkdir()
    (d / "namespace.yaml").write_text(NAMESPACE)
    (d / "inventory.yaml").write_text(INVENTORY % {"db": db})
    (d / "inventory-gateway.yaml").write_text(ROUTING)
    (d / "weft-local.yaml").write_text(LOCAL_IMAGES % {"bin": JSON_SERVER})
    (d / "mesh-config.yaml").write_text(MESH_CONFIGMAP)
    return d, db


def gateway(method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", 30000, timeout=5)
    try:
        headers = {"Host": HOST}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def get_ok(path):
    status, headers, body = gateway("GET", path)
    return (status, headers, body) if status == 200 else None


def story(d, db, state, *extra):
    """up, the requests through the gateway, the access log and proxy-config; returns the
    mesh.json of the run (the caller runs down)."""
    up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", *extra)
    assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                            supervisor_log(state))
    with open(os.path.join(state, "mesh.json")) as f:
        mesh = json.load(f)
    pod = next(p for p in mesh["pods"] if p["labels"].get("app") == "inventory")
    app = next(p for p in mesh["processes"] if p["kind"] == "app")
    # the mapped command as written, the container's args after it, nothing of weft's
    assert app["argv"] == ["node", JSON_SERVER, str(db), "--host", pod["localhost"], "--port",
                           "3000"], app["argv"]

    # GET: json-server answers the db file through the gateway and the sidecar
    status, headers, body = wait_for(lambda: get_ok("/items"), 30, "200 through the gateway")
    assert json.loads(body) == DB["items"]
    assert headers.get("x-powered-by") == "Express", headers  # json-server, not weft-app
    assert "x-weft-app" not in headers
    status, _, body = gateway("GET", "/items?stock=0")
    assert status == 200 and [i["name"] for i in json.loads(body)] == ["saw"], body

    # POST creates an item; a later GET sees it; json-server saved it in its file
    status, headers, body = gateway("POST", "/items", json.dumps({"name": "drill", "stock": 7}))
    assert status == 201, (status, body)
    created = json.loads(body)
    assert created == {"name": "drill", "stock": 7, "id": 3}, created
    status, _, body = gateway("GET", "/items/3")
    assert status == 200 and json.loads(body) == created, (status, body)
    status, _, body = gateway("GET", "/items")
    assert [i["name"] for i in json.loads(body)] == ["hammer", "saw", "drill"], body
    assert wait_for(lambda: "drill" in db.read_text(), 5, "the item in db.json")
    assert gateway("GET", "/items/42")[0] == 404

    # the gateway's access log: both requests, on the inventory Service's cluster
    def logged(method, code):
        return next((e for e in gateway_log_entries(state, mesh)
                     if e.get("authority") == HOST and e.get("method") == method
                     and e.get("response_code") == code), None)

    post = wait_for(lambda: logged("POST", 201), 10, "the POST in the gateway's access log")
    assert post["upstream_cluster"] == CLUSTER and post["path"] == "/items", post
    assert logged("GET", 200)["upstream_cluster"] == CLUSTER

    # proxy-config: the gateway's route for the host, to that cluster
    wait_for(lambda: proxy_status_synced(2), 20, "both proxies SYNCED")
    gw = "%s.%s" % (mesh["gateway"]["pod"], "istio-system")
    rc = weftctl("proxy-config", "route", gw, "-o", "json")
    assert rc.returncode == 0, rc.stdout + rc.stderr
    routes = json.loads(rc.stdout)
    text = json.dumps(routes)
    assert HOST in text and CLUSTER in text, text[:2000]
    table = weftctl("proxy-config", "route", gw)
    assert table.returncode == 0 and HOST in table.stdout, table.stdout + table.stderr
    assert "inventory-vs-from-gw.istioinaction" in table.stdout, table.stdout

    # json-server's own log: it started on the pod localhost and served the requests
    log = os.path.join(state, "logs", app["name"] + ".log")
    with open(log, errors="replace") as f:
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())  # its request log's colours
    assert "http://%s:3000" % pod["localhost"] in text, text[-2000:]
    assert "POST /items 201" in text, text[-2000:]
    return mesh


def test_json_server_behind_the_gateway(tmp_path):
    need_json_server()
    need_fixed_ports()
    d, db = inventory_folder(tmp_path)
    state = str(tmp_path / "state")
    try:
        story(d, db, state)
        down = weftctl("down", "--state", state, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
    finally:
        left = kill_leftovers(state)
    assert not left, "processes left running after down: %s" % left


def test_json_server_netns(tmp_path):
    need_json_server()
    need_netns()
    d, db = inventory_folder(tmp_path)
    state = str(tmp_path / "state")
    net = None
    try:
        mesh = story(d, db, state, "--pod-network", "netns")
        net = mesh["podNetwork"]
        pod = next(p for p in mesh["pods"] if p["labels"].get("app") == "inventory")
        assert pod["ip"].startswith("10.10.") and pod["netns"].startswith(net["prefix"]), pod
        down = weftctl("down", "--state", state, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
        assert_clean(net)
    finally:
        left = kill_leftovers(state)
        if net is None:  # up failed part way: down removes what it made
            weftctl("down", "--state", state, timeout=60)
    assert not left, "processes left running after down: %s" % left
