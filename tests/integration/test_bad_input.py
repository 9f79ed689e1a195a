"""weftctl analyze on bad input: every unparsable file gets a clear error naming
file:line:column on stderr under "Error(s) adding files:", the documented exit code (65 when a
file cannot be parsed and no analyzer error is found; 79 when one is; 0 with --ignore-unknown
or -o json/yaml), and no crash or hang (../shared/reference/istio-analyze.md §2-3; DESIGN.md
"Untrusted input is bounded").

Inputs are generated in tmp_path; every run has a timeout.
"""
import os
import random
import re

import pytest

from conftest import VS_BAD_SUBSET as VS_BAD_SUBSET_TEXT, run_weftctl

VS_BAD_SUBSET = VS_BAD_SUBSET_TEXT.encode()

EXIT_PARSE = 65
EXIT_ANALYZERS = 79
HEADER = "Error(s) adding files:"
CRASH_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "Segmentation fault",
                 "core dumped", "Assertion")


BLOB = b"apiVersion: example.com/v1\nkind: Blob\n"  # an unknown kind: loaded, never analyzed
GOOD_CM = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine, namespace: x}\ndata: {a: b}\n"


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(p)


def assert_no_crash(r):
    assert r.returncode >= 0, "killed by signal %d" % -r.returncode
    for m in CRASH_MARKERS:
        assert m not in r.stderr, r.stderr[-3000:]


def error_lines(r):
    """The indented lines under "Error(s) adding files:"."""
    lines = r.stderr.splitlines()
    assert HEADER in lines, r.stderr[-3000:]
    out = []
    for line in lines[lines.index(HEADER) + 1:]:
        if not line.startswith("  "):
            break
        out.append(line[2:])
    return out


def assert_parse_error(r, path, line=None, col=None, needle="", code=EXIT_PARSE):
    """r failed on path with an error at line:col (any position when None) containing needle."""
    assert_no_crash(r)
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    pos = r"(\d+):(\d+)" if line is None else r"%d:%d" % (line, col)
    pat = re.compile(r"^%s:%s: (.+)$" % (re.escape(path), pos))
    errs = error_lines(r)
    hits = [m for m in map(pat.match, errs) if m]
    assert hits, "no %s:%s error in %r" % (path, pos, errs)
    assert any(needle in m.group(m.lastindex) for m in hits), (needle, errs)
    return hits[0]


def analyze(*paths, timeout=60, stdin=None, flags=("-A",)):
    return run_weftctl("analyze", *flags, *paths, stdin=stdin, timeout=timeout)


# ---- syntax ----

@pytest.mark.parametrize("name,data,line,col,needle", [
    ("trunc_flow.yaml", b"apiVersion: v1\nkind: Service\nmetadata:\n  name: [a, b\n", 4, 14,
     "did not find expected ',' or ']'"),
    ("trunc_quote.yaml", b"apiVersion: v1\nkind: Service\nmetadata:\n  name: \"abc\n", 5, 1,
     "unexpected end of stream"),
    ("trunc_utf8.yaml", b"apiVersion: v1\nmetadata:\n  name: caf\xc3", 3, 12, "invalid UTF-8"),
    ("trunc_block.yaml", b"apiVersion: v1\nkind: Service\nspec:\n  ports:\n  - name: a\n b", 6, 2,
     "did not find expected key"),
    ("tabs.yaml", b"apiVersion: v1\nkind: Service\nmetadata:\n\tname: x\n", 4, 1,
     "found character that cannot start any token"),
    ("dup.yaml", b"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n", 5, 3,
     'mapping key "name" already defined at line 4'),
    ("dup_top.yaml", b"apiVersion: v1\nkind: Service\nkind: Pod\n", 3, 1,
     'mapping key "kind" already defined at line 2'),
    ("bad_utf8.yaml", b"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\xff\n", 4, 10,
     "invalid UTF-8 (byte 0xFF at offset 48)"),
    ("surrogate.yaml", b"a: \xed\xa0\x80\n", 1, 4, "invalid UTF-8"),
    ("overlong.yaml", b"a: b\nc: \xc0\xaf\n", 2, 4, "invalid UTF-8"),
    ("pct_c6.yaml", b"%\xc6", 1, 2, "invalid UTF-8 (byte 0xC6 at offset 1)"),
    ("pct_c6_80.yaml", b"%\xc6\x80 x\n", 1, 2, "directive"),
    ("control.yaml", b"a: b\nc: d\nxyz: ab\x01c\n", 3, 8, "control characters are not allowed"),
    ("nul.yaml", b"apiVersion: v1\nkind: Namespace\nmetadata: {name: \"a\x00b\"}\n", 3, 20,
     "control characters are not allowed"),
    ("unknown_alias.yaml", b"a: *nope\n", 1, 4, "unknown anchor 'nope'"),
    ("bad.json", b'{"apiVersion": "v1", "kind": "Service",\n "metadata": {"name": "x"', 2, 25,
     "json: '}' expected near end of file"),
    ("dup.json", b'{"apiVersion": "v1", "apiVersion": "v2"}', 1, 33, "duplicate object key"),
    ("empty.json", b"", 1, 1, "json:"),
    ("two.json", b'{"a": 1}\n{"b": 2}', 2, 1, "end of file expected"),
])
def test_syntax_error_names_file_line_column(tmp_path, name, data, line, col, needle):
    f = write(tmp_path, name, data)
    r = analyze(f, timeout=30)
    assert_parse_error(r, f, line, col, needle)
    assert "No validation issues found when analyzing all namespaces " \
           "(but 1 file could not be parsed)." in r.stderr
    assert r.stdout == "\n"


