"""Real Redis applications on shmkv, as their users run them: three job
queues (Celery, with its Redis broker and result backend: Debian
python3-celery; Sidekiq, Ruby's: ruby-sidekiq; RQ, which keeps results
in streams: python3-rq), a rate limiter (limits: python3-limits),
Django's cache and sessions (python3-django-redis) and Django Channels'
Redis layers (python3-channels-redis).

Run by ctest as: python3 shmkv_apps_test.py SHMKV_BIN
Exits 77 (ctest: skipped) when a library or redis-server is missing, except
under CI=true, where that is a failure.

Each test starts its own shmkv (two workers) on free loopback ports and
segments named after this process and the test, and removes them when it
is done; the queues' workers are processes of this test, stopped with it.
Sidekiq's, Django's, RQ's and Channels' tests are skipped without their
packages (failed under CI=true).
"""
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "support"))
from servers import REDIS_SERVER, RedisServer, Shmkv as ShmkvServer  # noqa: E402
from servers import die_with_test, stop_process, wait_ready  # noqa: E402

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


class Shmkv(ShmkvServer):
    """A shmkv of two workers on segments named after this process and
    `tag`, waited for."""

    def __init__(self, tag):
        super().__init__(SHMKV, "/shmkv_apps_%d_%s" % (os.getpid(), tag),
                         capacity=200000, memory="64M")
        wait_ready(self.port, proc=self.proc)


def oracle():
    """Debian's redis-server, waited for."""
    server = RedisServer()
    wait_ready(server.port, proc=server.proc)
    return server


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
            stderr=self.worker_log, preexec_fn=die_with_test)

    def tearDown(self):
        # A result object unsubscribes from its task's channel when it is
        # collected: while the server still answers.
        gc.collect()
        stop_process(self.worker)
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


# Sidekiq's jobs and a client that enqueues them and waits for their
# results (a list each job appends to), printing what it saw as JSON.
SIDEKIQ_JOBS = textwrap.dedent('''
    require "sidekiq"
    Sidekiq.configure_server { |c| c.redis = { url: ENV["REDIS_URL"] } }
    Sidekiq.configure_client { |c| c.redis = { url: ENV["REDIS_URL"] } }
    Sidekiq.logger.level = Logger::WARN

    class AddJob
      include Sidekiq::Worker
      def perform(a, b)
        Sidekiq.redis { |r| r.rpush("results", "#{a}+#{b}=#{a + b}") }
      end
    end

    # Fails its first run: it comes back through the retry set.
    class FlakyJob
      include Sidekiq::Worker
      sidekiq_options retry: 3
      sidekiq_retry_in { |_count, _ex| 1 }
      def perform(n)
        tries = Sidekiq.redis { |r| r.incr("flaky:#{n}") }
        raise "the first run fails on purpose" if tries < 2
        Sidekiq.redis { |r| r.rpush("results", "flaky#{n}") }
      end
    end

    # No retries: it goes to the dead set.
    class DeadJob
      include Sidekiq::Worker
      sidekiq_options retry: 0
      def perform
        raise "this job always fails"
      end
    end
''')

SIDEKIQ_CLIENT = textwrap.dedent('''
    require "json"
    require_relative "jobs"
    require "sidekiq/api"
    mode, count = ARGV[0], ARGV[1].to_i
    want = count
    if mode == "all"
      count.times { |i| AddJob.perform_async(i, i) }
      Sidekiq::Client.push_bulk("class" => AddJob,
                                "args" => [[1000, 1], [1000, 2]])
      AddJob.perform_in(1, 2000, 1)
      FlakyJob.perform_async(1)
      DeadJob.perform_async
      want = count + 4
    else
      count.times { |i| AddJob.perform_async(i, 1000); sleep 0.002 }
    end
    deadline = Time.now + 60
    until Sidekiq.redis { |r| r.llen("results") } >= want ||
          Time.now > deadline
      sleep 0.1
    end
    if mode == "all"
      # Each process adds its counts at its heartbeat (every 5 s): wait
      # for every run (16: the flaky job runs twice) to be counted.
      until (Sidekiq::DeadSet.new.size >= 1 &&
             Sidekiq::Stats.new.processed >= want + 2) ||
            Time.now > deadline
        sleep 0.1
      end
    end
    stats = Sidekiq::Stats.new
    puts JSON.generate(
      "results" => Sidekiq.redis { |r| r.lrange("results", 0, -1) },
      "processed" => stats.processed, "failed" => stats.failed,
      "dead" => stats.dead_size, "retry" => stats.retry_size,
      "scheduled" => stats.scheduled_size, "enqueued" => stats.enqueued,
      "queues" => Sidekiq::Queue.all.map(&:name),
      "processes" => Sidekiq::ProcessSet.new.size)
''')


