"""deploy/Containerfile (not built here: no container runtime on these machines) checked
against what the build really needs: the build stage installs the Debian package of every
pkg-config module and library CMakeLists.txt requires (found with pkg-config and dpkg -S, not
listed by hand) and each of them is in scripts/setup too; the runtime stage installs the package
of every shared library the built weft-pilot, weft-proxy and weftctl link (ldd + dpkg -S), the
package of the iptables-restore the capture code runs, and no -dev package; the three programs
are copied and the image runs as uid 1337."""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

CONTAINERFILE = os.path.join(ROOT, "deploy", "Containerfile")
BUILD = os.path.dirname(os.path.abspath(os.environ.get("WEFT_PILOT") or
                                        os.path.join(ROOT, "build", "weft-pilot")))
PROGRAMS = ("weft-pilot", "weft-proxy", "weftctl")
# libc6 is in every Debian base image (the C library itself); nothing else is assumed
BASE = {"libc6"}


def stages():
    """[(name, [instructions with continuations joined])] of the Containerfile."""
    out = []
    with open(CONTAINERFILE) as f:
        text = re.sub(r"\\\n", " ", f.read())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
            out.append((m.group(2) or m.group(1), [line]))
        elif out:
            out[-1][1].append(line)
    return out


def apt_packages(instrs):
    pkgs = set()
    for ins in instrs:
        for m in re.finditer(r"apt-get install ([^&;]*)", ins):
            pkgs |= {w.split(":")[0] for w in m.group(1).split() if not w.startswith("-")}
    return pkgs


def dpkg_owner(path):
    cands = [os.path.normpath(path), os.path.realpath(path)]
    for p in list(cands):
        cands.append("/usr" + p if not p.startswith("/usr/") else p[4:])
    for p in cands:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    raise AssertionError("no Debian package owns %s" % path)


def setup_packages():
    with open(os.path.join(ROOT, "scripts", "setup")) as f:
        m = re.search(r'PKGS="([^"]*)"', f.read())
    return set(m.group(1).replace("\\\n", " ").split())


def required_dev_packages():
    """{package: why} for CMakeLists.txt's pkg_check_modules, find_library and OpenSSL."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cm = f.read()
    out = {}
    for mod in re.findall(r"pkg_check_modules\(\w+ REQUIRED IMPORTED_TARGET (\S+)\)", cm):
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", mod], capture_output=True,
                               text=True, check=True).stdout.strip()
        out[dpkg_owner(os.path.join(pcdir, mod + ".pc"))] = "pkg-config " + mod
    for lib in re.findall(r"find_library\(\w+ (\w+) REQUIRED\)", cm):
        path = subprocess.run(["gcc", "-print-file-name=lib%s.so" % lib], capture_output=True,
                              text=True, check=True).stdout.strip()
        out[dpkg_owner(path)] = "find_library " + lib
    if "find_package(OpenSSL" in cm:
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", "openssl"],
                               capture_output=True, text=True, check=True).stdout.strip()
        out[dpkg_owner(os.path.join(pcdir, "openssl.pc"))] = "find_package OpenSSL"
    return out


def test_build_stage_has_what_cmake_needs():
    st = stages()
    assert [n for n, _ in st][0] == "build" and st[0][1][0].startswith("FROM debian:bookworm")
    build = apt_packages(st[0][1])
    need = required_dev_packages()
    assert len(need) >= 8, need  # yaml, jansson, pcre2, uv, nghttp2, ldns, cmocka, ssl
    missing = {p: why for p, why in need.items() if p not in build}
    assert not missing, "the build stage lacks %s" % missing
    for tool in ("cmake", "pkg-config", "python3"):
        assert tool in build
    # scripts/setup installs the same ones on the project's machines
    assert not set(need) - setup_packages(), set(need) - setup_packages()
    text = "\n".join(st[0][1])
    assert "--target weft-pilot weft-proxy weftctl" in text


def test_runtime_stage_has_only_the_libraries_the_programs_link():
    if not shutil.which("ldd"):
        pytest.skip("no ldd")
    st = stages()
    assert len(st) == 2 and st[1][1][0].startswith("FROM debian:bookworm")
    runtime = apt_packages(st[1][1])
    assert not [p for p in runtime if p.endswith("-dev")], runtime
    need = {}
    for prog in PROGRAMS:
        path = os.path.join(BUILD, prog)
        if not os.access(path, os.X_OK):
            pytest.fail("%s is missing: build first" % path)
        out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
        sanitized = "libasan.so" in out  # WEFT_SANITIZE=ON; the image builds without it
        for lib in re.findall(r"=> (/\S+)", out):
            if sanitized and re.match(r"lib(asan|ubsan|stdc\+\+|gcc_s)\.so", os.path.basename(lib)):
                continue  # the sanitizer runtimes and what they pull in
            need.setdefault(dpkg_owner(lib), set()).add(prog)
    missing = {p: sorted(v) for p, v in need.items() if p not in runtime | BASE}
    assert not missing, "the runtime stage lacks %s" % missing
    # istio-init runs `weft-proxy istio-iptables`, which executes iptables-restore
    with open(os.path.join(ROOT, "src", "capture", "iptables_apply.c")) as f:
        assert "iptables-restore" in f.read()
    ipt = shutil.which("iptables-restore")
    if ipt:
        assert dpkg_owner(os.path.realpath(ipt)) in runtime
    else:
        assert "iptables" in runtime
    extra = runtime - set(need) - {"iptables", "ca-certificates"}
    assert not extra, "the runtime stage installs what nothing links: %s" % extra


def test_runtime_copies_the_programs_and_runs_as_1337():
    st = stages()
    runtime = st[1][1]
    copies = [ins for ins in runtime if ins.startswith("COPY --from=build")]
    assert copies and all(("/build/%s" % p) in copies[0] for p in PROGRAMS)
    assert "USER 1337:1337" in runtime
    assert any("useradd --uid 1337" in ins for ins in runtime)


def test_entrypoint_and_workdir_fit_the_injected_sidecar():
    """The injected istio-proxy container gives only `proxy sidecar ...` (Istio's proxyv2 image
    runs pilot-agent by default) and pilot-agent's file paths are relative to /: the image's
    ENTRYPOINT must be weft-proxy and its last WORKDIR /."""
    lines = [l.strip() for l in open(CONTAINERFILE) if l.strip() and not l.startswith("#")]
    runtime = lines[max(i for i, l in enumerate(lines) if l.startswith("FROM ")):]
    workdirs = [l.split(None, 1)[1] for l in runtime if l.startswith("WORKDIR ")]
    assert workdirs and workdirs[-1] == "/", workdirs
    entry = [l for l in runtime if l.startswith("ENTRYPOINT ")]
    assert entry and json.loads(entry[-1].split(None, 1)[1]) == ["/usr/local/bin/weft-proxy"]
