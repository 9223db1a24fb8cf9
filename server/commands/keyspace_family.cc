// shmkv's key commands: existence, renaming, copying, expiry and
// iteration, with Redis 7's replies and error texts (docs/server.md). As
// the string commands, writes run in the caller's Store::Txn.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/dump_family.h"
#include "server/commands/reply.h"
#include "server/commands/sort_family.h"
#include "server/store/owners.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;

}  // namespace

// --- keys ----------------------------------------------------------------

// DEL key [key ...] (and UNLINK)
void Del(const Args& a, CommandContext* c, Reply* r) {
  int64_t n = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    Status st = c->txn->Delete(a[i]);
    if (st == Status::kOk) {
      ++n;
      Notify(c, kNotifyGeneric, "del", a[i]);
    } else if (st != Status::kNotFound && st != Status::kCollision) {
      return StoreError(st, r);
    }
  }
  r->Int(n);
}

// EXISTS key [key ...]
void Exists(const Args& a, CommandContext* c, Reply* r) {
  int64_t n = 0;
  Value v;
  for (size_t i = 1; i < a.size(); ++i) {
    if (c->txn == nullptr) {
      n += c->store->Exists(a[i]);
    } else {
      n += ReadValue(c, a[i], &v);
    }
  }
  r->Int(n);
}

// TOUCH key [key ...]
void Touch(const Args& a, CommandContext* c, Reply* r) {
  Exists(a, c, r);
}

// TYPE key
void Type(const Args& a, CommandContext* c, Reply* r) {
  Value v;
  r->Simple(ReadValue(c, a[1], &v) ? TypeName(v.type) : "none");
}

namespace {

// RENAME and RENAMENX: the value and its TTL move to the new name.
void RenameCommon(const Args& a, bool nx, CommandContext* c, Reply* r) {
  Value v, dummy;
  if (!ReadValue(c, a[1], &v)) return r->Error("ERR no such key");
  if (a[1] == a[2]) return nx ? r->Int(0) : r->Simple("OK");
  bool replaced = ReadValue(c, a[2], &dummy);
  if (nx && replaced) return r->Int(0);
  Status st = c->txn->Write(a[2], v.type, v.encoding, v.bytes, v.expire_ms);
  if (st == Status::kOk) st = c->txn->Delete(a[1]);
  if (st != Status::kOk) return StoreError(st, r);
  // Redis deletes the old destination and adds the key anew: "new" even
  // then (the store announces only keys that were not there).
  if (replaced) NotifyNew(c, c->client->db, a[2]);
  Notify(c, kNotifyGeneric, "rename_from", a[1]);
  Notify(c, kNotifyGeneric, "rename_to", a[2]);
  nx ? r->Int(1) : r->Simple("OK");
}

}  // namespace

// RENAME key newkey
void Rename(const Args& a, CommandContext* c, Reply* r) {
  RenameCommon(a, false, c, r);
}
// RENAMENX key newkey
void RenameNx(const Args& a, CommandContext* c, Reply* r) {
  RenameCommon(a, true, c, r);
}

// COPY source destination [DB db] [REPLACE]
void Copy(const Args& a, CommandContext* c, Reply* r) {
  bool replace = false;
  uint32_t db = c->client->db;
  for (size_t i = 3; i < a.size(); ++i) {
    if (Eq(a[i], "replace")) {
      replace = true;
    } else if (Eq(a[i], "db") && i + 1 < a.size()) {
      if (!ParseDb(a[++i], &db, r)) return;
    } else {
      return r->Error("ERR syntax error");
    }
  }
  if (db == c->client->db && a[1] == a[2]) {
    return r->Error("ERR source and destination objects are the same");
  }
  Value v, dummy;
  if (!ReadValue(c, a[1], &v)) return r->Int(0);
  InDb other(c, db);
  bool replaced = ReadValue(c, a[2], &dummy);
  if (!replace && replaced) return r->Int(0);
  // A collection in parts is copied now, not when the transaction
  // commits: a later command of the same MULTI or script that changes
  // the source (or the copy) must not reach the other.
  PartsRoot root;
  if ((v.encoding & kEncodingParts) != 0 &&
      v.bytes.size() >= sizeof(root)) {
    std::memcpy(&root, v.bytes.data(), sizeof(root));
    if (root.id != 0) {
      Status st = CopyParts(&v.bytes, root, c->txn,
                            c->store->config().capacity);
      if (st != Status::kOk) return StoreError(st, r);
    }
  }
  Status st = c->txn->Write(a[2], v.type, v.encoding, v.bytes, v.expire_ms);
  if (st != Status::kOk) return StoreError(st, r);
  if (replaced) NotifyNew(c, db, a[2]);  // as RENAME's
  Notify(c, kNotifyGeneric, "copy_to", a[2], static_cast<int>(db));
  r->Int(1);
}

