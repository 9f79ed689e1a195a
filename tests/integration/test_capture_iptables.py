"""`weft-proxy istio-iptables` / `istio-clean-iptables` (src/capture/): Istio's capture rules
installed for real, read back, removed, and a real REDIRECT capture with SO_ORIGINAL_DST.

Every rule-changing test runs in a network namespace of its own (`ip netns add` with a unique
name, deleted in the fixture's finalizer), so nothing touches the host's tables. Inside it a
veth pair stands in for the pod's eth0: v0 holds the pod address 10.1.2.1/24, so 10.1.2.3 is
a remote address routed out of v0 (not over lo, which Istio's rules leave alone). Those tests
need root and Debian's iptables package; without them they are skipped with the reason. The
flag tests need neither.
"""
import json
import os
import shutil
import subprocess
import textwrap
import uuid

import pytest

from proxyfix import proxy_path as proxy_bin

# Istio's injector arguments for istio-init (injection-template.yaml)
INJECTOR_ARGS = ["-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*",
                 "-x", "", "-b", "*", "-d", "15090,15021,15020"]

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: iptables and network namespaces")
needs_iptables = pytest.mark.skipif(
    not (shutil.which("iptables-restore") and shutil.which("iptables-save")
         and shutil.which("ip")),
    reason="needs Debian's iptables package (iptables-restore, iptables-save) and iproute2")


