// shmkv's memory as data arrives: a fresh store of a large --memory holds
// shared memory for what it was given (its value pool grows in steps, its
// journal by its largest commit), and a /dev/shm-like tmpfs that fills
// answers -OOM at the step that does not fit, with every key kept.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shmkv_server.h"
#include "tests/support/small_tmpfs.h"

namespace {

using shmkv_test::Client;
using shmkv_test::Server;
using shmc_test::FileBlocks;
using shmc_test::SmallTmpfs;


std::string Bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string Value(int i, size_t n) {
  std::string v(n, static_cast<char>('a' + i % 26));
  std::string k = std::to_string(i);
  v.replace(0, k.size(), k);
  return v;
}

constexpr long long kStep = 2LL << 20;

// SETs of k0, k1, ... (values of `bytes`) until one is refused or `most`
// are written: how many were, and in *reply the last answer.
int SetUntilRefused(Client* c, size_t bytes, int most, std::string* reply) {
  int n = 0;
  for (; n < most; ++n) {
    *reply = c->Call({"SET", "k" + std::to_string(n), Value(n, bytes)});
    if (*reply != "+OK\r\n") break;
  }
  return n;
}

// SETs of 1000-byte values k0, k1, ... until one is refused: it must be
// -OOM, well past the first few MiB. Returns how many were written.
int WriteUntilFull(Client* c) {
  std::string reply;
  const int written = SetUntilRefused(c, 1000, 100000, &reply);
  EXPECT_EQ(reply, "-OOM the store is full (raise --capacity or --memory)\r\n");
  EXPECT_GT(written, 5000) << "stopped well before the memory was full";
  return written;
}

// Every 97th key WriteUntilFull wrote reads back whole.
void ExpectKept(Client* c, int written) {
  for (int i = 0; i < written; i += 97) {
    ASSERT_EQ(c->Call({"GET", "k" + std::to_string(i)}), Bulk(Value(i, 1000)))
        << i;
  }
}

// Keys deleted give their nodes to the next writes.
void ExpectDeletesMakeRoom(Client* c) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(c->Call({"DEL", "k" + std::to_string(i)}), ":1\r\n");
  }
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(c->Call({"SET", "again" + std::to_string(i), Value(i, 1000)}),
              "+OK\r\n")
        << i;
  }
}

// A store of --memory 4G: its value pool holds blocks for one step when
// it starts and for what its keys take (in 80-byte nodes) a step at most
// more once they are written; the journal holds its header and the
// largest commit's records, not --journal-size.
TEST(ShmkvMemory, FreshStoreHoldsWhatItsDataNeeds) {
  Server s("grow");
  s.set_workers(1);
  ASSERT_TRUE(s.Start({"--memory", "4G"})) << s.log();
  const std::string pool = "/dev/shm" + s.name() + "1";
  const std::string journal = "/dev/shm" + s.name() + ".ctl.journal";
  const long long pool_at_start = FileBlocks(pool);
  ASSERT_GT(pool_at_start, 0) << pool;
  EXPECT_LE(pool_at_start, kStep + (64 << 10)) << "the pool was reserved whole";
  EXPECT_LE(FileBlocks(journal), 1LL << 20)
      << "the journal was reserved whole";
  Client c(s.port());
  constexpr int kKeys = 20000;
  constexpr size_t kBytes = 1000;  // 16 nodes of 64 bytes with the key
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(c.Call({"SET", "k" + std::to_string(i), Value(i, kBytes)}),
              "+OK\r\n");
  }
  // A commit of 100 keys: its records are reserved, and only they.
  std::vector<std::string> mset = {"MSET"};
  for (int i = 0; i < 100; ++i) {
    mset.push_back("m" + std::to_string(i));
    mset.push_back(Value(i, kBytes));
  }
  ASSERT_EQ(c.Call(mset), "+OK\r\n");
  const long long nodes_bytes = (kKeys + 100) * 16LL * 80;
  const long long pool_after = FileBlocks(pool);
  EXPECT_GE(pool_after, (kKeys + 100) * static_cast<long long>(kBytes));
  EXPECT_LE(pool_after, nodes_bytes + 2 * kStep)
      << "the pool holds more than its values and a step";
  EXPECT_LE(FileBlocks(journal), 1LL << 20);
  EXPECT_EQ(c.Call({"GET", "k77"}), Bulk(Value(77, kBytes)));
  EXPECT_EQ(c.Call({"DBSIZE"}), ":" + std::to_string(kKeys + 100) + "\r\n");
}

