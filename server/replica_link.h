// The replication link (docs/server.md, "Replicating from Redis"): a
// process the master forks while the store is a replica (REPLICAOF host
// port; server/store/repl.h). It follows a Redis master as a Redis replica
// does: the handshake (PING, REPLCONF listening-port and capa psync2,
// PSYNC), a full sync (the master's RDB, received into a temporary file in
// --dir and loaded in place of the store's data) or a continuation of the
// stream where it stopped, then the command stream, applied through the
// command layer as the master sent it, with its offset acknowledged
// (REPLCONF ACK) every second and when the master asks (GETACK).
//
// It stops between two commands when the target changes (a new REPLICAOF,
// or REPLICAOF NO ONE) or on SIGTERM, and leaves the offset and the
// master's replication id that describe the data exactly, so the next
// link asks to continue (PSYNC id offset+1); a link killed inside a
// command (or inside MULTI) leaves them marked unusable, and the next one
// syncs in full.
#pragma once

#include "server/options.h"
#include "server/store/store.h"

namespace shmkv {

// Runs the link until it is told to stop; the process's exit code.
int RunReplicaLink(const Options& o, const StoreConfig& sc);

}  // namespace shmkv
