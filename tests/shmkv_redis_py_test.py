"""shmkv spoken to by a real Redis client: redis-py (Debian python3-redis).

Run by ctest as: python3 shmkv_redis_py_test.py SHMKV_BIN SHMC_BIN
Exits 77 (ctest: skipped) when redis-py or redis-server is missing.

Each test starts its own shmkv on free loopback ports and segments named
after this process and the test, and removes those segments (with `shmc
rm`, which removes only shmc segments) when it is done.
"""
import multiprocessing
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "support"))
from servers import REDIS_SERVER, RedisServer, Shmkv as ShmkvServer  # noqa: E402
from servers import wait_ready  # noqa: E402
import unittest

try:
    import redis
except ImportError:
    print("redis-py not installed (apt-get install python3-redis)")
    sys.exit(77)

SHMKV = None
SHMC = None


class CountingRedis(redis.Redis):
    """A client that counts the commands it sends, by name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent = {}

    def execute_command(self, *args, **options):
        name = str(args[0]).upper()
        self.sent[name] = self.sent.get(name, 0) + 1
        return super().execute_command(*args, **options)


def incr_with_watch(port, key, times, result):
    """WATCH/MULTI/EXEC increments, retried on conflict; counts retries."""
    r = redis.Redis(port=port)
    retries = 0
    for _ in range(times):
        with r.pipeline() as p:
            while True:
                try:
                    p.watch(key)
                    v = int(p.get(key) or 0)
                    p.multi()
                    p.set(key, v + 1)
                    p.execute()
                    break
                except redis.WatchError:
                    retries += 1
    result.put(retries)


class RedisPyTest(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()

    def start(self, tag, extra=(), env=None, password=None):
        s = ShmkvServer(SHMKV, "/shmkv_py_%d_%s" % (os.getpid(), tag),
                        extra, env)
        self.servers.append(s)
        wait_ready(s.port, password, s.proc)
        return s

    def test_transactional_pipeline(self):
        s = self.start("pipe")
        r = redis.Redis(port=s.port, decode_responses=True)
        p = r.pipeline()  # transaction=True: MULTI ... EXEC
        p.set("a", "1").incr("a").get("a").mset({"b": "x", "c": "y"})
        p.rename("b", "d").mget("b", "c", "d").incrbyfloat("f", 1.5)
        self.assertEqual(p.execute(), [True, 2, "2", True, True,
                                       [None, "y", "x"], 1.5])
        # A command that fails at run time does not stop the others, and
        # redis-py reports it in its place.
        p = r.pipeline()
        p.set("s", "text").incr("s").set("t", "ok")
        res = p.execute(raise_on_error=False)
        self.assertTrue(res[0])
        self.assertIsInstance(res[1], redis.ResponseError)
        self.assertTrue(res[2])
        self.assertEqual(r.get("t"), "ok")
        # A refused command discards the whole transaction.
        p = r.pipeline()
        p.set("u", "1").execute_command("NOSUCHCOMMAND")
        with self.assertRaises(redis.ResponseError):
            p.execute()
        self.assertIsNone(r.get("u"))
        # Non-transactional pipelines and the string commands.
        p = r.pipeline(transaction=False)
        p.setex("e", 100, "v").getex("e", persist=True).ttl("e")
        p.setrange("e", 3, "zz").getrange("e", 0, -1).setbit("bits", 3, 1)
        p.bitcount("bits").getdel("e").exists("e")
        self.assertEqual(p.execute(), [True, "v", -1, 5, "v\x00\x00zz", 0,
                                       1, "v\x00\x00zz", 0])

    def test_hashes(self):
        # A session store's shape: one hash per session, fields updated in
        # pipelines and transactions, read back whole, across two workers.
        s = self.start("hash")
        r = redis.Redis(port=s.port, decode_responses=True)
        self.assertEqual(r.hset("session:1", mapping={
            "user": "ann", "visits": 0, "cart": ""}), 3)
        self.assertEqual(r.hincrby("session:1", "visits", 5), 5)
        self.assertEqual(r.hincrbyfloat("session:1", "score", 0.5), 0.5)
        self.assertEqual(r.hgetall("session:1"), {
            "user": "ann", "visits": "5", "cart": "", "score": "0.5"})
        self.assertEqual(r.hmget("session:1", ["user", "nope"]),
                         ["ann", None])
        self.assertTrue(r.hexists("session:1", "cart"))
        self.assertEqual(r.hsetnx("session:1", "user", "bob"), 0)
        self.assertEqual(r.hlen("session:1"), 4)
        self.assertEqual(sorted(r.hkeys("session:1")),
                         ["cart", "score", "user", "visits"])
        self.assertEqual(r.hstrlen("session:1", "user"), 3)
        self.assertIn(r.hrandfield("session:1"),
                      {"user", "visits", "cart", "score"})
        self.assertEqual(len(r.hrandfield("session:1", 2, withvalues=True)),
                         4)
        self.assertEqual(dict(r.hscan_iter("session:1", match="u*")),
                         {"user": "ann"})
        self.assertEqual(r.type("session:1"), "hash")
        with self.assertRaises(redis.ResponseError) as e:
            r.get("session:1")
        self.assertIn("WRONGTYPE", str(e.exception))
        p = r.pipeline()  # MULTI ... EXEC
        p.hset("session:2", "user", "bob").expire("session:2", 100)
        p.hincrby("session:2", "visits", 1).hgetall("session:2").ttl(
            "session:2")
        self.assertEqual(p.execute(), [1, True, 1,
                                       {"user": "bob", "visits": "1"}, 100])
        p = r.pipeline(transaction=False)
        for i in range(100):
            p.hset("session:%d" % (i + 10), mapping={"n": i, "name": "u%d" % i})
        p.execute()
        # Every connection (any worker) sees every session.
        for _ in range(4):
            other = redis.Redis(port=s.port, decode_responses=True)
            self.assertEqual(other.hget("session:42", "name"), "u32")
            other.close()
        self.assertEqual(r.hdel("session:1", "user", "visits", "cart",
                                "score"), 4)
        self.assertEqual(r.exists("session:1"), 0)

    def test_lists(self):
        # A job queue's shape: producers LPUSH, a worker moves a job to its
        # processing list with LMOVE and acknowledges it with LREM; a long
        # backlog (many chunks) drains in order.
        s = self.start("list")
        r = redis.Redis(port=s.port, decode_responses=True)
        p = r.pipeline(transaction=False)
        for i in range(5000):
            p.lpush("queue", "job:%d" % i)
        p.execute()
        self.assertEqual(r.llen("queue"), 5000)
        self.assertEqual(r.lindex("queue", -1), "job:0")
        done = []
        while True:
            job = r.lmove("queue", "processing", "RIGHT", "LEFT")
            if job is None:
                break
            self.assertEqual(r.lrem("processing", 1, job), 1)
            done.append(job)
        self.assertEqual(done, ["job:%d" % i for i in range(5000)])
        self.assertEqual(r.exists("queue", "processing"), 0)
        p = r.pipeline()  # MULTI ... EXEC
        p.rpush("l", "a", "b", "c").lrange("l", 0, -1).rpoplpush("l", "l")
        p.lpos("l", "b").linsert("l", "BEFORE", "b", "x").ltrim("l", 0, 1)
        p.lrange("l", 0, -1).lpop("l", 5)
        self.assertEqual(p.execute(), [3, ["a", "b", "c"], "c", 2, 4, True,
                                       ["c", "a"], ["c", "a"]])
        self.assertEqual(r.lmpop(2, "none", "l", direction="LEFT"), None)
        r.rpush("m", 1, 2, 3)
        self.assertEqual(r.lmpop(2, "none", "m", direction="RIGHT",
                                 count=2), ["m", ["3", "2"]])

    def test_blocking_queue_workers(self):
        # The job-queue shape RQ, Celery and Sidekiq use: worker
        # connections wait in BRPOP / BLMOVE while producers push; every
        # job reaches exactly one worker, and idle workers time out.
        s = self.start("block")
        r = redis.Redis(port=s.port, decode_responses=True)
        got, lock = [], threading.Lock()

        def worker(n):
            c = redis.Redis(port=s.port, decode_responses=True)
            while True:
                job = c.brpop(["jobs:high", "jobs:low"], timeout=1)
                if job is None:
                    return
                with lock:
                    got.append(job)
                if job[1] == "stop":
                    return

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in ts:
            t.start()
        for i in range(300):
            r.lpush("jobs:low" if i % 3 else "jobs:high", "job:%d" % i)
        for t in ts:
            t.join(30)
        self.assertEqual(sorted(j for _, j in got),
                         sorted("job:%d" % i for i in range(300)))
        self.assertEqual(r.exists("jobs:high", "jobs:low"), 0)
        # The reliable-queue move, and a sorted-set wait.
        c = redis.Redis(port=s.port, decode_responses=True)
        out = []
        t = threading.Thread(target=lambda: out.append(
            c.blmove("q", "processing", 5, "RIGHT", "LEFT")))
        t.start()
        time.sleep(0.2)
        r.lpush("q", "payload")
        t.join(10)
        self.assertEqual(out, ["payload"])
        self.assertEqual(r.lrange("processing", 0, -1), ["payload"])
        self.assertEqual(r.blpop(["empty"], timeout=0.05), None)
        t = threading.Thread(target=lambda: out.append(c.bzpopmin("z", 5)))
        t.start()
        time.sleep(0.2)
        r.zadd("z", {"b": 2, "a": 1})
        t.join(10)
        self.assertEqual(out[-1], ("z", "a", 1.0))
        self.assertEqual(int(r.info("clients")["blocked_clients"]), 0)

    def test_stream_consumer_groups(self):
        # A work queue on a stream: workers in one consumer group read
        # with XREADGROUP BLOCK and acknowledge; one dies holding jobs,
        # and a recovery pass claims them with XAUTOCLAIM. Every job is
        # done, none is left pending, and redis-py reads every reply.
        s = self.start("groups")
        r = redis.Redis(port=s.port, decode_responses=True)
        r.xgroup_create("jobs", "workers", id="$", mkstream=True)
        done, lock = [], threading.Lock()

        def worker(name):
            c = redis.Redis(port=s.port, decode_responses=True)
            while True:
                got = c.xreadgroup("workers", name, {"jobs": ">"}, count=5,
                                   block=1000)
                if not got:
                    return
                for _, entries in got:
                    for eid, fields in entries:
                        with lock:
                            done.append(fields["n"])
                        c.xack("jobs", "workers", eid)

        # A consumer that reads three jobs and dies before acknowledging.
        for i in range(3):
            r.xadd("jobs", {"n": str(i)})
        self.assertEqual(len(r.xreadgroup("workers", "dies", {"jobs": ">"},
                                          count=3)[0][1]), 3)
        ts = [threading.Thread(target=worker, args=(n,))
              for n in ("w1", "w2", "w3")]
        for t in ts:
            t.start()
        for i in range(3, 300):
            r.xadd("jobs", {"n": str(i)}, maxlen=1000)
        for t in ts:
            t.join(30)
        # Recovery: claim what the dead consumer holds, do it, ack it.
        summary = r.xpending("jobs", "workers")
        held = summary["pending"]
        cursor = "0-0"
        while True:
            cursor, claimed, gone = r.xautoclaim("jobs", "workers", "w1", 0,
                                                 cursor, count=50)
            self.assertEqual(gone, [])
            for eid, fields in claimed:
                done.append(fields["n"])
                r.xack("jobs", "workers", eid)
            if cursor == "0-0":
                break
        self.assertEqual(sorted(done, key=int),
                         [str(i) for i in range(300)])
        self.assertEqual(r.xpending("jobs", "workers")["pending"], 0)
        group = r.xinfo_groups("jobs")[0]
        self.assertEqual(group["name"], "workers")
        self.assertEqual(group["pending"], 0)
        self.assertEqual(group["last-delivered-id"],
                         r.xinfo_stream("jobs")["last-generated-id"])
        self.assertEqual(group["entries-read"], 300)
        self.assertEqual(group["lag"], 0)
        names = sorted(c["name"] for c in r.xinfo_consumers("jobs",
                                                             "workers"))
        self.assertEqual(names, ["dies", "w1", "w2", "w3"])
        self.assertEqual(held, 3)
        # XCLAIM by hand, XPENDING's range form, and the full XINFO.
        eid = r.xadd("jobs", {"n": "late"})
        r.xreadgroup("workers", "w2", {"jobs": ">"}, count=1)
        rows = r.xpending_range("jobs", "workers", "-", "+", 10)
        self.assertEqual([(x["message_id"], x["consumer"],
                           x["times_delivered"]) for x in rows],
                         [(eid, "w2", 1)])
        self.assertEqual(r.xclaim("jobs", "workers", "w3", 0, [eid],
                                  justid=True), [eid])
        full = r.xinfo_stream("jobs", full=True)
        self.assertEqual(full["groups"][0]["pel-count"], 1)
        self.assertEqual(r.xgroup_delconsumer("jobs", "workers", "w3"), 1)
        self.assertEqual(r.xgroup_destroy("jobs", "workers"), 1)
        self.assertEqual(r.xinfo_groups("jobs"), [])

    def test_sets_and_sorted_sets(self):
        # Tags in sets; a leaderboard and a schedule in sorted sets, the
        # shapes rate limiters and job schedulers use.
        s = self.start("sets")
        r = redis.Redis(port=s.port, decode_responses=True)
        self.assertEqual(r.sadd("tags:1", "a", "b", "c"), 3)
        self.assertEqual(r.sadd("tags:2", "b", "c", "d"), 3)
        self.assertEqual(r.sinter("tags:1", "tags:2"), {"b", "c"})
        self.assertEqual(r.sunion("tags:1", "tags:2"), {"a", "b", "c", "d"})
        self.assertEqual(r.sdiff("tags:1", "tags:2"), {"a"})
        self.assertTrue(r.sismember("tags:1", "a"))
        self.assertEqual(r.smismember("tags:1", ["a", "z"]), [1, 0])
        self.assertEqual(r.sintercard(2, ["tags:1", "tags:2"]), 2)
        self.assertEqual(set(r.sscan_iter("tags:1")), {"a", "b", "c"})
        self.assertIn(r.spop("tags:1"), {"a", "b", "c"})
        self.assertEqual(r.scard("tags:1"), 2)
        p = r.pipeline()
        for i in range(1000):
            p.zadd("board", {"player:%d" % i: i % 97})
        p.execute()
        self.assertEqual(r.zcard("board"), 1000)
        top = r.zrevrange("board", 0, 2, withscores=True)
        self.assertEqual([score for _, score in top], [96.0, 96.0, 96.0])
        self.assertEqual(r.zincrby("board", 5, "player:0"), 5.0)
        self.assertEqual(r.zscore("board", "player:0"), 5.0)
        self.assertEqual(r.zcount("board", 90, "+inf"), 70)
        self.assertEqual(len(r.zrangebyscore("board", "(95", "+inf")), 10)
        # A schedule: due jobs are popped by score.
        now = 1000
        r.zadd("schedule", {"job:a": now - 5, "job:b": now + 5,
                            "job:c": now - 1})
        due = r.zrangebyscore("schedule", "-inf", now)
        self.assertEqual(due, ["job:a", "job:c"])
        self.assertEqual(r.zrem("schedule", *due), 2)
        self.assertEqual(r.zpopmin("schedule"), [("job:b", 1005.0)])
        self.assertEqual(r.exists("schedule"), 0)
        p = r.pipeline()  # MULTI ... EXEC
        p.zadd("z", {"a": 1, "b": 2}).zunionstore("u", ["z", "board"])
        p.zrank("z", "b").zrange("z", 0, -1, withscores=True)
        self.assertEqual(p.execute(), [2, 1002, 1,
                                       [("a", 1.0), ("b", 2.0)]])

    def test_hyperloglog_unique_visitors(self):
        # Daily unique visitors, the usual HyperLogLog shape: a PFADD per
        # visit from several workers' connections, a week merged with
        # PFMERGE, counts within the estimator's error, and a value that
        # moves to another key and back through DUMP and RESTORE.
        s = self.start("hll", extra=("--workers", "2"))
        clients = [redis.Redis(port=s.port) for _ in range(4)]
        for day in range(7):
            p = clients[day % 4].pipeline(transaction=False)
            for v in range(day * 1000, day * 1000 + 3000):
                p.pfadd("visitors:%d" % day, "user:%d" % v)
            p.execute()
        r = clients[0]
        for day in range(7):
            self.assertLess(abs(r.pfcount("visitors:%d" % day) - 3000), 3000 * 0.03)
        days = ["visitors:%d" % d for d in range(7)]
        self.assertTrue(r.pfmerge("week", *days))
        week = r.pfcount("week")
        self.assertLess(abs(week - 9000), 9000 * 0.03)
        self.assertEqual(r.pfcount(*days), week)
        p = r.pipeline()  # MULTI ... EXEC
        p.pfadd("week", "user:new").pfcount("week")
        added, after = p.execute()
        # One element more raises at most one register: the estimate only
        # grows, by about one.
        self.assertTrue(0 <= after - week <= 3 if added else after == week)
        self.assertEqual(r.execute_command("PFDEBUG", "ENCODING", "week"), b"dense")
        r.restore("copy", 0, r.dump("week"))
        self.assertEqual(r.get("copy"), r.get("week"))
        self.assertEqual(r.pfcount("copy"), after)

    def test_geospatial_store_locator(self):
        # A store locator: shops GEOADDed in a pipeline, the nearest ones
        # to a customer with their distances and positions, a box search,
        # and a stored result read back as the sorted set it is.
        s = self.start("geo")
        r = redis.Redis(port=s.port, decode_responses=True)
        p = r.pipeline(transaction=False)
        for i in range(200):
            p.geoadd("shops", (2.30 + (i % 20) * 0.005,
                               48.80 + (i // 20) * 0.005, "shop:%d" % i))
        self.assertEqual(sum(p.execute()), 200)
        near = r.geosearch("shops", longitude=2.3, latitude=48.8, radius=600,
                           unit="m", sort="ASC", count=3, withdist=True,
                           withcoord=True)
        self.assertEqual(near[0][0], "shop:0")
        self.assertLess(near[0][1], 1.0)
        self.assertEqual(len(near), 3)
        self.assertTrue(all(near[i][1] <= near[i + 1][1] for i in range(2)))
        lon, lat = near[0][2]
        self.assertAlmostEqual(lon, 2.30, places=4)
        self.assertAlmostEqual(lat, 48.80, places=4)
        box = r.geosearch("shops", member="shop:0", width=1.2, height=1.2,
                          unit="km")
        self.assertGreater(len(box), 3)
        self.assertEqual(r.geosearchstore("nearby", "shops", longitude=2.3,
                                          latitude=48.8, radius=1, unit="km",
                                          storedist=True), len(r.georadius(
                                              "shops", 2.3, 48.8, 1, unit="km")))
        self.assertEqual(r.type("nearby"), "zset")
        self.assertAlmostEqual(r.geodist("shops", "shop:0", "shop:1", "m"),
                               367.0, delta=5)
        self.assertEqual(len(r.geohash("shops", "shop:0")[0]), 11)

    def test_scan_iter_round_trips(self):
        keys = 100000
        counts = {}
        s = self.start("scan")
        oracle = RedisServer()
        try:
            wait_ready(oracle.port, proc=oracle.proc)
            for label, port in (("shmkv", s.port), ("redis", oracle.port)):
                r = CountingRedis(port=port)
                p = r.pipeline(transaction=False)
                for i in range(keys):
                    p.set("key:%d" % i, i)
                    if i % 5000 == 4999:
                        p.execute()
                p.execute()
                seen = set(r.scan_iter(count=100))
                self.assertEqual(len(seen), keys, label)
                counts[label] = r.sent.get("SCAN", 0)
        finally:
            oracle.stop()
        print("scan_iter over %d keys: shmkv %d SCAN calls, redis %d"
              % (keys, counts["shmkv"], counts["redis"]))
        self.assertLessEqual(counts["shmkv"], 2 * counts["redis"], counts)

    def test_watch_conflicts_and_retries(self):
        s = self.start("watch")
        a = redis.Redis(port=s.port)
        b = redis.Redis(port=s.port)
        # A conflict forced step by step: B writes between A's WATCH and
        # EXEC, so A's transaction does not run.
        a.set("k", 1)
        with a.pipeline() as p:
            p.watch("k")
            p.multi()
            p.incr("k")
            b.set("k", 10)
            with self.assertRaises(redis.WatchError):
                p.execute()
        self.assertEqual(int(a.get("k")), 10)
        # Two competing processes, each 300 increments: none lost.
        times = 300
        q = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=incr_with_watch,
                                         args=(s.port, "counter", times, q))
                 for _ in range(2)]
        for p in procs:
            p.start()
        retries = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        self.assertEqual(int(a.get("counter")), 2 * times)
        print("WATCH retries under two competing clients:", retries)

    def test_scripts(self):
        """register_script falls back from EVALSHA to EVAL's cache on
        NOSCRIPT, in and out of pipelines; redis-py's Lock (Lua scripts)
        works; a rate limiter script answers as redis-server's."""
        s = self.start("lua")
        r = CountingRedis(port=s.port, decode_responses=True)
        r.script_flush()
        limiter = r.register_script("""
            local n = redis.call('incr', KEYS[1])
            if n == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end
            if n > tonumber(ARGV[2]) then return {n, 0} end
            return {n, 1}""")
        got = [limiter(keys=["rl:user"], args=[60000, 3]) for _ in range(5)]
        self.assertEqual(got, [[1, 1], [2, 1], [3, 1], [4, 0], [5, 0]])
        # The first call met NOSCRIPT and loaded it; the others hit.
        self.assertEqual(r.sent.get("EVALSHA"), 6)
        self.assertEqual(r.sent.get("SCRIPT LOAD", 0) +
                         r.sent.get("SCRIPT", 0), 1)
        self.assertGreater(r.pttl("rl:user"), 0)
        # Through a fresh connection (maybe the other worker): cached.
        other = CountingRedis(port=s.port, decode_responses=True)
        again = other.register_script(limiter.script)
        self.assertEqual(again(keys=["rl:other"], args=[1000, 1]), [1, 1])
        self.assertEqual(other.sent.get("EVALSHA"), 1)
        self.assertNotIn("SCRIPT", other.sent)
        # Flushed: the next call loads it again, transparently.
        r.script_flush()
        self.assertEqual(limiter(keys=["rl:user"], args=[60000, 3]), [6, 0])
        # In a transactional pipeline: redis-py loads what is missing first.
        r.script_flush()
        p = r.pipeline()
        limiter(keys=["rl:p"], args=[1000, 1], client=p)
        limiter(keys=["rl:p"], args=[1000, 1], client=p)
        p.get("rl:p")
        self.assertEqual(p.execute(), [[1, 1], [2, 0], "2"])
        # Errors carry Redis's text.
        bad = r.register_script("return redis.call('incr', KEYS[1])")
        r.set("word", "abc")
        with self.assertRaises(redis.exceptions.ResponseError) as cm:
            bad(keys=["word"])
        self.assertIn("value is not an integer or out of range",
                      str(cm.exception))
        # redis-py's Lock: acquire, extend and release are Lua scripts.
        lock = r.lock("resource", timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertFalse(r.lock("resource", timeout=5).acquire(
            blocking=False))
        self.assertTrue(lock.extend(10))
        self.assertGreater(r.pttl("resource"), 10000)
        lock.release()
        self.assertEqual(r.exists("resource"), 0)
        with self.assertRaises(redis.exceptions.LockError):
            lock.release()
        # The same scripts against redis-server answer the same.
        oracle = RedisServer()
        try:
            wait_ready(oracle.port, None, oracle.proc)
            o = redis.Redis(port=oracle.port, decode_responses=True)
            body = ("local t = {} for i, k in ipairs(KEYS) do "
                    "t[i] = redis.call('hincrby', k, ARGV[1], i) end "
                    "return {t, cjson.encode(t), redis.call('hgetall', "
                    "KEYS[1]), redis.pcall('lpush', KEYS[1], 1)}")
            for client in (r, o):
                client.delete("h1", "h2")
            mine = [r.eval(body, 2, "h1", "h2", "f") for _ in range(2)]
            theirs = [o.eval(body, 2, "h1", "h2", "f") for _ in range(2)]
            self.assertEqual(repr(mine), repr(theirs))
        finally:
            oracle.stop()

    def test_pubsub(self):
        """PubSub.get_message and listen, patterns, many subscribers on
        both workers: every message arrives, in order."""
        s = self.start("pubsub")
        r = redis.Redis(port=s.port, decode_responses=True)
        subs = []
        for i in range(6):  # spread over both workers
            p = redis.Redis(port=s.port, decode_responses=True).pubsub()
            if i % 3 == 2:
                p.psubscribe("jobs.*")
            else:
                p.subscribe("jobs.done")
            first = p.get_message(timeout=5)
            self.assertIn(first["type"], ("subscribe", "psubscribe"))
            subs.append(p)
        self.assertEqual(r.pubsub_numsub("jobs.done"), [("jobs.done", 4)])
        self.assertEqual(r.pubsub_numpat(), 1)
        self.assertEqual(r.pubsub_channels(), ["jobs.done"])
        for i in range(200):
            self.assertEqual(r.publish("jobs.done", "job %d" % i), 6)
        for p in subs:
            got = []
            while len(got) < 200:
                m = p.get_message(timeout=5)
                self.assertIsNotNone(m, "a message is missing")
                got.append(m)
            self.assertEqual([m["data"] for m in got],
                             ["job %d" % i for i in range(200)])
            kind = got[0]["type"]
            self.assertIn(kind, ("message", "pmessage"))
            if kind == "pmessage":
                self.assertEqual(got[0]["pattern"], "jobs.*")
            self.assertIsNone(p.get_message(timeout=0.1))
        # listen(), in a thread, until a message says stop
        listener = subs[0]
        seen = []

        def listen():
            for m in listener.listen():
                if m["type"] == "message":
                    seen.append(m["data"])
                    if m["data"] == "stop":
                        return
        t = threading.Thread(target=listen)
        t.start()
        for word in ("a", "b", "stop"):
            r.publish("jobs.done", word)
        t.join(timeout=10)
        self.assertEqual(seen, ["a", "b", "stop"])
        for p in subs:
            p.close()
        # Closed connections leave their channels and their pattern as
        # the server notices each close: wait for both.
        deadline = time.time() + 5
        while (r.pubsub_numsub("jobs.done")[0][1] or r.pubsub_numpat()) \
                and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(r.pubsub_numsub("jobs.done"), [("jobs.done", 0)])
        self.assertEqual(r.pubsub_numpat(), 0)
        self.assertEqual(r.publish("jobs.done", "nobody"), 0)

    def test_auth(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("s3cret\n")
            path = f.name
        try:
            s = self.start("auth", ["--requirepass-file", path],
                           password="s3cret")
        finally:
            os.unlink(path)
        with self.assertRaises(redis.exceptions.AuthenticationError):
            redis.Redis(port=s.port).get("x")
        # redis-py 4.3 reports WRONGPASS as a plain ResponseError.
        with self.assertRaises(redis.exceptions.ResponseError) as cm:
            redis.Redis(port=s.port, password="wrong").ping()
        self.assertTrue(str(cm.exception).startswith("WRONGPASS"))
        r = redis.Redis(port=s.port, password="s3cret")
        self.assertTrue(r.set("x", "1"))
        r2 = redis.Redis(port=s.port, username="default", password="s3cret")
        self.assertEqual(r2.get("x"), b"1")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    SHMKV, SHMC = sys.argv[1], sys.argv[2]
    if not os.access(REDIS_SERVER, os.X_OK):
        print("redis-server not installed (apt-get install redis-server)")
        sys.exit(77)
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
