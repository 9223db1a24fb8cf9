// What the blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
// BZPOPMIN, BZPOPMAX, BZMPOP: blocking_family.cc) share, and the pops
// they borrow from the list and sorted-set families. How a client waits
// across workers: docs/server.md, "Blocking commands".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"

namespace shmkv {
namespace cmd {

// A blocking command's timeout, in seconds as Redis reads it (a float,
// rounded up to whole milliseconds; 0: wait forever). False after
// replying Redis's error.
bool ParseBlockTimeout(std::string_view s, int64_t* ms, Reply* r);

// Serves a blocking command from the first of `keys` that holds a `type`
// value and where no client that blocked earlier waits: take(key) pops
// and replies. With none, the command blocks (CommandContext::blocked);
// where it may not, it answers as its timeout does (a null array), or
// inside EXEC as its non-blocking form does (a null bulk for the moves,
// `null_bulk`). Under the command's transaction, so the look and the
// wait are one step.
void ServeOrBlock(CommandContext* c, Reply* r,
                  const std::vector<std::string_view>& keys, ValueType type,
                  int64_t timeout_ms, bool null_bulk,
                  const std::function<void(std::string_view)>& take);

// Makes the command wait on `keys` (the blocking board), `timeout_ms`
// at most (0: for ever); tried again, it keeps its place in line. Writes
// no reply unless the board is full (an error).
void WaitOn(CommandContext* c, Reply* r,
            const std::vector<std::string_view>& keys, int64_t timeout_ms);

// [key, [element, ...]]: LMPOP's and BLMPOP's reply.
void ReplyKeyAndAll(std::string_view key, const std::vector<std::string>& v,
                    Reply* r);

// From list_family.cc: pops up to `count` elements from one end of the
// list at `key` into *out; false after replying an error.
bool PopList(CommandContext* c, std::string_view key, bool front,
             uint64_t count, std::vector<std::string>* out, Reply* r);
// LMOVE's move, with its reply (the element, or nil).
void MoveElement(CommandContext* c, Reply* r, std::string_view from,
                 std::string_view to, bool from_front, bool to_front);

// From zset_family.cc: pops up to `count` members from the low (max:
// high) end of the sorted set at `key`; false after replying an error.
bool PopZSet(CommandContext* c, std::string_view key, bool max,
             uint64_t count, std::vector<std::string>* members,
             std::vector<double>* scores, Reply* r);
void ReplyScore(double v, Reply* r);
// [key, [[member, score], ...]]: ZMPOP's and BZMPOP's reply.
void ReplyKeyAndPairs(std::string_view key,
                      const std::vector<std::string>& members,
                      const std::vector<double>& scores, Reply* r);

}  // namespace cmd
}  // namespace shmkv
