// Persistence past SAVE (tests/shmkv_rdb_test.cc has the format and
// SAVE): BGSAVE (server/store/cow.h) writes the store at one instant
// while writers on every worker go on, strings and collections alike; a
// saving process killed mid-save leaves the previous file whole and its
// temporary files are removed; a server killed during a save leaves no
// temporary file after its next start. SHUTDOWN saves and stops, an
// empty store is filled from the file at start, and save points save.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/rdb/codec.h"
#include "tests/support/temp_files.h"
#include "tests/support/shmkv_server.h"

namespace {

using shmkv_test::Client;
using shmkv_test::InfoField;
using shmkv_test::Server;
using shmkv_test::ReadAll;
using shmkv_test::TempDir;
using shmkv_test::WriteAll;
using namespace std::chrono_literals;

constexpr size_t kMax = 64 << 20;

// The names in `dir` that begin with "temp-".
std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("temp-", 0) == 0) {
        out.emplace_back(e->d_name);
      }
    }
    closedir(d);
  }
  return out;
}

// The pid of the save in progress, from its log's name (0: none yet).
pid_t SaverPid(const std::string& dir) {
  for (const std::string& f : TempFiles(dir)) {
    if (f.size() > 15 && f.compare(f.size() - 4, 4, ".cow") == 0) {
      return static_cast<pid_t>(std::stol(f.substr(11, f.size() - 15)));
    }
  }
  return 0;
}

// A server's arguments for the save tests: its files in `dir`, the RDB
// file named `file`, room for their fills.
std::vector<std::string> SaveArgs(const TempDir& dir, const char* file) {
  return {"--dir", dir.path, "--dbfilename", file,
          "--memory", "256M", "--capacity", "400000"};
}

// The saving process of a BGSAVE just started, once its log appears (up
// to a second); 0 if none does.
pid_t WaitSaverPid(const std::string& dir) {
  pid_t saver = 0;
  for (int i = 0; i < 5000 && saver == 0; ++i) {
    saver = SaverPid(dir);
    if (saver == 0) std::this_thread::sleep_for(200us);
  }
  return saver;
}

// Sends `cmds` in one pipeline and reads their replies; false if one is
// an error.
bool Pipeline(Client* c, const std::vector<std::vector<std::string>>& cmds) {
  std::string out;
  for (const auto& cmd : cmds) out += Client::Encode(cmd);
  if (!c->SendRaw(out)) return false;
  bool ok = true;
  for (size_t i = 0; i < cmds.size(); ++i) {
    const std::string r = c->Reply();
    if (r.empty() || r[0] == '-') ok = false;
  }
  return ok;
}

// `n` strings fill:<i> of 100 bytes, and a sorted set, a hash and a list
// of `members` each, large enough to be kept in parts.
void Fill(Client* c, int n, int members) {
  std::vector<std::vector<std::string>> batch;
  auto flush = [&] {
    ASSERT_TRUE(Pipeline(c, batch));
    batch.clear();
  };
  for (int i = 0; i < n; ++i) {
    batch.push_back({"SET", "fill:" + std::to_string(i),
                     std::string(90, 'v') + std::to_string(1000000 + i)});
    if (batch.size() == 1000) flush();
  }
  for (int i = 0; i < members; ++i) {
    const std::string m = std::to_string(i);
    batch.push_back({"ZADD", "bigz", std::to_string(-1 - i), "m:" + m});
    batch.push_back({"HSET", "bigh", "f:" + m, "0"});
    batch.push_back({"RPUSH", "bigl", "x"});
    if (batch.size() >= 999) flush();
  }
  flush();
}

