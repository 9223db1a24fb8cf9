// DUMP, RESTORE and MIGRATE (server/commands/dump_family.h).
//
// DUMP writes each type in its plain RDB form (a string as Redis encodes
// it, lists, sets, hashes and sorted sets as type 1, 2, 4 and 5), which
// every Redis since 2.x restores; RESTORE takes every encoding Redis 7.0
// writes and older ones (server/rdb/codec.h). A payload is decoded and
// checked whole before anything is written, and the new value replaces
// the key in one commit. MIGRATE sends DUMP payloads as RESTOREs to
// another server (shmkv or Redis) and deletes what it acknowledged.
#include "server/commands/dump_family.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/sync_conn.h"
#include "server/commands/whole_value.h"
#include "server/rdb/codec.h"

namespace shmkv {
namespace cmd {

void Dump(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    rdb::Value v;
    switch (ReadWhole(c, a[1], &v)) {
      case Whole::kValue: return r->Bulk(rdb::Dump(v));
      case Whole::kNone: return r->Null();
      case Whole::kWrongType: return WrongType(r);
      case Whole::kDamaged: return Damaged(r);
    }
  });
}

void Restore(const Args& a, CommandContext* c, Reply* r) {
  bool replace = false, absttl = false, idle = false, freq = false;
  for (size_t i = 4; i < a.size(); ++i) {
    const bool more = i + 1 < a.size();
    int64_t n = 0;
    if (Eq(a[i], "replace")) {
      replace = true;
    } else if (Eq(a[i], "absttl")) {
      absttl = true;
    } else if (Eq(a[i], "idletime") && more && !freq) {
      if (!ToInt(a[++i], &n)) return NotInt(r);
      if (n < 0) return r->Error("ERR Invalid IDLETIME value, must be >= 0");
      idle = true;  // accepted: shmkv keeps no LRU clock (docs/server.md)
    } else if (Eq(a[i], "freq") && more && !idle) {
      if (!ToInt(a[++i], &n)) return NotInt(r);
      if (n < 0 || n > 255) {
        return r->Error("ERR Invalid FREQ value, must be >= 0 and <= 255");
      }
      freq = true;  // accepted, as IDLETIME
    } else {
      return r->Error("ERR syntax error");
    }
  }
  Value old;
  const bool exists = ReadValue(c, a[1], &old);
  if (exists && !replace) {
    return r->Error("BUSYKEY Target key name already exists.");
  }
  int64_t ttl = 0;
  if (!ToInt(a[2], &ttl)) return NotInt(r);
  if (ttl < 0) return r->Error("ERR Invalid TTL value, must be >= 0");
  rdb::Value v;
  bool checksum_ok = false;
  std::string why;
  if (!rdb::Undump(a[3], c->info != nullptr && c->info->max_value != 0
                             ? c->info->max_value
                             : size_t{512} << 20,
                   &v, &checksum_ok, &why)) {
    return r->Error(checksum_ok
                        ? "ERR Bad data format"
                        : "ERR DUMP payload version or checksum are wrong");
  }
  const int64_t now = WallMs();
  if (ttl != 0 && !absttl) ttl = ttl > INT64_MAX - now ? INT64_MAX : ttl + now;
  if (exists) {
    Store::Status st = c->txn->Delete(a[1]);
    if (st != Store::Status::kOk) return StoreError(st, r);
  }
  if (ttl != 0 && ttl <= now) {  // already past: nothing is made
    if (exists) Notify(c, kNotifyGeneric, "del", a[1]);
    return r->Simple("OK");
  }
  bool whole = true;
  Store::Status st = WriteWhole(c, a[1], v, &whole);
  if (!Saved(st, whole, r)) return;
  if (ttl != 0) {
    Value made;
    if (!ReadValue(c, a[1], &made)) return Damaged(r);
    st = c->txn->Write(a[1], made.type, made.encoding, made.bytes, ttl);
    if (st != Store::Status::kOk) return StoreError(st, r);
  }
  Notify(c, kNotifyGeneric, "restore", a[1]);
  r->Simple("OK");
}

namespace {

// A command as RESP (appended piece by piece: GCC 12 at -O3 warns,
// wrongly, on "$" + std::to_string(n)).
std::string Resp(const std::vector<std::string>& args) {
  std::string s;
  s.push_back('*');
  s.append(std::to_string(args.size())).append("\r\n");
  for (const std::string& a : args) {
    s.push_back('$');
    s.append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  }
  return s;
}

}  // namespace

