// shmkv's string commands (values, counters, ranges, bits, LCS), with
// Redis 7's replies and error texts (docs/server.md lists them and the deliberate
// differences). Each write command runs inside a Store::Txn the caller
// opened (server/commands.cc: one per command, or EXEC's), so it sees its
// own writes and commits all or nothing; reads outside a transaction are
// lock-free.
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

void BitOp(const Args& a, CommandContext* c, Reply* r);  // bit_op.cc
void BitField(const Args& a, CommandContext* c, Reply* r);  // bit_op.cc
void BitFieldRo(const Args& a, CommandContext* c, Reply* r);  // bit_op.cc

namespace {

using Status = Store::Status;

std::string StringTooLong() {
  return "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
}

// The expiry options of SET and GETEX, parsed as Redis parses them:
// conflicting options are a syntax error, checked before the time value.
struct ExpiryArgs {
  bool nx = false, xx = false, get = false, keep_ttl = false,
       persist = false;
  const char* unit = nullptr;  // "ex", "px", "exat", "pxat"
  std::string_view value;
};

bool ParseExpiryArgs(const Args& a, size_t from, bool for_set,
                     ExpiryArgs* x) {
  for (size_t i = from; i < a.size(); ++i) {
    bool more = i + 1 < a.size();
    const char* units[] = {"ex", "px", "exat", "pxat"};
    const char* unit = nullptr;
    for (const char* u : units) {
      if (Eq(a[i], u)) unit = u;
    }
    if (for_set && Eq(a[i], "nx") && !x->xx) {
      x->nx = true;
    } else if (for_set && Eq(a[i], "xx") && !x->nx) {
      x->xx = true;
    } else if (for_set && Eq(a[i], "get")) {
      x->get = true;
    } else if (for_set && Eq(a[i], "keepttl") && !x->persist &&
               x->unit == nullptr) {
      x->keep_ttl = true;
    } else if (!for_set && Eq(a[i], "persist") && x->unit == nullptr &&
               !x->keep_ttl) {
      x->persist = true;
    } else if (unit != nullptr && more &&
               (x->unit == nullptr || std::string_view(x->unit) == unit) &&
               !x->keep_ttl && !x->persist) {
      // As Redis: the same unit again replaces the time given before
      // (its value is never read), another unit is a syntax error.
      x->unit = unit;
      x->value = a[++i];
    } else {
      return false;
    }
  }
  return true;
}

// The absolute expiry the options ask for (0: none); false after replying
// the error.
bool ExpiryOf(const ExpiryArgs& x, std::string_view command, int64_t now,
              int64_t* when, Reply* r) {
  *when = 0;
  if (x.unit == nullptr) return true;
  int64_t v = 0;
  if (!ToInt(x.value, &v)) {
    NotInt(r);
    return false;
  }
  std::string_view u = x.unit;
  bool secs = u == "ex" || u == "exat";
  bool abs = u == "exat" || u == "pxat";
  if (v <= 0 || !AbsoluteExpiry(v, secs, abs, now, when) || *when <= 0) {
    r->Error(InvalidExpire(command));
    return false;
  }
  return true;
}

void ReplyStatus(Status st, Reply* r) {
  if (st == Status::kOk) {
    r->Simple("OK");
  } else {
    StoreError(st, r);
  }
}

// Redis's range rule for GETRANGE, BITCOUNT and BITPOS: negative indexes
// count from the end, both ends are clamped; false when it is empty.
bool ClampRange(int64_t len, int64_t* start, int64_t* end) {
  if (*start < 0) *start += len;
  if (*end < 0) *end += len;
  if (*start < 0) *start = 0;
  if (*end < 0) *end = 0;
  if (*end >= len) *end = len - 1;
  return *start <= *end;
}

bool BitAt(std::string_view v, uint64_t bit) {
  return (static_cast<unsigned char>(v[bit >> 3]) >> (7 - (bit & 7))) & 1;
}

// A bit offset argument: 0 .. 2^32-1, as Redis's 512 MB strings allow.
bool BitOffset(std::string_view s, uint64_t* out, Reply* r) {
  int64_t v = 0;
  if (!ToInt(s, &v) || v < 0 || (v >> 3) >= (512LL << 20)) {
    r->Error("ERR bit offset is not an integer or out of range");
    return false;
  }
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

// --- strings -----------------------------------------------------------

// GET key
void Get(const Args& a, CommandContext* c, Reply* r) {
  if (c->txn == nullptr) {
    ValueView v;
    if (!c->store->GetView(a[1], &v)) return r->Null();
    if (v.type != ValueType::kString) return WrongType(r);
    return r->Bulk(v.bytes);
  }
  std::string v;
  Found f = ReadString(c, a[1], &v);
  if (f == Found::kWrongType) return WrongType(r);
  f == Found::kYes ? r->Bulk(v) : r->Null();
}

// SET key value [NX | XX] [GET] [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
void Set(const Args& a, CommandContext* c, Reply* r) {
  ExpiryArgs x;
  if (!ParseExpiryArgs(a, 3, true, &x)) return r->Error("ERR syntax error");
  int64_t when = 0;
  if (!ExpiryOf(x, a[0], WallMs(), &when, r)) return;
  // A plain SET needs nothing of the old value (Put checks the key). NX,
  // XX and KEEPTTL look at a value of any type (SET replaces it); GET
  // answers WRONGTYPE for one that is not a string, and sets nothing.
  Value old;
  bool found = (x.nx || x.xx || x.get || x.keep_ttl) &&
               ReadValue(c, a[1], &old);
  if (x.get && found && old.type != ValueType::kString) return WrongType(r);
  if ((x.nx && found) || (x.xx && !found)) {
    if (x.get && found) return r->Bulk(old.bytes);
    return r->Null();
  }
  if (x.keep_ttl && found) when = old.expire_ms;
  Status st = c->txn->Put(a[1], a[2], when);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "set", a[1]);
  if (x.unit != nullptr) Notify(c, kNotifyGeneric, "expire", a[1]);
  if (!x.get) return r->Simple("OK");
  if (found) return r->Bulk(old.bytes);
  r->Null();
}

// GETEX key [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | PERSIST]
void GetEx(const Args& a, CommandContext* c, Reply* r) {
  ExpiryArgs x;
  if (!ParseExpiryArgs(a, 2, false, &x)) return r->Error("ERR syntax error");
  // As Redis: a missing key is nil (and another type WRONGTYPE) before
  // the time is checked.
  std::string v;
  Found f = ReadString(c, a[1], &v);
  if (f == Found::kWrongType) return WrongType(r);
  if (f == Found::kNo) return r->Null();
  int64_t now = WallMs(), when = 0;
  if (!ExpiryOf(x, a[0], now, &when, r)) return;
  Status st = Status::kOk;
  if (x.unit != nullptr && when <= now) {
    st = c->txn->Delete(a[1]);
    Notify(c, kNotifyGeneric, "del", a[1]);
  } else if (x.unit != nullptr || x.persist) {
    bool changed = false;
    st = Store::SetExpireIn(c->txn, a[1], when, &changed);
    if (x.unit != nullptr) {
      Notify(c, kNotifyGeneric, "expire", a[1]);
    } else if (changed) {
      Notify(c, kNotifyGeneric, "persist", a[1]);
    }
  }
  if (st != Status::kOk && st != Status::kNotFound) return StoreError(st, r);
  r->Bulk(v);
}

// GETSET key value
void GetSet(const Args& a, CommandContext* c, Reply* r) {
  std::string old;
  Found f = ReadString(c, a[1], &old);
  if (f == Found::kWrongType) return WrongType(r);
  bool found = f == Found::kYes;
  Status st = c->txn->Put(a[1], a[2], 0);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "set", a[1]);
  if (found) return r->Bulk(old);
  r->Null();
}

