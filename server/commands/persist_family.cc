// SAVE, BGSAVE, SHUTDOWN and LASTSAVE (server/commands/persist_family.h):
// every database to an RDB file Redis loads (server/rdb/codec.h), written
// whole under a temporary name and renamed; BGSAVE's process reads the
// store as of one instant through the writers' log (server/store/cow.h).
#include "server/commands/persist_family.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/function_family.h"
#include "server/commands/whole_value.h"
#include "server/rdb/codec.h"
#include "server/store/cow.h"

namespace shmkv {
namespace cmd {

namespace {

// The store's and the transaction's database, for one walk.
class WalkDb {
 public:
  WalkDb(CommandContext* c, uint32_t logical)
      : c_(c), store_was_(c->store->db()), txn_was_(c->txn->db()) {
    const uint32_t phys = c->txn->Physical(logical);
    c->store->UseDb(phys);
    c->txn->UseDb(phys);
  }
  ~WalkDb() {
    c_->store->UseDb(store_was_);
    c_->txn->UseDb(txn_was_);
  }
  WalkDb(const WalkDb&) = delete;
  WalkDb& operator=(const WalkDb&) = delete;

 private:
  CommandContext* c_;
  uint32_t store_was_, txn_was_;
};

std::string RdbDir(CommandContext* c) {
  return c->info != nullptr ? c->info->dir : ".";
}

std::string RdbPath(CommandContext* c) {
  return RdbDir(c) + "/" +
         (c->info != nullptr ? c->info->dbfilename : "dump.rdb");
}

// Writes an RDB file: body(writer) writes the databases, between the
// header and the footer. The file is written as `tmp` in the same
// directory, fsynced, then put in place by place(rename), which calls
// rename (of `tmp` over the RDB file) if it agrees, and the directory is
// fsynced: the name holds the old file or the whole new one whatever
// happens; false with *why (nothing is left at `tmp`).
using PlaceFile = std::function<bool(const std::function<bool()>& rename)>;
bool WriteRdbFile(CommandContext* c, const std::string& tmp, int64_t ctime,
                  const std::function<bool(rdb::FileWriter*)>& body,
                  const PlaceFile& place, std::string* why) {
  const std::string dir = RdbDir(c);
  const std::string path = RdbPath(c);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                      0644);
  if (fd < 0) {
    *why = tmp + ": " + std::strerror(errno);
    return false;
  }
  int err = 0;
  rdb::FileWriter w([&](std::string_view b) {
    while (!b.empty()) {
      const ssize_t n = write(fd, b.data(), b.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        return false;
      }
      b.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  });
  why->clear();
  // The function libraries, then the databases, as Redis writes them.
  std::vector<std::string> libraries;
  bool ok = w.Begin(ctime, c->store->MemoryUsed());
  if (ok && !StoredLibraryCodes(c->store, &libraries, why)) ok = false;
  for (const std::string& code : libraries) ok = ok && w.Function(code);
  ok = ok && body(&w);
  if (!ok && !why->empty()) {  // the body said why
    close(fd);
    unlink(tmp.c_str());
    return false;
  }
  ok = ok && w.Finish() && fsync(fd) == 0;
  if (!ok && err == 0) err = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok) {
    err = 0;
    const bool placed = place([&] {
      if (rename(tmp.c_str(), path.c_str()) == 0) return true;
      err = errno;
      return false;
    });
    if (!placed && err == 0) {
      unlink(tmp.c_str());
      return false;  // place() said why
    }
    ok = placed;
  }
  if (!ok) {
    unlink(tmp.c_str());
    *why = path + ": " + std::strerror(err);
    return false;
  }
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

std::string DamagedKey(std::string_view key, uint32_t db) {
  return "key '" + std::string(key.substr(0, 64)) + "' in database " +
         std::to_string(db) + " is damaged (shmc check)";
}

// SAVE: every database's live keys, as this command's transaction sees
// them (inside EXEC, with what it created and less what it deleted).
bool SaveRdb(CommandContext* c, std::string* why) {
  auto body = [&](rdb::FileWriter* w) {
    for (uint32_t db = 0; db < kDatabases; ++db) {
      WalkDb in(c, db);
      std::set<std::string, std::less<>> deleted;
      std::vector<std::string> keys;
      c->txn->Changed([&](std::string_view k, Store::Txn::Change ch) {
        if (ch == Store::Txn::Change::kCreated) keys.emplace_back(k);
        if (ch == Store::Txn::Change::kDeleted ||
            ch == Store::Txn::Change::kRewrittenGone) {
          deleted.emplace(k);
        }
      });
      uint64_t cursor = 0;
      do {
        c->store->Scan(&cursor, 4096, [&](std::string_view k, ValueType) {
          if (deleted.find(k) == deleted.end()) keys.emplace_back(k);
        });
      } while (cursor != 0);
      if (keys.empty()) continue;
      // The database's counts as resize hints (a hint: inside EXEC they
      // do not have the transaction's changes yet).
      uint64_t expires = 0;
      const uint64_t n = c->store->KeysIn(c->txn->db(), &expires, true);
      if (!w->Database(db, n, expires)) return false;
      for (const std::string& key : keys) {
        rdb::Value v;
        int64_t expire = 0;
        switch (ReadWhole(c, key, &v, &expire)) {
          case Whole::kValue: break;
          case Whole::kNone: continue;  // expired since the scan
          default:
            *why = DamagedKey(key, db);
            return false;
        }
        if (!w->Key(key, v, expire)) return false;
      }
    }
    return true;
  };
  return WriteRdbFile(c, SnapshotRdbPath(RdbDir(c), getpid()),
                      NowMs() / 1000, body,
                      [](const std::function<bool()>& rename) {
                        return rename();
                      },
                      why);
}

// BGSAVE's process: the store as of `at` (every key read through the
// writers' log, server/store/cow.h), written as SAVE writes it.
bool SaveSnapshot(CommandContext* c, const Store::SnapshotPoint& at,
                  std::string* why) {
  if (!c->store->ReadAsOfSnapshot(at, why)) {
    c->store->EndSnapshot(nullptr);
    return false;
  }
  bool ended = false;
  auto body = [&](rdb::FileWriter* w) {
    for (uint32_t db = 0; db < kDatabases; ++db) {
      const uint32_t phys = at.physical[db];
      if (at.keys[phys] == 0) continue;
      if (!w->Database(db, at.keys[phys], at.expires[phys])) return false;
      c->store->UseDb(phys);
      bool ok = true;
      const bool read = c->store->SnapshotKeys(phys, [&](std::string_view k) {
        if (!ok) return;
        rdb::Value v;
        int64_t expire = 0;
        switch (ReadWhole(c, k, &v, &expire)) {
          case Whole::kValue: ok = w->Key(k, v, expire); return;
          case Whole::kNone: return;  // made since, or expired
          default:
            *why = DamagedKey(k, db);
            ok = false;
        }
      });
      if (!ok) return false;
      if (!read) {
        *why = "the save's log could not be read";
        return false;
      }
    }
    return true;
  };
  // The file goes in place as the save ends, under the store's lock, so
  // that INFO never shows the save ended without its outcome and file.
  auto place = [&](const std::function<bool()>& rename) {
    ended = true;
    bool renamed = true;
    if (c->store->EndSnapshot([&] { return renamed = rename(); })) {
      return true;
    }
    if (renamed) {
      *why = "a change made during the save could not be logged (the "
             "disk of --dir is full?)";
    }
    return false;
  };
  const bool ok = WriteRdbFile(c, SnapshotRdbPath(RdbDir(c), getpid()),
                               at.ms / 1000, body, place, why);
  if (!ended) c->store->EndSnapshot(nullptr);
  return ok;
}

}  // namespace

void Save(const Args&, CommandContext* c, Reply* r) {
  // As Redis (SAVE is no-multi there): refused while queueing, which
  // dooms the transaction.
  if (c->client != nullptr && c->client->in_multi) {
    c->client->multi_failed = true;
    return r->Error("ERR Command not allowed inside a transaction");
  }
  if (c->store->Snapshot().pid != 0) {
    return r->Error("ERR Background save already in progress");
  }
  std::string why;
  if (!SaveRdb(c, &why)) return r->Error("ERR SAVE failed: " + why);
  r->Simple("OK");
}

void BgSave(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 2 || (a.size() == 2 && !Eq(a[1], "schedule"))) {
    return r->Error("ERR syntax error");
  }
  Store::SnapshotPoint at;
  bool busy = false;
  std::string why;
  // Inside EXEC the transaction holds the write lock: the instant is the
  // one before its writes.
  const pid_t pid = c->store->ForkSnapshot(c->txn != nullptr, &at, &busy,
                                           &why);
  if (pid < 0) {
    if (busy) return r->Error("ERR Background save already in progress");
    return r->Error("ERR Background save failed: " + why);
  }
  if (pid == 0) {
    // The saving process. What the worker holds open (its clients'
    // connections, its listeners) is not its own: a connection the
    // worker closes must close now, not when the save ends.
    close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    c->txn = nullptr;
    FreezeNowMs(0);  // the BGSAVE's time was the worker's, not the save's
    const int64_t began = WallMs();
    const bool ok = SaveSnapshot(c, at, &why);
    if (ok) {
      std::fprintf(stderr, "shmkv: background save (pid %d) done in %lld ms: "
                   "%s\n", getpid(), static_cast<long long>(WallMs() - began),
                   RdbPath(c).c_str());
    } else {
      std::fprintf(stderr, "shmkv: background save (pid %d) failed: %s\n",
                   getpid(), why.c_str());
    }
    _exit(ok ? 0 : 1);
  }
  std::fprintf(stderr, "shmkv: background save started by pid %d\n", pid);
  r->Simple("Background saving started");
}

void Shutdown(const Args& a, CommandContext* c, Reply* r) {
  bool nosave = false, save = false, now = false, force = false, abort = false;
  for (size_t i = 1; i < a.size(); ++i) {
    if (Eq(a[i], "nosave")) {
      nosave = true;
    } else if (Eq(a[i], "save")) {
      save = true;
    } else if (Eq(a[i], "now")) {
      now = true;
    } else if (Eq(a[i], "force")) {
      force = true;
    } else if (Eq(a[i], "abort")) {
      abort = true;
    } else {
      return r->Error("ERR syntax error");
    }
  }
  if ((abort && (nosave || save || now || force)) || (nosave && save)) {
    return r->Error("ERR syntax error");
  }
  if (c->client != nullptr && c->client->in_multi) {
    c->client->multi_failed = true;
    return r->Error("ERR Command not allowed inside a transaction");
  }
  // A shutdown here is immediate: none is ever in progress to abort.
  if (abort) return r->Error("ERR No shutdown in progress.");
  if (!c->shutdown) return r->Error("ERR SHUTDOWN is not possible here");
  // A background save in progress is stopped (its temporary files are
  // removed by the master, or at the next start).
  const Store::SnapshotState snap = c->store->Snapshot();
  if (snap.pid != 0) {
    std::fprintf(stderr, "shmkv: SHUTDOWN: stopping the background save "
                 "(pid %d)\n", snap.pid);
    kill(snap.pid, SIGKILL);
  }
  save = save || (!nosave && !SavePointsText(c).empty());
  if (save) {
    std::string why;
    if (!SaveRdb(c, &why)) {
      std::fprintf(stderr, "shmkv: SHUTDOWN: the save failed: %s%s\n",
                   why.c_str(), force ? " (FORCE: stopping anyway)" : "");
      if (!force) return r->Error("ERR Errors trying to SHUTDOWN. Check logs.");
    } else {
      std::fprintf(stderr, "shmkv: SHUTDOWN: saved %s\n", RdbPath(c).c_str());
    }
  }
  std::fprintf(stderr, "shmkv: SHUTDOWN: stopping the server\n");
  c->shutdown();
  c->quit = true;  // no reply: the connection closes, as Redis's does
}

int64_t LastSaveTime(CommandContext* c) {
  struct stat st;
  if (stat(RdbPath(c).c_str(), &st) == 0) {
    return static_cast<int64_t>(st.st_mtime);
  }
  return c->info != nullptr ? c->info->start_ms / 1000 : NowMs() / 1000;
}

void LastSave(const Args&, CommandContext* c, Reply* r) {
  r->Int(LastSaveTime(c));
}

std::string SavePointsText(CommandContext* c) {
  std::vector<SavePoint> points;
  if (!c->store->GetSavePoints(&points)) {
    return c->info != nullptr ? c->info->save : "";
  }
  std::string out;
  for (const SavePoint& p : points) {
    if (!out.empty()) out += ' ';
    out += std::to_string(p.secs) + " " + std::to_string(p.changes);
  }
  return out;
}

}  // namespace cmd
}  // namespace shmkv
