#!/usr/bin/python3
"""ceiling.py ROWS LIBNAME [GOAL] - the best requests-per-CPU-second ratio weft-proxy could
reach against HAProxy on a harness, from profile_tls.sh's or profile_h2.sh's measurements.

ROWS: one line per proxy and round, "NAME USER_US KERNEL_US LIBSHARE [SYSCALL PER_REQ]...":
the proxy's user and kernel CPU per request (microseconds, measured with no perf attached)
and the share (0..1) of its user-space time spent in the library both proxies use for the
protocol (OpenSSL for TLS, nghttp2 for weft's HTTP/2; HAProxy's own HTTP/2 code is its own).
Names are "weft" and "haproxy"; values are medianed per name over the rounds.

Prints, per proxy, the median CPU per request split into kernel, library and the proxy's own
user-space code; weft's ratio now (HAProxy's CPU per request over weft's); the ceiling, the
ratio weft would reach if its own user-space code took no time (its kernel time and its
library time kept: the same system calls and the same library calls); and the own user time
per request the goal (default 1.2) leaves to weft. Exit status 0, 2 on bad input.
"""
import statistics
import sys


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    lib_name = argv[2]
    goal = float(argv[3]) if len(argv) == 4 else 1.2
    rows = {}
    with open(argv[1], encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            try:
                vals = [float(x) for x in parts[1:4]]
            except ValueError:
                print(f"ceiling.py: {argv[1]}: not a row: {line.strip()}", file=sys.stderr)
                return 2
            rows.setdefault(parts[0], []).append(vals)
    if "weft" not in rows or "haproxy" not in rows:
        print("ceiling.py: rows for weft and haproxy are needed", file=sys.stderr)
        return 2
    med = {}
    for name, vals in rows.items():
        user, kern, share = (statistics.median(v[i] for v in vals) for i in range(3))
        med[name] = (user, kern, share)
        print(f"  {name:8} CPU per request {user + kern:6.2f} us: kernel {kern:5.2f}, "
              f"{lib_name} {user * share:5.2f}, its own user-space code {user * (1 - share):5.2f}")
    wu, wk, ws = med["weft"]
    hu, hk, _ = med["haproxy"]
    h_total = hu + hk
    w_total = wu + wk
    floor = wk + wu * ws
    print(f"  weft / HAProxy requests per CPU-second now: {h_total / w_total:.2f}x")
    print(f"  ceiling (weft's own user-space code taking no time): {h_total / floor:.2f}x")
    room = h_total / goal - floor
    own = wu * (1 - ws)
    if room <= 0:
        print(f"  goal {goal}x: out of reach even with no user-space code of weft's own "
              f"(kernel + {lib_name} alone {floor:.2f} us > {h_total / goal:.2f} us)")
    else:
        print(f"  goal {goal}x: weft's own user-space code may take {room:.2f} us per request "
              f"(now {own:.2f} us: {100 * room / own:.0f} % of it)" if own > 0 else
              f"  goal {goal}x: weft's own user-space code may take {room:.2f} us per request")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
