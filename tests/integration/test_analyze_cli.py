"""weftctl analyze as a user meets it: formats, exit codes, thresholds, suppression,
namespaces, stdin, list of analyzers (../shared/reference/istio-analyze.md §2-3)."""
import json
import os

from conftest import VS_BAD_SUBSET, run_weftctl


NS_NOT_INJECTED = """\
apiVersion: v1
kind: Namespace
metadata: {name: plain}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_error_line_format_and_exit_79(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", f)
    assert r.returncode == 79
    assert r.stdout.splitlines() == [
        'Error [IST0101] (VirtualService shop/catalog %s:15) Referenced host+subset in '
        'destinationrule not found: "catalog+v1"' % f]
    assert "Error: Analyzers found issues when analyzing namespace: shop." in r.stderr


def test_json_output_shape_and_exit_0(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "-o", "json", f)
    assert r.returncode == 0  # istioctl: thresholds only apply to log output
    assert r.stdout.startswith("[\n\t{\n\t\t\"code\": \"IST0101\",")
    msgs = json.loads(r.stdout)
    assert len(msgs) == 1
    m = msgs[0]
    assert sorted(m) == ["code", "documentationUrl", "level", "message", "origin", "reference"]
    assert m["origin"] == "VirtualService shop/catalog"
    assert m["reference"] == f + ":15"
    assert m["documentationUrl"].endswith("/ist0101/?ref=istioctl-analyze")


def test_yaml_output(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "-o", "yaml", f)
    assert r.returncode == 0
    assert r.stdout.startswith("- code: IST0101\n  documentationUrl: ")
    assert "  origin: VirtualService shop/catalog\n" in r.stdout


def test_bad_output_format_exits_64(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-o", "xml", f)
    assert r.returncode == 64
    assert "xml" in r.stderr


def test_unknown_flag_exits_64():
    r = run_weftctl("analyze", "--no-such-flag", "-")
    assert r.returncode == 64  # istioctl: a flag error is a CommandParseError (64)
    assert "unknown flag: --no-such-flag" in r.stderr


def test_no_issues_messages(tmp_path):
    ok = write(tmp_path, "ns.yaml", NS_NOT_INJECTED.replace("{name: plain}",
                                                             "{name: plain, labels: {istio-injection: enabled}}"))
    r = run_weftctl("analyze", "-n", "plain", ok)
    assert r.returncode == 0
    assert r.stdout == "\n"
    assert r.stderr == "\u2714 No validation issues found when analyzing %s.\n" % ok
    ok2 = write(tmp_path, "ns2.yaml", "")
    r = run_weftctl("analyze", "-n", "plain", ok, ok2)
    assert r.stderr == ("\u2714 No validation issues found when analyzing:\n  - %s\n  - %s\n"
                        % (ok, ok2))


def test_info_threshold_and_output_threshold(tmp_path):
    f = write(tmp_path, "ns.yaml", NS_NOT_INJECTED)
    r = run_weftctl("analyze", "-A", f)
    assert r.returncode == 0  # Info is below the default failure threshold
    assert r.stdout.startswith("Info [IST0102] (Namespace plain %s:3) " % f)  # metadata.name
    r = run_weftctl("analyze", "-A", "--failure-threshold", "info", f)
    assert r.returncode == 79
    r = run_weftctl("analyze", "-A", "--output-threshold", "Warning", f)
    assert r.returncode == 0 and "IST0102" not in r.stdout
    r = run_weftctl("analyze", "-A", "--failure-threshold", "fatal", f)
    assert r.returncode == 64


def test_suppress_flag_and_annotation(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "-S", "IST0101=VirtualService shop/*", f)
    assert r.returncode == 0 and "IST0101" not in r.stdout
    r = run_weftctl("analyze", "-n", "shop", "-S", "IST0102=VirtualService shop/*", f)
    assert r.returncode == 79
    annotated = VS_BAD_SUBSET.replace(
        "metadata: {name: catalog, namespace: shop}\nspec:\n  hosts",
        "metadata: {name: catalog, namespace: shop, annotations: "
        "{galley.istio.io/analyze-suppress: \"IST0101\"}}\nspec:\n  hosts")
    g = write(tmp_path, "vs2.yaml", annotated)
    r = run_weftctl("analyze", "-n", "shop", g)
    assert r.returncode == 0, r.stdout


def test_namespace_filter_and_default_namespace(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "other", f)
    assert r.returncode == 0 and r.stdout == "\n"
    # resources without a namespace take the -n namespace
    g = write(tmp_path, "vs2.yaml", VS_BAD_SUBSET.replace(", namespace: shop", ""))
    r = run_weftctl("analyze", "-n", "shop", g)
    assert "(VirtualService shop/catalog" in r.stdout


def test_stdin(tmp_path):
    r = run_weftctl("analyze", "-n", "shop", "-", stdin=VS_BAD_SUBSET)
    assert r.returncode == 79
    assert "(VirtualService shop/catalog -:15)" in r.stdout


def test_directory_skips_other_files(tmp_path):
    d = tmp_path / "m"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "vs.yml").write_text(VS_BAD_SUBSET)
    (d / "notes.txt").write_text("not yaml: [")
    r = run_weftctl("analyze", "-n", "shop", str(d))
    assert r.returncode == 79
    assert "Skipping file %s, recognized file extensions are: [.json .yaml .yml]" % (
        d / "notes.txt") in r.stderr
    assert "sub/vs.yml:15" in r.stdout


def test_json_input_has_no_line(tmp_path):
    docs = [{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
         "metadata": {"name": "catalog", "namespace": "shop"},
         "spec": {"hosts": ["catalog"], "http": [{"route": [
             {"destination": {"host": "catalog", "subset": "v1"}}]}]}}]}]
    f = write(tmp_path, "vs.json", json.dumps(docs[0]))
    svc = write(tmp_path, "svc.yaml", VS_BAD_SUBSET.split("---")[0])
    r = run_weftctl("analyze", "-n", "shop", svc, f)
    assert r.returncode == 79
    assert "(VirtualService shop/catalog %s) " % f in r.stdout


WASM_AUTHN = """\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: default, namespace: istio-system}
spec:
  url: oci://example.com/authn:1
  phase: AUTHN
