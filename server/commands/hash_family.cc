// shmkv's hash commands, with Redis 7's replies and error texts
// (docs/server.md, "Hashes"). A hash's value bytes are its fields and
// values packed in insertion order (server/commands/packed.h); the
// encoding byte says whether Redis would hold it as a listpack or a hash
// table (server/store/blob.h). Write commands run in the transaction
// dispatch opened for them; reads outside one are lock-free copies.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/packed.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;

// Redis's listpack limits (hash-max-listpack-entries / -value).
constexpr size_t kListpackEntries = 512;
constexpr size_t kListpackValue = 64;

// A hash as a command sees it: its pairs as views into `value.bytes`
// (or into the command's arguments, once it changed them).
struct Hash {
  bool exists = false;
  Value value;
  std::vector<std::string_view> items;  // field, value, field, value...

  size_t size() const { return items.size() / 2; }
  // The index of `field`'s pair, or -1.
  ptrdiff_t Find(std::string_view field) const {
    for (size_t i = 0; i < items.size(); i += 2) {
      if (items[i] == field) return static_cast<ptrdiff_t>(i / 2);
    }
    return -1;
  }
  std::string_view FieldAt(size_t pair) const { return items[2 * pair]; }
  std::string_view ValueAt(size_t pair) const { return items[2 * pair + 1]; }
  // Sets a field (appended when new, in place when not); true when new.
  bool Set(std::string_view field, std::string_view v) {
    ptrdiff_t at = Find(field);
    if (at >= 0) {
      items[2 * static_cast<size_t>(at) + 1] = v;
      return false;
    }
    items.push_back(field);
    items.push_back(v);
    return true;
  }
  bool Remove(std::string_view field) {
    ptrdiff_t at = Find(field);
    if (at < 0) return false;
    auto first = items.begin() + 2 * at;
    items.erase(first, first + 2);
    return true;
  }
  // Redis converts a listpack hash once it holds a field or value over
  // 64 bytes or more than 512 fields, and never back.
  void Grow(std::string_view written) {
    if (written.size() > kListpackValue) value.encoding = kHashTable;
  }
};

// The hash at `key` into *h (h->exists false when there is none). False
// after replying WRONGTYPE, or an error for bytes that do not unpack.
bool LoadHash(CommandContext* c, std::string_view key, Hash* h, Reply* r) {
  h->exists = ReadValue(c, key, &h->value);
  h->items.clear();
  if (!h->exists) {
    h->value = Value{ValueType::kHash, kHashListpack, {}, 0};
    return true;
  }
  if (h->value.type != ValueType::kHash) {
    WrongType(r);
    return false;
  }
  if (!Unpack(h->value.bytes, &h->items) || h->items.size() % 2 != 0) {
    r->Error("ERR the value of this key is damaged (shmc check)");
    return false;
  }
  return true;
}

// Writes the hash back (its TTL kept); an empty hash deletes the key, as
// Redis removes a hash whose last field goes. False after replying an
// error.
bool SaveHash(CommandContext* c, std::string_view key, Hash* h, Reply* r) {
  Status st;
  if (h->items.empty()) {
    st = h->exists ? c->txn->Delete(key) : Status::kOk;
  } else {
    if (h->size() > kListpackEntries) h->value.encoding = kHashTable;
    std::string bytes;
    Pack(h->items, &bytes);
    st = c->txn->Write(key, ValueType::kHash, h->value.encoding, bytes,
                       h->value.expire_ms);
  }
  if (st == Status::kOk) return true;
  StoreError(st, r);
  return false;
}

void WrongArgs(const Args& a, Reply* r) {
  r->Error("ERR wrong number of arguments for '" + Lower(a[0]) +
           "' command");
}

// HSET and HMSET: the pairs from a[2] on; the number of new fields.
bool SetPairs(const Args& a, CommandContext* c, Reply* r, int64_t* added) {
  if (a.size() % 2 != 0) {
    WrongArgs(a, r);
    return false;
  }
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return false;
  for (size_t i = 2; i < a.size(); ++i) h.Grow(a[i]);
  *added = 0;
  for (size_t i = 2; i + 1 < a.size(); i += 2) *added += h.Set(a[i], a[i + 1]);
  return SaveHash(c, a[1], &h, r);
}

}  // namespace

// HSET key field value [field value ...]
void HSet(const Args& a, CommandContext* c, Reply* r) {
  int64_t added = 0;
  if (SetPairs(a, c, r, &added)) r->Int(added);
}

// HMSET key field value [field value ...]
void HMSet(const Args& a, CommandContext* c, Reply* r) {
  int64_t added = 0;
  if (SetPairs(a, c, r, &added)) r->Simple("OK");
}

