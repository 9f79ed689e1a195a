#!/usr/bin/python3
"""Print N free TCP ports on 127.0.0.1, one a line (usage: free_ports.py N).

All N sockets are bound at once (port 0, so the kernel picks) before any is closed, so the
ports are distinct; another process could still take one before the caller binds it."""
import socket
import sys


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        for s in socks:
            print(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