// MOVE key db
void Move(const Args& a, CommandContext* c, Reply* r) {
  uint32_t db = 0;
  if (!ParseDb(a[2], &db, r)) return;
  if (db == c->client->db) {
    return r->Error("ERR source and destination objects are the same");
  }
  Value v, there;
  if (!ReadValue(c, a[1], &v)) return r->Int(0);
  {
    InDb other(c, db);
    if (ReadValue(c, a[1], &there)) return r->Int(0);
    Status st = c->txn->Write(a[1], v.type, v.encoding, v.bytes, v.expire_ms);
    if (st != Status::kOk) return StoreError(st, r);
  }
  Status st = c->txn->Delete(a[1]);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyGeneric, "move_from", a[1]);
  Notify(c, kNotifyGeneric, "move_to", a[1], static_cast<int>(db));
  r->Int(1);
}

namespace {

// Inside EXEC the commands that look at the whole keyspace see the
// transaction's own writes, as in Redis (where the queued commands run
// one after another): the keys it deleted (or wrote with a time already
// past) are left out, the keys it created are added. Outside EXEC both
// sets are empty.
struct TxnView {
  std::set<std::string, std::less<>> unlisted;
  std::vector<std::string> created;  // live ones (KEYS, SCAN, RANDOMKEY)
  int64_t count_delta = 0;           // what DBSIZE adds to the map's count
  bool Unlisted(std::string_view k) const {
    return !unlisted.empty() && unlisted.find(k) != unlisted.end();
  }
};
TxnView ViewOf(CommandContext* c) {
  using Change = Store::Txn::Change;
  TxnView v;
  if (c->txn != nullptr) {
    c->txn->Changed([&](std::string_view k, Change ch) {
      switch (ch) {
        case Change::kCreated:
          ++v.count_delta;
          v.created.emplace_back(k);
          break;
        case Change::kCreatedGone:
          ++v.count_delta;
          break;
        case Change::kDeleted:
          --v.count_delta;
          v.unlisted.emplace(k);
          break;
        case Change::kRewrittenGone:
          v.unlisted.emplace(k);
          break;
      }
    });
  }
  return v;
}

}  // namespace

// RANDOMKEY
void RandomKey(const Args&, CommandContext* c, Reply* r) {
  TxnView v = ViewOf(c);
  std::string k;
  // A key this transaction left out is drawn again (a few times: it may
  // have left them all out), then the first listed key stands in (found
  // by a walk of the keyspace), then one it created.
  bool drawn = false;
  for (int tries = 0; tries < 16 && c->store->RandomKey(&k); ++tries) {
    if (!v.Unlisted(k)) return r->Bulk(k);
    drawn = true;
  }
  std::string listed;
  uint64_t cursor = 0;
  while (drawn && listed.empty()) {
    c->store->Scan(&cursor, 64, [&](std::string_view key, ValueType) {
      if (listed.empty() && !v.Unlisted(key)) listed.assign(key);
    });
    if (cursor == 0) break;
  }
  if (!listed.empty()) return r->Bulk(listed);
  if (!v.created.empty()) {
    return r->Bulk(v.created[static_cast<size_t>(NowMs()) %
                                  v.created.size()]);
  }
  r->Null();
}