bool WaitSaved(Client* c) {
  for (int i = 0; i < 3000; ++i) {
    if (InfoField(c, "rdb_bgsave_in_progress") == "0") return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// While two clients write (on both workers: a counter step is one
// MULTI over eight strings, a hash, a sorted set, a list and a set, and
// a member of each large collection; a move renames a fill: key to a
// moved: one and counts it), BGSAVE's file holds every key at one
// instant: the counters agree, the collections hold as many steps as
// the counters say, and fill: plus moved: keys are the keys filled.
TEST(ShmkvPersistence, TheFileIsOneInstantWhileWritersGoOn) {
  TempDir dir;
  Server s("bgsave1");
  ASSERT_TRUE(s.Start(SaveArgs(dir, "b.rdb"))) << s.log();
  constexpr int kFill = 60000, kMembers = 20000;
  {
    Client c(s.port());
    Fill(&c, kFill, kMembers);
  }
  std::atomic<bool> stop{false};
  std::atomic<long> steps{0}, moves{0};
  std::thread counter([&] {
    Client c(s.port());
    for (long n = 1; !stop; ++n) {
      std::vector<std::vector<std::string>> cmds = {{"MULTI"}};
      std::vector<std::string> mset = {"MSET"};
      for (int k = 0; k < 8; ++k) {
        mset.push_back("c:" + std::to_string(k));
        mset.push_back(std::to_string(n));
      }
      const std::string v = std::to_string(n);
      cmds.push_back(mset);
      cmds.push_back({"HSET", "hc", "v", v});
      cmds.push_back({"ZADD", "zc", v, "m:" + v});
      cmds.push_back({"RPUSH", "lc", v});
      cmds.push_back({"SADD", "sc", v});
      cmds.push_back({"ZADD", "bigz", v, "m:" + std::to_string(n % kMembers)});
      cmds.push_back({"HSET", "bigh", "f:" + std::to_string(n % kMembers), v});
      cmds.push_back({"LPUSH", "bigl", v});
      cmds.push_back({"EXEC"});
      if (!Pipeline(&c, cmds)) break;
      steps = n;
    }
  });
  std::thread mover([&] {
    Client c(s.port());
    for (long i = 0; !stop && i < kFill; ++i) {
      const std::string k = std::to_string(i);
      if (!Pipeline(&c, {{"MULTI"},
                         {"RENAME", "fill:" + k, "moved:" + k},
                         {"INCR", "moves"},
                         {"EXEC"}})) {
        break;
      }
      moves = i + 1;
    }
  });
  Client admin(s.port());
  while (steps < 50) std::this_thread::sleep_for(1ms);
  const long steps_before = steps;
  ASSERT_EQ(admin.Call({"BGSAVE"}), "+Background saving started\r\n");
  EXPECT_EQ(InfoField(&admin, "rdb_bgsave_in_progress"), "1");
  ASSERT_TRUE(WaitSaved(&admin));
  const long steps_during = steps - steps_before;
  stop = true;
  counter.join();
  mover.join();
  EXPECT_EQ(InfoField(&admin, "rdb_last_bgsave_status"), "ok") << s.log();
  EXPECT_GT(steps_during, 5) << "the writers did not overlap the save";
  EXPECT_NE(InfoField(&admin, "rdb_last_cow_size"), "0");
  EXPECT_EQ(TempFiles(dir.path), std::vector<std::string>());

  const std::string file = ReadAll(dir.path + "/b.rdb");
  ASSERT_FALSE(file.empty()) << s.log();
  std::map<std::string, shmkv::rdb::Value> keys;
  std::string why;
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      file, kMax,
      [&](shmkv::rdb::Entry& e, std::string*) {
        EXPECT_EQ(e.db, 0u);
        keys[e.key] = std::move(e.value);
        return true;
      },
      &why))
      << why;
  ASSERT_TRUE(keys.count("c:0")) << "no counter step before the save";
  const std::string n_text = keys["c:0"].str;
  const long n = std::stol(n_text);
  EXPECT_GE(n, steps_before);
  for (int k = 1; k < 8; ++k) EXPECT_EQ(keys["c:" + std::to_string(k)].str, n_text);
  ASSERT_EQ(keys["hc"].pairs.size(), 1u);
  EXPECT_EQ(keys["hc"].pairs[0].second, n_text);
  EXPECT_EQ(keys["zc"].scored.size(), static_cast<size_t>(n));
  EXPECT_EQ(keys["lc"].items.size(), static_cast<size_t>(n));
  EXPECT_EQ(keys["lc"].items.back(), n_text);
  EXPECT_EQ(keys["sc"].items.size(), static_cast<size_t>(n));
  double top = -1e300;
  for (const auto& [m, score] : keys["bigz"].scored) top = std::max(top, score);
  EXPECT_EQ(top, static_cast<double>(n));
  EXPECT_EQ(keys["bigz"].scored.size(), static_cast<size_t>(kMembers));
  long hmax = 0;
  for (const auto& [f, v] : keys["bigh"].pairs) hmax = std::max(hmax, std::stol(v));
  EXPECT_EQ(hmax, n);
  ASSERT_EQ(keys["bigl"].items.size(), static_cast<size_t>(kMembers + n));
  EXPECT_EQ(keys["bigl"].items.front(), n_text);
  size_t fill = 0, moved = 0;
  for (const auto& [k, v] : keys) {
    fill += k.rfind("fill:", 0) == 0;
    moved += k.rfind("moved:", 0) == 0;
  }
  EXPECT_EQ(fill + moved, static_cast<size_t>(kFill));
  const long moves_then = keys.count("moves") ? std::stol(keys["moves"].str) : 0;
  EXPECT_EQ(moved, static_cast<size_t>(moves_then));
  if (access("/usr/bin/redis-check-rdb", X_OK) == 0) {
    const std::string cmd = "/usr/bin/redis-check-rdb '" + dir.path +
                            "/b.rdb' > '" + dir.path + "/check.txt' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadAll(dir.path + "/check.txt");
  }
}

