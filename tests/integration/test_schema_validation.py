"""`weftctl analyze` with the schema.ValidationAnalyzer.<Kind> analyzers, end to end.

Valid Istio configuration (every YAML of the Istio in Action book under
../shared/corpus/istioinaction) must give no IST0106; broken manifests written here must give
IST0106 with Istio's wording and the field path, and warnings as IST0133.

Run from the project root after `make`:  /usr/bin/python3 -m pytest tests/integration
"""
import json
import os
import subprocess
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("WEFT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
WEFTCTL = os.environ.get("WEFTCTL", os.path.join(ROOT, "build", "weftctl"))
BOOK = os.path.join(SHARED, "corpus", "istioinaction")

KINDS = ["AuthorizationPolicy", "DestinationRule", "EnvoyFilter", "Gateway", "MeshConfig",
         "MeshNetworks", "PeerAuthentication", "ProxyConfig", "RequestAuthentication",
         "ServiceEntry", "Sidecar", "Telemetry", "TrafficExtension", "VirtualService",
         "WasmPlugin", "WorkloadEntry", "WorkloadGroup"]
SCHEMA_ARGS = [a for k in KINDS for a in ("--analyzer", "schema.ValidationAnalyzer." + k)]


def analyze_json(paths):
    assert os.access(WEFTCTL, os.X_OK), "build/weftctl is missing: run make first"
    p = subprocess.run([WEFTCTL, "analyze", "-A", "-o", "json"] + SCHEMA_ARGS + paths,
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def book_yaml_files():
    out = []
    for d, _, files in os.walk(BOOK):
        out += [os.path.join(d, f) for f in files if f.endswith((".yaml", ".yml"))]
    return sorted(out)


def test_schema_analyzers_are_listed():
    p = subprocess.run([WEFTCTL, "analyze", "-L"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    for k in KINDS:
        assert "* schema.ValidationAnalyzer.%s:" % k in p.stdout


def test_book_has_no_schema_errors():
    files = book_yaml_files()
    assert len(files) > 100
    findings = analyze_json([BOOK])
    errors = [f for f in findings if f["code"] == "IST0106"]
    assert errors == [], "\n".join("%s %s" % (f["origin"], f["message"]) for f in errors)
    # the book's EnvoyFilters get Istio's standing warning, nothing else is an error
    assert {f["code"] for f in findings} <= {"IST0133", "IST0130", "IST0131"}


@pytest.mark.parametrize("path", [p for p in book_yaml_files()
                                  if os.path.basename(os.path.dirname(p)) in
                                  ("ch2", "ch4", "ch5", "ch6", "ch9", "ch10")])
def test_book_file_alone_has_no_schema_errors(path):
    errors = [f for f in analyze_json([path]) if f["code"] == "IST0106"]
    assert errors == [], errors


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def messages(findings, code):
    return [f["message"] for f in findings if f["code"] == code]


def test_broken_virtualservice(tmp_path):
    f = write(tmp_path, "vs.yaml", """\
        apiVersion: networking.istio.io/v1
        kind: VirtualService
        metadata:
          name: reviews
          namespace: default
        spec:
          hosts:
          - reviews
          http:
          - route:
            - destination:
                host: reviews
              weight: "abc"
        ---
        apiVersion: networking.istio.io/v1
        kind: VirtualService
        metadata:
          name: ratings
          namespace: default
        spec:
          hosts:
          - ratings
          http:
          - match:
            - uri:
                regex: "(?<=a)b"
            timeout: 500us
            route:
            - destination:
                host: ratings
                subset: V_1
        """)
    findings = analyze_json([f])
    errs = messages(findings, "IST0106")
    assert ("Schema validation error: spec.http[0].route[0].weight in body must be of type "
            "integer: \"string\"") in errs
    assert "Schema validation error: duration must be greater than 1ms" in errs
    assert "Schema validation error: subset name is invalid: V_1" in errs
    assert any("invalid or unsupported Perl syntax" in m and "RE2" in m for m in errs)
    weight = [x for x in findings if "weight" in x["message"]][0]
    assert weight["reference"].endswith("vs.yaml:13")
    assert weight["origin"] == "VirtualService default/reviews"


def test_unknown_field_is_an_error(tmp_path):
    f = write(tmp_path, "dr.yaml", """\
        apiVersion: networking.istio.io/v1
        kind: DestinationRule
        metadata:
          name: reviews
          namespace: default
        spec:
          host: reviews
          trafficPolicy:
            loadBalancer:
              simpel: ROUND_ROBIN
        """)
    # an unknown field is a warning (kubectl warns; istioctl analyze ignores it)
    found = analyze_json([f])
    assert messages(found, "IST0106") == []
    assert messages(found, "IST0133") == [
        "Schema validation warning: strict decoding error: unknown field "
        "\"spec.trafficPolicy.loadBalancer.simpel\""]


def test_warnings_and_duplicate_matches(tmp_path):
    f = write(tmp_path, "mix.yaml", """\
        apiVersion: networking.istio.io/v1
        kind: ServiceEntry
        metadata:
          name: db
          namespace: default
        spec:
          hosts:
          - db.example.com
          ports:
          - number: 5432
            name: tcp
            protocol: TCP
          resolution: NONE
        ---
        apiVersion: networking.istio.io/v1
        kind: VirtualService
        metadata:
          name: dup
          namespace: default
        spec:
          hosts:
          - dup
          http:
          - match:
            - uri:
                prefix: /a
            route:
            - destination:
                host: dup
          - match:
            - uri:
                prefix: /a
            route:
            - destination:
                host: dup
        """)
    findings = analyze_json([f])
    assert messages(findings, "IST0106") == []
    assert any("addresses are required for ports serving TCP" in m
               for m in messages(findings, "IST0133"))
    assert messages(findings, "IST0130") == [
        "VirtualService rule #1 not used (all matches used by prior rules)."]
    assert messages(findings, "IST0131") == [
        "VirtualService rule #1 match #0 is not used (duplicate/overlapping match in rule #0)."]


def test_authorization_policy_prefix(tmp_path):
    f = write(tmp_path, "ap.yaml", """\
        apiVersion: security.istio.io/v1
        kind: AuthorizationPolicy
        metadata:
          name: deny-all
          namespace: foo
        spec:
          action: DENY
        """)
    errs = messages(analyze_json([f]), "IST0106")
    assert errs == ["Schema validation error: invalid policy deny-all.foo: DENY action without "
                    "`rules` is meaningless as it will never be triggered, add an empty rule `{}` "
                    "if you want it be triggered for every request"]