"""

DR_STICKY = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: catalog, namespace: shop}
spec:
  host: catalog
  trafficPolicy:
    loadBalancer:
      consistentHash: {httpHeaderName: x-user}
"""


def test_unenforced_security_control_is_an_error(tmp_path):
    """A WasmPlugin in the AUTHN phase weft does not run: analyze exits 79 naming it (WFT0002);
    a field weft ignores is a warning (WFT0001), which alone exits 0."""
    f = write(tmp_path, "wasm.yaml", WASM_AUTHN)
    r = run_weftctl("analyze", "-A", f)
    assert r.returncode == 79, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "Error [WFT0002] (WasmPlugin istio-system/default %s:6) spec.phase is not enforced by "
        "weft: the Wasm plugin runtime is not implemented; the authentication or authorization "
        "plugin does not run" % f]
    r = run_weftctl("analyze", "-A", "-o", "json", f)
    m = json.loads(r.stdout)[0]
    assert (m["code"], m["level"], m["documentationUrl"]) == (
        "WFT0002", "Error", "docs/analyze.md#wft0002")
    d = write(tmp_path, "dr.yaml", DR_STICKY)
    r = run_weftctl("analyze", "-n", "shop", d)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("Warning [WFT0001] (DestinationRule shop/catalog %s:8) "
            "spec.trafficPolicy.loadBalancer.consistentHash has no effect in weft: "
            "consistent-hash load balancing (sticky sessions) is not implemented" % d) in r.stdout
    # a resource that fails schema validation gets its IST0106, not also a WFT message
    bad = write(tmp_path, "bad.yaml", WASM_AUTHN.replace("AUTHN", "authn"))
    r = run_weftctl("analyze", "-A", bad)
    assert "IST0106" in r.stdout and "WFT" not in r.stdout, r.stdout
    # suppressible like any code
    r = run_weftctl("analyze", "-A", "-S", "WFT0002=WasmPlugin default.istio-system", f)
    assert r.returncode == 0 and "WFT0002" not in r.stdout