// HSETNX key field value
void HSetNx(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  h.Grow(a[2]);
  h.Grow(a[3]);
  if (h.Find(a[2]) >= 0) return r->Int(0);
  h.Set(a[2], a[3]);
  if (SaveHash(c, a[1], &h, r)) r->Int(1);
}

// HGET key field
void HGet(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  ptrdiff_t at = h.Find(a[2]);
  if (at < 0) return r->Null();
  r->Bulk(h.ValueAt(static_cast<size_t>(at)));
}

// HMGET key field [field ...]
void HMGet(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  r->Array(a.size() - 2);
  for (size_t i = 2; i < a.size(); ++i) {
    ptrdiff_t at = h.Find(a[i]);
    if (at < 0) {
      r->Null();
    } else {
      r->Bulk(h.ValueAt(static_cast<size_t>(at)));
    }
  }
}

// HDEL key field [field ...]
void HDel(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  int64_t removed = 0;
  for (size_t i = 2; i < a.size(); ++i) removed += h.Remove(a[i]);
  if (removed > 0 && !SaveHash(c, a[1], &h, r)) return;
  r->Int(removed);
}

// HLEN key
void HLen(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (LoadHash(c, a[1], &h, r)) r->Int(static_cast<int64_t>(h.size()));
}

// HSTRLEN key field
void HStrLen(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  ptrdiff_t at = h.Find(a[2]);
  r->Int(at < 0 ? 0
                : static_cast<int64_t>(h.ValueAt(static_cast<size_t>(at)).size()));
}

// HEXISTS key field
void HExists(const Args& a, CommandContext* c, Reply* r) {
  Hash h;
  if (LoadHash(c, a[1], &h, r)) r->Int(h.Find(a[2]) >= 0 ? 1 : 0);
}

namespace {

// HGETALL, HKEYS and HVALS: the pairs in the hash's order.
void ReplyPairs(const Args& a, CommandContext* c, Reply* r, bool fields,
                bool values) {
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  r->Array(h.size() * ((fields ? 1 : 0) + (values ? 1 : 0)));
  for (size_t i = 0; i < h.size(); ++i) {
    if (fields) r->Bulk(h.FieldAt(i));
    if (values) r->Bulk(h.ValueAt(i));
  }
}

}  // namespace

// HGETALL key
void HGetAll(const Args& a, CommandContext* c, Reply* r) {
  ReplyPairs(a, c, r, true, true);
}

// HKEYS key
void HKeys(const Args& a, CommandContext* c, Reply* r) {
  ReplyPairs(a, c, r, true, false);
}

// HVALS key
void HVals(const Args& a, CommandContext* c, Reply* r) {
  ReplyPairs(a, c, r, false, true);
}

// HINCRBY key field increment
void HIncrBy(const Args& a, CommandContext* c, Reply* r) {
  int64_t by = 0;
  if (!ToInt(a[3], &by)) return NotInt(r);
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  int64_t cur = 0;
  ptrdiff_t at = h.Find(a[2]);
  if (at >= 0 && !ToInt(h.ValueAt(static_cast<size_t>(at)), &cur)) {
    return r->Error("ERR hash value is not an integer");
  }
  if ((by > 0 && cur > INT64_MAX - by) || (by < 0 && cur < INT64_MIN - by)) {
    return r->Error("ERR increment or decrement would overflow");
  }
  std::string text = std::to_string(cur + by);
  h.Grow(a[2]);
  h.Set(a[2], text);
  if (SaveHash(c, a[1], &h, r)) r->Int(cur + by);
}

// HINCRBYFLOAT key field increment
void HIncrByFloat(const Args& a, CommandContext* c, Reply* r) {
  long double by = 0;
  if (!ToLongDouble(a[3], &by)) {
    return r->Error("ERR value is not a valid float");
  }
  if (std::isinf(by)) return r->Error("ERR value is NaN or Infinity");
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  long double cur = 0;
  ptrdiff_t at = h.Find(a[2]);
  if (at >= 0 && !ToLongDouble(h.ValueAt(static_cast<size_t>(at)), &cur)) {
    return r->Error("ERR hash value is not a float");
  }
  long double sum = cur + by;
  if (std::isnan(sum) || std::isinf(sum)) {
    return r->Error("ERR increment would produce NaN or Infinity");
  }
  std::string text = LongDoubleText(sum);
  h.Grow(a[2]);
  h.Grow(text);
  h.Set(a[2], text);
  if (SaveHash(c, a[1], &h, r)) r->Bulk(text);
}