namespace {

// Every EXPIRE form: [NX | XX | GT | LT] checked as Redis checks them
// (options first, then the time, then the key).
void ExpireCommon(const Args& a, bool secs, bool abs, CommandContext* c,
                  Reply* r) {
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t i = 3; i < a.size(); ++i) {
    if (Eq(a[i], "nx")) {
      nx = true;
    } else if (Eq(a[i], "xx")) {
      xx = true;
    } else if (Eq(a[i], "gt")) {
      gt = true;
    } else if (Eq(a[i], "lt")) {
      lt = true;
    } else {
      return r->Error("ERR Unsupported option " + std::string(a[i]));
    }
  }
  if (nx && (xx || gt || lt)) {
    return r->Error("ERR NX and XX, GT or LT options at the same time are "
                     "not compatible");
  }
  if (gt && lt) {
    return r->Error("ERR GT and LT options at the same time are not "
                     "compatible");
  }
  int64_t v = 0, when = 0, now = WallMs();
  if (!ToInt(a[2], &v)) return NotInt(r);
  if (!AbsoluteExpiry(v, secs, abs, now, &when)) {
    return r->Error(InvalidExpire(a[0]));
  }
  Value value;
  if (!ReadValue(c, a[1], &value)) return r->Int(0);
  int64_t cur = value.expire_ms;
  // No TTL is an infinite one: GT never beats it, LT always does.
  if ((nx && cur != 0) || (xx && cur == 0) || (gt && (cur == 0 || when <= cur)) ||
      (lt && cur != 0 && when >= cur)) {
    return r->Int(0);
  }
  bool past = when <= now;
  Status st = past ? c->txn->Delete(a[1])
                   : c->txn->Write(a[1], value.type, value.encoding,
                                   value.bytes, when);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyGeneric, past ? "del" : "expire", a[1]);
  r->Int(1);
}

void TtlCommon(const Args& a, bool ms, bool abs, CommandContext* c,
               Reply* r) {
  Value v;
  if (!ReadValue(c, a[1], &v)) return r->Int(-2);
  int64_t expire = v.expire_ms;
  if (expire == 0) return r->Int(-1);
  int64_t left = abs ? expire : expire - WallMs();
  if (left < 0) left = 0;
  r->Int(ms ? left : (left + 500) / 1000);
}

}  // namespace

// EXPIRE key seconds [NX | XX | GT | LT]
void Expire(const Args& a, CommandContext* c, Reply* r) {
  ExpireCommon(a, true, false, c, r);
}
// PEXPIRE key ms [NX | XX | GT | LT]
void PExpire(const Args& a, CommandContext* c, Reply* r) {
  ExpireCommon(a, false, false, c, r);
}
// EXPIREAT key unix-s [NX | XX | GT | LT]
void ExpireAt(const Args& a, CommandContext* c, Reply* r) {
  ExpireCommon(a, true, true, c, r);
}
// PEXPIREAT key unix-ms [NX | XX | GT | LT]
void PExpireAt(const Args& a, CommandContext* c, Reply* r) {
  ExpireCommon(a, false, true, c, r);
}
// TTL key
void Ttl(const Args& a, CommandContext* c, Reply* r) {
  TtlCommon(a, false, false, c, r);
}
// PTTL key
void PTtl(const Args& a, CommandContext* c, Reply* r) {
  TtlCommon(a, true, false, c, r);
}
// EXPIRETIME key
void ExpireTime(const Args& a, CommandContext* c, Reply* r) {
  TtlCommon(a, false, true, c, r);
}
// PEXPIRETIME key
void PExpireTime(const Args& a, CommandContext* c, Reply* r) {
  TtlCommon(a, true, true, c, r);
}

// PERSIST key
void Persist(const Args& a, CommandContext* c, Reply* r) {
  bool changed = false;
  Status st = Store::SetExpireIn(c->txn, a[1], 0, &changed);
  if (st != Status::kOk) return StoreError(st, r);
  if (changed) Notify(c, kNotifyGeneric, "persist", a[1]);
  r->Int(changed ? 1 : 0);
}

// DBSIZE
void DbSize(const Args&, CommandContext* c, Reply* r) {
  TxnView v = ViewOf(c);
  int64_t n = static_cast<int64_t>(
                  c->store->KeysIn(c->store->db(), nullptr, c->txn != nullptr)) +
              v.count_delta;
  r->Int(n < 0 ? 0 : n);
}

// FLUSHALL [ASYNC | SYNC] and FLUSHDB [ASYNC | SYNC]
void FlushCommon(const Args& a, CommandContext* c, Reply* r, bool all) {
  if (a.size() > 2 || (a.size() == 2 && !Eq(a[1], "sync") &&
                       !Eq(a[1], "async"))) {
    return r->Error("ERR syntax error");
  }
  uint64_t n = 0;
  Status st = Status::kOk;
  if (c->txn != nullptr) {
    st = all ? c->txn->FlushAll(&n) : c->txn->FlushDb(c->txn->db(), &n);
  } else if (all) {
    c->store->FlushAll();
  } else {
    c->store->FlushDb(c->store->db());
  }
  if (st != Status::kOk) return StoreError(st, r);
  r->Simple("OK");
}