def test_documents_before_an_error_are_still_analyzed(tmp_path):
    f = write(tmp_path, "part.yaml", VS_BAD_SUBSET + b"---\na: [\n")
    r = analyze(f, flags=("-n", "shop"))
    assert_parse_error(r, f, 17, 5, "yaml:", code=EXIT_ANALYZERS)
    assert "IST0101" in r.stdout


def test_documents_after_a_broken_one_are_still_analyzed(tmp_path):
    """Istio reads each chunk between "---" lines on its own (KubeSource.parseContent): a
    chunk that does not parse is reported and skipped, the later ones are analyzed, with
    their lines counted from the start of the file."""
    broken = b"apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: shop\n"
    f = write(tmp_path, "multi.yaml", broken + b"---\n" + VS_BAD_SUBSET)
    r = analyze(f, flags=("-n", "shop"))
    assert_parse_error(r, f, 3, 36, "yaml:", code=EXIT_ANALYZERS)
    assert "IST0101" in r.stdout
    first = VS_BAD_SUBSET_TEXT.splitlines()
    m = re.search(r"multi\.yaml:(\d+)\)", r.stdout)
    assert m and int(m.group(1)) > 4, r.stdout
    assert int(m.group(1)) <= 4 + len(first), r.stdout


# Each chunk between "---" lines is parsed on its own, counting from its own line 1; every
# position must be moved to the chunk's place in the file once (a duplicate key in the second
# document was reported at 13:3 for 9:3).
DOC1 = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n---\n"
LS_LINE = b'note: "a\xe2\x80\xa8b"\n'  # libyaml counts a line break (U+2028) the file lacks
NS_B = b"apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n"


@pytest.mark.parametrize("name,data,where,message", [
    ("d2.yaml", DOC1 + b"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n",
     "9:3", 'yaml: mapping key "name" already defined at line 8'),
    ("dup_flow.yaml", DOC1 + b"a: {x: 1, x: 2}\n", "5:11",
     'yaml: mapping key "x" already defined at line 5'),
    ("dup_third.yaml", DOC1 + NS_B + b"--- # third\n# comment\n\nkind: Service\n"
     b"metadata:\n  name: a\n  name: b\n", "14:3",
     'yaml: mapping key "name" already defined at line 13'),
    ("dup_crlf.yaml", DOC1 + b"m:\r\n  a: 1\r\n  a: 2\r\n", "7:3",
     'yaml: mapping key "a" already defined at line 6'),
    ("dup_ls.yaml", DOC1 + LS_LINE + b"a: {x: 1, x: 2}\n", "6:11",
     'yaml: mapping key "x" already defined at line 6'),
    ("end_mid.yaml", DOC1 + b"\xc3\xa9: 1\na: [1\n\n---\n" + NS_B, "6:6",
     "yaml: did not find expected ',' or ']' while parsing a flow sequence"),
    ("end_no_newline.yaml", DOC1 + b"a: [1, 2", "5:9",
     "yaml: did not find expected ',' or ']' while parsing a flow sequence"),
    ("scan_end_no_newline.yaml", DOC1 + b"a: b\nc", "6:2",
     "yaml: could not find expected ':' while scanning a simple key"),
    ("depth_ls.yaml", DOC1 + LS_LINE + b"a: " + b"[" * 200 + b"]" * 200 + b"\n", "6:131",
     "yaml: document nested too deeply (limit 128 levels)"),
    ("alias_ls.yaml", DOC1 + LS_LINE + b"a: *nope\n", "6:4",
     "yaml: unknown anchor 'nope' referenced"),
    ("control_bom.yaml", b"\xef\xbb\xbfa: b\x01\n", "1:5",
     "yaml: control characters are not allowed (character U+0001)"),
])
def test_errors_in_later_documents_name_their_file_line_column(tmp_path, name, data, where,
                                                                message):
    f = write(tmp_path, name, data)
    r = analyze(f, timeout=30)
    assert_no_crash(r)
    assert r.returncode == EXIT_PARSE, (r.returncode, r.stderr[-3000:])
    assert error_lines(r) == ["%s:%s: %s" % (f, where, message)]