class SidekiqTest(unittest.TestCase):
    """Sidekiq 6 keeps queues in lists (BRPOP), scheduled, retry and dead
    jobs in sorted sets moved by Lua scripts, processes in sets and
    hashes, and its counters in strings, through pipelines and MULTI."""

    def setUp(self):
        self.sidekiq = shutil.which("sidekiq")
        self.ruby = shutil.which("ruby")
        if self.sidekiq is None or self.ruby is None:
            if IN_CI:
                self.fail("ruby-sidekiq not installed")
            self.skipTest("ruby-sidekiq not installed (apt-get install "
                          "ruby-sidekiq)")
        self.kv = Shmkv("sidekiq")
        self.dir = tempfile.TemporaryDirectory()
        for name, text in (("jobs.rb", SIDEKIQ_JOBS),
                           ("client.rb", SIDEKIQ_CLIENT)):
            with open(os.path.join(self.dir.name, name), "w") as f:
                f.write(text)
        # Database 2, as an application sharing the server would use.
        self.env = dict(os.environ,
                        REDIS_URL="redis://127.0.0.1:%d/2" % self.kv.port)
        self.worker_log = tempfile.TemporaryFile()
        self.worker = subprocess.Popen(
            [self.sidekiq, "-r", "./jobs.rb", "-c", "2"], cwd=self.dir.name,
            env=self.env, stdout=self.worker_log, stderr=self.worker_log,
            preexec_fn=die_with_test)

    def tearDown(self):
        stop_process(self.worker)
        self.dir.cleanup()
        self.kv.stop()

    def client(self, mode, count, during=None):
        proc = subprocess.Popen(
            [self.ruby, "-W0", "client.rb", mode, str(count)],
            cwd=self.dir.name, env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, preexec_fn=die_with_test)
        if during is not None:
            during()
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            self.worker_log.seek(0)
            print(self.worker_log.read().decode(errors="replace")[-4000:])
            self.fail("client failed: %s" % err.decode(errors="replace"))
        return json.loads(out.decode().strip().splitlines()[-1])

    def test_jobs_retries_schedules_and_the_dead_set(self):
        seen = self.client("all", 10)
        want = ["%d+%d=%d" % (i, i, 2 * i) for i in range(10)]
        want += ["1000+1=1001", "1000+2=1002", "2000+1=2001", "flaky1"]
        self.assertEqual(sorted(seen["results"]), sorted(want))
        # 14 runs that passed, two that failed (the flaky job's first run
        # and the dead job); the dead job is in the dead set.
        self.assertEqual(seen["processed"], 16)
        self.assertEqual(seen["failed"], 2)
        self.assertEqual(seen["dead"], 1)
        self.assertEqual(seen["retry"], 0)
        self.assertEqual(seen["scheduled"], 0)
        self.assertEqual(seen["enqueued"], 0)
        self.assertEqual(seen["queues"], ["default"])
        self.assertEqual(seen["processes"], 1)
        self.assertEqual(redis.Redis(port=self.kv.port).dbsize(), 0)

    def test_no_job_is_lost_across_hot_restarts(self):
        def reloads():
            for _ in range(2):
                time.sleep(0.3)
                self.kv.reload()
        seen = self.client("load", 300, during=reloads)
        self.assertEqual(sorted(seen["results"]),
                         sorted("%d+1000=%d" % (i, i + 1000)
                                for i in range(300)))
        self.assertEqual(self.kv.output().count("reloading"), 2)


class LimitsTest(unittest.TestCase):
    """The limits library's three strategies (a counter with INCR and
    EXPIRE, a moving window kept in a list by Lua scripts, an elastic
    window) decide as they do on redis-server, hit for hit."""

    def setUp(self):
        self.kv = Shmkv("limits")
        self.oracle = oracle()

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


