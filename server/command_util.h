// Inside shmkv's command layer: the helpers every command uses and the
// data commands (server/data_commands.cc) the command table names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands.h"
#include "server/store.h"

namespace shmkv {
namespace cmd {

using Args = std::vector<std::string_view>;
using Handler = void (*)(const Args&, CommandContext*, std::string*, bool*);

std::string Lower(std::string_view s);
// Case-insensitive comparison with a lower-case literal.
bool Eq(std::string_view a, const char* lower);
// Redis's integer argument rule (strtoll over the whole argument).
bool ToInt(std::string_view s, int64_t* out);
void Err(std::string* out, bool* error, std::string_view msg);
void NotInt(std::string* out, bool* error);
void StoreError(Store::Status st, std::string* out, bool* error);

// The data commands: strings, keys and expiry (Redis 7 semantics).
#define SHMKV_COMMANDS(X)                                                   \
  X(Get) X(Set) X(GetEx) X(GetSet) X(GetDel) X(SetNx) X(SetEx) X(PSetEx)    \
  X(MGet) X(MSet) X(MSetNx) X(Incr) X(Decr) X(IncrBy) X(DecrBy)             \
  X(IncrByFloat) X(Append) X(Strlen) X(SetRange) X(GetRange) X(SetBit)      \
  X(GetBit) X(BitCount) X(BitPos) X(Lcs) X(Del) X(Exists) X(Touch)          \
  X(Type) X(Rename) X(RenameNx) X(Copy) X(RandomKey) X(Expire) X(PExpire)   \
  X(ExpireAt) X(PExpireAt) X(Ttl) X(PTtl) X(ExpireTime) X(PExpireTime)      \
  X(Persist) X(DbSize) X(FlushAll) X(Keys) X(Scan)
#define SHMKV_DECLARE(name) \
  void name(const Args& a, CommandContext* c, std::string* o, bool* e);
SHMKV_COMMANDS(SHMKV_DECLARE)
#undef SHMKV_DECLARE

}  // namespace cmd
}  // namespace shmkv
