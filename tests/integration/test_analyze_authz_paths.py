"""weft.AuthorizationPolicyPathAnalyzer (WFT0005, operator report B038): an
AuthorizationPolicy that decides by request path (DENY/AUDIT with paths, ALLOW with notPaths)
is flagged while MeshConfig pathNormalization leaves `//` and `%2F` variants as they are (NONE,
BASE, DEFAULT, or unset), at the field's line; MERGE_SLASHES / DECODE_AND_MERGE_SLASHES, ALLOW
with paths and DENY with notPaths (both fail closed) are not."""
import json

from conftest import run_weftctl

POLICY = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: no-admin, namespace: shop}
spec:
  selector: {matchLabels: {app: catalog}}
  action: %s
  rules:
  - to:
    - operation:
        %s: ["/admin/*"]
"""


def analyze(tmp_path, action, field, mode=None):
    f = tmp_path / "policy.yaml"
    f.write_text(POLICY % (action, field))
    args = ["analyze", "-n", "shop", "-o", "json", "--output-threshold", "Info"]
    if mode:
        m = tmp_path / "mesh.yaml"
        m.write_text("pathNormalization: {normalization: %s}\n" % mode)
        args += ["--meshConfigFile", m]
    r = run_weftctl(*args, f)
    assert r.returncode in (0, 79), r.stdout + r.stderr
    return [m for m in json.loads(r.stdout) if m["code"] == "WFT0005"], f


def test_deny_paths_under_base_is_flagged(tmp_path):
    for mode in (None, "BASE", "DEFAULT", "NONE"):
        msgs, f = analyze(tmp_path, "DENY", "paths", mode)
        assert len(msgs) == 1, (mode, msgs)
        m = msgs[0]
        assert m["level"] == "Warning"
        assert m["origin"] == "AuthorizationPolicy shop/no-admin"
        assert m["message"].startswith(
            "DENY rule 0 to[0].operation.paths matches request paths while MeshConfig "
            "pathNormalization is %s: variants such as //admin/* " % (mode or "BASE")), m
        assert "MERGE_SLASHES" in m["message"]
    r = run_weftctl("analyze", "-n", "shop", f)
    assert ("Warning [WFT0005] (AuthorizationPolicy shop/no-admin %s:10)" % f) in r.stdout


def test_allow_not_paths_and_audit_are_flagged(tmp_path):
    assert len(analyze(tmp_path, "ALLOW", "notPaths")[0]) == 1
    assert len(analyze(tmp_path, "AUDIT", "paths")[0]) == 1


def test_fail_closed_forms_and_merging_modes_are_not(tmp_path):
    assert analyze(tmp_path, "ALLOW", "paths")[0] == []
    assert analyze(tmp_path, "DENY", "notPaths")[0] == []
    assert analyze(tmp_path, "CUSTOM", "paths")[0] == []
    assert analyze(tmp_path, "DENY", "paths", "MERGE_SLASHES")[0] == []
    assert analyze(tmp_path, "DENY", "paths", "DECODE_AND_MERGE_SLASHES")[0] == []
