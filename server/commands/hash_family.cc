// shmkv's hash commands, with Redis 7's replies and error texts
// (docs/server.md, "Hashes"), over HashValue (server/commands/
// hash_value.h): a small hash packed in one blob, a large one in buckets.
// Write commands run in the transaction dispatch opened for them; reads
// outside one are lock-free, over one consistent view
// (ReadConsistently).
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;
using Pairs = std::vector<std::pair<std::string_view, std::string_view>>;

// Opens the hash at `key` into *h; false after replying WRONGTYPE or the
// damaged-value error.
bool OpenHash(CommandContext* c, std::string_view key, HashValue* h,
              Reply* r) {
  return Opened(h->Open(c, key), r);
}

// Writes the hash back; false after replying an error.
bool SaveHash(CommandContext* c, std::string_view key, HashValue* h,
              Reply* r) {
  Status st = h->ok() ? h->Save(c, key) : Status::kOk;
  return Saved(st, h->ok(), r) && NotifyIfEmptied(c, h, key);
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
  HashValue h;
  if (!OpenHash(c, a[1], &h, r)) return false;
  for (size_t i = 2; i < a.size(); ++i) h.Grow(a[i]);
  *added = 0;
  for (size_t i = 2; i + 1 < a.size(); i += 2) *added += h.Set(a[i], a[i + 1]);
  Notify(c, kNotifyHash, "hset", a[1]);
  return SaveHash(c, a[1], &h, r);
}

uint64_t NextRandom() {
  static std::mt19937_64 rng{std::random_device{}()};
  return rng();
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
  HashValue h;
  if (!OpenHash(c, a[1], &h, r)) return;
  h.Grow(a[2]);
  h.Grow(a[3]);
  std::string_view old;
  if (h.Find(a[2], &old)) return r->Int(0);
  h.Set(a[2], a[3]);
  Notify(c, kNotifyHash, "hset", a[1]);
  if (SaveHash(c, a[1], &h, r)) r->Int(1);
}

// HGET key field
void HGet(const Args& a, CommandContext* c, Reply* r) {
  ReplyFieldLookup(a, c, r, kHashShape, [&](bool found, std::string_view v) {
    if (found) {
      r->Bulk(v);
    } else {
      r->Null();
    }
  });
}

// HMGET key field [field ...]
void HMGet(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    HashValue h;
    if (!OpenHash(c, a[1], &h, r)) return;
    std::vector<std::string_view> values(a.size() - 2);
    std::vector<bool> found(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      found[i - 2] = h.Find(a[i], &values[i - 2]);
    }
    if (!h.ok()) return Damaged(r);
    r->Array(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (found[i]) {
        r->Bulk(values[i]);
      } else {
        r->Null();
      }
    }
  });
}

// HDEL key field [field ...]
void HDel(const Args& a, CommandContext* c, Reply* r) {
  RemoveFields(a, c, r, kHashShape, kNotifyHash, "hdel");
}

// HLEN key
void HLen(const Args& a, CommandContext* c, Reply* r) {
  HashValue h;
  if (OpenHash(c, a[1], &h, r)) r->Int(static_cast<int64_t>(h.size()));
}

// HSTRLEN key field
void HStrLen(const Args& a, CommandContext* c, Reply* r) {
  ReplyFieldLookup(a, c, r, kHashShape, [&](bool found, std::string_view v) {
    r->Int(found ? static_cast<int64_t>(v.size()) : 0);
  });
}

// HEXISTS key field
void HExists(const Args& a, CommandContext* c, Reply* r) {
  ReplyFieldLookup(a, c, r, kHashShape, [&](bool found, std::string_view) {
    r->Int(found ? 1 : 0);
  });
}

