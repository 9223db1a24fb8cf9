// Inside shmkv's command layer: the helpers every command uses and the
// commands the table names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands.h"
#include "server/int_text.h"
#include "server/store.h"

namespace shmkv {
namespace cmd {

using Args = std::vector<std::string_view>;
using Handler = void (*)(const Args&, CommandContext*, std::string*, bool*);

std::string Lower(std::string_view s);
// Case-insensitive comparison with a lower-case literal.
bool Eq(std::string_view a, const char* lower);
// Redis's integer argument rule (ParseInt64, server/int_text.h).
bool ToInt(std::string_view s, int64_t* out);
void Err(std::string* out, bool* error, std::string_view msg);
void NotInt(std::string* out, bool* error);
void StoreError(Store::Status st, std::string* out, bool* error);

// The key's live value as the command sees it: through its transaction
// when it runs in one, else lock-free. A 128-bit hash collision reads as
// "not found"; a write to such a key reports it.
bool ReadKey(CommandContext* c, std::string_view key, std::string* v,
             int64_t* expire = nullptr);
// The write transaction of a write command (opened by Execute or EXEC).
inline Store::Txn* W(CommandContext* c) { return c->txn; }
// The absolute expiry in ms of `v` seconds or ms, relative to now or
// absolute; false when it does not fit in 64 bits (the sum once wrapped
// into the past and deleted the key): Redis's "invalid expire time".
bool AbsoluteExpiry(int64_t v, bool secs, bool abs, int64_t* when);
std::string InvalidExpire(std::string_view command);
// Whether the server has a password (requirepass).
bool PasswordSet(const CommandContext* c);

// The commands the table in server/commands.cc names: strings
// (string_commands.cc), keys and expiry (key_commands.cc), server and
// connection (server_commands.cc).
#define SHMKV_COMMANDS(X)                                                   \
  X(Get) X(Set) X(GetEx) X(GetSet) X(GetDel) X(SetNx) X(SetEx) X(PSetEx)    \
  X(MGet) X(MSet) X(MSetNx) X(Incr) X(Decr) X(IncrBy) X(DecrBy)             \
  X(IncrByFloat) X(Append) X(Strlen) X(SetRange) X(GetRange) X(SetBit)      \
  X(GetBit) X(BitCount) X(BitPos) X(Lcs) X(Del) X(Exists) X(Touch)          \
  X(Type) X(Rename) X(RenameNx) X(Copy) X(RandomKey) X(Expire) X(PExpire)   \
  X(ExpireAt) X(PExpireAt) X(Ttl) X(PTtl) X(ExpireTime) X(PExpireTime)      \
  X(Persist) X(DbSize) X(FlushAll) X(Keys) X(Scan) X(Ping) X(Echo)        \
  X(Info) X(Config) X(Quit) X(Select) X(Auth) X(Hello) X(Client) X(Time)
#define SHMKV_DECLARE(name) \
  void name(const Args& a, CommandContext* c, std::string* o, bool* e);
SHMKV_COMMANDS(SHMKV_DECLARE)
#undef SHMKV_DECLARE

}  // namespace cmd
}  // namespace shmkv