// GETDEL key
void GetDel(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  Found f = ReadString(c, a[1], &v);
  if (f == Found::kWrongType) return WrongType(r);
  if (f == Found::kNo) return r->Null();
  Status st = c->txn->Delete(a[1]);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyGeneric, "del", a[1]);
  r->Bulk(v);
}

// SETNX key value
void SetNx(const Args& a, CommandContext* c, Reply* r) {
  Status st = Store::SetIn(c->txn, a[1], a[2], 0, Store::SetMode::kIfMissing,
                           false);
  if (st == Status::kExists) return r->Int(0);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "set", a[1]);
  r->Int(1);
}

namespace {

void SetWithTtl(const Args& a, bool secs, CommandContext* c, Reply* r) {
  int64_t v = 0, when = 0;
  if (!ToInt(a[2], &v)) return NotInt(r);
  if (v <= 0 || !AbsoluteExpiry(v, secs, false, WallMs(), &when)) {
    return r->Error(InvalidExpire(a[0]));
  }
  Status st = c->txn->Put(a[1], a[3], when);
  if (st == Status::kOk) {
    Notify(c, kNotifyString, "set", a[1]);
    Notify(c, kNotifyGeneric, "expire", a[1]);
  }
  ReplyStatus(st, r);
}

}  // namespace

