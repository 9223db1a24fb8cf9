// DUMP, RESTORE and MIGRATE: a key's value as Redis's DUMP payload
// (server/rdb/codec.h), of every type shmkv holds, and back, here or on
// another server. Rows in the keyspace family (Redis's "generic" group).
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
// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//   [AUTH password | AUTH2 username password] [KEYS key...]: the keys
// as RESTOREs to another server (the worker waits for it, at most
// `timeout` ms a step, as Redis does), deleted here once acknowledged
// unless COPY.
void Migrate(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
