"""Loopback ports for the servers a test starts, never another test's.

The same scheme as FreePort() in tests/support/shmkv_server.h: a port is
drawn below the kernel's ephemeral range (no connect() and no bind to port 0
on the machine is handed it while the server starts), is free on 127.0.0.1
and ::1 when drawn, and is claimed for the life of this process by an
abstract Unix socket named after it, so tests running at once never draw the
same port. The claim leaves nothing on disk and ends with the process.
"""
import errno
import random
import socket

_claims = []  # open for the life of the process: the claims


def _can_bind(family, addr, port):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return family == socket.AF_INET6  # no IPv6 here: nothing to collide
    try:
        s.bind((addr, port))
        return True
    except OSError as e:
        return family == socket.AF_INET6 and e.errno == errno.EADDRNOTAVAIL
    finally:
        s.close()


def free_port():
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    hi = max(low, 2048)
    lo = max(1024, hi - 16384)
    start = random.SystemRandom().randrange(lo, hi)
    for i in range(hi - lo):
        port = lo + (start - lo + i) % (hi - lo)
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind("\0shmc-test-port-%d" % port)
        except OSError:
            claim.close()
            continue  # another test's
        if (_can_bind(socket.AF_INET, "127.0.0.1", port)
                and _can_bind(socket.AF_INET6, "::1", port)):
            _claims.append(claim)
            return port
        claim.close()
    raise RuntimeError("no free port in [%d, %d)" % (lo, hi))
