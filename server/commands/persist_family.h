// SAVE, BGSAVE, SHUTDOWN and LASTSAVE: the store to dir/dbfilename as an
// RDB file Redis 7 loads (docs/server.md, "Snapshots" and "Background
// saves"). Rows in the server family.
#pragma once

#include <cstdint>
#include <string>

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

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
// The save points in force, as CONFIG GET save shows them ("SECS CHANGES
// ...", "": none): CONFIG SET save's, else the server's --save.
std::string SavePointsText(CommandContext* c);

}  // namespace cmd
}  // namespace shmkv
