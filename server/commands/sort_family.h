// SORT and SORT_RO (server/commands/sort_family.cc): rows in the keyspace
// family.
#pragma once

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

void Sort(const Args& a, CommandContext* c, Reply* r);
void SortRo(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
