// A stored value of any type as one RDB value (server/rdb/codec.h), read
// whole and written whole: what DUMP, RESTORE, MIGRATE and the RDB files
// of SAVE and BGSAVE move.
#pragma once

#include <string_view>

#include "server/commands/command.h"
#include "server/rdb/codec.h"
#include "server/store/store.h"

namespace shmkv {
namespace cmd {

// What reading a whole value found.
enum class Whole { kValue, kNone, kWrongType, kDamaged };

// The whole value at `key` as RDB sees it, and its expiry (absolute ms,
// 0: none) in *expire_ms when asked.
Whole ReadWhole(CommandContext* c, std::string_view key, rdb::Value* out,
                int64_t* expire_ms = nullptr);

// Writes `v` as the value of `key` (which holds nothing now) with no
// TTL, in the command's transaction: the store's status; *whole is false
// when the value could not be built (too large).
Store::Status WriteWhole(CommandContext* c, std::string_view key,
                         const rdb::Value& v, bool* whole);

}  // namespace cmd
}  // namespace shmkv