void FlushAll(const Args& a, CommandContext* c, Reply* r) {
  FlushCommon(a, c, r, true);
}

void FlushDb(const Args& a, CommandContext* c, Reply* r) {
  FlushCommon(a, c, r, false);
}

// KEYS pattern
void Keys(const Args& a, CommandContext* c, Reply* r) {
  TxnView v = ViewOf(c);
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  do {
    c->store->Scan(&cursor, 4096, [&](std::string_view k, ValueType) {
      if (GlobMatch(a[1], k) && !v.Unlisted(k)) keys.emplace_back(k);
    });
  } while (cursor != 0);
  for (const std::string& k : v.created) {
    if (GlobMatch(a[1], k)) keys.push_back(k);
  }
  r->Array(keys.size());
  for (const std::string& k : keys) r->Bulk(k);
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
void Scan(const Args& a, CommandContext* c, Reply* r) {
  // Redis reads the cursor with strtoul: "-1" is a (huge) cursor, not an
  // error; leading space, trailing bytes or overflow are. Read as a C
  // string, as Redis does: an empty cursor is 0, a zero byte ends it.
  ScanArgs scan;
  if (!ParseScan(a, 1, true, &scan, r)) return;
  std::string_view match = scan.match, type = scan.type;
  int64_t count = scan.count;
  uint64_t cur = scan.cursor;
  TxnView v = ViewOf(c);
  auto wanted = [&](std::string_view k, ValueType t) {
    return (type.empty() || EqualFold(type, TypeName(t))) &&
           (match.empty() || GlobMatch(match, k));
  };
  std::vector<std::string> keys;
  uint64_t cursor = cur;
  c->store->Scan(&cursor, static_cast<size_t>(count),
                 [&](std::string_view k, ValueType t) {
                   if (wanted(k, t) && !v.Unlisted(k)) keys.emplace_back(k);
                 });
  // The keys the transaction created come with the scan's last page.
  if (cursor == 0) {
    Value value;
    for (const std::string& k : v.created) {
      if (ReadValue(c, k, &value) && wanted(k, value.type)) keys.push_back(k);
    }
  }
  r->Array(2);
  r->Bulk(std::to_string(cursor));
  r->Array(keys.size());
  for (const std::string& k : keys) r->Bulk(k);
}

// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key, OBJECT HELP
void Object(const Args& a, CommandContext* c, Reply* r) {
  if (Eq(a[1], "help") && a.size() == 2) {
    HelpReply(r, "OBJECT", {
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to "
        "store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned "
        "integer is",
        "    proportional to the logarithm of the recent access frequency "
        "of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated "
        "number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with "
        "the specified",
        "    <key>."});
    return;
  }
  bool known = Eq(a[1], "encoding") || Eq(a[1], "refcount") ||
               Eq(a[1], "idletime") || Eq(a[1], "freq") || Eq(a[1], "help");
  if (!known) {
    return r->Error("ERR unknown subcommand '" +
                    std::string(a[1].substr(0, 128)) + "'. Try OBJECT HELP.");
  }
  if (a.size() != 3 || Eq(a[1], "help")) {  // (HELP takes nothing)
    return r->Error("ERR wrong number of arguments for 'object|" +
                    Lower(a[1]) + "' command");
  }
  Value v;
  if (!ReadValue(c, a[2], &v)) return r->Null();
  if (Eq(a[1], "encoding")) return r->Bulk(EncodingName(v));
  if (Eq(a[1], "refcount")) return r->Int(1);
  if (Eq(a[1], "idletime")) return r->Int(0);  // not tracked (docs)
  r->Error("ERR An LFU maxmemory policy is not selected, access frequency "
           "not tracked. Please note that when switching between policies "
           "at runtime LRU and LFU data will take some time to adjust.");
}

namespace {

// What the key holds of the store (MEMORY USAGE): its blob's nodes and
// index node, and, for a collection in parts, its parts'. With `samples`
// (> 0) fewer than the parts, that many evenly spaced part indexes are
// read and the sum scaled to all of them, as Redis samples a large
// value's elements.
enum class Usage { kNone, kOk, kDamaged };
Usage KeyMemory(CommandContext* c, std::string_view key, uint64_t samples,
                uint64_t* bytes) {
  Value v;
  if (!ReadValue(c, key, &v)) return Usage::kNone;
  *bytes = c->store->BlobCost(kBlobHeader + key.size() + v.bytes.size());
  PartsRoot root{};
  if ((v.encoding & kEncodingParts) == 0 || v.bytes.size() < sizeof(root)) {
    return Usage::kOk;
  }
  std::memcpy(&root, v.bytes.data(), sizeof(root));
  // A count of parts the map could not hold is damage (a sorted set's
  // indexes run to twice its largest half's).
  if (root.parts > 2 * c->store->Capacity() + 2) return Usage::kDamaged;
  uint64_t reads = samples == 0 || samples > root.parts ? root.parts
                                                        : samples;
  uint64_t sum = 0;
  std::string part;
  const uint64_t step = reads != 0 ? root.parts / reads : 1;  // >= 1
  for (uint64_t k = 0; k < reads; ++k) {
    uint64_t index = k * step;  // < parts: no overflow, whatever parts is
    if (c->store->GetPart(root.id, index, &part)) {
      sum += c->store->BlobCost(kBlobHeader + sizeof(PartKey) + part.size());
    }
  }
  if (reads == root.parts) {
    *bytes += sum;
  } else if (reads != 0) {
    *bytes += static_cast<uint64_t>(static_cast<double>(sum) *
                                    static_cast<double>(root.parts) /
                                    static_cast<double>(reads));
  }
  return Usage::kOk;
}

}  // namespace

// MEMORY USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS |
// PURGE | HELP
void Memory(const Args& a, CommandContext* c, Reply* r) {
  std::string sub = Lower(a[1]);
  auto arity = [&](size_t n) {
    if (a.size() == n) return true;
    SubcommandArityError("memory", sub, r);
    return false;
  };
  if (sub == "help") {
    if (!arity(2)) return;
    HelpReply(r, "MEMORY", {
        "DOCTOR",
        "    What the store's memory looks like, in a sentence.",
        "MALLOC-STATS",
        "    The allocator's own statistics (none: the store is shared "
        "memory).",
        "PURGE",
        "    Nothing to give back: freed nodes return to the store's pool.",
        "STATS",
        "    The store's memory: what it holds in all, its index, its keys.",
        "USAGE <key> [SAMPLES <count>]",
        "    The bytes <key> holds of the store (its nodes and index "
        "node); a value in",
        "    parts reads <count> of them and scales (default: 5, 0: all "
        "of them)."});
  } else if (sub == "usage") {
    if (a.size() < 3) {
      return r->Error("ERR wrong number of arguments for 'memory|usage' "
                      "command");
    }
    int64_t samples = 5;
    for (size_t j = 3; j < a.size(); j += 2) {  // SAMPLES count, pairs
      if (!Eq(a[j], "samples") || j + 1 >= a.size()) {
        return r->Error("ERR syntax error");
      }
      if (!ToInt(a[j + 1], &samples)) return NotInt(r);
      if (samples < 0) return r->Error("ERR syntax error");
    }
    uint64_t bytes = 0;
    ReadConsistently(c, r, [&] {
      switch (KeyMemory(c, a[2], static_cast<uint64_t>(samples), &bytes)) {
        case Usage::kNone: return r->Null();
        case Usage::kDamaged: return Damaged(r);
        case Usage::kOk: break;
      }
      r->Int(static_cast<int64_t>(bytes));
    });
  } else if (sub == "stats") {
    if (!arity(2)) return;
    // The store's figures under Redis's names where one means the same;
    // the allocator's and the clients' are not the store's to give.
    const uint64_t used = c->store->MemoryUsed();
    const uint64_t index = c->store->IndexBytes();
    const uint64_t keys = c->store->Keys();
    const uint64_t total = used + index;
    r->Map(7);
    r->Bulk("total.allocated");
    r->Int(static_cast<int64_t>(total));
    r->Bulk("overhead.total");
    r->Int(static_cast<int64_t>(index));
    r->Bulk("keys.count");
    r->Int(static_cast<int64_t>(keys));
    r->Bulk("keys.bytes-per-key");
    r->Int(static_cast<int64_t>(keys != 0 ? total / keys : 0));
    r->Bulk("dataset.bytes");
    r->Int(static_cast<int64_t>(used));
    r->Bulk("dataset.percentage");
    r->Double(total != 0 ? 100.0 * static_cast<double>(used) /
                               static_cast<double>(total)
                         : 0.0);
    r->Bulk("maxmemory");
    r->Int(static_cast<int64_t>(c->store->MemoryTotal()));
  } else if (sub == "malloc-stats") {
    if (!arity(2)) return;
    r->Bulk("Stats not supported for the current allocator");
  } else if (sub == "doctor") {
    if (!arity(2)) return;
    const uint64_t used = c->store->MemoryUsed();
    const uint64_t limit = c->store->MemoryTotal();
    char text[256];
    std::snprintf(text, sizeof(text),
                  "The store holds %llu keys in %llu bytes of its %llu "
                  "(%.1f%% full). Keys or values added past that are "
                  "refused with -OOM; nothing is evicted.",
                  static_cast<unsigned long long>(c->store->Keys()),
                  static_cast<unsigned long long>(used),
                  static_cast<unsigned long long>(limit),
                  limit != 0 ? 100.0 * static_cast<double>(used) /
                                   static_cast<double>(limit)
                             : 0.0);
    r->Verbatim(text);
  } else if (sub == "purge") {
    if (!arity(2)) return;
    r->Simple("OK");
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
             "'. Try MEMORY HELP.");
  }
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kKeyspaceRows[] = {
    {"del", 29, -2, kWrite, 1, -1, 1, Del},
    {"unlink", 30, -2, kWrite | kFast, 1, -1, 1, Del},
    {"exists", 31, -2, kReadOnly | kFast, 1, -1, 1, Exists},
    {"touch", 32, -2, kReadOnly | kFast, 1, -1, 1, Touch},
    {"type", 33, 2, kReadOnly | kFast, 1, 1, 1, Type},
    {"rename", 34, 3, kWrite, 1, 2, 1, Rename},
    {"renamenx", 35, 3, kWrite | kFast, 1, 2, 1, RenameNx},
    {"copy", 36, -3, kWrite | kDenyOom, 1, 2, 1, Copy},
    {"randomkey", 37, 1, kReadOnly, 0, 0, 0, RandomKey},
    {"expire", 38, -3, kWrite | kFast, 1, 1, 1, Expire},
    {"pexpire", 39, -3, kWrite | kFast, 1, 1, 1, PExpire},
    {"expireat", 40, -3, kWrite | kFast, 1, 1, 1, ExpireAt},
    {"pexpireat", 41, -3, kWrite | kFast, 1, 1, 1, PExpireAt},
    {"ttl", 42, 2, kReadOnly | kFast, 1, 1, 1, Ttl},
    {"pttl", 43, 2, kReadOnly | kFast, 1, 1, 1, PTtl},
    {"expiretime", 44, 2, kReadOnly | kFast, 1, 1, 1, ExpireTime},
    {"pexpiretime", 45, 2, kReadOnly | kFast, 1, 1, 1, PExpireTime},
    {"persist", 46, 2, kWrite | kFast, 1, 1, 1, Persist},
    {"dbsize", 47, 1, kReadOnly | kFast, 0, 0, 0, DbSize},
    {"flushall", 48, -1, kWrite | kOwnCommit, 0, 0, 0, FlushAll},
    {"flushdb", 49, -1, kWrite | kOwnCommit, 0, 0, 0, FlushDb},
    {"move", 158, 3, kWrite | kFast, 1, 1, 1, Move},
    {"keys", 50, 2, kReadOnly, 0, 0, 0, Keys},
    {"scan", 51, -2, kReadOnly, 0, 0, 0, Scan},
    {"object", 66, -2, kReadOnly | kContainer, 2, 2, 1, Object},
    {"memory", 185, -2, kReadOnly | kContainer, 2, 2, 1, Memory},
    {"sort", 186, -2, kWrite | kDenyOom | kMovableKeys, 1, 1, 1, Sort},
    {"sort_ro", 187, -2, kReadOnly | kMovableKeys, 1, 1, 1, SortRo},
    {"dump", 175, 2, kReadOnly, 1, 1, 1, Dump},
    {"restore", 176, -4, kWrite | kDenyOom, 1, 1, 1, Restore},
    {"migrate", 181, -6, kWrite | kMovableKeys | kMayReplicate, 3, 3, 1, Migrate},
};

void RegisterKeyspaceFamily(Registry* r) {
  r->Add(kKeyspaceRows, "keyspace");
}

}  // namespace cmd
}  // namespace shmkv
