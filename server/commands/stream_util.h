// What the stream families (stream_family.cc, stream_group_family.cc)
// share: Redis's errors and readings of their arguments, and the reply of
// an entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/commands/command.h"
#include "server/commands/stream_value.h"

namespace shmkv {
namespace cmd {

void InvalidId(Reply* r);
void SyntaxError(Reply* r);
// A range's bound: "(id" is exclusive (the ID strictly read), else "-",
// "+", "ms" (seq `missing`) or "ms-seq".
bool ParseIntervalId(std::string_view arg, uint64_t missing, StreamId* id,
                     bool* exclusive);
// Opens / saves the stream at `key`; false after replying an error.
bool OpenStream(CommandContext* c, std::string_view key, StreamValue* s,
                Reply* r);
bool SaveStream(CommandContext* c, std::string_view key, StreamValue* s,
                Reply* r);
// One entry: [id, [field, value, ...]].
void ReplyEntry(const StreamEntry& e, Reply* r);

// Entries from `start` up to `end` (down, with rev), at most `count` (0:
// all), as an array; false when the stream proved damaged (nothing
// usable replied).
bool ReplyRange(StreamValue* s, StreamId start, StreamId end, bool rev,
                uint64_t count, Reply* r);

// XINFO (stream_info.cc), registered with the stream family's rows.
void XInfo(const Args& a, CommandContext* c, Reply* r);

// XREAD's and XREADGROUP's options, as Redis reads them (GROUP and
// NOACK are XREADGROUP's); false after replying an error.
struct ReadArgs {
  int64_t count = 0;     // 0: all
  int64_t timeout = -1;  // -1: no BLOCK
  size_t streams = 0;    // the first key's position
  bool noack = false;
  bool grouped = false;
  std::string_view group, consumer;
};
bool ParseReadArgs(const Args& a, CommandContext* c, bool xreadgroup,
                   ReadArgs* out, Reply* r);

}  // namespace cmd
}  // namespace shmkv
