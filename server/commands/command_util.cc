// The command layer's shared helpers (server/command_util.h).
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/zset_value.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}


bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool Eq(std::string_view a, const char* lower) { return EqualFold(a, lower); }

bool ToInt(std::string_view s, int64_t* out) { return ParseInt64(s, out); }

const char* TypeName(ValueType t) {
  switch (t) {
    case ValueType::kString: return "string";
    case ValueType::kList: return "list";
    case ValueType::kSet: return "set";
    case ValueType::kZSet: return "zset";
    case ValueType::kHash: return "hash";
    case ValueType::kStream: return "stream";
  }
  return "unknown";  // written by a newer build
}

std::string EncodingName(const Value& v) {
  if (v.type == ValueType::kHash) {
    return v.encoding == kHashListpack ? "listpack" : "hashtable";
  }
  if (v.type == ValueType::kList) return "quicklist";  // every list, in 7.0
  if (v.type == ValueType::kZSet) {
    return v.encoding == kZSetListpack ? "listpack" : "skiplist";
  }
  if (v.type == ValueType::kSet) {
    return v.encoding == kSetIntset ? "intset" : "hashtable";
  }
  if (v.type == ValueType::kStream) return "stream";  // as every stream
  if (v.type != ValueType::kString) return "unknown";
  // As Redis encodes a string it is given whole (SET, MSET, INCR...): an
  // integer of up to 20 characters is "int", up to 44 bytes "embstr",
  // longer "raw"; server/store/blob.h lists the exceptions.
  if (v.encoding == kStringRaw) return "raw";
  int64_t n = 0;
  if (v.encoding != kStringNotInt && ParseInt64(v.bytes, &n)) return "int";
  return v.bytes.size() <= 44 ? "embstr" : "raw";
}

std::unique_ptr<Store::Txn> BeginOwn(CommandContext* c) {
  std::unique_ptr<Store::Txn> t = c->store->Begin();
  const uint32_t db = t->Physical(c->client->db);
  c->store->UseDb(db);
  t->UseDb(db);
  return t;
}

void NotInt(Reply* r) { r->Error("ERR value is not an integer or out of range"); }

void StoreError(Store::Status st, Reply* r) {
  switch (st) {
    case Store::Status::kNotInteger: NotInt(r); return;
    case Store::Status::kFull:
      r->Error("OOM the store is full (raise --capacity or --memory)");
      return;
    case Store::Status::kTooLarge:
      r->Error("ERR key or value exceeds the server's limits "
                      "(--max-value)");
      return;
    case Store::Status::kCollision:
      r->Error("ERR key hash collision with another key");
      return;
    case Store::Status::kTxnTooLarge:
      r->Error("ERR the transaction is larger than the commit "
                      "journal (--journal-size)");
      return;
    case Store::Status::kWrongType: WrongType(r); return;
    default:
      r->Error(std::string("ERR ") + StatusText(st));
  }
}

bool ReadValue(CommandContext* c, std::string_view key, Value* v) {
  if (c->txn != nullptr) return c->txn->Read(key, v) == Store::Status::kOk;
  return c->store->Get(key, v);
}

Found ReadString(CommandContext* c, std::string_view key, std::string* v,
                 int64_t* expire) {
  Value value;
  if (!ReadValue(c, key, &value)) return Found::kNo;
  if (value.type != ValueType::kString) return Found::kWrongType;
  v->swap(value.bytes);
  if (expire != nullptr) *expire = value.expire_ms;
  return Found::kYes;
}

void WrongType(Reply* r) {
  r->Error("WRONGTYPE Operation against a key holding the wrong kind of "
           "value");
}

// The absolute expiry time in ms of `v`, given in seconds or ms, relative
// to now or absolute; false when it does not fit in 64 bits (the sum once
// wrapped into the past and deleted the key).
bool AbsoluteExpiry(int64_t v, bool secs, bool abs, int64_t now,
                    int64_t* when) {
  if (secs && (v > INT64_MAX / 1000 || v < INT64_MIN / 1000)) return false;
  int64_t ms = secs ? v * 1000 : v;
  if (abs) {
    *when = ms;
    return true;
  }
  if (ms > INT64_MAX - now) return false;
  *when = now + ms;
  return true;
}

std::string InvalidExpire(std::string_view command) {
  return "ERR invalid expire time in '" + Lower(command) + "' command";
}

// Redis's long double rule (string2ld): the whole argument, no leading
// space, no NaN. Whole means up to its length: strtold stops at a zero
// byte, which must not end the number early ("1\0zz", or "\0" as 0).
bool ToLongDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() >= 5 * 1024) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  long double v = std::strtold(tmp.c_str(), &end);
  if (std::isspace(static_cast<unsigned char>(tmp[0])) ||
      end != tmp.c_str() + tmp.size() ||
      (errno == ERANGE &&
       (v == HUGE_VALL || v == -HUGE_VALL || std::fpclassify(v) == FP_ZERO)) ||
      std::isnan(v)) {
    return false;
  }
  *out = v;
  return true;
}