# RQ's jobs, run by a worker of its own in a process of their own (RQ
# imports a job's function by name), printing what the queue saw.
RQ_RUN = textwrap.dedent('''
    import sys, time
    import redis
    from rq import Queue, Retry, Worker
    from rq.job import Job
    from rq.registry import FailedJobRegistry, FinishedJobRegistry
    import rqjobs
    r = redis.Redis(port=int(sys.argv[1]))
    q = Queue("default", connection=r)
    jobs = [q.enqueue(rqjobs.add, 1, 2, job_id="add"),
            q.enqueue(rqjobs.fail, retry=Retry(max=1), job_id="fail"),
            q.enqueue(rqjobs.add, 3, 4, job_id="after", depends_on="add"),
            q.enqueue(rqjobs.add, "a", "b", job_id="text",
                      result_ttl=600)]
    out = [len(q), sorted(q.job_ids)]
    Worker([q], connection=r).work(burst=True, logging_level="WARNING")
    for j in jobs:
        j.refresh()
        latest = j.latest_result()
        out.append((j.id, j.get_status(), j.result,
                    latest.type.name if latest else None,
                    len(j.results())))
    # A job run twice keeps both results, newest first (XREVRANGE).
    again = Job.fetch("add", connection=r)
    again.requeue() if again.get_status() == "failed" else q.enqueue_job(again)
    Worker([q], connection=r).work(burst=True, logging_level="WARNING")
    out.append([x.return_value for x in again.results()])
    out += [sorted(FailedJobRegistry(queue=q).get_job_ids()),
            sorted(FinishedJobRegistry(queue=q).get_job_ids()),
            r.type("rq:results:add"), r.xlen("rq:results:add")]
    print(repr(out))
''')
RQ_JOBS = textwrap.dedent('''
    def add(a, b):
        return a + b

    def fail():
        raise ValueError("boom")
''')