long long CountAfter(const std::string& text, const std::string& field) {
  size_t at = text.find(field);
  return at == std::string::npos ? -1
                                 : std::atoll(text.c_str() + at + field.size());
}

// --value-pool extents: a value costs its blob's bytes rounded up to 8
// and an 8-byte head (INFO's used_memory counts exactly that), and a
// store keeps the pool it was made with whatever a restart asks for.
TEST(ShmkvMemory, AStoreKeepsItsValuePoolAndExtentsCostTheirBytes) {
  for (const char* made : {"extents", "nodes"}) {
    SCOPED_TRACE(made);
    const std::string other = std::string(made) == "extents" ? "nodes"
                                                             : "extents";
    Server s(std::string("pool") + made);
    s.set_workers(1);
    ASSERT_TRUE(s.Start({"--value-pool", made})) << s.log();
    {
      Client c(s.port());
      const std::string info = c.Call({"INFO", "memory"});
      EXPECT_NE(info.find(std::string("value_pool:") + made),
                std::string::npos) << info;
      const long long before = CountAfter(info, "used_memory:");
      for (int i = 0; i < 1000; ++i) {
        char key[8];
        std::snprintf(key, sizeof(key), "k%04d", i);
        ASSERT_EQ(c.Call({"SET", key, Value(i, 100)}), "+OK\r\n");
      }
      const long long grew =
          CountAfter(c.Call({"INFO", "memory"}), "used_memory:") - before;
      // A blob of 16 + 5 + 100 bytes: 17 granules of 8, or 2 nodes of 80.
      EXPECT_EQ(grew, std::string(made) == "extents" ? 1000 * 136
                                                      : 1000 * 160);
    }
    s.Stop();
    ASSERT_TRUE(s.Start({"--value-pool", other.c_str()})) << s.log();
    Client c(s.port());
    EXPECT_NE(c.Call({"INFO", "memory"})
                  .find(std::string("value_pool:") + made),
              std::string::npos);
    EXPECT_EQ(c.Call({"GET", "k0500"}), Bulk(Value(500, 100)));
    EXPECT_EQ(c.Call({"DBSIZE"}), ":1000\r\n");
    s.Stop();
  }
}

// --memory is what the values may hold, whatever writes them: filled by
// SETs of small values (one map write each) and by a hash grown into
// parts (journaled commits), a store answers -OOM with used_memory at
// most maxmemory and close to it (SETs once took an eighth more: the
// extent pool's slack past the limit), and a key deleted makes room.
TEST(ShmkvMemory, AFullStoreHoldsNoMoreThanMaxmemory) {
  for (const char* made : {"extents", "nodes"}) {
    SCOPED_TRACE(made);
    Server s(std::string("cap") + made);
    s.set_workers(1);
    ASSERT_TRUE(s.Start({"--value-pool", made, "--memory", "4M"})) << s.log();
    Client c(s.port());
    std::string reply;
    const int n = SetUntilRefused(&c, 100, 200000, &reply);
    EXPECT_EQ(reply.rfind("-OOM", 0), 0u) << reply;
    std::string info = c.Call({"INFO", "memory"});
    long long used = CountAfter(info, "used_memory:");
    const long long max = CountAfter(info, "maxmemory:");
    EXPECT_LE(used, max) << info;
    EXPECT_GE(used, max - max / 20) << info;
    // Half the keys go; a hash then grows into parts until refused.
    for (int i = 0; i < n / 2; ++i) c.Call({"DEL", "k" + std::to_string(i)});
    for (int i = 0; i < 200000; ++i) {
      reply = c.Call({"HSET", "h", "f" + std::to_string(i), Value(i, 100)});
      if (reply != ":1\r\n") break;
    }
    EXPECT_EQ(reply.rfind("-OOM", 0), 0u) << reply;
    info = c.Call({"INFO", "memory"});
    used = CountAfter(info, "used_memory:");
    EXPECT_LE(used, max) << info;
    EXPECT_EQ(c.Call({"DEL", "k" + std::to_string(n - 1)}), ":1\r\n");
    EXPECT_EQ(c.Call({"SET", "again", "v"}), "+OK\r\n");
    s.Stop();
  }
}

