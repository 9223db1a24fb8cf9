// CONFIG (server/commands/config_family.cc): a row in the server family.
#pragma once

#include "server/commands/command.h"
#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

// CONFIG GET pattern [pattern ...] | CONFIG SET parameter value [...] |
// CONFIG RESETSTAT | CONFIG HELP
void Config(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