// SETEX key seconds value
void SetEx(const Args& a, CommandContext* c, Reply* r) {
  SetWithTtl(a, true, c, r);
}
// PSETEX key milliseconds value
void PSetEx(const Args& a, CommandContext* c, Reply* r) {
  SetWithTtl(a, false, c, r);
}

// MGET key [key ...]
void MGet(const Args& a, CommandContext* c, Reply* r) {
  size_t mark = r->Mark();
  std::string v;
  auto read_all = [&] {
    r->Array(a.size() - 1);
    for (size_t i = 1; i < a.size(); ++i) {
      // A key of another type reads as nil, as in Redis.
      if (ReadString(c, a[i], &v) == Found::kYes) {
        r->Bulk(v);
      } else {
        r->Null();
      }
    }
  };
  if (c->txn != nullptr) return read_all();
  // One snapshot: a multi-key commit is seen whole or not at all. Lock-free
  // first; a reader that keeps meeting commits reads under the write lock
  // instead, so a stream of commits cannot starve it.
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint64_t t = c->store->ReadBegin();
    read_all();
    if (c->store->ReadValid(t)) return;
    r->Rewind(mark);
  }
  auto txn = c->store->Begin();
  c->txn = txn.get();
  read_all();
  c->txn = nullptr;
}

namespace {

// Checks MSET's pairs before the first write, so a refused pair leaves
// none written.
bool PairsFit(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() % 2 != 1) {
    r->Error("ERR wrong number of arguments for '" + Lower(a[0]) +
                  "' command");
    return false;
  }
  const StoreConfig& cfg = c->store->config();
  for (size_t i = 1; i + 1 < a.size(); i += 2) {
    if (a[i].size() > cfg.max_key || a[i + 1].size() > cfg.max_value) {
      StoreError(Status::kTooLarge, r);
      return false;
    }
  }
  return true;
}

Status PutPairs(const Args& a, CommandContext* c) {
  for (size_t i = 1; i + 1 < a.size(); i += 2) {
    Status st = c->txn->Put(a[i], a[i + 1], 0);
    if (st != Status::kOk) return st;
    Notify(c, kNotifyString, "set", a[i]);
  }
  return Status::kOk;
}

}  // namespace

// MSET key value [key value ...]
void MSet(const Args& a, CommandContext* c, Reply* r) {
  if (!PairsFit(a, c, r)) return;
  ReplyStatus(PutPairs(a, c), r);
}

// MSETNX key value [key value ...]
void MSetNx(const Args& a, CommandContext* c, Reply* r) {
  if (!PairsFit(a, c, r)) return;
  Value v;
  for (size_t i = 1; i + 1 < a.size(); i += 2) {
    if (ReadValue(c, a[i], &v)) return r->Int(0);  // of any type
  }
  Status st = PutPairs(a, c);
  if (st != Status::kOk) return StoreError(st, r);
  r->Int(1);
}

namespace {

void IncrCommon(std::string_view key, int64_t by, CommandContext* c,
                Reply* r) {
  int64_t v = 0;
  Status st = Store::IncrByIn(c->txn, key, by, &v);
  if (st == Status::kOk) {
    Notify(c, kNotifyString, "incrby", key);
    return r->Int(v);
  }
  StoreError(st, r);
}

}  // namespace

// INCR key
void Incr(const Args& a, CommandContext* c, Reply* r) {
  IncrCommon(a[1], 1, c, r);
}
// DECR key
void Decr(const Args& a, CommandContext* c, Reply* r) {
  IncrCommon(a[1], -1, c, r);
}
// INCRBY key increment
void IncrBy(const Args& a, CommandContext* c, Reply* r) {
  int64_t by = 0;
  if (!ToInt(a[2], &by)) return NotInt(r);
  IncrCommon(a[1], by, c, r);
}
// DECRBY key decrement
void DecrBy(const Args& a, CommandContext* c, Reply* r) {
  int64_t by = 0;
  if (!ToInt(a[2], &by)) return NotInt(r);
  if (by == INT64_MIN) {
    return r->Error("ERR decrement would overflow");
  }
  IncrCommon(a[1], -by, c, r);
}

