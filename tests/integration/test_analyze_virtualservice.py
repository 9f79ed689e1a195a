"""`weftctl analyze` and the virtualservice analyzers, end to end.

Operator reports B018 (DestinationRules in the root namespace, DestinationRule exportTo) and
B020 (IST0109 must not list one VirtualService twice) from
../shared/cases/operator-reports.md, and the Istio in Action chapter 10 catalog example
(../shared/corpus/istioinaction). The reports' manifests are read from the report itself, so
the tests follow it instead of keeping a copy.

Run from the project root after `make`:  /usr/bin/python3 -m pytest tests/integration
(the weftctl under test is $WEFTCTL, see conftest.py)
"""
import json
import os
import re
import textwrap

import pytest
import yaml

from conftest import ROOT, run_weftctl, shared_path

SHARED = shared_path()
REPORTS = os.path.join(SHARED, "cases", "operator-reports.md")
BOOK = os.path.join(SHARED, "corpus", "istioinaction")

EXIT_ISSUES = 79


# ---- helpers ----

def run_analyze(args):
    """Runs `weftctl analyze ARGS` twice: as log (for the exit code and stderr) and as JSON
    (for the findings). Returns (exit code, stdout, stderr, findings)."""
    log = run_weftctl("analyze", "--color=false", *args, cwd=ROOT)
    js = run_weftctl("analyze", "-o", "json", *args, cwd=ROOT)
    assert js.returncode == 0, js.stderr
    return log.returncode, log.stdout, log.stderr, json.loads(js.stdout)


def codes(findings, code):
    return [f for f in findings if f["code"] == code]


def yaml_blocks(markdown):
    return [textwrap.dedent(b) for b in re.findall(r"```yaml\n(.*?)```", markdown, re.S)]


def report_section(markdown, case):
    start = markdown.index("## %s " % case)
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end if end >= 0 else len(markdown)]


@pytest.fixture(scope="module")
def reports():
    with open(REPORTS, encoding="utf-8") as f:
        return f.read()


@pytest.fixture
def fixtures_f1(reports, tmp_path):
    """Fixture F1 (Service catalog and Deployments catalog-v1/v2 in shop) as a file."""
    f1 = yaml_blocks(reports)[0].split("# F2")[0]
    path = tmp_path / "fixtures.yaml"
    path.write_text(f1)
    return str(path)


def write_docs(path, docs):
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


@pytest.fixture
def b018_docs(reports):
    docs = list(yaml.safe_load_all(yaml_blocks(report_section(reports, "B018"))[0]))
    dr = next(d for d in docs if d["kind"] == "DestinationRule")
    vs = next(d for d in docs if d["kind"] == "VirtualService")
    return dr, vs


@pytest.fixture
def b020_vs(reports):
    return yaml.safe_load(yaml_blocks(report_section(reports, "B020"))[0])


# ---- B018: DestinationRules in the root namespace, exportTo visibility ----

def test_b018_root_namespace_destinationrule_applies_everywhere(fixtures_f1, b018_docs,
                                                                tmp_path):
    dr, vs = b018_docs
    assert dr["metadata"]["namespace"] == "istio-system"
    rc, out, err, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1, write_docs(tmp_path / "dr.yaml", [dr]),
         write_docs(tmp_path / "vs.yaml", [vs])])
    assert codes(findings, "IST0101") == []
    assert findings == []
    assert "No validation issues found" in err
    assert rc == 0


def test_b018_destinationrule_exported_to_own_namespace_is_invisible(fixtures_f1, b018_docs,
                                                                     tmp_path):
    dr, vs = b018_docs
    dr["metadata"]["namespace"] = "billing"
    dr["spec"]["exportTo"] = ["."]
    rc, out, err, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1, write_docs(tmp_path / "dr.yaml", [dr]),
         write_docs(tmp_path / "vs.yaml", [vs])])
    got = sorted((f["code"], f["origin"], f["message"]) for f in findings)
    assert got == [
        ("IST0101", "VirtualService shop/catalog",
         'Referenced host+subset in destinationrule not found: "catalog+v1"'),
        ("IST0101", "VirtualService shop/catalog",
         'Referenced host+subset in destinationrule not found: "catalog+v2"'),
    ]
    assert re.search(r"^Error \[IST0101\] \(VirtualService shop/catalog[ )].*"
                     r'Referenced host\+subset in destinationrule not found: "catalog\+v1"$',
                     out, re.M)
    assert rc == EXIT_ISSUES


def test_b018_destinationrule_exported_to_the_virtualservice_namespace(fixtures_f1, b018_docs,
                                                                       tmp_path):
    dr, vs = b018_docs
    dr["metadata"]["namespace"] = "billing"
    dr["spec"]["exportTo"] = ["shop"]
    rc, _, _, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1, write_docs(tmp_path / "dr.yaml", [dr]),
         write_docs(tmp_path / "vs.yaml", [vs])])
    assert codes(findings, "IST0101") == []
    assert rc == 0