namespace {

// HGETALL, HKEYS and HVALS: the pairs in the hash's order.
void ReplyPairs(const Args& a, CommandContext* c, Reply* r, bool fields,
                bool values) {
  ReadConsistently(c, r, [&] {
    HashValue h;
    if (!OpenHash(c, a[1], &h, r)) return;
    Pairs all;
    if (!h.All(&all)) return Damaged(r);
    if (fields && values) {
      r->Map(all.size());
    } else {
      r->Array(all.size());
    }
    for (const auto& [f, v] : all) {
      if (fields) r->Bulk(f);
      if (values) r->Bulk(v);
    }
  });
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
  HashValue h;
  if (!OpenHash(c, a[1], &h, r)) return;
  int64_t cur = 0;
  std::string_view old;
  bool found = h.Find(a[2], &old);
  if (!h.ok()) return Damaged(r);
  if (found && !ToInt(old, &cur)) {
    return r->Error("ERR hash value is not an integer");
  }
  if ((by > 0 && cur > INT64_MAX - by) || (by < 0 && cur < INT64_MIN - by)) {
    return r->Error("ERR increment or decrement would overflow");
  }
  std::string text = std::to_string(cur + by);
  h.Grow(a[2]);
  h.Set(a[2], text);
  Notify(c, kNotifyHash, "hincrby", a[1]);
  if (SaveHash(c, a[1], &h, r)) r->Int(cur + by);
}

// HINCRBYFLOAT key field increment
void HIncrByFloat(const Args& a, CommandContext* c, Reply* r) {
  long double by = 0;
  if (!ToLongDouble(a[3], &by)) {
    return r->Error("ERR value is not a valid float");
  }
  if (std::isinf(by)) return r->Error("ERR value is NaN or Infinity");
  HashValue h;
  if (!OpenHash(c, a[1], &h, r)) return;
  long double cur = 0;
  std::string_view old;
  bool found = h.Find(a[2], &old);
  if (!h.ok()) return Damaged(r);
  if (found && !ToLongDouble(old, &cur)) {
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
  Notify(c, kNotifyHash, "hincrbyfloat", a[1]);
  if (SaveHash(c, a[1], &h, r)) r->Bulk(text);
}

namespace {

// HRANDFIELD's count argument and WITHVALUES, as Redis checks them;
// false after replying the error.
bool RandFieldArgs(const Args& a, Reply* r, int64_t* count,
                   bool* with_values) {
  if (!ToInt(a[2], count)) {
    NotInt(r);
    return false;
  }
  if (*count == INT64_MIN) {
    r->Error("ERR value is out of range, value must between "
             "-9223372036854775807 and 9223372036854775807");
    return false;
  }
  if (a.size() > 4 || (a.size() == 4 && !Eq(a[3], "withvalues"))) {
    r->Error("ERR syntax error");
    return false;
  }
  *with_values = a.size() == 4;
  if (*with_values && (*count < -INT64_MAX / 2 || *count > INT64_MAX / 2)) {
    r->Error("ERR value is out of range");
    return false;
  }
  return true;
}

// `count` distinct random pairs of `h` (count < its size).
bool DistinctRandom(HashValue* h, size_t count, Pairs* out) {
  if (count * 4 > h->size() || !h->in_buckets()) {
    // A large share: all of them, partly shuffled.
    Pairs all;
    if (!h->All(&all)) return false;
    for (size_t i = 0; i < count; ++i) {
      std::swap(all[i], all[i + NextRandom() % (all.size() - i)]);
    }
    out->assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(count));
    return true;
  }
  std::set<std::string_view> seen;
  while (out->size() < count) {
    std::string_view f, v;
    if (!h->Random(NextRandom, &f, &v)) return false;
    if (seen.insert(f).second) out->emplace_back(f, v);
  }
  return true;
}

}  // namespace

// HRANDFIELD key [count [WITHVALUES]]
void HRandField(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 0;
  bool with_values = false;
  if (a.size() >= 3 && !RandFieldArgs(a, r, &count, &with_values)) return;
  ReadConsistently(c, r, [&] {
    HashValue h;
    if (!OpenHash(c, a[1], &h, r)) return;
    std::string_view f, v;
    if (a.size() == 2) {
      if (h.size() == 0) return r->Null();
      if (!h.Random(NextRandom, &f, &v)) return Damaged(r);
      return r->Bulk(f);
    }
    if (h.size() == 0 || count == 0) return r->Array(0);
    Pairs picks;
    if (count < 0) {
      // Repeats allowed: exactly -count picks.
      uint64_t n = static_cast<uint64_t>(-count);
      for (uint64_t i = 0; i < n; ++i) {
        if (!h.Random(NextRandom, &f, &v)) return Damaged(r);
        picks.emplace_back(f, v);
      }
    } else if (static_cast<uint64_t>(count) >= h.size()) {
      if (!h.All(&picks)) return Damaged(r);  // the whole hash, in order
    } else if (!DistinctRandom(&h, static_cast<size_t>(count), &picks)) {
      return Damaged(r);
    }
    with_values ? r->Pairs(picks.size()) : r->Array(picks.size());
    for (const auto& [pf, pv] : picks) {
      if (with_values) r->Pair();
      r->Bulk(pf);
      if (with_values) r->Bulk(pv);
    }
  });
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
void HScan(const Args& a, CommandContext* c, Reply* r) {
  ReplyTableScan(a, c, r, kHashShape, true);
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