namespace {

std::mt19937_64& Rng() {
  static std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

}  // namespace

// HRANDFIELD key [count [WITHVALUES]]
void HRandField(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 0;
  bool with_values = false;
  if (a.size() >= 3) {
    if (!ToInt(a[2], &count)) return NotInt(r);
    if (count == INT64_MIN) {
      return r->Error("ERR value is out of range, value must between "
                      "-9223372036854775807 and 9223372036854775807");
    }
    if (a.size() > 4 || (a.size() == 4 && !Eq(a[3], "withvalues"))) {
      return r->Error("ERR syntax error");
    }
    with_values = a.size() == 4;
    if (with_values && (count < -INT64_MAX / 2 || count > INT64_MAX / 2)) {
      return r->Error("ERR value is out of range");
    }
  }
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  if (a.size() == 2) {
    if (h.size() == 0) return r->Null();
    return r->Bulk(h.FieldAt(Rng()() % h.size()));
  }
  size_t per = with_values ? 2 : 1;
  auto emit = [&](size_t i) {
    r->Bulk(h.FieldAt(i));
    if (with_values) r->Bulk(h.ValueAt(i));
  };
  if (h.size() == 0 || count == 0) return r->Array(0);
  if (count < 0) {
    // Repeats allowed: exactly -count picks.
    uint64_t n = static_cast<uint64_t>(-count);
    r->Array(n * per);
    for (uint64_t i = 0; i < n; ++i) emit(Rng()() % h.size());
    return;
  }
  if (static_cast<uint64_t>(count) >= h.size()) {
    // The whole hash, in its order.
    r->Array(h.size() * per);
    for (size_t i = 0; i < h.size(); ++i) emit(i);
    return;
  }
  // `count` distinct fields: a partial shuffle of the indexes.
  std::vector<size_t> idx(h.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  size_t n = static_cast<size_t>(count);
  for (size_t i = 0; i < n; ++i) {
    std::swap(idx[i], idx[i + Rng()() % (idx.size() - i)]);
  }
  r->Array(n * per);
  for (size_t i = 0; i < n; ++i) emit(idx[i]);
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
void HScan(const Args& a, CommandContext* c, Reply* r) {
  uint64_t cursor = 0;
  if (!ParseScanCursor(a[2], &cursor)) return r->Error("ERR invalid cursor");
  std::string_view match;
  for (size_t i = 3; i < a.size(); ++i) {
    int64_t count = 0;
    if (Eq(a[i], "match") && i + 1 < a.size()) {
      match = a[++i];
    } else if (Eq(a[i], "count") && i + 1 < a.size()) {
      if (!ToInt(a[++i], &count)) return NotInt(r);
      if (count < 1) return r->Error("ERR syntax error");
    } else {
      return r->Error("ERR syntax error");
    }
  }
  Hash h;
  if (!LoadHash(c, a[1], &h, r)) return;
  // A hash is one packed value: any cursor returns all of it and ends
  // the scan, as Redis does for a listpack (docs/server.md: for
  // hashtable-encoded hashes too, for now).
  std::vector<size_t> hits;
  for (size_t i = 0; i < h.size(); ++i) {
    if (match.empty() || GlobMatch(match, h.FieldAt(i))) hits.push_back(i);
  }
  r->Array(2);
  r->Bulk("0");
  r->Array(hits.size() * 2);
  for (size_t i : hits) {
    r->Bulk(h.FieldAt(i));
    r->Bulk(h.ValueAt(i));
  }
}

namespace {

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kHashRows[] = {
    {"hset", 67, -4, kWrite | kDenyOom | kFast, 1, 1, 1, HSet},
    {"hsetnx", 68, 4, kWrite | kDenyOom | kFast, 1, 1, 1, HSetNx},
    {"hget", 69, 3, kReadOnly | kFast, 1, 1, 1, HGet},
    {"hmset", 70, -4, kWrite | kDenyOom | kFast, 1, 1, 1, HMSet},
    {"hmget", 71, -3, kReadOnly | kFast, 1, 1, 1, HMGet},
    {"hdel", 72, -3, kWrite | kFast, 1, 1, 1, HDel},
    {"hlen", 73, 2, kReadOnly | kFast, 1, 1, 1, HLen},
    {"hstrlen", 74, 3, kReadOnly | kFast, 1, 1, 1, HStrLen},
    {"hexists", 75, 3, kReadOnly | kFast, 1, 1, 1, HExists},
    {"hgetall", 76, 2, kReadOnly, 1, 1, 1, HGetAll},
    {"hkeys", 77, 2, kReadOnly, 1, 1, 1, HKeys},
    {"hvals", 78, 2, kReadOnly, 1, 1, 1, HVals},
    {"hincrby", 79, 4, kWrite | kDenyOom | kFast, 1, 1, 1, HIncrBy},
    {"hincrbyfloat", 80, 4, kWrite | kDenyOom | kFast, 1, 1, 1, HIncrByFloat},
    {"hrandfield", 81, -2, kReadOnly, 1, 1, 1, HRandField},
    {"hscan", 82, -3, kReadOnly, 1, 1, 1, HScan},
};

}  // namespace

void RegisterHashFamily(Registry* r) {
  r->Add(kHashRows, "hash");
}

}  // namespace cmd
}  // namespace shmkv