// Workers killed (SIGKILL, at random points) while a BGSAVE runs and two
// clients write: the writes of a dead worker are finished or dropped
// whole by the next writer, logging as any write does, so the file is
// still the store at one instant: every step (a MULTI of eight INCRs, an
// RPUSH, an HINCRBY and a ZINCRBY) in it whole or not at all.
TEST(ShmkvPersistence, WorkersKilledDuringASaveLeaveItOneInstant) {
  TempDir dir;
  Server s("bgsave_kills");
  ASSERT_TRUE(s.Start(SaveArgs(dir, "k.rdb"))) << s.log();
  {
    Client c(s.port());
    Fill(&c, 100000, 0);
  }
  std::atomic<bool> stop{false};
  std::atomic<long> steps{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      auto c = std::make_unique<Client>(s.port());
      std::vector<std::vector<std::string>> step = {{"MULTI"}};
      for (int k = 0; k < 8; ++k) step.push_back({"INCR", "c:" + std::to_string(k)});
      step.push_back({"RPUSH", "lc", "x"});
      step.push_back({"HINCRBY", "hc", "v", "1"});
      step.push_back({"ZINCRBY", "zc", "1", "m"});
      step.push_back({"EXEC"});
      while (!stop) {
        if (Pipeline(c.get(), step)) {
          ++steps;
        } else {  // its worker was killed: a new connection
          std::this_thread::sleep_for(20ms);
          c = std::make_unique<Client>(s.port());
        }
      }
    });
  }
  while (steps < 50) std::this_thread::sleep_for(1ms);
  Client admin(s.port());
  ASSERT_EQ(admin.Call({"BGSAVE"}), "+Background saving started\r\n");
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  int killed = 0;
  for (int k = 0; k < 3; ++k) {  // the first at once, then 5-45 ms apart
    Client probe(s.port());
    if (InfoField(&probe, "rdb_bgsave_in_progress") != "1") break;
    const std::vector<pid_t> w = shmkv_test::WorkerPids(s.pid());
    if (w.empty()) continue;
    kill(w[rng() % w.size()], SIGKILL);
    ++killed;
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 40));
  }
  for (int i = 0; i < 3000; ++i) {
    Client c(s.port());
    if (InfoField(&c, "rdb_bgsave_in_progress") == "0") break;
    std::this_thread::sleep_for(10ms);
  }
  stop = true;
  for (auto& t : writers) t.join();
  Client c(s.port());
  EXPECT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "ok") << s.log();
  EXPECT_GT(killed, 0) << "the save ended before a worker was killed";
  std::map<std::string, shmkv::rdb::Value> keys;
  std::string why;
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      ReadAll(dir.path + "/k.rdb"), kMax,
      [&](shmkv::rdb::Entry& e, std::string*) {
        keys[e.key] = std::move(e.value);
        return true;
      },
      &why))
      << why;
  ASSERT_TRUE(keys.count("c:0"));
  const std::string n = keys["c:0"].str;
  for (int k = 1; k < 8; ++k) EXPECT_EQ(keys["c:" + std::to_string(k)].str, n);
  EXPECT_EQ(keys["lc"].items.size(), std::stoul(n));
  ASSERT_EQ(keys["hc"].pairs.size(), 1u);
  EXPECT_EQ(keys["hc"].pairs[0].second, n);
  ASSERT_EQ(keys["zc"].scored.size(), 1u);
  EXPECT_EQ(keys["zc"].scored[0].second, std::stod(n));
  size_t fill = 0;
  for (const auto& [k, v] : keys) fill += k.rfind("fill:", 0) == 0;
  EXPECT_EQ(fill, 100000u);
}

