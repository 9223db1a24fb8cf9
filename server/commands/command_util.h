// Inside shmkv's command layer: the helpers every command family uses.
#pragma once


#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/notify.h"
#include "server/commands/command.h"
#include "server/commands/registry.h"
#include "server/commands/reply.h"
#include "server/store/int_text.h"
#include "server/store/store.h"

namespace shmkv {
namespace cmd {

std::string Lower(std::string_view s);
// Case-insensitive comparison with a lower-case literal.
bool Eq(std::string_view a, const char* lower);
// Redis's integer argument rule (ParseInt64, server/int_text.h).
bool ToInt(std::string_view s, int64_t* out);
void NotInt(Reply* r);
// The error reply for a store status other than kOk.
void StoreError(Store::Status st, Reply* r);

// The key's live value as the command sees it, of any type: through its
// transaction when it runs in one, else lock-free. A 128-bit hash
// collision reads as "not found"; a write to such a key reports it.
bool ReadValue(CommandContext* c, std::string_view key, Value* v);
// The physical database ReadValue reads keys of.
inline uint32_t CurrentDb(const CommandContext* c) {
  return c->txn != nullptr ? c->txn->db() : c->store->db();
}
// What a typed read found.
enum class Found { kNo, kYes, kWrongType };
// A string key's value (and expiry): kWrongType when the key holds
// another type, which most string commands answer with WrongType().
Found ReadString(CommandContext* c, std::string_view key, std::string* v,
                 int64_t* expire = nullptr);
// Runs a read command's `body` over one consistent view of the store: a
// collection held in parts is several blobs, and outside a transaction a
// commit may land between them, so the body runs again (its reply
// rewound) until none did; after a few tries it runs inside a
// transaction (under the write lock) instead. Inside one it just runs.
template <class F>
void ReadConsistently(CommandContext* c, Reply* r, F body) {
  if (c->txn != nullptr) return body();
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t token = c->store->ReadBegin();
    size_t mark = r->Mark();
    body();
    if (c->store->ReadValid(token)) return;
    r->Retry(mark);
  }
  auto t = c->store->Begin();
  c->txn = t.get();
  body();
  c->txn = nullptr;
}
// A transaction a read command opens for itself (to write what it may,
// or to wait atomically), with the client's database as SWAPDB left it
// read again under the lock; the caller sets c->txn while it reads.
std::unique_ptr<Store::Txn> BeginOwn(CommandContext* c);
// Redis's -WRONGTYPE reply.
void WrongType(Reply* r);
// TYPE's name for a type ("string", "hash", ...).
const char* TypeName(ValueType t);
// OBJECT ENCODING's name for a value, as Redis names its encodings.
std::string EncodingName(const Value& v);
// Case-insensitive comparison of two arguments.
bool EqualFold(std::string_view a, std::string_view b);
// The absolute expiry in ms of `v` seconds or ms, relative to now or
// absolute; false when it does not fit in 64 bits (the sum once wrapped
// into the past and deleted the key): Redis's "invalid expire time".
// `now` is the command's one reading of the clock: a time it then calls
// past or future is judged against that same reading (so PX 1 is never
// already gone, however long the command takes).
bool AbsoluteExpiry(int64_t v, bool secs, bool abs, int64_t now,
                    int64_t* when);
std::string InvalidExpire(std::string_view command);
// Redis's long double rule for INCRBYFLOAT and HINCRBYFLOAT arguments and
// values: the whole argument, no leading space, no NaN.
bool ToLongDouble(std::string_view s, long double* out);
// A long double as those commands print it (17 decimals, zeros cut).
std::string LongDoubleText(long double v);
// A SCAN-family cursor argument, read as Redis reads it; false: Redis's
// "invalid cursor".
bool ParseScanCursor(std::string_view arg, uint64_t* cursor);
// SCAN and its kin (HSCAN, SSCAN, ZSCAN): the cursor and the options.
struct ScanArgs {
  uint64_t cursor = 0;
  std::string_view match;  // empty: every name
  int64_t count = 10;
  std::string_view type;   // SCAN's TYPE (any case); empty: every type
};
// Parses a[at] as the cursor and the options after it (`with_type`:
// SCAN's TYPE too), with Redis's errors; false after replying one.
bool ParseScan(const Args& a, size_t at, bool with_type, ScanArgs* s,
               Reply* r);
// Its options alone, from a[from] on. HSCAN, SSCAN and ZSCAN read them
// only once the key is there and of their type, as Redis does (a missing
// key's scan is empty whatever follows its cursor).
bool ParseScanOptions(const Args& a, size_t from, bool with_type,
                      ScanArgs* s, Reply* r);
// An empty scan's reply: cursor 0, no items.
void EmptyScan(Reply* r);
// SINTERCARD's and ZINTERCARD's [LIMIT limit] from a[from] on (0: none);
// false after replying the error.
bool ParseCardLimit(const Args& a, size_t from, int64_t* limit, Reply* r);

// LMPOP's and ZMPOP's arguments from a[1]: numkeys, the keys (a[2] up to
// `end`), which end (`first` names the first end, `second` the other;
// *first_end tells which was given) and [COUNT count]; false after
// replying Redis's error.
struct MPopArgs {
  size_t end = 0;
  bool first_end = true;
  int64_t count = 1;
};
bool ParseMPop(const Args& a, const char* first, const char* second,
               MPopArgs* m, Reply* r);

// What opening a collection's value found: a value of the command's type
// (or none), another type, or bytes that do not parse.
enum class Load { kOk, kWrongType, kDamaged };
// True for kOk; else replies -WRONGTYPE or the damaged-value error.
bool Opened(Load l, Reply* r);
// The reply to bytes that do not parse (another process's damage).
void Damaged(Reply* r);
// After a collection's Save: true when `st` is kOk and the value read
// whole; else replies the damaged-value or the store's error.
bool Saved(Store::Status st, bool whole, Reply* r);

// A database number (SELECT, MOVE, COPY ... DB): Redis's errors for one
// that is no integer, past an int, or not 0 .. 15; false after replying.
bool ParseDb(std::string_view arg, uint32_t* db, Reply* r);

// For its scope, a write command's key calls go to logical database
// `logical` (MOVE, COPY ... DB), then back to the client's.
class InDb {
 public:
  InDb(CommandContext* c, uint32_t logical) : c_(c), was_(c->txn->db()) {
    c->txn->UseDb(c->txn->Physical(logical));
  }
  ~InDb() { c_->txn->UseDb(was_); }
  InDb(const InDb&) = delete;
  InDb& operator=(const InDb&) = delete;

 private:
  CommandContext* c_;
  uint32_t was_;
};

// Whether the server has a password (requirepass).
bool PasswordSet(const CommandContext* c);

// A container command's HELP reply, as Redis shapes them: its first
// line "NAME <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
// then `lines` (a subcommand, then its description indented four
// spaces), then HELP's own two lines; each a simple string.
void HelpReply(Reply* r, const char* name,
               std::initializer_list<const char*> lines);

// Redis's arity error for a container's subcommand (both lower case):
// "wrong number of arguments for 'container|sub' command".
void SubcommandArityError(std::string_view container, std::string_view sub,
                          Reply* r);

}  // namespace cmd
}  // namespace shmkv
