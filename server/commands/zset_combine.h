// The sorted-set commands that combine several keys (ZUNION, ZINTER,
// ZDIFF, their STORE forms and ZINTERCARD: server/commands/
// zset_combine.cc), and the reply and store helpers they share with the
// rest of the family (server/commands/zset_family.cc).
#pragma once

#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/reply.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

// Members (with their scores when with_scores) as an array reply.
void ReplyEntries(const std::vector<ZEntry>& es, bool with_scores, Reply* r);
// Replaces `dst` with the entries `es` (none: deletes it) and replies
// their count; false after replying an error.
// `event`: the keyspace event of a non-empty result.
bool StoreEntries(CommandContext* c, std::string_view dst,
                  const std::vector<ZEntry>& es, const char* event, Reply* r);

void ZUnion(const Args& a, CommandContext* c, Reply* r);
void ZInter(const Args& a, CommandContext* c, Reply* r);
void ZDiff(const Args& a, CommandContext* c, Reply* r);
void ZUnionStore(const Args& a, CommandContext* c, Reply* r);
void ZInterStore(const Args& a, CommandContext* c, Reply* r);
void ZDiffStore(const Args& a, CommandContext* c, Reply* r);
void ZInterCard(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