def test_list_analyzers():
    r = run_weftctl("analyze", "-L")
    assert r.returncode == 0
    names = [l[2:-1] for l in r.stdout.splitlines() if l.startswith("* ")]
    assert names == sorted(names)
    assert len(names) == 56  # 36 analyzers of Istio's All() + 17 schema validators + weft's 3
    assert "weft.NotImplementedAnalyzer" in names
    assert "weft.AuthorizationPolicyPathAnalyzer" in names
    assert "weft.PeerAuthenticationPortAnalyzer" in names
    assert "virtualservice.DestinationRuleAnalyzer" in names
    assert "annotations.AlphaAnalyzer" not in names
    assert "schema.ValidationAnalyzer.VirtualService" in names


def test_analyzer_selection(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET + "---\n" + NS_NOT_INJECTED)
    r = run_weftctl("analyze", "-A", "--analyzer", "injection.Analyzer", f)
    assert "IST0102" in r.stdout and "IST0101" not in r.stdout


def test_help_and_use_kube(tmp_path):
    r = run_weftctl("analyze", "--help")
    assert r.returncode == 0 and "--failure-threshold" in r.stdout
    # --use-kube=true reads the cluster (test_weftctl_kube.py); without a kubeconfig it says
    # which file it looked for; without one chosen, --use-kube stays off (files only)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)
    r = run_weftctl("analyze", "--use-kube=true", "-", env=env)
    assert r.returncode == 1, r.stderr
    assert r.stderr == "Error: kubeconfig %s/.kube/config: no such file\n" % tmp_path, r.stderr
    r = run_weftctl("analyze", "-", stdin="", env=env)
    assert r.returncode == 0, r.stderr


# ---- behaviour found by a new user's review (each failed before its fix) ----

def test_missing_path_is_an_error_not_a_parse_failure(tmp_path):
    for extra in ([], ["--ignore-unknown"], ["-o", "json"]):
        r = run_weftctl("analyze", *extra, str(tmp_path / "typo.yaml"))
        assert r.returncode == 1, extra
        assert "Error: stat %s: No such file or directory" % (tmp_path / "typo.yaml") in r.stderr


def test_suppress_values_are_checked(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "-S", "bad", f)
    assert r.returncode == 64
    assert "bad is not a valid suppression value" in r.stderr
    r = run_weftctl("analyze", "-n", "shop", "-S", "IST9999=VirtualService *", f)
    assert r.returncode == 79
    assert ("Warning: Supplied message code 'IST9999' is an unknown message code and will not "
            "have any effect.") in r.stderr


def test_output_format_is_case_insensitive_and_checked_before_list(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "-o", "JSON", f)
    assert r.returncode == 0 and json.loads(r.stdout)[0]["code"] == "IST0101"
    r = run_weftctl("analyze", "-L", "-o", "xml")
    assert r.returncode == 64
    r = run_weftctl("analyze", "-L")
    assert r.stdout.startswith("* ")