// CONFIG SET maxmemory lowers the limit at run time for every worker (0:
// --memory again); CONFIG GET and INFO say the limit in force, never more
// than --memory.
TEST(ShmkvMemory, ConfigSetMaxmemoryLowersTheLimitForEveryWorker) {
  Server s("maxmem");
  ASSERT_TRUE(s.Start({"--memory", "64M"})) << s.log();
  auto groups = shmkv_test::OnEachWorker(s.port(), 2, 1);
  ASSERT_EQ(groups.size(), 2u);
  Client& a = *groups[0][0];
  Client& b = *groups[1][0];
  const std::string full = "*2\r\n$9\r\nmaxmemory\r\n$8\r\n67108864\r\n";
  EXPECT_EQ(a.Call({"CONFIG", "GET", "maxmemory"}), full);
  ASSERT_EQ(a.Call({"SET", "before", Value(1, 1000)}), "+OK\r\n");
  EXPECT_EQ(a.Call({"CONFIG", "SET", "maxmemory", "1mb"}), "+OK\r\n");
  EXPECT_EQ(b.Call({"CONFIG", "GET", "maxmemory"}),
            "*2\r\n$9\r\nmaxmemory\r\n$7\r\n1048576\r\n");
  EXPECT_EQ(CountAfter(b.Call({"INFO", "memory"}), "maxmemory:"), 1048576);
  // The other worker's writes stop at the new limit (each refused once
  // the store holds more, as Redis refuses commands), with what they
  // wrote kept; reads and deletes go on.
  std::string reply;
  const int n = SetUntilRefused(&b, 1000, 10000, &reply);
  EXPECT_EQ(reply.rfind("-OOM", 0), 0u) << reply;
  EXPECT_GT(n, 500);
  EXPECT_LT(n, 1100);
  EXPECT_LE(CountAfter(a.Call({"INFO", "memory"}), "used_memory:"),
            1048576 + 1100);
  EXPECT_EQ(a.Call({"GET", "before"}), Bulk(Value(1, 1000)));
  EXPECT_EQ(a.Call({"DEL", "k0"}), ":1\r\n");
  // Above --memory: the limit stays --memory. 0: --memory again.
  EXPECT_EQ(a.Call({"CONFIG", "SET", "maxmemory", "1gb"}), "+OK\r\n");
  EXPECT_EQ(b.Call({"CONFIG", "GET", "maxmemory"}), full);
  EXPECT_EQ(a.Call({"CONFIG", "SET", "maxmemory", "1"}), "+OK\r\n");
  EXPECT_EQ(b.Call({"SET", "small", "v"}).rfind("-OOM", 0), 0u);
  EXPECT_EQ(a.Call({"CONFIG", "SET", "maxmemory", "0"}), "+OK\r\n");
  EXPECT_EQ(b.Call({"CONFIG", "GET", "maxmemory"}), full);
  EXPECT_EQ(b.Call({"SET", "k" + std::to_string(n), Value(n, 1000)}),
            "+OK\r\n");
}

// Every segment of a store but its index and value pool (the control
// block, journal, statistics, latency sketches, wait board, script cache,
// pub/sub registry and ring, databases, replication state) holds little
// while it is little used: a few MiB in all, where it held 40 before they
// were made sparse. Each is used here once: a blocked client, a script,
// a subscriber and a published message, statistics published by both
// workers and read back by INFO and LATENCY HISTOGRAM.
TEST(ShmkvMemory, TheOtherSegmentsHoldWhatIsUsed) {
  Server s("segs");
  s.set_workers(2);
  ASSERT_TRUE(s.Start({"--memory", "4G"})) << s.log();
  Client c(s.port()), sub(s.port()), blocked(s.port());
  ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n");
  ASSERT_EQ(c.Call({"EVAL", "return 1", "0"}), ":1\r\n");
  EXPECT_NE(sub.Call({"SUBSCRIBE", "news"}).find("subscribe"),
            std::string::npos);
  EXPECT_EQ(c.Call({"PUBLISH", "news", "hello"}), ":1\r\n");
  EXPECT_EQ(blocked.Call({"BLPOP", "q", "0.2"}), "*-1\r\n");
  EXPECT_EQ(c.Call({"GET", "k"}), "$1\r\nv\r\n");
  usleep(300 * 1000);  // both workers publish their statistics
  EXPECT_NE(c.Call({"INFO", "commandstats"}).find("cmdstat_get:calls=1"),
            std::string::npos);
  EXPECT_NE(c.Call({"LATENCY", "HISTOGRAM", "get"}).find("calls"),
            std::string::npos);
  const std::string base = s.name().substr(1);
  long long others = 0;
  std::string seen;
  DIR* d = opendir("/dev/shm");
  ASSERT_NE(d, nullptr);
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.compare(0, base.size(), base) != 0) continue;
    const std::string rest = n.substr(base.size());
    if (rest == "0" || rest == "1") continue;  // the index and the pool
    const long long b = FileBlocks("/dev/shm/" + n);
    others += b;
    seen += rest + "=" + std::to_string(b >> 10) + "K ";
  }
  closedir(d);
  EXPECT_NE(seen.find(".ctl.stats="), std::string::npos) << seen;
  EXPECT_NE(seen.find(".ctl.waits="), std::string::npos) << seen;
  EXPECT_LE(others, 4LL << 20) << seen;
}