def test_b018_root_namespace_rule_kept_local_is_invisible(fixtures_f1, b018_docs, tmp_path):
    """exportTo ["."] keeps even a root-namespace rule to the root namespace (Istio's
    rootNamespaceLocal rules), so shop does not see its subsets."""
    dr, vs = b018_docs
    dr["spec"]["exportTo"] = ["."]
    _, _, _, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1, write_docs(tmp_path / "dr.yaml", [dr]),
         write_docs(tmp_path / "vs.yaml", [vs])])
    assert sorted(f["message"] for f in codes(findings, "IST0101")) == [
        'Referenced host+subset in destinationrule not found: "catalog+v1"',
        'Referenced host+subset in destinationrule not found: "catalog+v2"',
    ]


def test_b018_one_file_without_namespaces_default_namespace(reports, b018_docs, tmp_path):
    """Second scenario (istio/istio#19016): VirtualService and DestinationRule in one file,
    neither with metadata.namespace, analyzed with the default namespace (here with the F1
    workloads, also without namespace, so that the hosts and subsets exist)."""
    dr, vs = b018_docs
    f1 = [d for d in yaml.safe_load_all(yaml_blocks(reports)[0].split("# F2")[0]) if d]
    host = "catalog.default.svc.cluster.local"
    for doc in f1 + [dr, vs]:
        doc["metadata"].pop("namespace", None)
    dr["spec"]["host"] = host
    for route in vs["spec"]["http"][0]["route"]:
        route["destination"]["host"] = host
    rc, _, err, findings = run_analyze(
        ["--use-kube=false", write_docs(tmp_path / "all.yaml", f1 + [vs, dr])])
    assert codes(findings, "IST0101") == []
    assert findings == []
    assert rc == 0


# ---- B020: IST0109 never lists one VirtualService twice ----

def test_b020_one_virtualservice_with_short_and_fqdn_host(fixtures_f1, b020_vs, tmp_path):
    rc, _, err, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1,
         write_docs(tmp_path / "vs.yaml", [b020_vs])])
    assert codes(findings, "IST0109") == []
    assert rc == 0


def test_b020_positive_control_lists_each_virtualservice_once(fixtures_f1, b020_vs, tmp_path):
    canary = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
              "metadata": {"name": "catalog-canary", "namespace": "shop"},
              "spec": {"hosts": ["catalog"],
                       "http": [{"route": [{"destination": {"host": "catalog"}}]}]}}
    rc, out, _, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1,
         write_docs(tmp_path / "vs.yaml", [b020_vs]),
         write_docs(tmp_path / "canary.yaml", [canary])])
    found = codes(findings, "IST0109")
    assert found, "expected IST0109"
    # One finding text, naming both objects once each; upstream attaches it to each of the
    # conflicting VirtualServices.
    texts = {f["message"] for f in found}
    assert len(texts) == 1
    text = texts.pop()
    assert "associated with mesh gateway define the same host" in text
    names = re.match(r"The VirtualServices (\S+) associated", text).group(1).split(",")
    assert sorted(names) == ["shop/catalog", "shop/catalog-canary"]
    assert {f["origin"] for f in found} <= {"VirtualService shop/catalog",
                                             "VirtualService shop/catalog-canary"}
    assert all(f["level"] == "Error" for f in found)
    assert "Error [IST0109]" in out
    assert rc == EXIT_ISSUES


def test_b020_host_aliases_and_repeated_export_scopes(fixtures_f1, tmp_path):
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": "catalog", "namespace": "shop"},
          "spec": {"hosts": ["catalog", "catalog.shop.svc.cluster.local", "catalog"],
                   "exportTo": [".", "shop"],
                   "http": [{"route": [{"destination": {"host": "catalog"}}]}]}}
    _, _, _, findings = run_analyze(
        ["--use-kube=false", "-n", "shop", fixtures_f1, write_docs(tmp_path / "vs.yaml", [vs])])
    assert codes(findings, "IST0109") == []


# ---- Istio in Action, chapter 10: subsets without a DestinationRule ----

BOOK_FILES = [
    "services/catalog/kubernetes/catalog.yaml",
    "ch10/catalog-deployment-v2.yaml",
    "ch10/catalog-gateway.yaml",
    "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
]


def book_paths(extra=()):
    return [os.path.join(BOOK, p) for p in BOOK_FILES + list(extra)]


def test_book_subsets_without_destinationrule():
    rc, out, _, findings = run_analyze(["-n", "istioinaction"] + book_paths())
    got = sorted((f["code"], f["level"], f["origin"], f["message"])
                 for f in codes(findings, "IST0101"))
    assert got == [
        ("IST0101", "Error", "VirtualService istioinaction/catalog-v1-v2",
         'Referenced host+subset in destinationrule not found: '
         '"catalog.istioinaction.svc.cluster.local+version-v1"'),
        ("IST0101", "Error", "VirtualService istioinaction/catalog-v1-v2",
         'Referenced host+subset in destinationrule not found: '
         '"catalog.istioinaction.svc.cluster.local+version-v2"'),
    ]
    # The gateway and the destination host resolve: nothing else is reported.
    assert [f["code"] for f in findings] == ["IST0101", "IST0101"]
    assert rc == EXIT_ISSUES


def test_book_subsets_with_destinationrule():
    rc, _, _, findings = run_analyze(
        ["-n", "istioinaction"] + book_paths(["ch10/catalog-destinationrule-v1-v2.yaml"]))
    assert codes(findings, "IST0101") == []
    assert rc == 0