def test_no_issues_line_for_every_format_and_parse_error_line(tmp_path):
    ok = write(tmp_path, "ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    r = run_weftctl("analyze", "-o", "json", ok)
    assert r.stdout == "[]\n"
    assert r.stderr == "\u2714 No validation issues found when analyzing %s.\n" % ok
    bad = write(tmp_path, "bad.yaml", "a: [\n")
    r = run_weftctl("analyze", ok, bad)
    assert r.returncode == 65
    assert r.stderr.endswith("Error: Some files couldn't be parsed.\n")


def test_no_issues_names_the_files_found(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "README.md").write_text("# notes\n")
    r = run_weftctl("analyze", str(d))
    assert r.returncode == 0
    # nothing was read: no all-clear (issue 15 item 4)
    assert "No validation issues found" not in r.stderr
    assert ("Warning: nothing was analyzed: the input holds no resources (only .yaml, .yml "
            "and .json files are read).") in r.stderr
    (d / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    r = run_weftctl("analyze", str(d))
    assert "No validation issues found when analyzing %s." % (d / "a.yaml") in r.stderr


def test_system_namespaces_are_not_reported(tmp_path):
    text = "".join("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n" % n for n in
                   ("kube-system", "kube-public", "kube-node-lease", "local-path-storage"))
    r = run_weftctl("analyze", "-A", write(tmp_path, "ns.yaml", text))
    assert r.returncode == 0 and "IST0102" not in r.stdout


def test_kubernetes_objects_of_wrong_types_fail_to_parse(tmp_path):
    f = write(tmp_path, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"
                                    "spec:\n  ports:\n  - port: \"80\"\n")
    r = run_weftctl("analyze", "-A", f)
    assert r.returncode == 65
    assert "%s:6:11: failed parsing JSON for built-in type: spec.ports[0].port" % f in r.stderr


def test_documents_that_are_not_objects(tmp_path):
    f = write(tmp_path, "x.yaml", "just: a map\n---\n[a, list]\n")
    r = run_weftctl("analyze", "-A", f)
    assert r.returncode == 65
    assert "%s:1:1: unable to parse resource with no group, version and kind" % f in r.stderr
    assert "%s:3:1: a document must be one object" % f in r.stderr


def test_unknown_versions_are_skipped(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET.replace("networking.istio.io/v1",
                                                         "networking.istio.io/v9"))
    r = run_weftctl("analyze", "-n", "shop", f)
    assert r.returncode == 0 and "IST0101" not in r.stdout


def test_nested_lists(tmp_path):
    inner = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}}]}
    outer = {"apiVersion": "v1", "kind": "List", "items": [inner]}
    r = run_weftctl("analyze", "-A", write(tmp_path, "l.json", json.dumps(outer)))
    assert "Info [IST0102] (Namespace plain" in r.stdout