// The replies around a save: a second BGSAVE or a SAVE while one runs
// is refused, SCHEDULE is taken, anything else is a syntax error.
TEST(ShmkvPersistence, OneSaveAtATime) {
  TempDir dir;
  Server s("bgsave2");
  ASSERT_TRUE(s.Start({"--dir", dir.path, "--memory", "256M", "--capacity",
                       "400000"}))
      << s.log();
  Client c(s.port());
  Fill(&c, 100000, 0);
  EXPECT_EQ(c.Call({"BGSAVE", "now"}), "-ERR syntax error\r\n");
  EXPECT_EQ(c.Call({"BGSAVE", "SCHEDULE", "x"}), "-ERR syntax error\r\n");
  ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
  Client other(s.port());
  EXPECT_EQ(other.Call({"BGSAVE"}),
            "-ERR Background save already in progress\r\n");
  EXPECT_EQ(other.Call({"SAVE"}),
            "-ERR Background save already in progress\r\n");
  ASSERT_TRUE(WaitSaved(&c));
  EXPECT_EQ(c.Call({"BGSAVE", "schedule"}), "+Background saving started\r\n");
  ASSERT_TRUE(WaitSaved(&c));
  EXPECT_EQ(c.Call({"SAVE"}), "+OK\r\n");
  EXPECT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "ok");
  EXPECT_EQ(InfoField(&c, "rdb_current_bgsave_time_sec"), "-1");
  // A directory where the log cannot be made: refused, nothing running.
  ASSERT_EQ(chmod(dir.path.c_str(), 0500), 0);
  if (access(dir.path.c_str(), W_OK) != 0) {
    const std::string r = c.Call({"BGSAVE"});
    EXPECT_EQ(r.rfind("-ERR Background save failed: ", 0), 0u) << r;
    EXPECT_NE(r.find("Permission denied"), std::string::npos) << r;
    EXPECT_EQ(InfoField(&c, "rdb_bgsave_in_progress"), "0");
  }
  chmod(dir.path.c_str(), 0700);
}

// A hot restart (SIGHUP) while a BGSAVE runs: the saver is a process of
// its own and finishes the file, whole, after the worker that forked it
// has handed its clients over and exited.
TEST(ShmkvPersistence, ABackgroundSaveOutlivesAHotRestart) {
  TempDir dir;
  Server s("bgsave_reload");
  ASSERT_TRUE(s.Start({"--dir", dir.path, "--memory", "256M", "--capacity",
                       "400000"}))
      << s.log();
  Client c(s.port());
  Fill(&c, 100000, 2000);
  ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
  s.Signal(SIGHUP);
  ASSERT_TRUE(WaitSaved(&c));
  EXPECT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "ok") << s.log();
  EXPECT_NE(s.log().find("reloading"), std::string::npos);
  size_t keys = 0;
  std::string why;
  EXPECT_TRUE(shmkv::rdb::ReadFile(
      ReadAll(dir.path + "/dump.rdb"), kMax,
      [&](shmkv::rdb::Entry&, std::string*) { return ++keys, true; }, &why))
      << why;
  EXPECT_EQ(keys, 100003u);
  EXPECT_EQ(TempFiles(dir.path), std::vector<std::string>());
}

