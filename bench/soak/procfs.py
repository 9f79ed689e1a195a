"""bench/soak/procfs.py - what /proc says about a process, for the soak's fd and RSS checks
(Linux only; every function returns None or skips what it cannot read, since the processes
it looks at may exit at any time).

- tcp_sockets(): {inode: (state, "ip:port" local, "ip:port" remote)} of every TCP socket of
  this network namespace (/proc/net/tcp, /proc/net/tcp6; states by the kernel's names).
- proc_fds(pid, socks): a process's open fds: total, ESTABLISHED TCP sockets, the others,
  the sockets in CLOSE_WAIT and a count per kind ("tcp LISTEN", "anon_inode", "pipe", "file").
- proc_rss(pid): VmRSS in KiB. proc_stat(pid, socks): (total fds, RSS KiB, fds that are not
  ESTABLISHED sockets).
- alive(pid): exists and is not a zombie. cmdline(pid): the command line, spaces for NULs.
"""
import collections
import os
import re

TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def tcp_sockets():
    """{inode: (state, local, remote)} of every TCP socket in this network namespace."""
    out = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    p = line.split()
                    out[p[9]] = (TCP_STATES.get(p[3], p[3]), hexaddr(p[1]), hexaddr(p[2]))
        except (OSError, StopIteration, IndexError):
            pass
    return out


def hexaddr(s):
    ip, port = s.split(":")
    if len(ip) == 8:
        ip = ".".join(str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0))
    return "%s:%d" % (ip, int(port, 16))


def proc_fds(pid, socks):
    """{"total", "established", "other", "close_wait": [(local, remote)], "kinds": Counter}
    of a live process's open fds (socks: tcp_sockets()), None when it is gone."""
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    res = {"total": 0, "established": 0, "close_wait": [], "kinds": collections.Counter()}
    for n in names:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, n))
        except OSError:
            continue
        res["total"] += 1
        m = re.match(r"socket:\[(\d+)\]", link)
        if m and m.group(1) in socks:
            st, local, remote = socks[m.group(1)]
            res["kinds"]["tcp " + st] += 1
            if st == "ESTABLISHED":
                res["established"] += 1
            elif st == "CLOSE_WAIT":
                res["close_wait"].append((local, remote))
        else:
            res["kinds"][re.sub(r"[:\[].*", "", link) if not link.startswith("/") else "file"] += 1
    res["other"] = res["total"] - res["established"]
    return res


def proc_rss(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        return None


def proc_stat(pid, socks=None):
    """(open fds, RSS KiB, fds that are not ESTABLISHED TCP sockets) of a live process, None
    when it is gone."""
    fds = proc_fds(pid, tcp_sockets() if socks is None else socks)
    rss = proc_rss(pid)
    if fds is None or rss is None:
        return None
    return fds["total"], rss, fds["other"]


def alive(pid):
    """True while pid exists and is not a zombie (the supervisor reaps its children)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""
