// DUMP and RESTORE, SAVE and LASTSAVE: a key's value as Redis's DUMP payload
// (server/rdb/codec.h), of every type shmkv holds, and back. Rows in the
// keyspace family (Redis's "generic" group).
#pragma once

#include <cstdint>

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

// DUMP key
void Dump(const Args& a, CommandContext* c, Reply* r);
// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s]
//   [FREQ f]
void Restore(const Args& a, CommandContext* c, Reply* r);
// SAVE: every database to dir/dbfilename as an RDB file Redis 7 loads.
// Runs in a write transaction: writers wait for it, readers do not.
void Save(const Args& a, CommandContext* c, Reply* r);
// LASTSAVE: when the RDB file was last written (its mtime), the server's
// start when there is none.
void LastSave(const Args& a, CommandContext* c, Reply* r);
// BGSAVE [SCHEDULE]: the same file, written by a forked process from
// the store as it was when the command ran, while writers go on
// (server/store/cow.h).
void BgSave(const Args& a, CommandContext* c, Reply* r);
// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: saves (SAVE, or save
// points without NOSAVE), then stops the whole server; no reply.
void Shutdown(const Args& a, CommandContext* c, Reply* r);
// LASTSAVE's time, for INFO's rdb_last_save_time.
int64_t LastSaveTime(CommandContext* c);

}  // namespace cmd
}  // namespace shmkv