// As Redis prints an INCRBYFLOAT result: 17 decimals, trailing zeros cut.
std::string LongDoubleText(long double v) {
  char buf[5 * 1024];
  int n = std::snprintf(buf, sizeof(buf), "%.17Lf", v);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return "0";
  std::string s(buf, static_cast<size_t>(n));
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// SCAN's cursor rule: strtoul over the argument read as a C string (an
// empty one is 0, a zero byte ends it; "-1" is a huge cursor); a leading
// space, trailing bytes or overflow are errors.
bool ParseScanCursor(std::string_view arg, uint64_t* cursor) {
  std::string s(arg);
  char* end = nullptr;
  errno = 0;
  *cursor = std::strtoull(s.c_str(), &end, 10);
  return !(std::isspace(static_cast<unsigned char>(s[0])) ||
           errno == ERANGE || *end != '\0');
}

bool ParseScan(const Args& a, size_t at, bool with_type, ScanArgs* s,
               Reply* r) {
  if (!ParseScanCursor(a[at], &s->cursor)) {
    r->Error("ERR invalid cursor");
    return false;
  }
  return ParseScanOptions(a, at + 1, with_type, s, r);
}

bool ParseScanOptions(const Args& a, size_t from, bool with_type,
                      ScanArgs* s, Reply* r) {
  for (size_t i = from; i < a.size(); ++i) {
    bool more = i + 1 < a.size();
    if (Eq(a[i], "match") && more) {
      s->match = a[++i];
    } else if (Eq(a[i], "count") && more) {
      if (!ToInt(a[++i], &s->count)) {
        NotInt(r);
        return false;
      }
      if (s->count < 1) {
        r->Error("ERR syntax error");
        return false;
      }
    } else if (with_type && Eq(a[i], "type") && more) {
      s->type = a[++i];
    } else {
      r->Error("ERR syntax error");
      return false;
    }
  }
  return true;
}

void EmptyScan(Reply* r) {
  r->Array(2);
  r->Bulk("0");
  r->Array(0);
}

bool ParseCardLimit(const Args& a, size_t from, int64_t* limit, Reply* r) {
  *limit = 0;
  for (size_t i = from; i < a.size(); i += 2) {
    if (!Eq(a[i], "limit") || i + 1 >= a.size()) {
      r->Error("ERR syntax error");
      return false;
    }
    // Redis answers one error for a limit that is not a number and for
    // one below zero.
    if (!ToInt(a[i + 1], limit) || *limit < 0) {
      r->Error("ERR LIMIT can't be negative");
      return false;
    }
  }
  return true;
}

bool ParseMPop(const Args& a, const char* first, const char* second,
               MPopArgs* m, Reply* r) {
  int64_t numkeys = 0;
  if (!ToInt(a[1], &numkeys) || numkeys <= 0) {
    r->Error("ERR numkeys should be greater than 0");
    return false;
  }
  m->end = 2 + static_cast<size_t>(numkeys);
  if (numkeys > static_cast<int64_t>(a.size()) || m->end >= a.size()) {
    r->Error("ERR syntax error");
    return false;
  }
  m->first_end = Eq(a[m->end], first);
  if (!m->first_end && !Eq(a[m->end], second)) {
    r->Error("ERR syntax error");
    return false;
  }
  if (m->end + 1 < a.size()) {
    if (m->end + 3 != a.size() || !Eq(a[m->end + 1], "count")) {
      r->Error("ERR syntax error");
      return false;
    }
    if (!ToInt(a[m->end + 2], &m->count) || m->count <= 0) {
      r->Error("ERR count should be greater than 0");
      return false;
    }
  }
  return true;
}

void Damaged(Reply* r) {
  r->Error("ERR the value of this key is damaged (shmc check)");
}

bool Opened(Load l, Reply* r) {
  switch (l) {
    case Load::kOk: return true;
    case Load::kWrongType: WrongType(r); return false;
    case Load::kDamaged: Damaged(r); return false;
  }
  return false;
}

bool ParseDb(std::string_view arg, uint32_t* db, Reply* r) {
  int64_t v = 0;
  if (!ToInt(arg, &v)) {
    NotInt(r);
    return false;
  }
  if (v < INT32_MIN || v > INT32_MAX) {
    r->Error("ERR value is out of range, value must between -2147483648 "
             "and 2147483647");
    return false;
  }
  if (v < 0 || v >= static_cast<int64_t>(kDatabases)) {
    r->Error("ERR DB index is out of range");
    return false;
  }
  *db = static_cast<uint32_t>(v);
  return true;
}

bool Saved(Store::Status st, bool whole, Reply* r) {
  if (!whole) {
    Damaged(r);
    return false;
  }
  if (st == Store::Status::kOk) return true;
  StoreError(st, r);
  return false;
}

void SubcommandArityError(std::string_view container, std::string_view sub,
                          Reply* r) {
  r->Error("ERR wrong number of arguments for '" + std::string(container) +
           "|" + std::string(sub) + "' command");
}

void HelpReply(Reply* r, const char* name,
               std::initializer_list<const char*> lines) {
  r->Array(lines.size() + 3);
  r->Simple(std::string(name) +
            " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (const char* l : lines) r->Simple(l);
  r->Simple("HELP");
  r->Simple("    Prints this help.");
}

}  // namespace cmd
}  // namespace shmkv
