// The one-command writes of Store (store.h), each built on a Txn: what
// SET, INCRBY, EXPIRE and their kin do inside a transaction, and the same
// run in a transaction of their own; and the clock and status texts.
#include <time.h>

#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/store/int_text.h"
#include "server/store/store.h"

namespace shmkv {

namespace {
thread_local int64_t frozen_now_ms = 0;
}  // namespace

int64_t WallMs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t NowMs() { return frozen_now_ms != 0 ? frozen_now_ms : WallMs(); }

bool NowFrozen() { return frozen_now_ms != 0; }

int64_t FreezeNowMs(int64_t ms) {
  int64_t was = frozen_now_ms;
  frozen_now_ms = ms;
  return was;
}

const char* StatusText(Store::Status s) {
  switch (s) {
    case Store::Status::kOk: return "ok";
    case Store::Status::kNotFound: return "not found";
    case Store::Status::kExists: return "exists";
    case Store::Status::kNotInteger:
      return "value is not an integer or out of range";
    case Store::Status::kOverflow:
      return "increment or decrement would overflow";
    case Store::Status::kTooLarge: return "key or value too large";
    case Store::Status::kFull: return "out of memory: the store is full";
    case Store::Status::kCollision:
      return "key hash collision with another key";
    case Store::Status::kTxnTooLarge:
      return "the commit is larger than the journal (--journal-size)";
    case Store::Status::kWrongType:
      return "the key holds a value of another type";
  }
  return "?";
}

Store::Status Store::Txn::ReadString(std::string_view key, std::string* value,
                                     int64_t* expire_ms) {
  Value v;
  Status st = Read(key, &v);
  if (st != Status::kOk) return st;
  if (v.type != ValueType::kString) return Status::kWrongType;
  value->swap(v.bytes);
  if (expire_ms != nullptr) *expire_ms = v.expire_ms;
  return Status::kOk;
}

bool Store::GetString(std::string_view key, std::string* value,
                      int64_t* expire_ms) {
  Value v;
  if (!Get(key, &v) || v.type != ValueType::kString) return false;
  value->swap(v.bytes);
  if (expire_ms != nullptr) *expire_ms = v.expire_ms;
  return true;
}

Store::Status Store::SetIn(Txn* t, std::string_view key,
                           std::string_view value, int64_t expire_ms,
                           SetMode mode, bool keep_ttl) {
  if (mode == SetMode::kAlways && !keep_ttl) {
    return t->Put(key, value, expire_ms);  // the old value is not needed
  }
  // NX and XX ask whether the key exists, of any type; KEEPTTL keeps the
  // TTL of whatever it held (SET replaces a value of any type).
  Value old;
  Status st = t->Read(key, &old);
  if (st == Status::kCollision) return st;
  bool exists = st == Status::kOk;
  if (mode == SetMode::kIfMissing && exists) return Status::kExists;
  if (mode == SetMode::kIfExists && !exists) return Status::kNotFound;
  if (keep_ttl && exists) expire_ms = old.expire_ms;
  return t->Put(key, value, expire_ms);
}

Store::Status Store::IncrByIn(Txn* t, std::string_view key, int64_t by,
                              int64_t* out) {
  std::string old;
  int64_t v = 0, expire = 0;
  Status st = t->ReadString(key, &old, &expire);
  if (st == Status::kCollision || st == Status::kWrongType) return st;
  if (st == Status::kOk && !ParseInt64(old, &v)) return Status::kNotInteger;
  if ((by > 0 && v > INT64_MAX - by) || (by < 0 && v < INT64_MIN - by)) {
    return Status::kOverflow;
  }
  v += by;
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%" PRId64, v);
  st = t->Put(key, std::string_view(buf, static_cast<size_t>(n)), expire);
  if (st == Status::kOk) *out = v;
  return st;
}

Store::Status Store::SetExpireIn(Txn* t, std::string_view key,
                                 int64_t expire_ms, bool* changed) {
  Value v;
  *changed = false;
  Status st = t->Read(key, &v);
  if (st != Status::kOk) return st == Status::kNotFound ? Status::kOk : st;
  if (expire_ms == 0 && v.expire_ms == 0) return Status::kOk;  // PERSIST
  *changed = true;
  // A deadline in the past deletes, as in Redis.
  if (expire_ms != 0 && expire_ms <= WallMs()) return t->Delete(key);
  return t->Write(key, v.type, v.encoding, v.bytes, expire_ms);
}

namespace {

// Runs `f` in a transaction of its own and commits what it wrote.
template <class F>
Store::Status InOwnTxn(Store* s, F f) {
  auto t = s->Begin();
  Store::Status st = f(t.get());
  if (st != Store::Status::kOk) return st;
  return t->Commit();
}

}  // namespace

Store::Status Store::Set(std::string_view key, std::string_view value,
                         int64_t expire_ms, SetMode mode, bool keep_ttl) {
  return InOwnTxn(this, [&](Txn* t) {
    return SetIn(t, key, value, expire_ms, mode, keep_ttl);
  });
}

Store::Status Store::MSet(
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs) {
  return InOwnTxn(this, [&](Txn* t) {
    for (const auto& kv : pairs) {
      Status st = t->Put(kv.first, kv.second, 0);
      if (st != Status::kOk) return st;
    }
    return Status::kOk;
  });
}

bool Store::Del(std::string_view key) {
  return InOwnTxn(this, [&](Txn* t) { return t->Delete(key); }) ==
         Status::kOk;
}

Store::Status Store::IncrBy(std::string_view key, int64_t by, int64_t* out) {
  return InOwnTxn(this, [&](Txn* t) { return IncrByIn(t, key, by, out); });
}

}  // namespace shmkv