// Workers replaced again and again (70 reloads, more than the 64
// statistics slots) leave their figures in one retired slot and their
// slots to the next workers: every count stays (a reload's worker
// publishes as it exits), none ever goes down, and the statistics and
// latency segments hold a few slots, not one per worker ever started.
// (Slots used to be taken in turn: 25 MiB of statistics after 64
// replacements, and from the 65th the oldest worker's counts vanished.)
TEST(ShmkvMemory, ReplacedWorkersKeepTheirFiguresInAFewSlots) {
  Server s("retire");
  s.set_workers(1);
  ASSERT_TRUE(s.Start()) << s.log();
  constexpr int kRounds = 70, kSets = 3;
  long long last_total = 0;
  // A client reads the total all along: a worker's figures move into the
  // retired slot at once, so it never sees them twice (a rise, then a
  // fall) or not at all.
  std::atomic<bool> stop{false};
  std::atomic<int> falls{0}, reads{0};
  std::thread watcher([&] {
    Client w(s.port());
    long long seen = 0;
    while (!stop) {
      long long total =
          CountAfter(w.Call({"INFO", "stats"}), "total_commands_processed:");
      if (total < 0) continue;  // its connection moving to a new worker
      if (total < seen) ++falls;
      seen = std::max(seen, total);
      ++reads;
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    {
      Client c(s.port());
      for (int i = 0; i < kSets; ++i) {
        ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n") << s.log();
      }
    }
    const std::vector<pid_t> before = shmkv_test::WorkerPids(s.pid());
    ASSERT_EQ(before.size(), 1u);
    s.Signal(SIGHUP);
    // Replaced: the old worker has drained and exited.
    bool replaced = false;
    for (int i = 0; i < 1000 && !replaced; ++i) {
      std::vector<pid_t> now = shmkv_test::WorkerPids(s.pid());
      replaced = now.size() == 1 && now[0] != before[0];
      if (!replaced) usleep(10 * 1000);
    }
    ASSERT_TRUE(replaced) << "round " << round << "\n" << s.log();
    if (round % 10 == 9) {
      Client c(s.port());
      long long total =
          CountAfter(c.Call({"INFO", "stats"}), "total_commands_processed:");
      EXPECT_GE(total, last_total) << "round " << round;
      last_total = total;
    }
  }
  stop = true;
  watcher.join();
  EXPECT_EQ(falls.load(), 0) << "of " << reads.load() << " reads";
  // A worker killed keeps what it published (every 100 ms) too.
  {
    Client c(s.port());
    for (int i = 0; i < kSets; ++i) {
      ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n");
    }
  }
  usleep(300 * 1000);
  const std::vector<pid_t> before = shmkv_test::WorkerPids(s.pid());
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(kill(before[0], SIGKILL), 0);
  bool replaced = false;
  for (int i = 0; i < 1000 && !replaced; ++i) {
    std::vector<pid_t> now = shmkv_test::WorkerPids(s.pid());
    replaced = now.size() == 1 && now[0] != before[0];
    if (!replaced) usleep(10 * 1000);
  }
  ASSERT_TRUE(replaced) << s.log();
  const int sets = (kRounds + 1) * kSets;
  Client c(s.port());
  EXPECT_EQ(CountAfter(c.Call({"INFO", "commandstats"}), "cmdstat_set:calls="),
            sets);
  EXPECT_GE(CountAfter(c.Call({"INFO", "stats"}), "total_commands_processed:"),
            sets);
  EXPECT_NE(c.Call({"LATENCY", "HISTOGRAM", "set"})
                .find(":" + std::to_string(sets) + "\r\n"),
            std::string::npos)
      << c.Call({"LATENCY", "HISTOGRAM", "set"});
  // One slot's statistics is ~400 KiB, its latency records a few KiB,
  // and every slot's head a page: the current worker's, the one before
  // it and the retired slot, with the heads, stay under these.
  const std::string ctl = "/dev/shm" + s.name() + ".ctl.";
  EXPECT_LE(FileBlocks(ctl + "stats"), 2LL << 20);
  EXPECT_LE(FileBlocks(ctl + "latency"), 1LL << 20);
}

// The map on a 24 MiB tmpfs, with --memory far past it: writes go on
// until a growth step does not fit, which answers -OOM (no SIGBUS, no
// worker lost); every key written before reads back, and keys deleted
// make room that the next writes take.
TEST(ShmkvMemory, FullTmpfsAnswersOomAndKeepsEveryKey) {
  SmallTmpfs fs("24m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  const std::string name = "file:" + fs.dir() + "/store";
  Server s("oomfs");
  s.set_workers(1);
  ASSERT_TRUE(s.Start({"--name", name, "--memory", "256M", "--capacity",
                       "50000"}))
      << s.log();
  Client c(s.port());
  const pid_t worker_before = shmkv_test::WorkerPids(s.pid()).at(0);
  const int written = WriteUntilFull(&c);
  EXPECT_EQ(c.Call({"PING"}), "+PONG\r\n");
  EXPECT_EQ(shmkv_test::WorkerPids(s.pid()).at(0), worker_before)
      << "the worker died on the full tmpfs";
  EXPECT_EQ(c.Call({"DBSIZE"}), ":" + std::to_string(written) + "\r\n");
  ExpectKept(&c, written);
  // A multi-key commit that does not fit fails whole.
  EXPECT_EQ(c.Call({"MSET", "x1", Value(1, 1000), "x2", Value(2, 1000), "x3",
                    std::string(3 << 20, 'z')}).substr(0, 4),
            "-OOM");
  EXPECT_EQ(c.Call({"EXISTS", "x1", "x2", "x3"}), ":0\r\n");
  ExpectDeletesMakeRoom(&c);
  s.Stop();
  shmkv::StoreConfig cfg;
  cfg.backend = shmkv::Backend::kFile;
  cfg.name = fs.dir() + "/store";
  std::string err;
  EXPECT_TRUE(shmkv::RemoveStore(cfg, &err)) << err;
}

// The whole store on a /dev/shm of 24 MiB (a mount namespace of the
// server's own), --memory far past it: every segment is a POSIX one
// there, the statistics, latency sketches, wait board, script cache and
// pub/sub ring with the map. Writes go on until a step does not fit and
// answer -OOM; then every other kind of command still answers (its
// segment refusing what has no room, never a SIGBUS), no worker dies,
// every key written reads back, and keys deleted make room again.
TEST(ShmkvMemory, FullDevShmAnswersOomAndEveryCommandStillAnswers) {
  if (!Server::CanMountOwnShm()) {
    GTEST_SKIP() << "cannot mount a tmpfs over /dev/shm in a namespace here";
  }
  Server s("fullshm");
  s.set_workers(2);
  s.set_own_shm("24m");
  ASSERT_TRUE(s.Start({"--memory", "1G", "--capacity", "50000"})) << s.log();
  const std::vector<pid_t> workers = shmkv_test::WorkerPids(s.pid());
  ASSERT_EQ(workers.size(), 2u);
  Client c(s.port());
  const int written = WriteUntilFull(&c);
  EXPECT_GE(FileBlocks(s.shm_dir() + s.name() + "1"), 10LL << 20)
      << "the pool is not where the test put /dev/shm";
  // What the last step left free is taken too (a file of the test's in
  // the server's /dev/shm): from here no segment can reserve a page.
  const std::string filler =
      s.shm_dir() + "/" + s.name().substr(1) + ".filler";
  {
    FILE* f = std::fopen(filler.c_str(), "w");
    ASSERT_NE(f, nullptr) << filler;
    const std::string chunk(4096, 'f');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() &&
           std::fflush(f) == 0) {
    }
    std::fclose(f);
    EXPECT_GT(FileBlocks(filler), 0);
  }
  // Every kind of command, on both workers (connections alternate
  // between their listening sockets).
  for (int round = 0; round < 4; ++round) {
    Client d(s.port()), sub(s.port());
    for (const std::vector<std::string>& cmd :
         std::vector<std::vector<std::string>>{
             {"INFO", "commandstats"},
             {"LATENCY", "HISTOGRAM", "set"},
             {"EVAL", "return " + std::to_string(round), "0"},
             {"BLPOP", "q" + std::to_string(round), "0.05"},
             {"PUBLISH", "news", "hello"},
             {"HSET", "h", "f", "v"},
             {"ZADD", "z", "1", "m"},
             {"GET", "k1"}}) {
      // An answer, whatever it is: a refusal (the script cache cannot be
      // made, HSET -OOM) is one.
      std::string r = d.Call(cmd);
      EXPECT_TRUE(!r.empty() && std::string("+-:$*").find(r[0]) !=
                                    std::string::npos)
          << cmd[0] << " got no answer: " << r << "\n" << s.log();
    }
    EXPECT_FALSE(sub.Call({"SUBSCRIBE", "news"}).empty());
  }
  // Latency sketches of commands not timed before (their records grow
  // past the pages the slots hold), and 200 clients blocked at once on
  // three keys each (600 rows of the wait board, which held 128).
  {
    Client d(s.port()), e(s.port());
    for (int i = 0; i < 40; ++i) {
      for (Client* x : {&d, &e}) {
        for (const std::vector<std::string>& cmd :
             std::vector<std::vector<std::string>>{
                 {"EXISTS", "k1"}, {"STRLEN", "k2"}, {"TTL", "k3"},
                 {"TYPE", "k4"}, {"GETRANGE", "k5", "0", "3"},
                 {"MGET", "k6", "k7"}, {"DBSIZE"}, {"ECHO", "x"},
                 {"HGET", "h", "f"}, {"LLEN", "l"}, {"SCARD", "s"},
                 {"ZCARD", "z"}, {"ZSCORE", "z", "m"}, {"HLEN", "h"},
                 {"LRANGE", "l", "0", "-1"}, {"SMEMBERS", "s"},
                 {"HGETALL", "h"}, {"PTTL", "k8"}, {"RANDOMKEY"},
                 {"SISMEMBER", "s", "m"}}) {
          std::string r = x->Call(cmd);
          ASSERT_FALSE(r.empty()) << cmd[0] << "\n" << s.log();
        }
      }
    }
    std::vector<std::unique_ptr<Client>> blocked;
    for (int i = 0; i < 200; ++i) {
      blocked.push_back(std::make_unique<Client>(s.port()));
      const std::string k = "b" + std::to_string(i);
      ASSERT_TRUE(blocked.back()->SendRaw(
          Client::Encode({"BLPOP", k + "a", k + "b", k + "c", "0.3"})));
    }
    for (auto& b : blocked) {
      std::string r = b->Reply();
      EXPECT_TRUE(r == "*-1\r\n" || r == "_\r\n" || r.rfind("-ERR", 0) == 0)
          << r;
    }
  }
  usleep(300 * 1000);  // both workers publish their statistics
  EXPECT_NE(c.Call({"INFO", "commandstats"}).find("cmdstat_set:calls="),
            std::string::npos);
  EXPECT_EQ(shmkv_test::WorkerPids(s.pid()), workers)
      << "a worker died on the full /dev/shm\n" << s.log();
  EXPECT_EQ(s.log().find("signal"), std::string::npos) << s.log();
  EXPECT_EQ(c.Call({"DBSIZE"}).substr(0, 1), ":");
  ExpectKept(&c, written);
  ExpectDeletesMakeRoom(&c);
  // Room again: what was refused for want of it works (the script cache
  // is made at the next EVAL on each worker).
  ASSERT_EQ(unlink(filler.c_str()), 0);
  for (int i = 0; i < 4; ++i) {
    Client d(s.port());
    EXPECT_EQ(d.Call({"EVAL", "return 7", "0"}), ":7\r\n") << s.log();
  }
}

}  // namespace