def run(args, timeout=30, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def netns():
    name = "weft-ipt-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    r = run(["ip", "netns", "add", name])
    if r.returncode != 0:
        pytest.skip("cannot create a network namespace: " + r.stderr.strip())
    try:
        for cmd in (["link", "set", "lo", "up"],
                    ["link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                    ["addr", "add", "10.1.2.1/24", "dev", "v0"],
                    ["link", "set", "v0", "up"], ["link", "set", "v1", "up"]):
            r = run(["ip", "-n", name] + cmd)
            assert r.returncode == 0, "ip %s: %s" % (" ".join(cmd), r.stderr)
        yield name
    finally:
        run(["ip", "netns", "del", name])


def in_ns(ns, args, **kw):
    return run(["ip", "netns", "exec", ns] + args, **kw)


def proxy(ns, *args):
    return in_ns(ns, [proxy_bin()] + list(args))


# ---- comparing iptables-save with the dry run ----

def units(rule):
    """A rule's options as a sorted tuple of units ("-p tcp", "! --dport 15008", "-m owner"):
    iptables-save reorders options, adds "-m tcp"/"-m udp" and spells Istio's "--to-port"
    (REDIRECT's alias) "--to-ports"."""
    toks = ["--to-ports" if t == "--to-port" else t for t in rule.split()[2:]]
    out, i, neg = [], 0, False
    while i < len(toks):
        t = toks[i]
        if t == "!":
            neg = True
            i += 1
            continue
        if t.startswith("-") and i + 1 < len(toks) and not toks[i + 1].startswith("-") \
                and toks[i + 1] != "!":
            unit, i = "%s %s" % (t, toks[i + 1]), i + 2
        else:
            unit, i = t, i + 1
        if unit not in ("-m tcp", "-m udp"):
            out.append(("! " if neg else "") + unit)
        neg = False
    return tuple(sorted(out))


def istio_rules(text):
    """{table: {chain: [units...]}} for ISTIO_* chains and for jumps into them; plus the set of
    ISTIO_* chains per table. Works on iptables-save output and on restore input."""
    rules, chains, table = {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("*"):
            table = line[1:].strip()
        elif line.startswith(":ISTIO_"):
            chains.setdefault(table, set()).add(line[1:].split()[0])
        elif line.startswith("-N ISTIO_"):
            chains.setdefault(table, set()).add(line.split()[1])
        elif line.startswith("-A ") or line.startswith("-I "):
            chain = line.split()[1]
            if line.startswith("-I "):  # "-I CHAIN N ..." -> treat as first rule
                parts = line.split()
                line = "-A %s %s" % (chain, " ".join(parts[3:]))
            if chain.startswith("ISTIO_") or " -j ISTIO_" in line:
                rules.setdefault(table, {}).setdefault(chain, []).append(units(line))
    return rules, chains


@needs_root
@needs_iptables
def test_install_matches_dry_run_and_clean_removes_it(netns):
    dry = proxy(netns, "istio-iptables", "--dry-run", *INJECTOR_ARGS)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("# iptables-restore --noflush\n* nat\n")
    # the dry run touched nothing
    assert "ISTIO" not in in_ns(netns, ["iptables-save"]).stdout

    r = proxy(netns, "istio-iptables", *INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    saved = in_ns(netns, ["iptables-save", "-t", "nat"]).stdout
    want_rules, want_chains = istio_rules(dry.stdout)
    got_rules, got_chains = istio_rules(saved)
    assert got_chains == want_chains == {
        "nat": {"ISTIO_INBOUND", "ISTIO_REDIRECT", "ISTIO_IN_REDIRECT", "ISTIO_OUTPUT"}}
    assert got_rules == want_rules, saved
    # the order Istio gives: excluded ports before the catch-all, loopback before ISTIO_REDIRECT
    inbound = got_rules["nat"]["ISTIO_INBOUND"]
    assert inbound[0] == units("-A X -p tcp --dport 15008 -j RETURN")
    assert inbound[1] == units("-A X -p tcp -m multiport --dports 15090,15021,15020 -j RETURN")
    assert inbound[2] == units("-A X -p tcp -j ISTIO_IN_REDIRECT")
    assert got_rules["nat"]["ISTIO_OUTPUT"][-1] == units("-A X -j ISTIO_REDIRECT")

    # a second install refuses (exit 1, says why); --reconcile replaces the rules
    again = proxy(netns, "istio-iptables", *INJECTOR_ARGS)
    assert again.returncode == 1
    assert "already has ISTIO_* chains" in again.stderr and "--reconcile" in again.stderr
    rec = proxy(netns, "istio-iptables", "--reconcile", *INJECTOR_ARGS)
    assert rec.returncode == 0, rec.stderr
    assert istio_rules(in_ns(netns, ["iptables-save", "-t", "nat"]).stdout)[0] == want_rules

    c = proxy(netns, "istio-clean-iptables")
    assert c.returncode == 0, c.stderr
    after = in_ns(netns, ["iptables-save"]).stdout
    assert "ISTIO" not in after, after
    # cleaning a clean namespace, twice, is fine
    for _ in range(2):
        c = proxy(netns, "istio-clean-iptables", *INJECTOR_ARGS)
        assert c.returncode == 0, c.stderr
    assert "ISTIO" not in in_ns(netns, ["iptables-save"]).stdout


@needs_root
@needs_iptables
def test_clean_removes_only_istio(netns):
    """Rules and chains that are not Istio's survive install and clean; cleaning a namespace
    that never had Istio's rules succeeds and changes nothing."""
    for cmd in (["-t", "nat", "-N", "MY_CHAIN"],
                ["-t", "nat", "-A", "MY_CHAIN", "-p", "tcp", "--dport", "9999", "-j", "RETURN"],
                ["-t", "nat", "-A", "OUTPUT", "-p", "tcp", "--dport", "9998", "-j", "MY_CHAIN"],
                ["-t", "nat", "-A", "PREROUTING", "-i", "v0", "-j", "RETURN"]):
        r = in_ns(netns, ["iptables"] + cmd)
        assert r.returncode == 0, r.stderr
    before = in_ns(netns, ["iptables-save", "-t", "nat"]).stdout
    mine = sorted(line for line in before.splitlines() if line.startswith(("-A", ":MY")))
    assert len(mine) == 4
    r = proxy(netns, "istio-clean-iptables")
    assert r.returncode == 0, r.stderr
    assert proxy(netns, "istio-iptables", *INJECTOR_ARGS).returncode == 0
    assert proxy(netns, "istio-clean-iptables", *INJECTOR_ARGS).returncode == 0
    after = in_ns(netns, ["iptables-save", "-t", "nat"]).stdout
    assert "ISTIO" not in after
    assert sorted(line for line in after.splitlines() if line.startswith(("-A", ":MY"))) == mine


@needs_root
@needs_iptables
def test_dns_capture_and_drop_invalid_install_and_clean(netns):
    """--redirect-dns --capture-all-dns puts rules in raw (CT zones) and nat ISTIO_OUTPUT_DNS;
    --drop-invalid adds mangle ISTIO_DROP; clean removes every table's ISTIO chains."""
    args = INJECTOR_ARGS + ["--redirect-dns", "--capture-all-dns", "--drop-invalid"]
    dry = proxy(netns, "istio-iptables", "-n", *args)
    assert dry.returncode == 0, dry.stderr
    r = proxy(netns, "istio-iptables", *args)
    assert r.returncode == 0, r.stderr
    saved = in_ns(netns, ["iptables-save"]).stdout
    want_rules, want_chains = istio_rules(dry.stdout)
    got_rules, got_chains = istio_rules(saved)
    assert got_chains == want_chains
    assert got_chains["raw"] == {"ISTIO_OUTPUT_DNS", "ISTIO_INBOUND"}
    assert got_chains["mangle"] == {"ISTIO_DROP"}
    assert got_rules == want_rules, saved
    assert units("-A X -p udp --dport 53 -j REDIRECT --to-ports 15053") in \
        got_rules["nat"]["ISTIO_OUTPUT_DNS"]
    c = proxy(netns, "istio-clean-iptables", "--redirect-dns", "--capture-all-dns")
    assert c.returncode == 0, c.stderr
    assert "ISTIO" not in in_ns(netns, ["iptables-save"]).stdout


@needs_root
@needs_iptables
def test_dual_stack_installs_ip6tables(netns):
    """With an IPv6 pod address and --dual-stack the rules go to ip6tables too (Istio's
    getLocalIP), ::6/128 is added to lo, and clean removes the IPv6 rules as well."""
    if not shutil.which("ip6tables-restore"):
        pytest.skip("needs ip6tables-restore")
    r = in_ns(netns, ["ip", "addr", "add", "2001:db8::1/64", "dev", "v0", "nodad"])
    assert r.returncode == 0, r.stderr
    v4only = proxy(netns, "istio-iptables", "-n", *INJECTOR_ARGS)
    assert v4only.returncode == 0 and "ip6tables" not in v4only.stdout  # first address: IPv4
    dry = proxy(netns, "istio-iptables", "-n", "--dual-stack", *INJECTOR_ARGS)
    assert dry.returncode == 0, dry.stderr
    v6_dry = dry.stdout.split("# ip6tables-restore --noflush\n", 1)[1]
    assert "-A ISTIO_OUTPUT -o lo -s ::6/128 -j RETURN" in v6_dry
    r = proxy(netns, "istio-iptables", "--dual-stack", *INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    saved6 = in_ns(netns, ["ip6tables-save", "-t", "nat"]).stdout
    assert istio_rules(saved6) == istio_rules(v6_dry), saved6
    assert "::6/128" in in_ns(netns, ["ip", "-6", "addr", "show", "dev", "lo"]).stdout
    c = proxy(netns, "istio-clean-iptables")
    assert c.returncode == 0, c.stderr
    assert "ISTIO" not in in_ns(netns, ["ip6tables-save"]).stdout
    assert "ISTIO" not in in_ns(netns, ["iptables-save"]).stdout


@needs_root
@needs_iptables
def test_tproxy_install_and_clean(netns):
    """-m TPROXY: the mangle chains (ISTIO_DIVERT, ISTIO_TPROXY, ISTIO_INBOUND) as the dry run
    prints them and Istio's policy routing (fwmark 1337 -> table 133); clean with the same
    flags removes both."""
    args = [a if a != "REDIRECT" else "TPROXY" for a in INJECTOR_ARGS]
    dry = proxy(netns, "istio-iptables", "-n", *args)
    assert dry.returncode == 0, dry.stderr
    r = proxy(netns, "istio-iptables", *args)
    if r.returncode == 1 and "TPROXY" in r.stderr:
        pytest.skip("the kernel has no TPROXY target: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    saved = in_ns(netns, ["iptables-save"]).stdout
    want_rules, want_chains = istio_rules(dry.stdout)
    got_rules, got_chains = istio_rules(saved)
    assert got_chains["mangle"] == {"ISTIO_DIVERT", "ISTIO_TPROXY", "ISTIO_INBOUND"}
    assert got_chains == want_chains
    assert got_rules["nat"] == want_rules["nat"]
    # iptables-save spells marks in hex and adds masks: compare mangle by shape
    for chain, rules in want_rules["mangle"].items():
        assert len(got_rules["mangle"][chain]) == len(rules), chain
    # the "-I ISTIO_INBOUND 1/2/3" rules end up first, in that order
    inbound = got_rules["mangle"]["ISTIO_INBOUND"]
    assert inbound[0] == units("-A X -p tcp -m mark --mark 0x539 -j RETURN")
    assert inbound[1] == units("-A X -p tcp -s 127.0.0.6/32 -i lo -j RETURN")
    assert inbound[2] == units("-A X -p tcp -i lo -m mark ! --mark 0x53a -j RETURN")
    assert units("-A X -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT") \
        in inbound
    assert "--on-port 15006" in saved and "-j TPROXY" in saved
    assert "fwmark 0x539 lookup 133" in in_ns(netns, ["ip", "rule"]).stdout
    assert "local default dev lo" in in_ns(netns, ["ip", "route", "show", "table", "133"]).stdout
    c = proxy(netns, "istio-clean-iptables", *args)
    assert c.returncode == 0, c.stderr
    assert "ISTIO" not in in_ns(netns, ["iptables-save"]).stdout
    assert "lookup 133" not in in_ns(netns, ["ip", "rule"]).stdout


CAPTURE_SCRIPT = textwrap.dedent("""
    import json, os, socket, struct
    res = {}
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 15001))  # stands in for the proxy's virtualOutbound
    srv.listen(8)
    srv.settimeout(5)
    c = socket.create_connection(("10.1.2.3", 80), timeout=5)  # an app, uid 0
    conn, peer = srv.accept()
    raw = conn.getsockopt(socket.SOL_IP, 80, 16)  # SO_ORIGINAL_DST
    res["original_dst"] = "%s:%d" % (socket.inet_ntoa(raw[4:8]),
                                     struct.unpack("!H", raw[2:4])[0])
    c.sendall(b"ping")
    res["payload"] = conn.recv(4).decode()
    conn.close(); c.close()
    pid = os.fork()
    if pid == 0:  # the proxy's own user: must not be redirected
        os.setgroups([]); os.setgid(1337); os.setuid(1337)
        s = socket.socket(); s.settimeout(1.5)
        try:
            s.connect(("10.1.2.3", 80)); os._exit(0)
        except OSError:
            os._exit(3)
    _, st = os.waitpid(pid, 0)
    res["uid1337_exit"] = os.waitstatus_to_exitcode(st)
    srv.settimeout(0.5)
    try:
        srv.accept(); res["uid1337_captured"] = True
    except socket.timeout:
        res["uid1337_captured"] = False
    print(json.dumps(res))
""")


@needs_root
@needs_iptables
def test_redirect_captures_app_and_not_proxy_uid(netns):
    """A client (uid 0) connecting to 10.1.2.3:80 lands on the 15001 listener, which reads the
    original destination with SO_ORIGINAL_DST; uid 1337's connection is left alone."""
    r = proxy(netns, "istio-iptables", *INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    p = in_ns(netns, ["/usr/bin/python3", "-c", CAPTURE_SCRIPT], timeout=30)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["original_dst"] == "10.1.2.3:80"
    assert res["payload"] == "ping"
    assert res["uid1337_captured"] is False
    assert res["uid1337_exit"] == 3  # its connect went out v0 and timed out
    # without the rules the same client reaches nothing: the capture made the difference
    assert proxy(netns, "istio-clean-iptables").returncode == 0
    p = in_ns(netns, ["/usr/bin/python3", "-c", CAPTURE_SCRIPT], timeout=30)
    assert p.returncode != 0
    assert "timed out" in p.stderr or "No route to host" in p.stderr, p.stderr


# ---- flags (no root needed) ----

@pytest.mark.parametrize("args,needle", [
    (["-p", "0"], 'invalid value "0" for flag --envoy-port'),
    (["--inbound-capture-port", "http"], 'invalid value "http" for flag --inbound-capture-port'),
    (["-m", "NAT"], 'invalid value "NAT" for flag --istio-inbound-interception-mode'),
    (["-b", "80,x"], 'invalid value "x" for flag --istio-inbound-ports'),
    (["-d", "70000"], 'invalid value "70000" for flag --istio-local-exclude-ports'),
    (["-i", "10.0.0/8", "-n"], 'istio-service-cidr (-i): "10.0.0/8" is not a CIDR'),
    (["-x", "*", "-n"], "istio-service-exclude-cidr (-x)"),
    (["--redirect-dns=maybe"], 'invalid value "maybe" for flag --redirect-dns'),
    (["--no-such-flag"], "unknown flag --no-such-flag"),
    (["-p"], "missing value for flag -p"),
    (["extra"], 'unexpected argument "extra"'),
])
def test_bad_flags_exit_2(args, needle):
    r = run([proxy_bin(), "istio-iptables"] + args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr, r.stderr


def test_bad_environment_exit_2():
    env = dict(os.environ, ISTIO_INBOUND_PORTS="80,eighty")
    r = run([proxy_bin(), "istio-iptables", "-n"], env=env)
    assert r.returncode == 2
    assert 'invalid value "eighty" for environment variable ISTIO_INBOUND_PORTS' in r.stderr
    env = dict(os.environ, ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR="10.0.0.1/32")
    r = run([proxy_bin(), "istio-iptables", "-n"], env=env)
    assert r.returncode == 2 and "ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR" in r.stderr


def test_help():
    for sub in ("istio-iptables", "istio-clean-iptables"):
        r = run([proxy_bin(), sub, "--help"])
        assert r.returncode == 0
        assert "--istio-inbound-ports" in r.stdout and "Exit codes" in r.stdout


def test_environment_and_dry_run_file(tmp_path):
    """Istio's environment variables set the options (flags win); DRY_RUN_FILE_PATH gets the
    commands Istio's dry run records (the golden-file shape)."""
    out = tmp_path / "dry.txt"
    env = dict(os.environ, ISTIO_INBOUND_PORTS="*", ISTIO_SERVICE_CIDR="*",
               ISTIO_LOCAL_EXCLUDE_PORTS="15020", DRY_RUN_FILE_PATH=str(out))
    r = run([proxy_bin(), "istio-iptables", "-n", "-u", "1337", "-d", "15090"], env=env)
    if r.returncode == 1 and "no valid local IP address" in r.stderr:
        pytest.skip("this host has no non-loopback address to decide IPv6 from")
    assert r.returncode == 0, r.stderr
    assert "-A PREROUTING -p tcp -j ISTIO_INBOUND\n" in r.stdout
    assert "-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN\n" in r.stdout  # the flag won
    assert "15020" not in r.stdout
    assert "-A ISTIO_OUTPUT -j ISTIO_REDIRECT\n" in r.stdout
    rec = out.read_text().splitlines()
    assert rec[:3] == ["iptables-save", "ip6tables-save", "* nat"]
    assert rec[-1] in ("iptables-save", "ip6tables-save")
