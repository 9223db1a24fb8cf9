// DUMP and RESTORE: a key's value as Redis's DUMP payload
// (server/rdb/codec.h), of every type shmkv holds, and back. Rows in the
// keyspace family (Redis's "generic" group).
#pragma once

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

// DUMP key
void Dump(const Args& a, CommandContext* c, Reply* r);
// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s]
//   [FREQ f]
void Restore(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