// A saving process killed mid-save: the previous file stays whole, the
// save is reported failed, its log and half-written file are removed,
// and the next BGSAVE works.
TEST(ShmkvPersistence, AKilledSaveLeavesThePreviousFile) {
  TempDir dir;
  Server s("bgsave3");
  ASSERT_TRUE(s.Start(SaveArgs(dir, "b.rdb"))) << s.log();
  Client c(s.port());
  ASSERT_EQ(c.Call({"SET", "first", "1"}), "+OK\r\n");
  ASSERT_EQ(c.Call({"SAVE"}), "+OK\r\n");
  const std::string before = ReadAll(dir.path + "/b.rdb");
  ASSERT_FALSE(before.empty());
  Fill(&c, 100000, 0);
  ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
  const pid_t saver = WaitSaverPid(dir.path);
  ASSERT_GT(saver, 0);
  ASSERT_EQ(kill(saver, SIGKILL), 0);
  ASSERT_TRUE(WaitSaved(&c));
  EXPECT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "err");
  EXPECT_EQ(ReadAll(dir.path + "/b.rdb"), before);
  for (int i = 0; i < 100 && !TempFiles(dir.path).empty(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(TempFiles(dir.path), std::vector<std::string>());
  EXPECT_NE(s.log().find("was killed"), std::string::npos) << s.log();
  ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
  ASSERT_TRUE(WaitSaved(&c));
  EXPECT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "ok");
  EXPECT_NE(ReadAll(dir.path + "/b.rdb"), before);
}

// A field of one INFO reply.
std::string Field(const std::string& info, const std::string& field) {
  const size_t p = info.find("\r\n" + field + ":");
  if (p == std::string::npos) return "";
  const size_t from = p + field.size() + 3;
  return info.substr(from, info.find("\r\n", from) - from);
}

// A save is seen ended only with its outcome and its file, as Redis
// shows it: after a failed save (its process killed), the next one's
// end, caught by INFO read as fast as a client can, already says
// rdb_last_bgsave_status:ok, and the file under the name is already the
// new one. (The file used to be renamed and the outcome written after
// the save stopped being in progress; with a delay planted there, this
// test fails.)
TEST(ShmkvPersistence, ASaveIsSeenEndedOnlyWithItsOutcomeAndFile) {
  TempDir dir;
  Server s("bgsave5");
  ASSERT_TRUE(s.Start(SaveArgs(dir, "b.rdb"))) << s.log();
  Client c(s.port());
  Fill(&c, 100000, 0);
  ASSERT_EQ(c.Call({"SAVE"}), "+OK\r\n");
  std::string last = ReadAll(dir.path + "/b.rdb");
  for (int round = 0; round < 6; ++round) {
    // A failed save: its process killed.
    ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
    const pid_t saver = WaitSaverPid(dir.path);
    ASSERT_GT(saver, 0) << round;
    ASSERT_EQ(kill(saver, SIGKILL), 0);
    ASSERT_TRUE(WaitSaved(&c));
    ASSERT_EQ(InfoField(&c, "rdb_last_bgsave_status"), "err") << round;
    ASSERT_EQ(ReadAll(dir.path + "/b.rdb"), last) << round;
    // A good one, of a store changed since: watched to its end.
    ASSERT_EQ(c.Call({"SET", "round", std::to_string(round)}), "+OK\r\n");
    ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
    std::string info;
    for (int i = 0; i < 200000; ++i) {
      info = c.Call({"INFO", "persistence"});
      if (Field(info, "rdb_bgsave_in_progress") == "0") break;
    }
    ASSERT_EQ(Field(info, "rdb_bgsave_in_progress"), "0") << round;
    EXPECT_EQ(Field(info, "rdb_last_bgsave_status"), "ok") << round;
    const std::string now = ReadAll(dir.path + "/b.rdb");
    EXPECT_NE(now, last) << "round " << round << ": the old file";
    last = now;
  }
}

