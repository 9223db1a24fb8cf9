// The command layer's shared helpers (server/command_util.h).
#include <cctype>
#include <cstring>
#include <string>

#include "server/command_util.h"
#include "server/resp.h"

namespace shmkv {
namespace cmd {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool Eq(std::string_view a, const char* b) {
  size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

bool ToInt(std::string_view s, int64_t* out) { return ParseInt64(s, out); }

void Err(std::string* out, bool* error, std::string_view msg) {
  ReplyError(out, msg);
  *error = true;
}

void NotInt(std::string* out, bool* error) {
  Err(out, error, "ERR value is not an integer or out of range");
}

void StoreError(Store::Status st, std::string* out, bool* error) {
  switch (st) {
    case Store::Status::kNotInteger: NotInt(out, error); return;
    case Store::Status::kFull:
      Err(out, error, "OOM the store is full (raise --capacity or --memory)");
      return;
    case Store::Status::kTooLarge:
      Err(out, error, "ERR key or value exceeds the server's limits "
                      "(--max-value)");
      return;
    case Store::Status::kCollision:
      Err(out, error, "ERR key hash collision with another key");
      return;
    case Store::Status::kTxnTooLarge:
      Err(out, error, "ERR the transaction is larger than the commit "
                      "journal (--journal-size)");
      return;
    default:
      Err(out, error, std::string("ERR ") + StatusText(st));
  }
}

// The key's live value as the command sees it: through its transaction
// when it runs in one, else lock-free. A 128-bit hash collision reads as
// "not found"; a write to such a key reports it.
bool ReadKey(CommandContext* c, std::string_view key, std::string* v,
             int64_t* expire) {
  if (c->txn != nullptr) return c->txn->Read(key, v, expire) == Store::Status::kOk;
  return c->store->Get(key, v, expire);
}

// The absolute expiry time in ms of `v`, given in seconds or ms, relative
// to now or absolute; false when it does not fit in 64 bits (the sum once
// wrapped into the past and deleted the key).
bool AbsoluteExpiry(int64_t v, bool secs, bool abs, int64_t* when) {
  if (secs && (v > INT64_MAX / 1000 || v < INT64_MIN / 1000)) return false;
  int64_t ms = secs ? v * 1000 : v;
  if (abs) {
    *when = ms;
    return true;
  }
  int64_t now = NowMs();
  if (ms > INT64_MAX - now) return false;
  *when = now + ms;
  return true;
}

std::string InvalidExpire(std::string_view command) {
  return "ERR invalid expire time in '" + Lower(command) + "' command";
}

}  // namespace cmd
}  // namespace shmkv
