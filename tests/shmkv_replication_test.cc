// shmkv as a replica of a real Redis master (docs/server.md, "Replicating
// from Redis"), against redis-server started by the test: a full sync of
// 100,000 keys of every type and 10,000 writes streamed afterwards leave
// the replica equal to the master key by key; clients' writes are refused
// as a Redis replica refuses them (replies compared with a redis-server
// replica of the same master); REPLICAOF NO ONE promotes it. Then the
// replica restarted, hot restarted, its link killed and the whole server
// killed at random points under a write load: it converges to the master
// every time.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/redis_oracle.h"
#include "tests/support/same_data.h"
#include "tests/support/shmkv_server.h"
#include "tests/support/temp_files.h"

namespace {

using shmkv_test::Client;
using shmkv_test::ExpectSameData;
using shmkv_test::Pipeline;
using shmkv_test::RunAll;
using shmkv_test::RedisOracle;
using shmkv_test::Server;
using shmkv_test::TempDir;
using namespace std::chrono_literals;
using Cmds = std::vector<std::vector<std::string>>;

// A redis-server master whose files (the RDB of each full sync) go to a
// directory of the test's own, with a backlog that holds what a slow
// machine writes while the replica restarts (so it may continue).
std::vector<std::string> MasterArgs(const TempDir& dir) {
  return {"--dir", dir.path, "--repl-diskless-sync", "no",
          "--repl-backlog-size", "64mb"};
}

// 100,000 keys of every type in databases 0 and 2: strings (a tenth with
// a TTL), small hashes, lists, sets (half of them integers), sorted sets,
// and one large collection of each type.
Cmds Dataset() {
  Cmds cmds;
  const int64_t later =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count() + 3600000;
  for (int i = 0; i < 50000; ++i) {
    const std::string n = std::to_string(i);
    cmds.push_back({"SET", "s:" + n, "value " + n});
    if (i % 10 == 0) {
      cmds.push_back({"PEXPIREAT", "s:" + n, std::to_string(later + i)});
    }
  }
  for (int i = 0; i < 8000; ++i) {
    const std::string n = std::to_string(i);
    cmds.push_back({"HSET", "h:" + n, "a", n, "b", "x" + n, "c", "3.5"});
    cmds.push_back({"RPUSH", "l:" + n, "one", n, "three"});
    cmds.push_back({"SADD", "set:" + n, "m" + n, "other"});
    cmds.push_back({"SADD", "iset:" + n, n, "7", "-12"});
    cmds.push_back({"ZADD", "z:" + n, "1", "a", "2.5", "b" + n, "-3", "c"});
  }
  for (int i = 0; i < 20000; ++i) {
    const std::string n = std::to_string(i);
    cmds.push_back({"HSET", "big:h", "f" + n, n});
    cmds.push_back({"RPUSH", "big:l", n});
    cmds.push_back({"SADD", "big:s", "m" + n});
    cmds.push_back({"ZADD", "big:z", std::to_string(i * 0.25), "m" + n});
  }
  cmds.push_back({"SELECT", "2"});
  for (int i = 0; i < 10000; ++i) {
    cmds.push_back({"SET", "db2:" + std::to_string(i), std::to_string(i)});
  }
  cmds.push_back({"SELECT", "0"});
  return cmds;
}

// `n` writes of every kind Redis propagates (some as other commands:
// SPOP as SREM, EXPIRE as PEXPIREAT, EVAL as its effects in MULTI/EXEC),
// over the dataset's keys, from `seed`.
Cmds Writes(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return std::to_string(rng() % k); };
  Cmds cmds;
  int db = 0;
  while (static_cast<int>(cmds.size()) < n) {
    switch (rng() % 24) {
      case 0: cmds.push_back({"SET", "s:" + pick(60000), "w" + pick(1000)}); break;
      case 1: cmds.push_back({"INCR", "ctr:" + pick(100)}); break;
      case 2: cmds.push_back({"APPEND", "s:" + pick(50000), "+"}); break;
      case 3: cmds.push_back({"DEL", "s:" + pick(50000), "h:" + pick(8000)}); break;
      case 4: cmds.push_back({"EXPIRE", "s:" + pick(50000), "10000"}); break;
      case 5: cmds.push_back({"PERSIST", "s:" + pick(50000)}); break;
      case 6: cmds.push_back({"HSET", "h:" + pick(9000), "f" + pick(5), pick(99)}); break;
      case 7: cmds.push_back({"HINCRBY", "h:" + pick(8000), "n", "3"}); break;
      case 8: cmds.push_back({"HDEL", "big:h", "f" + pick(20000)}); break;
      case 9: cmds.push_back({"LPUSH", "l:" + pick(9000), "p" + pick(50)}); break;
      case 10: cmds.push_back({"RPOP", "l:" + pick(8000)}); break;
      case 11: cmds.push_back({"LMOVE", "l:" + pick(8000), "big:l", "LEFT", "RIGHT"}); break;
      case 12: cmds.push_back({"SADD", "set:" + pick(9000), "n" + pick(20)}); break;
      case 13: cmds.push_back({"SPOP", "iset:" + pick(8000)}); break;
      case 14: cmds.push_back({"SREM", "big:s", "m" + pick(20000)}); break;
      case 15: cmds.push_back({"ZADD", "z:" + pick(9000), pick(100), "m" + pick(9)}); break;
      case 16: cmds.push_back({"ZINCRBY", "big:z", "1.5", "m" + pick(20000)}); break;
      case 17: cmds.push_back({"ZPOPMIN", "z:" + pick(8000)}); break;
      case 18: cmds.push_back({"SET", "ttl:" + pick(500), "v", "EX", "5000"}); break;
      case 19: cmds.push_back({"INCRBYFLOAT", "f:" + pick(50), "0.5"}); break;
      case 20:
        cmds.push_back({"MULTI"});
        cmds.push_back({"INCR", "ctr:multi"});
        cmds.push_back({"RPUSH", "multi:log", pick(1000)});
        cmds.push_back({"EXEC"});
        break;
      case 21:
        cmds.push_back({"EVAL",
                        "redis.call('incr', KEYS[1]) "
                        "return redis.call('hset', KEYS[2], 'by', ARGV[1])",
                        "2", "ctr:lua", "h:" + pick(8000), pick(100)});
        break;
      case 22:
        db = db == 0 ? 2 : 0;
        cmds.push_back({"SELECT", std::to_string(db)});
        break;
      case 23: cmds.push_back({"RENAME", "s:" + pick(50000), "moved:" + pick(100000)}); break;
    }
  }
  cmds.push_back({"SELECT", "0"});
  return cmds;
}

