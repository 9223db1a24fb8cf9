// DUMP and RESTORE (server/commands/dump_family.h).
//
// DUMP writes each type in its plain RDB form (a string as Redis encodes
// it, lists, sets, hashes and sorted sets as type 1, 2, 4 and 5), which
// every Redis since 2.x restores; RESTORE takes every encoding Redis 7.0
// writes and older ones (server/rdb/codec.h). A payload is decoded and
// checked whole before anything is written, and the new value replaces
// the key in one commit.
#include "server/commands/dump_family.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/list_value.h"
#include "server/commands/notify.h"
#include "server/commands/zset_value.h"
#include "server/rdb/codec.h"
#include "server/store/int_text.h"

namespace shmkv {
namespace cmd {

namespace {

// The whole value at `key` as RDB sees it: false when there is none, or
// after replying an error (a damaged value).
bool ReadWhole(CommandContext* c, std::string_view key, rdb::Value* out,
               Reply* r, bool* replied) {
  *replied = false;
  Value meta;
  if (!ReadValue(c, key, &meta)) return false;
  auto fail = [&](Load l) {
    *replied = !Opened(l, r);
    return !*replied;
  };
  switch (meta.type) {
    case ValueType::kString:
      out->kind = rdb::Value::kString;
      return ReadString(c, key, &out->str) == Found::kYes;
    case ValueType::kHash:
    case ValueType::kSet: {
      const bool set = meta.type == ValueType::kSet;
      HashValue h(set ? kSetShape : kHashShape);
      if (!fail(h.Open(c, key))) return false;
      std::vector<std::pair<std::string_view, std::string_view>> all;
      if (!h.All(&all)) {
        Damaged(r);
        *replied = true;
        return false;
      }
      out->kind = set ? rdb::Value::kSet : rdb::Value::kHash;
      for (const auto& [f, v] : all) {
        if (set) {
          out->items.emplace_back(f);
        } else {
          out->pairs.emplace_back(std::string(f), std::string(v));
        }
      }
      return true;
    }
    case ValueType::kList: {
      ListValue l;
      if (!fail(l.Open(c, key))) return false;
      std::vector<std::string_view> all;
      if (l.size() > 0 && !l.Range(0, l.size() - 1, &all)) {
        Damaged(r);
        *replied = true;
        return false;
      }
      out->kind = rdb::Value::kList;
      out->items.assign(all.begin(), all.end());
      return true;
    }
    case ValueType::kZSet: {
      ZSetValue z;
      if (!fail(z.Open(c, key))) return false;
      std::vector<ZEntry> all;
      if (!z.All(&all)) {
        Damaged(r);
        *replied = true;
        return false;
      }
      out->kind = rdb::Value::kZSet;
      for (const ZEntry& e : all) {
        out->scored.emplace_back(std::string(e.member), e.score);
      }
      return true;
    }
  }
  return false;
}

// Writes `v` as the value of `key` (which holds nothing now) with no
// TTL: the store's status.
Store::Status WriteWhole(CommandContext* c, std::string_view key,
                         const rdb::Value& v, bool* whole) {
  *whole = true;
  switch (v.kind) {
    case rdb::Value::kString:
      return c->txn->Put(key, v.str, 0);
    case rdb::Value::kHash:
    case rdb::Value::kSet: {
      const bool set = v.kind == rdb::Value::kSet;
      HashValue h(set ? kSetShape : kHashShape);
      if (h.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      if (set) {
        for (const std::string& m : v.items) {
          h.Grow(m);
          h.Set(m, std::string_view());
        }
      } else {
        for (const auto& [f, val] : v.pairs) {
          h.Grow(f);
          h.Grow(val);
          h.Set(f, val);
        }
      }
      *whole = h.ok();
      return h.ok() ? h.Save(c, key) : Store::Status::kOk;
    }
    case rdb::Value::kList: {
      ListValue l;
      if (l.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      for (const std::string& s : v.items) l.Push(false, s);
      *whole = l.ok();
      return l.ok() ? l.Save(c, key) : Store::Status::kOk;
    }
    case rdb::Value::kZSet: {
      ZSetValue z;
      if (z.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      for (const auto& [m, score] : v.scored) z.Set(m, score);
      *whole = z.ok();
      return z.ok() ? z.Save(c, key) : Store::Status::kOk;
    }
  }
  return Store::Status::kOk;
}

}  // namespace

void Dump(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    rdb::Value v;
    bool replied = false;
    if (!ReadWhole(c, a[1], &v, r, &replied)) {
      if (!replied) r->Null();
      return;
    }
    r->Bulk(rdb::Dump(v));
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
  const int64_t now = NowMs();
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

}  // namespace cmd
}  // namespace shmkv
