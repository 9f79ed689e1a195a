"""One rule for usage errors across weftctl (docs/weftctl.md "Exit codes"): an unknown
command or flag, a missing or extra argument and a bad flag value exit 64 (istioctl's
ExitIncorrectUsage, sysexits EX_USAGE) with an "Error: ..." line on stderr and nothing on
stdout, before anything is contacted or started. Every subcommand is run here, the local-mesh
ones (up, down, status) included; none of these command lines reaches a pilot or a proxy
(the addresses below are closed ports, so a command that did would exit 1, not 64)."""
import pytest

from conftest import run_weftctl

EXIT_USAGE = 64
CLOSED = "127.0.0.1:9"  # discard port: nothing listens

SUBCOMMANDS = [
    ["analyze"], ["completion"], ["dashboard"], ["dashboard", "weft"], ["describe"], ["describe", "pod"], ["describe", "svc"],
    ["down"], ["log"], ["log", "explain"], ["manifest"], ["manifest", "generate"], ["pc"], ["pc", "all"], ["pc", "bootstrap"],
    ["pc", "cluster"], ["pc", "endpoint"], ["pc", "listener"], ["pc", "log"], ["pc", "route"],
    ["pc", "secret"], ["proxy-config", "cluster"], ["ps"], ["proxy-status"], ["remote-clusters"],
    ["status"], ["up"], ["version"], ["kube-inject"],
]


def assert_usage(r, what):
    assert r.returncode == EXIT_USAGE, "%s: exit %d, stderr %r" % (what, r.returncode, r.stderr)
    assert r.stderr.startswith("Error: ") or "\nError: " in r.stderr, (what, r.stderr)
    assert r.stdout == "", (what, r.stdout)


@pytest.mark.parametrize("cmd", SUBCOMMANDS, ids=" ".join)
def test_unknown_flag(cmd):
    assert_usage(run_weftctl(*cmd, "--no-such-flag"), cmd)


@pytest.mark.parametrize("args", [
    ["no-such-command"],
    ["--no-such-flag"],
    ["analyze"],                          # no input: weft has no cluster to read
    ["completion"],
    ["completion", "zsh"],
    ["describe"],                         # no subcommand
    ["dashboard", "no-such-dashboard"],
    ["dashboard", "weft", "extra"],
    ["x"],
    ["x", "no-such-subcommand"],
    ["x", "authz"],                       # a parent command without its subcommand
    ["pc"],
    ["log"],
    ["describe", "pod"],                  # no pod name
    ["describe", "svc"],
    ["describe", "deployment", "x"],      # unknown resource type
    ["log", "no-such-subcommand"],
    ["log", "explain", "a.log", "b.log"],
    ["manifest"],                         # no subcommand
    ["manifest", "no-such-subcommand"],
    ["manifest", "generate", "extra"],
    ["pc", "cluster"],                    # no pod and no --file
    ["pc", "log"],
    ["pc", "no-such-subcommand", "x"],
    ["ps", "a", "b"],
    ["remote-clusters", "extra"],
    ["status", "a", "b"],
    ["up"],                               # no folder
    ["down", "a", "b"],
    ["version", "extra"],
    ["kube-inject"],                      # no -f
    ["kube-inject", "-f", "x.yaml", "extra"],
], ids=lambda a: " ".join(a) or "(none)")
def test_missing_or_extra_argument(args):
    assert_usage(run_weftctl(*args), args)


@pytest.mark.parametrize("args", [
    ["analyze", "-o", "xml", "-"],
    ["analyze", "--failure-threshold", "fatal", "-"],
    ["analyze", "--timeout", "soon", "-"],
    ["analyze", "-S", "no-equals-sign", "-"],
    ["analyze", "--use-kube=maybe", "-"],
    ["dashboard", "weft", "-o", "xml", "--pilot", CLOSED],
    ["dashboard", "weft", "--port", "eighty", "--pilot", CLOSED],
    ["log", "explain", "-o", "xml", "-"],
    ["manifest", "generate", "--set", "no.such.key=1"],
    ["manifest", "generate", "--set", "revision=Not_A_Label"],
    ["pc", "cluster", "-o", "xml", "--file", "dump.json"],
    ["pc", "cluster", "--port", "eighty", "--file", "dump.json"],
    ["pc", "log", "pod.ns", "--level", "loud", "--pilot", CLOSED],
    ["pc", "log", "pod.ns", "--level", "debug", "--reset", "--pilot", CLOSED],
    ["ps", "-o", "xml", "--pilot", CLOSED],
    ["ps", "--table-format", "wide", "--pilot", CLOSED],
    ["ps", "-v", "high", "--pilot", CLOSED],
    ["remote-clusters", "-o", "xml", "--pilot", CLOSED],
    ["version", "-o", "xml", "--pilot", CLOSED],
], ids=" ".join)
def test_bad_flag_value(args):
    assert_usage(run_weftctl(*args), args)


def test_help_is_not_an_error():
    r = run_weftctl()  # istioctl: the root command alone prints its help
    assert r.returncode == 0 and "Available Commands:" in r.stdout
    for cmd in SUBCOMMANDS:
        r = run_weftctl(*cmd, "--help")
        assert r.returncode == 0, (cmd, r.stderr)


def test_completion_offers_every_flag():
    """The bash completion script lists every long flag each command's --help shows (a flag
    added to a command and not to the completion table is caught here)."""
    import re
    script = run_weftctl("completion", "bash").stdout
    missing, seen = [], 0
    for cmd in SUBCOMMANDS:
        for flag in set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-zA-Z][\w-]*)",
                                   run_weftctl(*cmd, "--help").stdout)):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), script):
                missing.append("%s %s" % (" ".join(cmd), flag))
            seen += 1
    assert seen > 100  # the help tables were read
    assert not missing, missing