// Sends `cmds`, answers ignored (a RENAME of a key gone fails, as it
// would for any client); false if the connection broke.
bool Send(Client* c, const Cmds& cmds) {
  for (size_t i = 0; i < cmds.size(); i += 500) {
    Cmds part(cmds.begin() + i, cmds.begin() + std::min(cmds.size(), i + 500));
    if (Pipeline(c, part).size() != part.size()) return false;
  }
  return true;
}

std::string ReplField(Client* c, const std::string& field) {
  std::string r = c->Call({"INFO", "replication"});
  size_t p = r.find("\n" + field + ":");
  if (p == std::string::npos) return "";
  size_t e = r.find("\r\n", p + 1);
  return r.substr(p + field.size() + 2, e - p - field.size() - 2);
}

// Until the replica's link is up: it has synced or continued the stream.
bool WaitLinkUp(Client* replica, int seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (ReplField(replica, "master_link_status") == "up") return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Until the replica's link is up and it applied everything the master
// has sent (the master's offset, twice alike: no write in flight).
bool WaitSynced(Client* master, Client* replica, int seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    std::string m = ReplField(master, "master_repl_offset");
    if (ReplField(replica, "master_link_status") == "up" &&
        ReplField(replica, "slave_repl_offset") == m &&
        ReplField(master, "master_repl_offset") == m) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A shmkv server sized for the dataset, its files in `dir` (its own: a
// master's dump.rdb there would be loaded at a start with an empty store).
std::vector<std::string> ReplicaArgs(const TempDir& dir) {
  return {"--capacity", "400000", "--memory", "512M", "--dir", dir.path};
}

TEST(ShmkvReplication, FullSyncThenStreamEqualsTheMasterAndPromotes) {
  TempDir dir, own;
  RedisOracle master(MasterArgs(dir));
  if (!master.ok()) GTEST_SKIP() << "no redis-server";
  Client m(master.port());
  ASSERT_TRUE(RunAll(&m, Dataset()));
  Server s("repl_full");
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  Client r(s.port());
  EXPECT_EQ(ReplField(&r, "role"), "master");
  ASSERT_EQ(r.Call({"REPLICAOF", "127.0.0.1", std::to_string(master.port())}),
            "+OK\r\n");
  ASSERT_TRUE(WaitSynced(&m, &r, 120)) << s.log();
  EXPECT_EQ(ReplField(&r, "role"), "slave");
  EXPECT_EQ(ReplField(&r, "shmkv_full_syncs"), "1");
  ExpectSameData(&m, &r, {0, 2});

  // 10,000 writes streamed while it replicates.
  ASSERT_TRUE(Send(&m, Writes(7, 10000)));
  // The master's WAIT counts it: its acknowledgements carry its offset.
  EXPECT_EQ(m.Call({"WAIT", "1", "10000"}), ":1\r\n");
  ASSERT_TRUE(WaitSynced(&m, &r, 60)) << s.log();
  ExpectSameData(&m, &r, {0, 2});
  EXPECT_EQ(ReplField(&r, "shmkv_stream_errors"), "0") << s.log();
  EXPECT_EQ(ReplField(&r, "shmkv_full_syncs"), "1");

  // Promoted: it keeps the data, takes writes, and follows no more.
  ASSERT_EQ(r.Call({"REPLICAOF", "NO", "ONE"}), "+OK\r\n");
  EXPECT_EQ(ReplField(&r, "role"), "master");
  // It answered once the link had stopped, not before.
  const std::string log = s.log();
  const size_t stopped = log.find("stopped at offset");
  ASSERT_NE(stopped, std::string::npos) << log;
  EXPECT_LT(stopped, log.find("MASTER MODE enabled")) << log;
  EXPECT_EQ(r.Call({"SET", "mine", "1"}), "+OK\r\n");
  ASSERT_EQ(m.Call({"SET", "after", "1"}), "+OK\r\n");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(r.Call({"EXISTS", "after"}), ":0\r\n");
  EXPECT_EQ(r.Call({"GET", "s:1"}), m.Call({"GET", "s:1"}));
}

// A replica's replies to clients, byte for byte as a redis-server
// replica's of the same master: writes refused (alone, queued in MULTI,
// inside a script), reads served, REPLICAOF's own answers.
TEST(ShmkvReplication, AReplicaAnswersClientsAsRedisDoes) {
  TempDir dir, replica_dir, own;
  std::vector<std::string> margs = MasterArgs(dir);
  margs.insert(margs.end(), {"--enable-debug-command", "yes"});
  RedisOracle master(margs);
  RedisOracle redis_replica({"--dir", replica_dir.path});
  if (!master.ok() || !redis_replica.ok()) GTEST_SKIP() << "no redis-server";
  Client m(master.port());
  ASSERT_EQ(m.Call({"SET", "k", "v"}), "+OK\r\n");
  ASSERT_EQ(m.Call({"HSET", "h", "f", "1"}), ":1\r\n");
  // A library the full sync carries, and one the stream does.
  ASSERT_EQ(m.Call({"FUNCTION", "LOAD",
                    "#!lua name=synced\nredis.register_function{"
                    "function_name='rf', callback=function(keys) return "
                    "redis.call('get', keys[1]) end, flags={'no-writes'}}"}),
            "$6\r\nsynced\r\n");
  Server s("repl_ro");
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  Client ours(s.port()), theirs(redis_replica.port());
  const std::string port = std::to_string(master.port());
  for (Client* c : {&ours, &theirs}) {
    ASSERT_EQ(c->Call({"REPLICAOF", "127.0.0.1", port}), "+OK\r\n");
    ASSERT_TRUE(WaitSynced(&m, c, 60)) << s.log();
  }
  ASSERT_EQ(m.Call({"FUNCTION", "LOAD",
                    "#!lua name=streamed\nredis.register_function('wf', "
                    "function(keys) return redis.call('set', keys[1], 'f') "
                    "end)"}),
            "$8\r\nstreamed\r\n");
  for (Client* c : {&ours, &theirs}) ASSERT_TRUE(WaitSynced(&m, c, 60));
  const Cmds cmds = {
      {"FCALL", "rf", "1", "k"},
      {"FCALL_RO", "rf", "1", "k"},
      {"FCALL", "wf", "1", "k"},
      {"FCALL_RO", "wf", "1", "k"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "synced", "WITHCODE"},
      {"FUNCTION", "LIST", "LIBRARYNAME", "streamed", "WITHCODE"},
      {"FUNCTION", "LOAD", "#!lua name=mine\n"
                           "redis.register_function('m', function() end)"},
      {"FUNCTION", "DELETE", "synced"},
      {"FUNCTION", "FLUSH"},
      {"FUNCTION", "RESTORE", "x"},
      {"FUNCTION", "STATS"},
      {"GET", "k"},
      {"HGETALL", "h"},
      {"SET", "k", "w"},
      {"DEL", "k"},
      {"HINCRBY", "h", "f", "1"},
      {"FLUSHALL"},
      {"MULTI"},
      {"SET", "x", "1"},
      {"GET", "k"},
      {"EXEC"},
      {"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
      {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"},
      {"EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"},
      {"PUBLISH", "ch", "m"},
      {"REPLICAOF", "127.0.0.1", port},
      {"REPLICAOF", "127.0.0.1", "99999"},
      {"REPLICAOF", "127.0.0.1", "port"},
      {"SLAVEOF", "127.0.0.1", port},
      {"GET", "k"},
  };
  for (const auto& cmd : cmds) {
    EXPECT_EQ(ours.Call(cmd), theirs.Call(cmd)) << cmd[0];
  }
  // A key past its expiry that the master has not removed yet: read as
  // gone, still counted, removed when the master's DEL comes.
  ASSERT_EQ(m.Call({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}), "+OK\r\n");
  ASSERT_EQ(m.Call({"SET", "e", "1", "PX", "100"}), "+OK\r\n");
  for (Client* c : {&ours, &theirs}) ASSERT_TRUE(WaitSynced(&m, c, 60));
  std::this_thread::sleep_for(300ms);
  for (const auto& cmd : Cmds{{"GET", "e"}, {"EXISTS", "e"}, {"TTL", "e"},
                              {"DBSIZE"}, {"GET", "e"}, {"DBSIZE"}}) {
    EXPECT_EQ(ours.Call(cmd), theirs.Call(cmd)) << cmd[0];
  }
  ASSERT_EQ(m.Call({"GET", "e"}), "$-1\r\n");  // the master removes it
  for (Client* c : {&ours, &theirs}) ASSERT_TRUE(WaitSynced(&m, c, 60));
  EXPECT_EQ(ours.Call({"DBSIZE"}), theirs.Call({"DBSIZE"}));
  std::string role_ours = ours.Call({"ROLE"}), role_theirs = theirs.Call({"ROLE"});
  EXPECT_EQ(role_ours.substr(0, role_ours.rfind(':')),
            role_theirs.substr(0, role_theirs.rfind(':')))
      << "ROLE, but for the offset";
  for (Client* c : {&ours, &theirs}) {
    ASSERT_EQ(c->Call({"REPLICAOF", "NO", "ONE"}), "+OK\r\n");
  }
  for (const auto& cmd : Cmds{{"ROLE"}, {"SET", "k", "mine"}, {"GET", "k"},
                              {"REPLICAOF", "NO", "ONE"}}) {
    std::string a = ours.Call(cmd), b = theirs.Call(cmd);
    if (cmd[0] == "ROLE") {  // offsets differ: compare the shape
      EXPECT_EQ(a.substr(0, 15), b.substr(0, 15));
    } else {
      EXPECT_EQ(a, b) << cmd[0];
    }
  }
}

// replica-serve-stale-data no: while a replica's link is down (its
// master's port has nobody listening), only the commands Redis flags
// stale run; the rest answer MASTERDOWN, alone, queued in MULTI, or held
// by an EXEC queued before the link went. Byte for byte as a redis-server
// replica of the same dead port.
TEST(ShmkvReplication, AReplicaWithItsLinkDownServesStaleDataAsRedisSays) {
  TempDir replica_dir, own;
  RedisOracle redis_replica({"--dir", replica_dir.path});
  if (!redis_replica.ok()) GTEST_SKIP() << "no redis-server";
  Server s("repl_stale");
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  Client ours(s.port()), theirs(redis_replica.port());
  Client ours2(s.port()), theirs2(redis_replica.port());
  const std::string dead = std::to_string(shmkv_test::FreePort());
  auto both = [&](const Cmds& cmds) {
    for (const auto& cmd : cmds) {
      EXPECT_EQ(ours.Call(cmd), theirs.Call(cmd)) << cmd[0];
    }
  };
  both({{"CONFIG", "GET", "replica-serve-stale-data"},
        {"CONFIG", "GET", "slave-serve-stale-data"},
        {"CONFIG", "SET", "replica-serve-stale-data", "maybe"},
        {"CONFIG", "SET", "replica-serve-stale-data", "no"},
        {"SET", "xx", "1"},
        // A master serves whatever the setting says.
        {"GET", "xx"},
        {"MULTI"},
        {"GET", "xx"}});
  for (Client* c : {&ours2, &theirs2}) {
    ASSERT_EQ(c->Call({"REPLICAOF", "127.0.0.1", dead}), "+OK\r\n");
  }
  both({{"EXEC"},  // it holds a GET queued before the link went
        {"GET", "xx"},
        {"PING"},
        {"ECHO", "x"},
        {"SET", "xx", "2"},
        {"CONFIG", "GET", "replica-serve-stale-data"},
        {"SELECT", "1"},
        {"SELECT", "0"},
        {"SCRIPT", "LOAD", "return 1"},
        {"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"},
        {"OBJECT", "ENCODING", "xx"},
        {"MULTI"},
        {"GET", "xx"},
        {"EXEC"},
        {"MULTI"},
        {"SELECT", "0"},
        {"EXEC"},
        {"CONFIG", "SET", "slave-serve-stale-data", "yes"},
        {"GET", "xx"},
        {"CONFIG", "SET", "replica-serve-stale-data", "NO"},
        {"GET", "xx"},
        {"REPLICAOF", "NO", "ONE"},
        {"GET", "xx"},
        {"CONFIG", "SET", "replica-serve-stale-data", "yes"}});
}

pid_t LinkPid(Client* replica) {
  for (int i = 0; i < 500; ++i) {
    std::string p = ReplField(replica, "shmkv_link_pid");
    if (!p.empty() && p != "0") return std::stoi(p);
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

// Under a steady write load on the master: the replica stopped and
// started (its link continues the stream: no full sync), hot restarted,
// its link killed at random points, the whole server killed at a random
// point. After each it converges to the master, key for key.
TEST(ShmkvReplication, RestartsAndKillsConvergeToTheMaster) {
  TempDir dir, own;
  RedisOracle master(MasterArgs(dir));
  if (!master.ok()) GTEST_SKIP() << "no redis-server";
  Client m(master.port());
  Cmds base = Dataset();
  base.resize(30000);  // strings and their TTLs: enough to take a while
  ASSERT_TRUE(RunAll(&m, base));
  Server s("repl_kill");
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  auto replica = std::make_unique<Client>(s.port());
  ASSERT_EQ(replica->Call({"REPLICAOF", "127.0.0.1",
                           std::to_string(master.port())}),
            "+OK\r\n");
  // The write load, stopped (and joined) however the test ends.
  struct Writer {
    std::atomic<bool> stop{false};
    std::atomic<int> batches{0};
    std::atomic<bool> ended{false};  // (the master went away)
    std::thread t;
    explicit Writer(int port)
        : t([this, port] {
            Client w(port);
            for (uint32_t seed = 100; !stop; ++seed) {
              if (!Send(&w, Writes(seed, 200))) break;
              ++batches;
              std::this_thread::sleep_for(2ms);
            }
            ended = true;
          }) {}
    ~Writer() { Join(); }
    void Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } writer(master.port());
  std::atomic<int>& batches = writer.batches;
  std::mt19937 rng(12345);
  auto wait_batches = [&](int n) {
    int until = batches + n;
    while (batches < until && !writer.ended) {
      std::this_thread::sleep_for(1ms);
    }
  };
  // (the writer may outrun a slow build's replica: up, not caught up)
  ASSERT_TRUE(WaitLinkUp(replica.get(), 120)) << s.log();
  wait_batches(5);

  // A clean stop and start: the stream goes on where it stopped. (Waited
  // for: a slow build's new link may not have asked yet when the kills
  // below begin, and a killed link syncs in full.)
  s.Stop();
  wait_batches(3);
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  replica = std::make_unique<Client>(s.port());
  ASSERT_TRUE(WaitLinkUp(replica.get(), 120)) << s.log();
  EXPECT_EQ(ReplField(replica.get(), "shmkv_full_syncs"), "1") << s.log();
  EXPECT_EQ(ReplField(replica.get(), "shmkv_partial_syncs"), "1") << s.log();
  wait_batches(3);

  // A hot restart of the workers leaves the link alone.
  pid_t link = LinkPid(replica.get());
  s.Signal(SIGHUP);
  wait_batches(5);
  EXPECT_EQ(LinkPid(replica.get()), link);

  // The link killed at random points: the next one continues or syncs
  // in full, never applies a command twice or skips one.
  for (int i = 0; i < 4; ++i) {
    pid_t pid = LinkPid(replica.get());
    ASSERT_NE(pid, 0) << s.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    kill(pid, SIGKILL);
    wait_batches(2);
  }
  // The whole server killed at a random point, then started again.
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
  s.KillAll();
  wait_batches(2);
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  replica = std::make_unique<Client>(s.port());
  wait_batches(5);
  EXPECT_FALSE(writer.ended) << "the master stopped taking writes";
  writer.Join();
  EXPECT_GT(batches, 20);
  ASSERT_TRUE(WaitSynced(&m, replica.get(), 120)) << s.log();
  ExpectSameData(&m, replica.get(), {0, 2});
  EXPECT_EQ(ReplField(replica.get(), "shmkv_stream_errors"), "0") << s.log();
  EXPECT_NE(ReplField(replica.get(), "shmkv_partial_syncs"), "0") << s.log();
}

// A master of the test's own, to hold the stream where a test wants it:
// it answers the link's handshake, syncs in full with `rdb` on a first
// PSYNC, continues the stream on a later one, and sends what it is told.
class ScriptedMaster {
 public:
  explicit ScriptedMaster(std::string rdb) : rdb_(std::move(rdb)) {
    port_ = shmkv_test::FreePort();
    listen_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port_));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ok_ = bind(listen_, reinterpret_cast<struct sockaddr*>(&sa),
               sizeof(sa)) == 0 &&
          listen(listen_, 4) == 0;
  }
  ~ScriptedMaster() {
    if (conn_ >= 0) close(conn_);
    close(listen_);
  }
  bool ok() const { return ok_; }
  int port() const { return port_; }
  static constexpr const char* kId = "0123456789abcdef0123456789abcdef01234567";

  // Takes the next link and answers it up to its PSYNC (returned).
  std::vector<std::string> Handshake() {
    if (conn_ >= 0) close(conn_);
    conn_ = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    in_.clear();
    for (;;) {
      std::vector<std::string> cmd = ReadCommand();
      if (cmd.empty()) return cmd;
      if (cmd[0] == "PING") {
        Send("+PONG\r\n");
      } else if (cmd[0] == "REPLCONF") {
        Send("+OK\r\n");
      } else if (cmd[0] == "PSYNC") {
        if (cmd.size() == 3 && cmd[1] == "?") {
          Send(std::string("+FULLRESYNC ") + kId + " 0\r\n$" +
               std::to_string(rdb_.size()) + "\r\n" + rdb_);
          offset_ = 0;
        } else {
          Send(std::string("+CONTINUE ") + kId + "\r\n");
        }
        return cmd;
      }
    }
  }
  // The stream's next commands; the offset moves past their bytes.
  void Stream(const Cmds& cmds) {
    for (const auto& c : cmds) {
      std::string enc = "*" + std::to_string(c.size()) + "\r\n";
      for (const auto& a : c) {
        enc += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
      }
      Send(enc);
      offset_ += enc.size();
    }
  }
  uint64_t offset() const { return offset_; }

 private:
  void Send(const std::string& s) {
    (void)!write(conn_, s.data(), s.size());
  }
  // One command of bulk strings from the link ({} if it went away).
  std::vector<std::string> ReadCommand() {
    for (;;) {
      std::vector<std::string> cmd;
      size_t pos = 0;
      if (Parse(&cmd, &pos)) {
        in_.erase(0, pos);
        return cmd;
      }
      char buf[4096];
      ssize_t n = read(conn_, buf, sizeof(buf));
      if (n <= 0) return {};
      in_.append(buf, static_cast<size_t>(n));
    }
  }
  bool Line(size_t* pos, char type, long* n) {
    size_t e = in_.find("\r\n", *pos);
    if (e == std::string::npos || in_[*pos] != type) return false;
    *n = std::strtol(in_.c_str() + *pos + 1, nullptr, 10);
    *pos = e + 2;
    return true;
  }
  bool Parse(std::vector<std::string>* cmd, size_t* pos) {
    long count = 0, len = 0;
    if (!Line(pos, '*', &count)) return false;
    for (long i = 0; i < count; ++i) {
      if (!Line(pos, '$', &len) || in_.size() < *pos + len + 2) return false;
      cmd->push_back(in_.substr(*pos, len));
      *pos += len + 2;
    }
    return true;
  }

  std::string rdb_, in_;
  int port_ = 0, listen_ = -1, conn_ = -1;
  bool ok_ = false;
  uint64_t offset_ = 0;
};

// A replica stopped while its link is between the master's MULTI and its
// EXEC applies the EXEC before it stops: the next start continues the
// stream at the offset past it (a stop there used to leave a full sync).
TEST(ShmkvReplication, AStopInsideATransactionStillContinuesTheStream) {
  TempDir dir, own;
  RedisOracle redis(MasterArgs(dir));
  if (!redis.ok()) GTEST_SKIP() << "no redis-server";
  std::string rdb;
  {
    Client r(redis.port());
    ASSERT_EQ(r.Call({"SAVE"}), "+OK\r\n");
    rdb = shmkv_test::ReadAll(dir.path + "/dump.rdb");
    ASSERT_FALSE(rdb.empty());
  }
  ScriptedMaster master(rdb);
  ASSERT_TRUE(master.ok());
  Server s("repl_multi_stop");
  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  auto replica = std::make_unique<Client>(s.port());
  ASSERT_EQ(replica->Call({"REPLICAOF", "127.0.0.1",
                           std::to_string(master.port())}),
            "+OK\r\n");
  std::vector<std::string> psync = master.Handshake();
  ASSERT_EQ(psync, (std::vector<std::string>{"PSYNC", "?", "-1"}));
  ASSERT_TRUE(WaitLinkUp(replica.get(), 60)) << s.log();
  master.Stream({{"SET", "before", "1"}, {"MULTI"}, {"SET", "k", "v"}});
  const std::string inside = std::to_string(master.offset());
  for (int i = 0; i < 500; ++i) {
    if (ReplField(replica.get(), "slave_repl_offset") == inside) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(ReplField(replica.get(), "slave_repl_offset"), inside);
  // The stop comes while the link waits for the EXEC; the EXEC follows.
  s.Signal(SIGTERM);
  std::this_thread::sleep_for(300ms);
  master.Stream({{"EXEC"}});
  s.Stop();

  ASSERT_TRUE(s.Start(ReplicaArgs(own))) << s.log();
  psync = master.Handshake();
  EXPECT_EQ(psync, (std::vector<std::string>{
                       "PSYNC", ScriptedMaster::kId,
                       std::to_string(master.offset() + 1)}))
      << s.log();
  replica = std::make_unique<Client>(s.port());
  ASSERT_TRUE(WaitLinkUp(replica.get(), 60)) << s.log();
  EXPECT_EQ(replica->Call({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(ReplField(replica.get(), "shmkv_partial_syncs"), "1") << s.log();
}

}  // namespace
