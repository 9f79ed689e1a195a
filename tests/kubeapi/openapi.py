"""The OpenAPI v2 document of the test API server (GET /openapi/v2), enough for kubectl:

* kubectl 1.20 downloads it (protobuf, Accept application/com.github.proto-openapi.spec.v2@
  v1.0+protobuf, the gnostic openapi_v2.Document message) for client-side validation and, with
  --dry-run=server, to check that the kind's PATCH operation takes the `dryRun` query parameter
  (k8s.io/kubectl pkg/util/openapi SupportsDryRun: the path item whose patch operation carries
  x-kubernetes-group-version-kind = the object's group/version/kind);
* newer kubectl falls back to it when /openapi/v3 is absent (404 here) to see whether the
  server takes `fieldValidation` (not offered: kubectl then validates on the client).

The document has one path per kind and version (kube-apiserver's item path, with a patch
operation taking dryRun) and, for the built-in kinds, definitions built from the Kubernetes
API models of Debian's python3-kubernetes (its generated classes' openapi_types and
attribute_map, Kubernetes 1.22's OpenAPI): field names and types (string, integer, boolean,
arrays, maps, references; int-or-string and other free-form fields accept anything), so
kubectl's client-side validation refuses unknown fields and wrong types as it does against
kube-apiserver (required fields are not described). The Istio kinds have no definition:
kubectl skips the schema check of a kind without a model, as for a CRD without a schema.
Without python3-kubernetes there are no definitions. JSON for any other Accept.
"""

import json
import re

import resources

try:
    import kubernetes.client.models as _models
except ImportError:  # pragma: no cover - python3-kubernetes missing
    _models = None

PROTO_MIME = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# what kube-openapi's handler answers for it ('@' is not a media-type token: Go's
# mime.ParseMediaType, which client-go runs on every response, refuses PROTO_MIME)
PROTO_RETURNED = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _item_path(r, version):
    base = "/api/%s" % version if r.group == "" else "/apis/%s/%s" % (r.group, version)
    if r.namespaced:
        return "%s/namespaces/{namespace}/%s/{name}" % (base, r.resource)
    return "%s/%s/{name}" % (base, r.resource)


def _schema(typ, defs):
    """The schema of a python3-kubernetes openapi_types entry; adds referenced models to defs."""
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        return {"type": "array", "items": _schema(m.group(1), defs)}
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        return {"type": "object", "additionalProperties": _schema(m.group(1), defs)}
    prim = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int64"},
            "float": {"type": "number"}, "bool": {"type": "boolean"},
            "datetime": {"type": "string", "format": "date-time"},
            "date": {"type": "string", "format": "date"}}
    if typ in prim:
        return dict(prim[typ])
    if typ == "object" or not hasattr(_models, typ):
        return {}  # int-or-string, RawExtension, JSON: anything
    _model(typ, defs)
    return {"$ref": "#/definitions/" + typ}


def _model(name, defs):
    if name in defs:
        return
    cls = getattr(_models, name)
    defs[name] = d = {"type": "object", "properties": {}}
    for attr, typ in cls.openapi_types.items():
        d["properties"][cls.attribute_map[attr]] = _schema(typ, defs)


def definitions():
    """{name: schema} of the built-in kinds of resources.py (and what they reference)."""
    defs = {}
    if _models is None:
        return defs
    for r in resources.RESOURCES:
        if r.group not in resources.BUILTIN_GROUPS:
            continue
        for v in r.versions:
            name = v.capitalize() + r.kind
            if not hasattr(_models, name):
                continue
            _model(name, defs)
            defs[name]["x-kubernetes-group-version-kind"] = [
                {"group": r.group, "kind": r.kind, "version": v}]
    return defs


def document(git_version):
    """The swagger 2.0 document as a dict."""
    paths = {}
    for r in resources.RESOURCES:
        for v in r.versions:
            paths[_item_path(r, v)] = {"patch": {
                "operationId": "patch%s%s" % (r.kind, v.capitalize()),
                "parameters": [{"name": "dryRun", "in": "query", "type": "string",
                                "uniqueItems": True}],
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": r.group, "kind": r.kind,
                                                    "version": v}}}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": git_version},
            "paths": paths, "definitions": definitions()}