// INCRBYFLOAT key increment
void IncrByFloat(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  int64_t expire = 0;
  long double cur = 0, by = 0;
  Found f = ReadString(c, a[1], &v, &expire);
  if (f == Found::kWrongType) return WrongType(r);
  bool found = f == Found::kYes;
  if ((found && !ToLongDouble(v, &cur)) || !ToLongDouble(a[2], &by)) {
    return r->Error("ERR value is not a valid float");
  }
  long double sum = cur + by;
  if (std::isnan(sum) || std::isinf(sum)) {
    return r->Error("ERR increment would produce NaN or Infinity");
  }
  std::string text = LongDoubleText(sum);
  // The TTL stays, as in Redis.
  Status st = c->txn->Write(a[1], ValueType::kString, kStringNotInt, text,
                            expire);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "incrbyfloat", a[1]);
  r->Bulk(text);
}

// APPEND key value
void Append(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  int64_t expire = 0;
  Found f = ReadString(c, a[1], &v, &expire);
  if (f == Found::kWrongType) return WrongType(r);
  if (v.size() + a[2].size() > c->store->config().max_value) {
    return r->Error(StringTooLong());
  }
  v.append(a[2].data(), a[2].size());
  // Appended to, a string is "raw"; a new one is encoded as given.
  Status st = c->txn->Write(a[1], ValueType::kString,
                            f == Found::kYes ? kStringRaw : kStringAsGiven,
                            v, expire);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "append", a[1]);
  r->Int(static_cast<int64_t>(v.size()));
}

// STRLEN key
void Strlen(const Args& a, CommandContext* c, Reply* r) {
  if (c->txn == nullptr) {
    ValueView v;
    if (!c->store->GetView(a[1], &v)) return r->Int(0);
    if (v.type != ValueType::kString) return WrongType(r);
    return r->Int(static_cast<int64_t>(v.bytes.size()));
  }
  std::string v;
  if (ReadString(c, a[1], &v) == Found::kWrongType) return WrongType(r);
  r->Int(static_cast<int64_t>(v.size()));
}

// SETRANGE key offset value
void SetRange(const Args& a, CommandContext* c, Reply* r) {
  int64_t off = 0;
  if (!ToInt(a[2], &off)) return NotInt(r);
  if (off < 0) return r->Error("ERR offset is out of range");
  std::string v;
  int64_t expire = 0;
  Found f = ReadString(c, a[1], &v, &expire);
  if (f == Found::kWrongType) return WrongType(r);
  bool found = f == Found::kYes;
  std::string_view part = a[3];
  if (part.empty()) return r->Int(static_cast<int64_t>(v.size()));
  uint64_t need = static_cast<uint64_t>(off) + part.size();
  if (need > c->store->config().max_value) return r->Error(StringTooLong());
  if (v.size() < need) v.resize(need, '\0');
  v.replace(static_cast<size_t>(off), part.size(), part.data(), part.size());
  Status st = c->txn->Write(a[1], ValueType::kString, kStringRaw, v,
                            found ? expire : 0);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "setrange", a[1]);
  r->Int(static_cast<int64_t>(v.size()));
}

// GETRANGE key start end (and SUBSTR)
void GetRange(const Args& a, CommandContext* c, Reply* r) {
  int64_t start = 0, end = 0;
  if (!ToInt(a[2], &start) || !ToInt(a[3], &end)) return NotInt(r);
  std::string v;
  if (ReadString(c, a[1], &v) == Found::kWrongType) return WrongType(r);
  if (start < 0 && end < 0 && start > end) return r->Bulk("");
  int64_t len = static_cast<int64_t>(v.size());
  if (len == 0 || !ClampRange(len, &start, &end)) return r->Bulk("");
  r->Bulk(std::string_view(v).substr(static_cast<size_t>(start),
                                          static_cast<size_t>(end - start + 1)));
}

