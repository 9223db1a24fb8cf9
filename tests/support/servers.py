"""The servers a Python test starts: a shmkv on segments of the test's own
and Debian's redis-server as the oracle, each on a port drawn by ports.py,
each killed with the test (a run killed at ctest's timeout leaves none
behind).

redis-py is imported only where a server is waited for, so that a test
can report it missing (and skip) before it uses this module.
"""
import ctypes
import signal
import subprocess
import tempfile
import time

from ports import free_port

REDIS_SERVER = "/usr/bin/redis-server"
PR_SET_PDEATHSIG = 1


def die_with_test():
    """In a child before exec: SIGKILL when this test ends (the setting is
    kept across exec; shmkv's workers follow their master)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG,
                                            signal.SIGKILL, 0, 0, 0)


def wait_ready(port, password=None, proc=None):
    """Until the server on `port` answers (a refused AUTH counts)."""
    import redis
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        try:
            redis.Redis(port=port, password=password, socket_timeout=1).ping()
            return
        except redis.exceptions.AuthenticationError:
            return
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("server on port %d never answered" % port)


def stop_process(proc, timeout=30):
    """SIGTERM, then SIGKILL if it has not ended within `timeout` s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Shmkv:
    """A shmkv master with two workers on segments named `name` (POSIX),
    its output kept; not waited for (wait_ready)."""

    def __init__(self, binary, name, extra=(), env=None, capacity=300000,
                 memory="96M"):
        self.binary = binary
        self.name = name
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.remove_segments()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--http-port", "0",
             "--workers", "2", "--name", name, "--capacity", str(capacity),
             "--memory", memory] + list(extra),
            stdout=self.log, stderr=self.log, env=env,
            preexec_fn=die_with_test)

    def remove_segments(self):
        subprocess.run([self.binary, "--name", self.name, "--remove"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def reload(self):
        """A hot restart: new workers take the connections and the data."""
        self.proc.send_signal(signal.SIGHUP)

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.remove_segments()


class RedisServer:
    """Debian's redis-server, persistence off, in a directory of its own:
    the oracle; not waited for (wait_ready)."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_test)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()