# ---- garbage ----

def test_binary_garbage(tmp_path):
    rnd = random.Random(20240611)
    data = bytes(rnd.randrange(256) for _ in range(64 * 1024))
    f = write(tmp_path, "garbage.yaml", data)
    assert_parse_error(analyze(f, timeout=30), f, needle="invalid UTF-8")
    j = write(tmp_path, "garbage.json", data)
    assert_parse_error(analyze(j, timeout=30), j, needle="invalid UTF-8")


def test_garbage_that_is_valid_utf8(tmp_path):
    rnd = random.Random(7)
    text = "".join(chr(rnd.choice([rnd.randrange(1, 0x80), rnd.randrange(0xA0, 0xD800)]))
                   for _ in range(20000))
    f = write(tmp_path, "noise.yaml", text.encode("utf-8"))
    r = analyze(f, timeout=30)
    assert_no_crash(r)
    if r.returncode == EXIT_PARSE:
        assert_parse_error(r, f)
    else:
        assert r.returncode == 0, r.stderr[-2000:]


def test_garbage_after_every_prefix_of_a_resource(tmp_path):
    """Truncating a real manifest anywhere never crashes; a failure always has a position."""
    full = VS_BAD_SUBSET
    for cut in range(1, len(full), 23):
        f = write(tmp_path, "cut%d.yaml" % cut, full[:cut])
        r = analyze(f, timeout=30, flags=("-n", "shop"))
        assert_no_crash(r)
        assert r.returncode in (0, EXIT_PARSE, EXIT_ANALYZERS), (cut, r.stderr)
        if HEADER in r.stderr:
            assert_parse_error(r, f, code=r.returncode)


# ---- limits ----

def test_deep_nesting(tmp_path):
    f = write(tmp_path, "deep_flow.yaml", b"a: " + b"[" * 100000 + b"]" * 100000)
    assert_parse_error(analyze(f, timeout=30), f, 1, 131, "nested too deeply (limit 128 levels)")
    block = "".join(" " * i + "k:\n" for i in range(300)).encode()
    g = write(tmp_path, "deep_block.yaml", block)
    assert_parse_error(analyze(g, timeout=30), g, 129, 129, "nested too deeply")
    j = write(tmp_path, "deep.json", b'{"x": ' + b"[" * 1000000 + b"]" * 1000000 + b"}")
    assert_parse_error(analyze(j, timeout=30), j, 1, 134, "json: document nested too deeply")
    ok = write(tmp_path, "deep_ok.yaml", BLOB + b"x: " + b"[" * 127 + b"]" * 127 + b"\n")
    r = analyze(ok, timeout=30)
    assert_no_crash(r)
    assert r.returncode == 0


