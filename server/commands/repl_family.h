// REPLICAOF (and SLAVEOF), ROLE and INFO's replication section: the role
// a client sets and reads (docs/server.md, "Replicating from Redis"). The
// link that follows the master is server/replica_link.h. Rows in the
// server family.
#pragma once

#include <string>

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

// REPLICAOF host port | REPLICAOF NO ONE
void ReplicaOf(const Args& a, CommandContext* c, Reply* r);
// ROLE
void Role(const Args& a, CommandContext* c, Reply* r);
// Whether the store is a replica loading its master's dataset (INFO's
// loading).
bool ReplicaLoading(CommandContext* c);
// INFO replication's lines (after its header).
std::string ReplicationInfo(CommandContext* c);

}  // namespace cmd
}  // namespace shmkv
