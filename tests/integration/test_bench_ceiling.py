"""bench/proxy/ceiling.py (the last step of profile_tls.sh and profile_h2.sh) over synthetic
rows: medians per proxy over rounds, the ratio now, the ceiling (weft's own user-space code
taking no time) and the own user time a goal leaves to weft. Nothing here runs a benchmark.

The figures make the medians differ from the means and from the first round, so a report that
averaged, or read one round, would fail.
"""
import os
import subprocess

from conftest import ROOT

CEILING = os.path.join(ROOT, "bench", "proxy", "ceiling.py")


def run(tmp_path, rows, *args):
    p = tmp_path / "rows"
    p.write_text(rows)
    return subprocess.run(["/usr/bin/python3", CEILING, str(p), "OpenSSL", *args],
                          capture_output=True, text=True, timeout=30)


ROWS = (
    # name user_us kernel_us libshare syscalls...
    "weft 10.0 20.0 0.40 write 2.01 read 2.01\n"
    "haproxy 14.0 22.0 0.30 sendto 2.00 recvfrom 4.00\n"
    "weft 12.0 24.0 0.50 write 2.01 read 2.01\n"
    "haproxy 20.0 26.0 0.20 sendto 2.00 recvfrom 4.00\n"
    "weft 30.0 21.0 0.45\n"
    "haproxy 15.0 40.0 0.25\n"
)
# medians: weft user 12, kernel 21, share 0.45 -> total 33, OpenSSL 5.4, own 6.6;
# haproxy user 15, kernel 26 -> total 41. Now 41/33 = 1.24x; floor 21 + 5.4 = 26.4 ->
# ceiling 41/26.4 = 1.55x; goal 1.2: 41/1.2 - 26.4 = 7.77 us of own code (now 6.6: 118 %).


def test_ratio_ceiling_and_room(tmp_path):
    r = run(tmp_path, ROWS)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "weft     CPU per request  33.00 us: kernel 21.00, OpenSSL  5.40, " \
        "its own user-space code  6.60" in out
    assert "haproxy  CPU per request  41.00 us: kernel 26.00" in out
    assert "requests per CPU-second now: 1.24x" in out
    assert "ceiling (weft's own user-space code taking no time): 1.55x" in out
    assert "goal 1.2x: weft's own user-space code may take 7.77 us per request " \
        "(now 6.60 us: 118 % of it)" in out


def test_goal_out_of_reach(tmp_path):
    r = run(tmp_path, ROWS, "1.6")
    assert r.returncode == 0, r.stderr
    # 41/1.6 = 25.63 < the floor of 26.4: no own-code budget at all
    assert "goal 1.6x: out of reach even with no user-space code of weft's own " \
        "(kernel + OpenSSL alone 26.40 us > 25.62 us)" in r.stdout


def test_bad_input(tmp_path):
    assert run(tmp_path, "weft 1 2 0.1\n").returncode == 2  # no haproxy row
    assert run(tmp_path, "weft one 2 0.1\nhaproxy 1 2 0\n").returncode == 2
    r = subprocess.run(["/usr/bin/python3", CEILING], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "ceiling.py ROWS" in r.stderr
