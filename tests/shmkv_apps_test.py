"""Real Redis applications on shmkv: a task queue (Celery, with its Redis
broker and result backend: Debian python3-celery) and a rate limiter
(limits: python3-limits), as their users run them.

Run by ctest as: python3 shmkv_apps_test.py SHMKV_BIN
Exits 77 (ctest: skipped) when a library or redis-server is missing, except
under CI=true, where that is a failure.

Each test starts its own shmkv (two workers) on free loopback ports and
segments named after this process and the test, and removes them when it
is done; Celery's worker is a process of this test, killed with it.
"""
import gc
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "support"))
from ports import free_port  # noqa: E402

IN_CI = os.environ.get("CI") == "true"


def skip(why):
    print(why)
    sys.exit(1 if IN_CI else 77)


try:
    import redis
    import celery  # noqa: F401
    import limits
    import limits.storage
    import limits.strategies
except ImportError as e:
    skip("%s (apt-get install python3-redis python3-celery python3-limits)" % e)

SHMKV = None
REDIS_SERVER = "/usr/bin/redis-server"


def wait_ready(port, proc):
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        try:
            redis.Redis(port=port, socket_timeout=1).ping()
            return
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("server on port %d never answered" % port)


class Shmkv:
    """A shmkv master with two workers on segments of this test's own."""

    def __init__(self, tag):
        self.name = "/shmkv_apps_%d_%s" % (os.getpid(), tag)
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.remove_segments()
        self.proc = subprocess.Popen(
            [SHMKV, "--port", str(self.port), "--http-port", "0",
             "--workers", "2", "--name", self.name, "--capacity", "200000",
             "--memory", "64M"],
            stdout=self.log, stderr=self.log)
        wait_ready(self.port, self.proc)

    def remove_segments(self):
        subprocess.run([SHMKV, "--name", self.name, "--remove"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def reload(self):
        """A hot restart: new workers take the connections and the data."""
        self.proc.send_signal(signal.SIGHUP)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.remove_segments()

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


class RedisServer:
    """Debian's redis-server: the oracle."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(self.port, self.proc)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()


# The Celery application the worker process and this test share: a module
# written into the test's directory, its broker and backend from BROKER.
CELERY_APP = textwrap.dedent('''
    import os
    from celery import Celery
    app = Celery("shmkv_celery_app", broker=os.environ["BROKER"],
                 backend=os.environ["BROKER"])
    app.conf.update(broker_connection_retry_on_startup=True,
                    result_expires=300, worker_hijack_root_logger=False)

    @app.task
    def add(a, b):
        return a + b

    @app.task
    def total(xs):
        return sum(xs)

    @app.task(bind=True, max_retries=3)
    def flaky(self, n):
        # Fails its first run: the retry goes through the broker again.
        if self.request.retries < 1:
            raise self.retry(countdown=0.2)
        return n * 2

    @app.task
    def fail():
        raise ValueError("task failed on purpose")
''')


class CeleryTest(unittest.TestCase):
    """Celery's Redis transport uses lists (LPUSH/BRPOP), a sorted set and
    a hash of unacknowledged messages, pub/sub for results and for remote
    control, MULTI/EXEC and Lua; its result backend strings with TTLs and
    counters for chords."""

    def setUp(self):
        self.kv = Shmkv("celery")
        self.dir = tempfile.TemporaryDirectory()
        with open(os.path.join(self.dir.name, "shmkv_celery_app.py"),
                  "w") as f:
            f.write(CELERY_APP)
        # Database 5: Celery keeps its keys there, as applications that
        # share one server between uses do.
        os.environ["BROKER"] = "redis://127.0.0.1:%d/5" % self.kv.port
        sys.path.insert(0, self.dir.name)
        import shmkv_celery_app
        self.app = shmkv_celery_app
        self.worker_log = tempfile.TemporaryFile()
        self.worker = subprocess.Popen(
            [sys.executable, "-W", "ignore", "-m", "celery",
             "-A", "shmkv_celery_app", "worker", "--pool=threads", "-c", "2",
             "-l", "WARNING", "--without-mingle", "--without-gossip"],
            cwd=self.dir.name, stdout=self.worker_log,
            stderr=self.worker_log)

    def tearDown(self):
        # A result object unsubscribes from its task's channel when it is
        # collected: while the server still answers.
        gc.collect()
        self.worker.terminate()
        try:
            self.worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait()
        sys.path.remove(self.dir.name)
        sys.modules.pop("shmkv_celery_app", None)
        self.app.app.close()
        self.dir.cleanup()
        self.kv.stop()

    def worker_output(self):
        self.worker_log.seek(0)
        return self.worker_log.read().decode(errors="replace")

    def get(self, result):
        try:
            return result.get(timeout=60)
        except Exception:
            print(self.worker_output()[-4000:])
            print(self.kv.output()[-2000:])
            raise

    def test_tasks_retries_workflows_and_failures(self):
        from celery import chain, chord, group
        a = self.app
        self.assertEqual([self.get(a.add.delay(i, i)) for i in range(10)],
                         [2 * i for i in range(10)])
        self.assertEqual(self.get(a.flaky.delay(21)), 42)
        self.assertEqual(self.get(group(a.add.s(1, i) for i in range(6))()),
                         [1 + i for i in range(6)])
        self.assertEqual(
            self.get(chord((a.add.s(i, i) for i in range(5)), a.total.s())()),
            20)
        self.assertEqual(self.get(chain(a.add.s(1, 2), a.add.s(10))()), 13)
        # A countdown goes through the transport's sorted set of
        # unacknowledged messages and comes back on time.
        t0 = time.time()
        self.assertEqual(self.get(a.add.apply_async((3, 4), countdown=1)), 7)
        self.assertGreaterEqual(time.time() - t0, 0.9)
        failed = a.fail.delay()
        with self.assertRaises(ValueError):
            failed.get(timeout=60)
        self.assertEqual(failed.state, "FAILURE")
        # Remote control: a broadcast over pub/sub, answered by the worker.
        replies = a.app.control.inspect(timeout=5).ping() or {}
        self.assertEqual(list(replies.values()), [{"ok": "pong"}])
        # Everything Celery stored is in database 5, none in database 0.
        r = redis.Redis(port=self.kv.port)
        self.assertEqual(r.dbsize(), 0)
        self.assertGreater(redis.Redis(port=self.kv.port, db=5).dbsize(), 0)

    def test_no_task_is_lost_across_hot_restarts(self):
        a = self.app
        self.assertEqual(self.get(a.add.delay(1, 1)), 2)  # the worker is up
        results = []
        for i in range(300):
            results.append(a.add.delay(i, 1000))
            if i in (100, 200):
                self.kv.reload()
            time.sleep(0.002)
        self.assertEqual([self.get(r) for r in results],
                         [i + 1000 for i in range(300)])
        self.assertEqual(self.kv.output().count("reloading"), 2)


class LimitsTest(unittest.TestCase):
    """The limits library's three strategies (a counter with INCR and
    EXPIRE, a moving window kept in a list by Lua scripts, an elastic
    window) decide as they do on redis-server, hit for hit."""

    def setUp(self):
        self.kv = Shmkv("limits")
        self.oracle = RedisServer()

    def tearDown(self):
        self.oracle.stop()
        self.kv.stop()

    def decisions(self, port):
        store = limits.storage.storage_from_string(
            "redis://127.0.0.1:%d" % port)
        self.assertTrue(store.check())
        out = []
        for cls in (limits.strategies.FixedWindowRateLimiter,
                    limits.strategies.MovingWindowRateLimiter,
                    limits.strategies.FixedWindowElasticExpiryRateLimiter):
            limiter = cls(store)
            for rule in ("5/minute", "3/hour", "10/day"):
                item = limits.parse(rule)
                for user in ("alice", "bob"):
                    hits = [limiter.hit(item, user, cls.__name__)
                            for _ in range(7 if user == "alice" else 2)]
                    _, remaining = limiter.get_window_stats(
                        item, user, cls.__name__)
                    out.append((cls.__name__, rule, user, hits, remaining,
                                limiter.test(item, user, cls.__name__)))
                limiter.clear(item, "alice", cls.__name__)
                out.append(("cleared", limiter.test(item, "alice",
                                                    cls.__name__)))
        store.reset()
        return out

    def test_decisions_match_redis(self):
        mine = self.decisions(self.kv.port)
        theirs = self.decisions(self.oracle.port)
        self.assertEqual(mine, theirs)
        # Not a comparison of two empty runs: limits were reached.
        self.assertIn(False, [h for row in mine if len(row) > 3
                              for h in row[3]])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    SHMKV = sys.argv[1]
    if not os.access(REDIS_SERVER, os.X_OK):
        skip("redis-server not installed (apt-get install redis-server)")
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