// The whole server killed during a BGSAVE and during a SAVE, as soon as
// its temporary file appears and then at random points of it: the file
// under the name is always whole, and after the next start no temporary
// file is left.
TEST(ShmkvPersistence, AServerKilledMidSaveLeavesNoTemporaryFile) {
  TempDir dir;
  Server s("bgsave4");
  const std::vector<std::string> args = SaveArgs(dir, "b.rdb");
  ASSERT_TRUE(s.Start(args)) << s.log();
  std::string before;
  {
    Client c(s.port());
    ASSERT_EQ(c.Call({"SET", "first", "1"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"SAVE"}), "+OK\r\n");
    before = ReadAll(dir.path + "/b.rdb");
    Fill(&c, 100000, 0);
  }
  for (const char* how : {"BGSAVE", "SAVE"}) {
    {
      Client c(s.port());
      ASSERT_TRUE(c.SendRaw(Client::Encode({how})));
      for (int i = 0; i < 5000 && TempFiles(dir.path).empty(); ++i) {
        std::this_thread::sleep_for(200us);
      }
      ASSERT_FALSE(TempFiles(dir.path).empty()) << how;
      if (pid_t saver = SaverPid(dir.path)) kill(saver, SIGKILL);
      s.KillAll();
    }
    EXPECT_FALSE(TempFiles(dir.path).empty()) << how;
    EXPECT_EQ(ReadAll(dir.path + "/b.rdb"), before) << how;
    ASSERT_TRUE(s.Start(args)) << s.log();
    EXPECT_EQ(TempFiles(dir.path), std::vector<std::string>()) << how;
    Client c(s.port());
    EXPECT_EQ(c.Call({"GET", "first"}), "$1\r\n1\r\n");
  }
  // Then at random points of a save: what is under the name is always
  // a whole file (the old one, or the new one if the save got that far)
  // and the next start leaves no temporary file.
  int64_t save_ms = 0;
  {
    Client c(s.port());
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(c.Call({"BGSAVE"}), "+Background saving started\r\n");
    ASSERT_TRUE(WaitSaved(&c));
    save_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - t0).count();
  }
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  for (int round = 0; round < 6; ++round) {
    const char* how = round % 2 == 0 ? "BGSAVE" : "SAVE";
    const int delay = static_cast<int>(rng() % (save_ms + 20));
    {
      Client c(s.port());
      ASSERT_TRUE(c.SendRaw(Client::Encode({how})));
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      if (pid_t saver = SaverPid(dir.path)) kill(saver, SIGKILL);
      s.KillAll();
    }
    size_t keys = 0;
    std::string why;
    EXPECT_TRUE(shmkv::rdb::ReadFile(
        ReadAll(dir.path + "/b.rdb"), kMax,
        [&](shmkv::rdb::Entry&, std::string*) { return ++keys, true; }, &why))
        << how << " killed after " << delay << " ms: " << why;
    EXPECT_TRUE(keys == 1 || keys == 100001) << keys;
    ASSERT_TRUE(s.Start(args)) << s.log();
    EXPECT_EQ(TempFiles(dir.path), std::vector<std::string>())
        << how << " killed after " << delay << " ms";
  }
  Client c(s.port());
  EXPECT_EQ(InfoField(&c, "rdb_bgsave_in_progress"), "0");
}