void Migrate(const Args& a, CommandContext* c, Reply* r) {
  bool copy = false, replace = false, auth = false;
  std::string user, password;
  size_t first_key = 3, num_keys = 1;
  for (size_t j = 6; j < a.size(); ++j) {
    const size_t more = a.size() - 1 - j;
    if (Eq(a[j], "copy")) {
      copy = true;
    } else if (Eq(a[j], "replace")) {
      replace = true;
    } else if (Eq(a[j], "auth")) {
      if (more < 1) return r->Error("ERR syntax error");
      password = std::string(a[++j]);
      auth = true;
    } else if (Eq(a[j], "auth2")) {
      if (more < 2) return r->Error("ERR syntax error");
      user = std::string(a[++j]);
      password = std::string(a[++j]);
      auth = true;
    } else if (Eq(a[j], "keys")) {
      if (!a[3].empty()) {
        return r->Error("ERR When using MIGRATE KEYS option, the key "
                        "argument must be set to the empty string");
      }
      first_key = j + 1;
      num_keys = a.size() - j - 1;
      break;
    } else {
      return r->Error("ERR syntax error");
    }
  }
  int64_t timeout = 0, db = 0;
  if (!ToInt(a[5], &timeout) || !ToInt(a[4], &db)) return NotInt(r);
  if (timeout <= 0) timeout = 1000;
  const int ms = static_cast<int>(std::min<int64_t>(timeout, INT32_MAX));
  // The keys that are here, read whole before anything is sent.
  struct Moving {
    std::string_view key;
    rdb::Value value;
    int64_t expire_ms;
  };
  std::vector<Moving> keys;
  for (size_t j = 0; j < num_keys; ++j) {
    const std::string_view key = a[first_key + j];
    Value meta;
    if (!ReadValue(c, key, &meta)) continue;
    Moving m{key, {}, meta.expire_ms};
    switch (ReadWhole(c, key, &m.value)) {
      case Whole::kValue: keys.push_back(std::move(m)); break;
      case Whole::kNone: break;
      default: return Damaged(r);
    }
  }
  if (keys.empty()) return r->Simple("NOKEY");
  SyncConn conn;
  if (!conn.Connect(std::string(a[1]), std::string(a[2]), ms)) {
    return r->Error("IOERR error or timeout connecting to the client");
  }
  std::string out;
  if (auth) {
    out += user.empty() ? Resp({"AUTH", password})
                        : Resp({"AUTH", user, password});
  }
  out += Resp({"SELECT", std::to_string(db)});
  const int64_t now = WallMs();
  for (const Moving& m : keys) {
    int64_t ttl = 0;
    if (m.expire_ms != 0) ttl = std::max<int64_t>(1, m.expire_ms - now);
    std::vector<std::string> restore = {"RESTORE", std::string(m.key),
                                        std::to_string(ttl),
                                        rdb::Dump(m.value)};
    if (replace) restore.emplace_back("REPLACE");
    out += Resp(restore);
  }
  if (!conn.Write(out, ms)) {
    return r->Error("IOERR error or timeout writing to target instance");
  }
  std::string auth_reply, select_reply, line;
  if ((auth && !conn.ReadLine(&auth_reply, ms)) ||
      !conn.ReadLine(&select_reply, ms)) {
    return r->Error("IOERR error or timeout reading to target instance");
  }
  auto failed = [](const std::string& s) { return s.empty() || s[0] == '-'; };
  std::string target_error;
  bool socket_error = false;
  for (const Moving& m : keys) {
    if (!conn.ReadLine(&line, ms)) {
      socket_error = true;
      break;
    }
    if ((auth && failed(auth_reply)) || failed(select_reply) || failed(line)) {
      if (target_error.empty()) {
        const std::string& e = auth && failed(auth_reply) ? auth_reply
                               : failed(select_reply)     ? select_reply
                                                          : line;
        target_error = e.empty() ? std::string(" ") : e;
      }
    } else if (!copy) {  // moved: the key goes here
      const Store::Status st = c->txn->Delete(m.key);
      if (st != Store::Status::kOk && st != Store::Status::kNotFound) {
        return StoreError(st, r);
      }
      Notify(c, kNotifyGeneric, "del", m.key);
    }
  }
  if (!target_error.empty()) {
    return r->Error("ERR Target instance replied with error: " +
                    target_error.substr(1));
  }
  if (socket_error) {
    return r->Error("IOERR error or timeout reading to target instance");
  }
  r->Simple("OK");
}

}  // namespace cmd
}  // namespace shmkv