def test_billion_laughs(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        lines.append("%s: &%s [%s]" % (cur, cur, ",".join(["*" + prev] * 9)))
    f = write(tmp_path, "lol.yaml", "\n".join(lines) + "\n")
    assert_parse_error(analyze(f, timeout=10), f, 6, 8,
                       "document expands to too many nodes through aliases (limit 100000)")


def test_many_anchors_and_aliases_are_fast(tmp_path):
    """10,000 anchors and 90,000 aliases within budget: loads, quickly (was 7 s)."""
    text = [BLOB.decode().strip(), "a:"] + ["- &x%d %d" % (i, i) for i in range(10000)]
    text += ["b:"] + ["- *x%d" % (i % 9) for i in range(90000)]
    f = write(tmp_path, "anchors.yaml", "\n".join(text) + "\n")
    r = analyze(f, timeout=3)
    assert_no_crash(r)
    assert r.returncode == 0, r.stderr[-2000:]


def test_merge_of_a_huge_map_is_fast(tmp_path):
    """One merge of a 49,000-key map (within the alias budget): was 4.4 s, quadratic."""
    text = [BLOB.decode().strip(), "a: &a"] + ["  k%d: %d" % (i, i) for i in range(49000)]
    text += ["b:", "  <<: *a"]
    f = write(tmp_path, "merge.yaml", "\n".join(text) + "\n")
    r = analyze(f, timeout=3)
    assert_no_crash(r)
    assert r.returncode == 0, r.stderr[-2000:]


def configmaps(total_bytes):
    """Multi-document YAML of ConfigMaps, about total_bytes long."""
    doc = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: big\n"
           "data:\n" + "".join("  key%d: value %d with some text\n" % (k, k) for k in range(40)))
    one = len(doc % 0) + 4
    return "---\n".join(doc % i for i in range(total_bytes // one + 1)).encode()


def test_20mb_file_loads(tmp_path):
    data = configmaps(20 * 1024 * 1024)
    assert len(data) >= 20 * 1024 * 1024
    f = write(tmp_path, "big.yaml", data)
    r = analyze(f, timeout=120)
    assert_no_crash(r)
    assert r.returncode == 0, r.stderr[-2000:]


def test_20mb_file_with_error_at_the_end(tmp_path):
    data = configmaps(20 * 1024 * 1024) + b"---\nbroken: [\n"
    f = write(tmp_path, "big_bad.yaml", data)
    r = analyze(f, timeout=120)
    nlines = data.count(b"\n")
    assert_parse_error(r, f, nlines, 10, "did not find expected")  # end of "broken: ["


def test_20mb_of_brackets(tmp_path):
    f = write(tmp_path, "brackets.yaml", b"[" * (20 * 1024 * 1024))
    assert_parse_error(analyze(f, timeout=60), f, 1, 129, "nested too deeply")


def test_20mb_single_scalar(tmp_path):
    f = write(tmp_path, "scalar.yaml", BLOB + b"a: " + b"x" * (20 * 1024 * 1024) + b"\n")
    r = analyze(f, timeout=60)
    assert_no_crash(r)
    assert r.returncode == 0


def test_file_over_the_size_limit(tmp_path):
    p = tmp_path / "huge.yaml"
    with open(p, "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: 65 MiB of NUL bytes
    r = analyze(str(p), timeout=60)
    assert_no_crash(r)
    assert r.returncode == EXIT_PARSE
    assert "%s: file is %d bytes, larger than the limit of 67108864 bytes" % (
        p, 65 * 1024 * 1024) in error_lines(r)


def test_stdin_over_the_size_limit(tmp_path):
    r = analyze("-", stdin=b"#" * (70 * 1024 * 1024), timeout=60)
    assert_no_crash(r)
    assert r.returncode == EXIT_PARSE
    assert "-: input is larger than the limit of 67108864 bytes" in error_lines(r)


# ---- wrong types ----

WEIGHT_ABC = b"""\
apiVersion: v1
kind: Service
metadata: {name: r, namespace: shop}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: shop}
spec:
  hosts: [r]
  http:
  - route:
    - destination: {host: r}
      weight: "abc"
"""


def test_wrong_type_in_istio_resource_is_schema_validation(tmp_path):
    """weight: "abc" parses; schema validation reports it (IST0106, an Error: exit 79)."""
    f = write(tmp_path, "weight.yaml", WEIGHT_ABC)
    r = analyze(f, flags=("-n", "shop"), timeout=30)
    assert_no_crash(r)
    assert HEADER not in r.stderr
    assert r.returncode == EXIT_ANALYZERS, r.stdout
    assert re.search(r"^Error \[IST0106\] \(VirtualService shop/r %s:15\) .*weight"
                     % re.escape(f), r.stdout, re.M), r.stdout
    r = analyze(f, flags=("-n", "shop", "-o", "json"), timeout=30)
    assert_no_crash(r)
    assert r.returncode == 0
    assert '"code": "IST0106"' in r.stdout


WRONG_TYPES = b"""\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d, namespace: shop}
spec: {host: 5, subsets: [name, {labels: [x]}, {name: {}}]}
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: shop}
spec:
  ports: 80
---
apiVersion: v1
kind: Service
metadata: "not a map"
spec: [1, 2]
---
apiVersion: [v1]
kind: {Service: 1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: shop, labels: [a, b]}
spec: {replicas: many, selector: [], template: {spec: {containers: {a: b}}}}
"""


def test_wrong_types_in_kubernetes_objects_fail_to_parse(tmp_path):
    """Built-in Kubernetes kinds are decoded strictly, as istioctl does: the document fails
    at the field; the other documents are still analyzed. Never a crash."""
    f = write(tmp_path, "types.yaml", WRONG_TYPES)
    for flags in (("-A",), ("-n", "shop"), ("-A", "-o", "json")):
        r = analyze(f, flags=flags, timeout=30)
        assert_no_crash(r)
        errs = error_lines(r)
        assert "%s:10:10: failed parsing JSON for built-in type: spec.ports: cannot unmarshal " \
               "integer into a value of type array" % f in errs, errs
        assert any(e.startswith("%s:14:11: failed parsing JSON for built-in type: metadata:" % f)
                   for e in errs), errs
        assert any(e.startswith("%s:17:1: unable to parse resource" % f) for e in errs), errs
        assert any(e.startswith("%s:22:" % f) for e in errs), errs
        if "-o" in flags:
            assert r.returncode == 0
        elif re.search(r"^Error \[", r.stdout, re.M):
            assert r.returncode == EXIT_ANALYZERS  # the DestinationRule's IST0106
        else:
            assert r.returncode == EXIT_PARSE, r.stdout


# ---- exit codes with several inputs ----

def test_parse_error_and_analyzer_error_gives_79(tmp_path):
    d = tmp_path / "mix"
    d.mkdir()
    write(d, "a_vs.yaml", VS_BAD_SUBSET)
    bad = write(d, "b_bad.yaml", b"a: [\n")
    r = analyze(str(d), flags=("-n", "shop"))
    assert_parse_error(r, bad, 1, 5, "yaml:", code=EXIT_ANALYZERS)
    assert "Error [IST0101]" in r.stdout


def test_several_bad_files_are_all_listed(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    write(d, "good.yaml", GOOD_CM)
    paths = [write(d, "bad%d.yaml" % i, b"x: y\n" * i + b"\tz\n") for i in range(1, 4)]
    write(d, "notes.txt", b"\xff not even read\n")
    r = analyze(str(d))
    for i, p in enumerate(paths, 1):
        assert_parse_error(r, p, i + 1, 1, "yaml:")
    assert "(but 3 files could not be parsed)" in r.stderr
    assert "Skipping file %s" % (d / "notes.txt") in r.stderr


def test_ignore_unknown_exits_0(tmp_path):
    f = write(tmp_path, "bad.yaml", b"%\xc6")
    r = analyze(f, flags=("-A", "--ignore-unknown"))
    assert_no_crash(r)
    assert r.returncode == 0
    assert "%s:1:2: invalid UTF-8" % f in r.stderr


@pytest.mark.parametrize("fmt,empty", [("json", "[]"), ("yaml", "[]")])
def test_structured_output_exits_0_on_parse_errors(tmp_path, fmt, empty):
    f = write(tmp_path, "bad.yaml", b"a: *nope\n")
    r = analyze(f, flags=("-A", "-o", fmt))
    assert_no_crash(r)
    assert r.returncode == 0
    assert r.stdout.strip() == empty
    assert "%s:1:4: yaml: unknown anchor 'nope' referenced" % f in error_lines(r)


def test_stdin_errors_are_named_dash():
    r = analyze("-", stdin=b"apiVersion: v1\nkind: Service\nmetadata:\n\tname: x\n")
    assert_parse_error(r, "-", 4, 1, "cannot start any token")


def test_empty_and_comment_only_files_are_fine(tmp_path):
    for name, data in (("empty.yaml", b""), ("comments.yaml", b"# nothing\n---\n# here\n"),
                       ("dashes.yaml", b"---\n---\n...\n")):
        r = analyze(write(tmp_path, name, data))
        assert_no_crash(r)
        assert r.returncode == 0, (name, r.stderr)
        assert HEADER not in r.stderr


def test_fifo_in_a_directory_does_not_block(tmp_path):
    d = tmp_path / "withfifo"
    d.mkdir()
    os.mkfifo(d / "pipe.yaml")
    write(d, "cm.yaml", GOOD_CM)
    r = analyze(str(d), timeout=20)
    assert_no_crash(r)
    assert r.returncode == EXIT_PARSE
    assert "%s: not a regular file" % (d / "pipe.yaml") in error_lines(r)


def test_missing_file(tmp_path):
    """istioctl stats every path first: a missing one is an error (exit 1), not a parse failure."""
    p = str(tmp_path / "nope.yaml")
    r = analyze(p)
    assert_no_crash(r)
    assert r.returncode == 1
    assert "Error: stat %s: No such file or directory" % p in r.stderr