class RQTest(unittest.TestCase):
    """RQ 1.13 (Debian's) keeps its queue in lists, its registries in
    sorted sets, jobs in hashes, and each job's results in a stream
    (XADD with MAXLEN ~, XREVRANGE): its jobs, retries, dependencies and
    result history see what they see on redis-server."""

    def setUp(self):
        try:
            import rq  # noqa: F401
        except ImportError:
            if IN_CI:
                self.fail("rq is not installed (apt-get install python3-rq)")
            self.skipTest("rq is not installed (apt-get install python3-rq)")
        self.dir = tempfile.mkdtemp(prefix="shmkv_apps_rq_")
        with open(os.path.join(self.dir, "rqjobs.py"), "w") as f:
            f.write(RQ_JOBS)
        with open(os.path.join(self.dir, "run.py"), "w") as f:
            f.write(RQ_RUN)
        self.kv = Shmkv("rq")
        self.oracle = oracle()

    def tearDown(self):
        self.oracle.stop()
        self.kv.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_jobs(self, port):
        env = dict(os.environ, PYTHONPATH=self.dir)
        out = subprocess.run([sys.executable, os.path.join(self.dir, "run.py"),
                              str(port)], env=env, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        return out.stdout.strip().splitlines()[-1]

    def test_jobs_retries_and_result_streams_match_redis(self):
        mine = self.run_jobs(self.kv.port)
        theirs = self.run_jobs(self.oracle.port)
        self.assertEqual(mine, theirs)
        # Not a comparison of two failures: jobs ran and kept results.
        self.assertIn("('add', 'finished', 3, 'SUCCESSFUL', 1)", mine)
        self.assertIn("'stream'", mine)


# Django Channels' two Redis layers (channels-redis): the core layer
# (messages in sorted sets moved by Lua scripts, BZPOPMIN, groups in
# sorted sets, a channel's capacity) and the pub/sub layer, in a process
# of their own, printing what they received.
CHANNELS_RUN = textwrap.dedent('''
    import asyncio, sys
    from channels.exceptions import ChannelFull
    from channels_redis.core import RedisChannelLayer
    from channels_redis.pubsub import RedisPubSubChannelLayer

    async def main(port):
        out = []
        layer = RedisChannelLayer(hosts=[("127.0.0.1", port)], capacity=5,
                                  expiry=10)
        ch = await layer.new_channel()
        await layer.send(ch, {"type": "hello", "n": 1})
        out.append(await layer.receive(ch))
        await layer.group_add("g", ch)
        ch2 = await layer.new_channel()
        await layer.group_add("g", ch2)
        await layer.group_send("g", {"type": "broadcast", "x": 2})
        out += [await layer.receive(ch), await layer.receive(ch2)]
        await layer.group_discard("g", ch2)
        await layer.group_send("g", {"type": "again"})
        out.append(await layer.receive(ch))
        sent = 0
        try:
            for i in range(7):
                await layer.send("specific.x!y", {"type": "t", "i": i})
                sent += 1
        except ChannelFull:
            pass
        out.append(("sent before full", sent))
        await layer.flush()
        ps = RedisPubSubChannelLayer(hosts=["redis://127.0.0.1:%d" % port])
        c = await ps.new_channel()
        await ps.group_add("pg", c)
        await asyncio.sleep(0.2)
        await ps.group_send("pg", {"type": "ps", "v": 3})
        out.append(await asyncio.wait_for(ps.receive(c), 10))
        await ps.flush()
        print(repr(out))

    asyncio.run(main(int(sys.argv[1])))
''')


class ChannelsTest(unittest.TestCase):
    """Django Channels' Redis layers (Debian python3-channels-redis):
    direct and group messages, a full channel, and the pub/sub layer
    deliver what they deliver on redis-server."""

    def setUp(self):
        try:
            import channels_redis  # noqa: F401
        except ImportError:
            why = "channels-redis is not installed " \
                  "(apt-get install python3-channels-redis)"
            if IN_CI:
                self.fail(why)
            self.skipTest(why)
        self.kv = Shmkv("channels")
        self.oracle = oracle()

    def tearDown(self):
        self.oracle.stop()
        self.kv.stop()

    def run_layers(self, port):
        out = subprocess.run([sys.executable, "-c", CHANNELS_RUN, str(port)],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        return out.stdout.strip().splitlines()[-1]

    def test_layers_deliver_as_on_redis(self):
        mine = self.run_layers(self.kv.port)
        theirs = self.run_layers(self.oracle.port)
        self.assertEqual(mine, theirs)
        # Not a comparison of two failures: messages went through.
        self.assertIn("'broadcast'", mine)
        self.assertIn("('sent before full', 5)", mine)


# Django's cache and its sessions on django-redis, in a process of their
# own (Django is configured once per process), printing what they saw.
DJANGO_RUN = textwrap.dedent('''
    import sys
    import django
    from django.conf import settings
    settings.configure(
        CACHES={"default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:%s/4" % sys.argv[1],
            "OPTIONS": {"CLIENT_CLASS":
                        "django_redis.client.DefaultClient"}}},
        SESSION_ENGINE="django.contrib.sessions.backends.cache",
        INSTALLED_APPS=["django.contrib.sessions"], SECRET_KEY="test")
    django.setup()
    from django.core.cache import cache
    from django.contrib.sessions.backends.cache import SessionStore
    out = []
    cache.set("a", {"x": 1}, timeout=30)
    out += [cache.get("a"), cache.add("a", 2), cache.add("b", 2),
            cache.incr("b", 5), cache.decr("b")]
    cache.set_many({"m1": 1, "m2": [1, 2], "m3": "s"})
    out += [dict(cache.get_many(["m1", "m2", "m3", "none"])),
            cache.ttl("a"), cache.persist("a"), cache.ttl("a"),
            cache.expire("a", 100), cache.ttl("a"),
            sorted(cache.keys("m*")), sorted(cache.iter_keys("m*")),
            cache.delete_pattern("m*"), dict(cache.get_many(["m1", "m2"]))]
    with cache.lock("lk", timeout=5):
        out.append(cache.has_key("lk"))
    out += [cache.has_key("lk"), cache.get_or_set("g", lambda: 42),
            cache.touch("g", 60)]
    s = SessionStore()
    s["user"] = 7
    s["cart"] = [1, 2]
    s.save()
    key = s.session_key
    again = SessionStore(session_key=key)
    out.append((again["user"], again["cart"]))
    again.cycle_key()
    out += [SessionStore().exists(key), SessionStore().exists(again.session_key)]
    again.flush()
    out.append(SessionStore().exists(again.session_key))
    cache.clear()
    out.append(cache.get("a"))
    print(repr(out))
''')


class DjangoTest(unittest.TestCase):
    """Django's cache and its cached sessions on django-redis (pickled
    strings with TTLs, INCR, MSET and MGET, SCAN-and-DEL patterns, a lock
    released by Lua, FLUSHDB) see what they see on redis-server."""

    def setUp(self):
        try:
            import django  # noqa: F401
            import django_redis  # noqa: F401
        except ImportError:
            if IN_CI:
                self.fail("python3-django-redis not installed")
            self.skipTest("python3-django-redis not installed")
        self.kv = Shmkv("django")
        self.oracle = oracle()
        self.dir = tempfile.TemporaryDirectory()
        self.script = os.path.join(self.dir.name, "run_django.py")
        with open(self.script, "w") as f:
            f.write(DJANGO_RUN)

    def tearDown(self):
        self.dir.cleanup()
        self.oracle.stop()
        self.kv.stop()

    def run_on(self, port):
        done = subprocess.run([sys.executable, "-W", "ignore", self.script,
                               str(port)], capture_output=True, timeout=120,
                              preexec_fn=die_with_test)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()

    def test_cache_and_sessions_match_redis(self):
        mine = self.run_on(self.kv.port)
        self.assertEqual(mine, self.run_on(self.oracle.port))
        self.assertIn("(7, [1, 2])", mine)  # the session came back


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    SHMKV = sys.argv[1]
    if not os.access(REDIS_SERVER, os.X_OK):
        skip("redis-server not installed (apt-get install redis-server)")
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
