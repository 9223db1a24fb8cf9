// LATENCY, and the per-command latency INFO and /stats show: the
// workers' sketches (server/store/latency.h), merged.
#pragma once

#include <cstddef>

#include "server/commands/command.h"
#include "server/commands/registry.h"
#include "server/commands/reply.h"
#include "server/store/latency.h"
#include "server/store/stats.h"

namespace shmkv {
namespace cmd {

// Every worker's latency sketches, merged per command; none when this
// worker has no latency segment.
LatencyTotals MergedLatency(CommandContext* c);
// Every worker's statistics merged, this worker's published first.
StatsTotals MergedStats(CommandContext* c);

// Quantile q (kQuantiles) of command i in microseconds: from the
// workers' sketches, or, for a command only workers of an older build
// timed, from their estimators.
double LatencyUs(const StatsTotals& t, const LatencyTotals& lat, size_t i,
                 size_t q);

// LATENCY subcommand [arg ...] (latency_family.cc).
void Latency(const Args& a, CommandContext* c, Reply* r);

}  // namespace cmd
}  // namespace shmkv