def test_directory_paths_are_cleaned(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "vs.yaml").write_text(VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", "./m", cwd=str(tmp_path))
    assert "(VirtualService shop/catalog m/vs.yaml:15)" in r.stdout
    r = run_weftctl("analyze", "-n", "shop", str(d) + "//")
    assert "%s:15)" % (d / "vs.yaml") in r.stdout


def test_pathological_input_is_bounded(tmp_path):
    docs = []
    for i in range(600):
        docs.append("apiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: a, labels: "
                    "{app: x}}\n" % i)
        docs.append("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s%d, "
                    "namespace: a}\nspec: {workloadSelector: {labels: {app: x}}}\n" % i)
    f = write(tmp_path, "big.yaml", "---\n".join(docs))
    r = run_weftctl("analyze", "-A", "-o", "json", f, timeout=120)
    assert r.returncode == 1
    assert "more than 64 MiB of findings" in r.stderr
    assert len(r.stdout) < 1024


def test_timeout_flag_must_be_a_duration():
    r = run_weftctl("analyze", "--timeout", "abc", "-")
    assert r.returncode == 64 and 'time: invalid duration "abc"' in r.stderr


def test_mesh_config_must_be_a_file(tmp_path):
    r = run_weftctl("analyze", "--meshConfigFile", str(tmp_path), "-")
    assert r.returncode == 1 and "not a regular file" in r.stderr


def test_root_command_help_and_errors():
    r = run_weftctl("help", "analyze")
    assert r.returncode == 0 and "--failure-threshold" in r.stdout
    r = run_weftctl("--bogus")
    assert r.returncode == 64 and "unknown flag: --bogus" in r.stderr
    r = run_weftctl("version", "extra")
    assert r.returncode == 64


def test_findings_on_block_values_name_the_key_line(tmp_path):
    f = write(tmp_path, "vs.yaml", """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: default}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews}
    bogusField:
      a: 1
""")
    r = run_weftctl("analyze", f)
    assert "(VirtualService default/r %s:9) Schema validation warning: strict decoding error: " \
           "unknown field \"spec.http[0].bogusField\"" % f in r.stdout


def test_a_resource_read_twice_counts_once(tmp_path):
    a = write(tmp_path, "a.yaml", VS_BAD_SUBSET)
    b = write(tmp_path, "b.yaml", VS_BAD_SUBSET)
    r = run_weftctl("analyze", "-n", "shop", a, b)
    assert r.returncode == 79
    assert r.stdout.count("IST0101") == 1 and b + ":15" in r.stdout


# ---- issue 15 item 4: never an all-clear over input that was not looked at ----

def test_files_only_in_other_namespaces_are_named_not_passed(tmp_path):
    f = write(tmp_path, "vs.yaml", VS_BAD_SUBSET + "---\n" + NS_NOT_INJECTED.replace(
        "{name: plain}", "{name: shop}"))
    r = run_weftctl("analyze", f)  # default namespace: nothing in it
    assert r.returncode == 0
    assert r.stdout == "\n"  # istioctl's stdout, unchanged
    assert "No validation issues found" not in r.stderr
    assert ("Warning: nothing was analyzed: no resource read is in namespace default; skipped "
            "3 in shop (3).\nAnalyze them with -n shop, or every namespace with -A.\n") in r.stderr
    r = run_weftctl("analyze", "-n", "other", "-o", "json", f)
    assert r.stdout == "[]\n"
    assert "no resource read is in namespace other" in r.stderr
    # -n shop and -A look at them and find the error
    assert run_weftctl("analyze", "-n", "shop", f).returncode == 79
    r = run_weftctl("analyze", "-A", f)
    assert r.returncode == 79 and "nothing was analyzed" not in r.stderr


def test_some_resources_outside_the_namespace_are_listed(tmp_path):
    gw = ("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: "
          "istio-system}\nspec:\n  selector: {istio: ingressgateway}\n  servers:\n  - port: "
          "{number: 80, name: http, protocol: HTTP}\n    hosts: ['*']\n")
    f = write(tmp_path, "all.yaml", VS_BAD_SUBSET + "---\n" + gw)
    r = run_weftctl("analyze", "-n", "shop", f)
    assert r.returncode == 79 and "IST0101" in r.stdout
    assert ("Note: 1 resource outside namespace shop not analyzed: istio-system (1).\n"
            "Include them with -n istio-system, or every namespace with -A.\n") in r.stderr
    r = run_weftctl("analyze", "-A", f)
    assert "Note:" not in r.stderr


def test_no_input_is_a_usage_error():
    r = run_weftctl("analyze")
    assert r.returncode == 64
    assert r.stdout == ""
    assert r.stderr == ("Error: nothing to analyze: give manifest files, folders or - (stdin), "
                        "or a cluster to read (--kubeconfig, --context, $KUBECONFIG)\n"
                        "Run 'weftctl analyze --help' for usage.\n")
    r = run_weftctl("analyze", "-n", "shop", "-o", "json")
    assert r.returncode == 64
    assert run_weftctl("analyze", "-L").returncode == 0  # listing needs no input


PA_ON_TCP = """\
apiVersion: v1
kind: Service
metadata: {name: db, namespace: default}
spec:
  selector: {app: db}
  ports: [{name: tcp-pg, port: 5432}, {name: http, port: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: default}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: pg, ports: [{containerPort: 5432}, {containerPort: 8080}]}]}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: db, namespace: default}
spec:
  selector: {matchLabels: {app: db}}
  mtls: {mode: STRICT}
  portLevelMtls:
    9090: {mode: DISABLE}
"""


def test_peer_authentication_mode_without_inbound_chain(tmp_path):
    """A PeerAuthentication whose mode reaches no inbound filter chain is reported by analyze
    as pilot reports it: the port-level mode on 9090 (no Service targets it) has no effect
    (WFT0001, which alone exits 0); STRICT on the TCP port 5432 and the HTTP port 8080 is
    enforced by their inbound chains and not reported."""
    f = write(tmp_path, "pa.yaml", PA_ON_TCP)
    r = run_weftctl("analyze", f)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "PeerAuthentication default/db" in ln]
    assert len(lines) == 1, r.stdout
    assert lines[0].startswith("Warning [WFT0001] (PeerAuthentication default/db %s:24) "
                               "spec.portLevelMtls[9090].mode has no effect in weft: on port "
                               "9090" % f), lines[0]
    assert "5432" not in "".join(lines) and "8080" not in "".join(lines)
    r = run_weftctl("analyze", "--analyzer", "weft.PeerAuthenticationPortAnalyzer", f)
    assert r.returncode == 0 and r.stdout.count("PeerAuthentication default/db") == 1, r.stdout
    assert "Service default/db" not in r.stdout  # the other analyzers did not run