# ---- protobuf (gnostic openapiv2/OpenAPIv2.proto field numbers) -----------------------------
def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _len(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _str(field, s):
    return _len(field, s.encode())


def _gvk_yaml(gvk):
    return "group: %s\nkind: %s\nversion: %s\n" % (
        json.dumps(gvk["group"]) if gvk["group"] == "" else gvk["group"], gvk["kind"],
        gvk["version"])


def _operation(op):
    out = _str(5, op["operationId"])  # Operation.operation_id
    for p in op["parameters"]:
        qp = _str(2, p["in"]) + _str(4, p["name"]) + _str(6, p["type"])  # QueryParameterSubSchema
        non_body = _len(3, qp)  # NonBodyParameter.query_parameter_sub_schema
        param = _len(2, non_body)  # Parameter.non_body_parameter
        out += _len(8, _len(1, param))  # Operation.parameters: ParametersItem.parameter
    for name in ("x-kubernetes-action", "x-kubernetes-group-version-kind"):
        val = op[name]
        yml = _gvk_yaml(val) if isinstance(val, dict) else "%s\n" % val
        out += _len(13, _str(1, name) + _len(2, _str(2, yml)))  # vendor_extension: NamedAny
    return out


def _pb_schema(sc):
    """A Schema message (field numbers of gnostic's openapi_v2.Schema)."""
    out = b""
    if "$ref" in sc:
        out += _str(1, sc["$ref"])
    if "format" in sc:
        out += _str(2, sc["format"])
    if "additionalProperties" in sc:  # AdditionalPropertiesItem.schema
        out += _len(21, _len(1, _pb_schema(sc["additionalProperties"])))
    if "type" in sc:  # TypeItem.value
        out += _len(22, _str(1, sc["type"]))
    if "items" in sc:  # ItemsItem.schema
        out += _len(23, _len(1, _pb_schema(sc["items"])))
    if "properties" in sc:  # Properties.additional_properties: NamedSchema
        props = b"".join(_len(1, _str(1, k) + _len(2, _pb_schema(v)))
                         for k, v in sc["properties"].items())
        out += _len(25, props)
    gvks = sc.get("x-kubernetes-group-version-kind")
    if gvks:
        yml = "".join("- " + _gvk_yaml(g).replace("\n", "\n  ").rstrip(" ") for g in gvks)
        out += _len(31, _str(1, "x-kubernetes-group-version-kind") + _len(2, _str(2, yml)))
    return out


def protobuf(doc):
    """doc (from document()) as an openapi_v2.Document message."""
    paths = b""
    for name, item in doc["paths"].items():
        path_item = _len(8, _operation(item["patch"]))  # PathItem.patch
        paths += _len(2, _str(1, name) + _len(2, path_item))  # Paths.path: NamedPathItem
    info = _str(1, doc["info"]["title"]) + _str(2, doc["info"]["version"])
    defs = b"".join(_len(1, _str(1, k) + _len(2, _pb_schema(v)))
                    for k, v in doc["definitions"].items())
    return _str(1, doc["swagger"]) + _len(2, info) + _len(8, paths) + _len(9, defs)


_cache = {}


def serve(handler, parts, git_version):
    """Answers GET /openapi/v2 (True), leaves anything else to the caller (False)."""
    if parts != ["openapi", "v2"]:
        return False
    key = (git_version, len(resources.RESOURCES))  # a CRD may have added a kind
    if _cache.get("key") != key:
        _cache.update(key=key, doc=document(git_version), pb=None)
    doc = _cache["doc"]
    if PROTO_MIME in (handler.headers.get("Accept") or ""):
        data = _cache["pb"] = _cache["pb"] or protobuf(doc)
        handler.send_response(200)
        handler.send_header("Content-Type", PROTO_RETURNED)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    else:
        handler.send_json(200, doc)
    return True