// SETBIT key offset value
void SetBit(const Args& a, CommandContext* c, Reply* r) {
  uint64_t bit = 0;
  if (!BitOffset(a[2], &bit, r)) return;
  int64_t on = 0;
  if (!ToInt(a[3], &on) || (on & ~int64_t{1}) != 0) {
    return r->Error("ERR bit is not an integer or out of range");
  }
  Value value;
  bool found = ReadValue(c, a[1], &value);
  if (found && value.type != ValueType::kString) return WrongType(r);
  std::string& v = value.bytes;
  uint64_t byte = bit >> 3;
  if (byte + 1 > c->store->config().max_value) {
    return r->Error(StringTooLong());
  }
  bool grown = v.size() <= byte;
  if (grown) v.resize(byte + 1, '\0');
  bool old = BitAt(v, bit);
  // A bit set to what it was changes nothing: as in Redis, the key is
  // not touched (a WATCH holds) and no event is sent. (Redis still turns
  // such a string's encoding raw: so is it written when it was not raw,
  // a write that moves no WATCH version.)
  bool changed = grown || old != (on != 0);
  if (!changed && value.encoding == kStringRaw) return r->Int(old ? 1 : 0);
  unsigned char mask = static_cast<unsigned char>(1u << (7 - (bit & 7)));
  unsigned char& ch = reinterpret_cast<unsigned char&>(v[byte]);
  ch = on ? (ch | mask) : (ch & static_cast<unsigned char>(~mask));
  Status st = c->txn->Write(a[1], ValueType::kString, kStringRaw, v,
                            found ? value.expire_ms : 0);
  if (st != Status::kOk) return StoreError(st, r);
  if (changed) {
    Notify(c, kNotifyString, "setbit", a[1]);
  } else {
    c->txn->Quiet(a[1]);
  }
  r->Int(old ? 1 : 0);
}

// GETBIT key offset
void GetBit(const Args& a, CommandContext* c, Reply* r) {
  uint64_t bit = 0;
  if (!BitOffset(a[2], &bit, r)) return;
  std::string v;
  if (ReadString(c, a[1], &v) == Found::kWrongType) return WrongType(r);
  r->Int((bit >> 3) < v.size() && BitAt(v, bit) ? 1 : 0);
}

namespace {

// BITCOUNT's and BITPOS's [start end [BYTE|BIT]]: the range in bits,
// false (after replying) on a bad argument; *empty when nothing is in it.
struct BitRange {
  uint64_t first = 0, last = 0;  // bits, inclusive
  bool empty = false;
};

bool ParseUnit(std::string_view s, bool* bits, Reply* r) {
  if (Eq(s, "bit")) {
    *bits = true;
  } else if (Eq(s, "byte")) {
    *bits = false;
  } else {
    r->Error("ERR syntax error");
    return false;
  }
  return true;
}

void ToBits(int64_t start, int64_t end, bool bits, BitRange* r) {
  r->first = bits ? static_cast<uint64_t>(start)
                  : static_cast<uint64_t>(start) * 8;
  r->last = bits ? static_cast<uint64_t>(end)
                 : static_cast<uint64_t>(end) * 8 + 7;
}

}  // namespace

// BITCOUNT key [start end [BYTE | BIT]]
void BitCount(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  Found f = ReadString(c, a[1], &v);  // before the range, as Redis
  if (f == Found::kWrongType) return WrongType(r);
  if (f == Found::kNo) return r->Int(0);
  int64_t len = static_cast<int64_t>(v.size());
  BitRange range;
  if (a.size() == 4 || a.size() == 5) {
    int64_t start = 0, end = 0;
    bool bits = false;
    if (!ToInt(a[2], &start) || !ToInt(a[3], &end)) return NotInt(r);
    if (a.size() == 5 && !ParseUnit(a[4], &bits, r)) return;
    int64_t total = bits ? len * 8 : len;
    if (start < 0 && end < 0 && start > end) return r->Int(0);
    if (!ClampRange(total, &start, &end)) return r->Int(0);
    ToBits(start, end, bits, &range);
  } else if (a.size() == 2) {
    if (len == 0) return r->Int(0);
    range.last = static_cast<uint64_t>(len) * 8 - 1;
  } else {
    return r->Error("ERR syntax error");
  }
  int64_t n = 0;
  for (uint64_t b = range.first; b <= range.last;) {
    if ((b & 7) == 0 && b + 7 <= range.last) {
      n += __builtin_popcount(static_cast<unsigned char>(v[b >> 3]));
      b += 8;
    } else {
      n += BitAt(v, b);
      ++b;
    }
  }
  r->Int(n);
}