// SHUTDOWN's replies as Redis's where it does not stop (syntax, ABORT,
// inside MULTI); SHUTDOWN SAVE writes the file and stops the server
// without a reply; NOSAVE stops it without writing one; a save that
// fails keeps the server up unless FORCE.
TEST(ShmkvPersistence, ShutdownSavesAndStops) {
  TempDir dir;
  Server s("shutdown1");
  std::vector<std::string> args = {"--dir", dir.path, "--dbfilename",
                                   "s.rdb"};
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    EXPECT_EQ(c.Call({"SHUTDOWN", "SAVE", "NOSAVE"}), "-ERR syntax error\r\n");
    EXPECT_EQ(c.Call({"SHUTDOWN", "ABORT", "NOW"}), "-ERR syntax error\r\n");
    EXPECT_EQ(c.Call({"SHUTDOWN", "LATER"}), "-ERR syntax error\r\n");
    EXPECT_EQ(c.Call({"SHUTDOWN", "ABORT"}),
              "-ERR No shutdown in progress.\r\n");
    EXPECT_EQ(c.Call({"MULTI"}), "+OK\r\n");
    EXPECT_EQ(c.Call({"SHUTDOWN"}),
              "-ERR Command not allowed inside a transaction\r\n");
    EXPECT_EQ(c.Call({"EXEC"}).rfind("-EXECABORT", 0), 0u);
    ASSERT_EQ(c.Call({"SET", "k", "v1"}), "+OK\r\n");
    // A directory that cannot be written: the save fails, the server
    // stays.
    ASSERT_EQ(chmod(dir.path.c_str(), 0500), 0);
    if (access(dir.path.c_str(), W_OK) != 0) {
      EXPECT_EQ(c.Call({"SHUTDOWN", "SAVE"}),
                "-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
      EXPECT_EQ(c.Call({"PING"}), "+PONG\r\n");
    }
    chmod(dir.path.c_str(), 0700);
    ASSERT_TRUE(c.SendRaw(Client::Encode({"SHUTDOWN", "SAVE"})));
    EXPECT_EQ(c.Reply(), "");  // closed, no reply
  }
  int status = 0;
  for (int i = 0; i < 500 && waitpid(s.pid(), &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(kill(s.pid(), 0), -1) << "the server did not stop";
  std::string why;
  std::map<std::string, std::string> saved;
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      ReadAll(dir.path + "/s.rdb"), kMax,
      [&](shmkv::rdb::Entry& e, std::string*) {
        saved[e.key] = e.value.str;
        return true;
      },
      &why))
      << why << s.log();
  EXPECT_EQ(saved, (std::map<std::string, std::string>{{"k", "v1"}}));
  // NOSAVE (and no save points, the default) stops without writing.
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    ASSERT_EQ(c.Call({"SET", "k", "v2"}), "+OK\r\n");
    ASSERT_TRUE(c.SendRaw(Client::Encode({"SHUTDOWN"})));
    EXPECT_EQ(c.Reply(), "");
  }
  for (int i = 0; i < 500 && waitpid(s.pid(), &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(kill(s.pid(), 0), -1);
  saved.clear();
  ASSERT_TRUE(shmkv::rdb::ReadFile(
      ReadAll(dir.path + "/s.rdb"), kMax,
      [&](shmkv::rdb::Entry& e, std::string*) {
        saved[e.key] = e.value.str;
        return true;
      },
      &why));
  EXPECT_EQ(saved["k"], "v1");
}

// A store with no key is filled from dir/dbfilename at start; a store
// that holds keys is left as it is; a damaged file stops the start.
TEST(ShmkvPersistence, AnEmptyStoreLoadsTheFileAtStart) {
  TempDir dir;
  Server s("autoload");
  std::vector<std::string> args = {"--dir", dir.path};
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    ASSERT_EQ(c.Call({"SET", "a", "1"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"RPUSH", "l", "x", "y"}), ":2\r\n");
    ASSERT_EQ(c.Call({"SELECT", "4"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"SET", "b", "2", "EX", "1000"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"SAVE"}), "+OK\r\n");
    ASSERT_EQ(c.Call({"SET", "after", "3"}), "+OK\r\n");
  }
  s.Stop();
  // The segments kept every key: the file is not loaded over them.
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    EXPECT_EQ(c.Call({"SELECT", "4"}), "+OK\r\n");
    EXPECT_EQ(c.Call({"GET", "after"}), "$1\r\n3\r\n");
  }
  EXPECT_NE(s.log().find("not loaded: the store holds 4 keys"),
            std::string::npos)
      << s.log();
  s.Stop();
  s.Cleanup();  // a reboot: the segments are gone
  ASSERT_TRUE(s.Start(args)) << s.log();
  {
    Client c(s.port());
    EXPECT_EQ(c.Call({"GET", "a"}), "$1\r\n1\r\n");
    EXPECT_EQ(c.Call({"LRANGE", "l", "0", "-1"}),
              "*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
    EXPECT_EQ(c.Call({"SELECT", "4"}), "+OK\r\n");
    EXPECT_EQ(c.Call({"GET", "b"}), "$1\r\n2\r\n");
    EXPECT_NE(c.Call({"TTL", "b"}), ":-1\r\n");
    EXPECT_EQ(c.Call({"GET", "after"}), "$-1\r\n");
  }
  EXPECT_NE(s.log().find("loaded 3 keys from"), std::string::npos) << s.log();
  s.Stop();
  s.Cleanup();
  // A damaged file: the server does not start, and says why.
  std::string bytes = ReadAll(dir.path + "/dump.rdb");
  bytes[bytes.size() / 2] ^= 0x55;
  {
    std::FILE* f = std::fopen((dir.path + "/dump.rdb").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  EXPECT_FALSE(s.Start(args));
  EXPECT_NE(s.log().find("not starting"), std::string::npos) << s.log();
}

// The RDB file a save point's BGSAVE writes, once no save is in progress
// ("" when none came within 4 s).
std::string SavedFile(Client* c, const std::string& path) {
  std::string file;
  for (int i = 0; i < 400 && file.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    if (InfoField(c, "rdb_bgsave_in_progress") == "0") file = ReadAll(path);
  }
  return file;
}

// --save "1 1": no save while nothing changes; a change is saved within
// about a second and a half of the point coming due.
TEST(ShmkvPersistence, SavePointsSave) {
  TempDir dir;
  Server s("savepoints");
  ASSERT_TRUE(s.Start({"--dir", dir.path, "--save", "1 1"})) << s.log();
  Client c(s.port());
  EXPECT_EQ(c.Call({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$3\r\n1 1\r\n");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(ReadAll(dir.path + "/dump.rdb"), "") << "saved with no change";
  ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n");
  std::string file = SavedFile(&c, dir.path + "/dump.rdb");
  ASSERT_FALSE(file.empty()) << s.log();
  EXPECT_NE(file.find("k"), std::string::npos);
  EXPECT_NE(s.log().find("changes in"), std::string::npos) << s.log();
  // The options Redis refuses, refused.
  Server bad("savepoints_bad");
  EXPECT_FALSE(bad.Start({"--save", "1"}));
  EXPECT_FALSE(bad.Start({"--save", "1 -1"}));
  EXPECT_FALSE(bad.Start({"--save", "x 1"}));
}

// CONFIG SET save through one worker changes the master's save points:
// with none at start, "1 1" set at run time saves a change; "" stops the
// saves again. A new master starts from its --save.
TEST(ShmkvPersistence, ConfigSetSaveChangesTheSavePoints) {
  TempDir dir;
  Server s("savepointsset");
  ASSERT_TRUE(s.Start({"--dir", dir.path, "--workers", "2"})) << s.log();
  Client c(s.port());
  EXPECT_EQ(c.Call({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  ASSERT_EQ(c.Call({"SET", "k", "v"}), "+OK\r\n");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(ReadAll(dir.path + "/dump.rdb"), "") << "saved with no point";
  ASSERT_EQ(c.Call({"CONFIG", "SET", "save", "1 1"}), "+OK\r\n");
  Client other(s.port());  // (either worker answers the same)
  EXPECT_EQ(other.Call({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$3\r\n1 1\r\n");
  std::string file = SavedFile(&c, dir.path + "/dump.rdb");
  ASSERT_FALSE(file.empty()) << s.log();
  EXPECT_NE(s.log().find("changes in"), std::string::npos) << s.log();
  ASSERT_EQ(c.Call({"CONFIG", "SET", "save", ""}), "+OK\r\n");
  ASSERT_EQ(std::remove((dir.path + "/dump.rdb").c_str()), 0);
  ASSERT_EQ(c.Call({"SET", "k", "w"}), "+OK\r\n");
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(ReadAll(dir.path + "/dump.rdb"), "") << "saved with no point";
  // A new master: --save's points (none), not the last CONFIG SET's.
  ASSERT_EQ(c.Call({"CONFIG", "SET", "save", "3600 1"}), "+OK\r\n");
  s.Stop();
  ASSERT_TRUE(s.Start({"--dir", dir.path})) << s.log();
  Client again(s.port());
  EXPECT_EQ(again.Call({"CONFIG", "GET", "save"}),
            "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
}

}  // namespace