// BITPOS key bit [start [end [BYTE | BIT]]]
void BitPos(const Args& a, CommandContext* c, Reply* r) {
  int64_t bit = 0;
  if (!ToInt(a[2], &bit)) return NotInt(r);
  if (bit != 0 && bit != 1) {
    return r->Error("ERR The bit argument must be 1 or 0.");
  }
  std::string v;
  Found f = ReadString(c, a[1], &v);
  if (f == Found::kWrongType) return WrongType(r);
  if (f == Found::kNo) return r->Int(bit ? -1 : 0);
  int64_t len = static_cast<int64_t>(v.size());
  BitRange range;
  bool end_given = false;
  if (a.size() >= 4 && a.size() <= 6) {
    int64_t start = 0, end = 0;
    bool bits = false;
    if (!ToInt(a[3], &start)) return NotInt(r);
    if (a.size() == 6 && !ParseUnit(a[5], &bits, r)) return;
    if (a.size() >= 5) {
      if (!ToInt(a[4], &end)) return NotInt(r);
      end_given = true;
    } else {
      end = bits ? len * 8 + 7 : len - 1;
    }
    int64_t total = bits ? len * 8 : len;
    if (!ClampRange(total, &start, &end)) return r->Int(-1);
    ToBits(start, end, bits, &range);
  } else if (a.size() == 3) {
    if (len == 0) return r->Int(-1);
    range.last = static_cast<uint64_t>(len) * 8 - 1;
  } else {
    return r->Error("ERR syntax error");
  }
  for (uint64_t b = range.first; b <= range.last; ++b) {
    if (BitAt(v, b) == (bit == 1)) return r->Int(static_cast<int64_t>(b));
  }
  // No clear bit in the string: Redis answers the first bit past it,
  // unless the caller gave the range's end.
  if (bit == 0 && !end_given) {
    return r->Int(static_cast<int64_t>((range.last | 7) + 1));
  }
  r->Int(-1);
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
void Lcs(const Args& a, CommandContext* c, Reply* r) {
  std::string x, y;
  if (ReadString(c, a[1], &x) == Found::kWrongType ||
      ReadString(c, a[2], &y) == Found::kWrongType) {
    return r->Error("ERR The specified keys must contain string values");
  }
  bool idx = false, len_only = false, with_len = false;
  int64_t min_len = 0;
  for (size_t i = 3; i < a.size(); ++i) {
    if (Eq(a[i], "idx")) {
      idx = true;
    } else if (Eq(a[i], "len")) {
      len_only = true;
    } else if (Eq(a[i], "withmatchlen")) {
      with_len = true;
    } else if (Eq(a[i], "minmatchlen") && i + 1 < a.size()) {
      if (!ToInt(a[++i], &min_len)) return NotInt(r);
      if (min_len < 0) min_len = 0;
    } else {
      return r->Error("ERR syntax error");
    }
  }
  if (idx && len_only) {
    return r->Error("ERR If you want both the length and indexes, please "
                     "just use IDX.");
  }
  size_t n = x.size(), m = y.size();
  // The table of LCS lengths of every pair of prefixes, bounded as Redis
  // bounds it.
  if ((n + 1) * (m + 1) > (512ULL << 20) / sizeof(uint32_t)) {
    return r->Error("ERR Insufficient memory, transient memory for LCS "
                     "exceeds proto-max-bulk-len");
  }
  std::vector<uint32_t> t((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return t[i * (m + 1) + j]; };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      at(i, j) = x[i - 1] == y[j - 1] ? at(i - 1, j - 1) + 1
                                      : std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  uint32_t total = at(n, m);
  if (len_only) return r->Int(total);
  // Walk back from the end, as Redis does (ties step in the second
  // string), collecting the common string and the matching ranges.
  std::string common(total, '\0');
  size_t k = total;
  std::string matches;
  size_t count = 0;
  size_t i = n, j = m;
  bool open = false;
  size_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  auto emit = [&] {
    size_t mlen = a1 - a0 + 1;
    if (min_len == 0 || mlen >= static_cast<uint64_t>(min_len)) {
      ReplyArray(&matches, with_len ? 3 : 2);
      ReplyArray(&matches, 2);
      ReplyInt(&matches, static_cast<int64_t>(a0));
      ReplyInt(&matches, static_cast<int64_t>(a1));
      ReplyArray(&matches, 2);
      ReplyInt(&matches, static_cast<int64_t>(b0));
      ReplyInt(&matches, static_cast<int64_t>(b1));
      if (with_len) ReplyInt(&matches, static_cast<int64_t>(mlen));
      ++count;
    }
    open = false;
  };
  while (i > 0 && j > 0) {
    bool close = false;
    if (x[i - 1] == y[j - 1]) {
      common[--k] = x[i - 1];
      if (!open) {
        open = true;
        a0 = a1 = i - 1;
        b0 = b1 = j - 1;
      } else if (a0 == i && b0 == j) {
        --a0;
        --b0;
      } else {
        close = true;
      }
      if (a0 == 0 || b0 == 0) close = true;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (open) close = true;
    }
    if (close && open) emit();
  }
  if (!idx) return r->Bulk(common);
  r->Map(2);
  r->Bulk("matches");
  r->Array(count);
  r->Raw(matches);
  r->Bulk("len");
  r->Int(total);
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kStringRows[] = {
    {"get", 3, 2, kReadOnly | kFast, 1, 1, 1, Get},
    {"set", 4, -3, kWrite | kDenyOom, 1, 1, 1, Set},
    {"getex", 5, -2, kWrite | kFast, 1, 1, 1, GetEx},
    {"getset", 6, 3, kWrite | kDenyOom | kFast, 1, 1, 1, GetSet},
    {"getdel", 7, 2, kWrite | kFast, 1, 1, 1, GetDel},
    {"setnx", 8, 3, kWrite | kDenyOom | kFast, 1, 1, 1, SetNx},
    {"setex", 9, 4, kWrite | kDenyOom, 1, 1, 1, SetEx},
    {"psetex", 10, 4, kWrite | kDenyOom, 1, 1, 1, PSetEx},
    {"mget", 11, -2, kReadOnly | kFast, 1, -1, 1, MGet},
    {"mset", 12, -3, kWrite | kDenyOom, 1, -1, 2, MSet},
    {"msetnx", 13, -3, kWrite | kDenyOom, 1, -1, 2, MSetNx},
    {"incr", 14, 2, kWrite | kDenyOom | kFast, 1, 1, 1, Incr},
    {"incrby", 15, 3, kWrite | kDenyOom | kFast, 1, 1, 1, IncrBy},
    {"decr", 16, 2, kWrite | kDenyOom | kFast, 1, 1, 1, Decr},
    {"decrby", 17, 3, kWrite | kDenyOom | kFast, 1, 1, 1, DecrBy},
    {"incrbyfloat", 18, 3, kWrite | kDenyOom | kFast, 1, 1, 1, IncrByFloat},
    {"append", 19, 3, kWrite | kDenyOom | kFast, 1, 1, 1, Append},
    {"strlen", 20, 2, kReadOnly | kFast, 1, 1, 1, Strlen},
    {"setrange", 21, 4, kWrite | kDenyOom, 1, 1, 1, SetRange},
    {"getrange", 22, 4, kReadOnly, 1, 1, 1, GetRange},
    {"substr", 23, 4, kReadOnly, 1, 1, 1, GetRange},
    {"setbit", 24, 4, kWrite | kDenyOom, 1, 1, 1, SetBit},
    {"getbit", 25, 3, kReadOnly | kFast, 1, 1, 1, GetBit},
    {"bitcount", 26, -2, kReadOnly, 1, 1, 1, BitCount},
    {"bitpos", 27, -3, kReadOnly, 1, 1, 1, BitPos},
    {"lcs", 28, -3, kReadOnly, 1, 2, 1, Lcs},
    {"bitop", 191, -4, kWrite | kDenyOom, 2, -1, 1, BitOp},
    {"bitfield", 192, -2, kWrite | kDenyOom, 1, 1, 1, BitField},
    {"bitfield_ro", 193, -2, kReadOnly | kFast, 1, 1, 1, BitFieldRo},
};

void RegisterStringFamily(Registry* r) {
  r->Add(kStringRows, "string");
}

}  // namespace cmd
}  // namespace shmkv
