// LATENCY (Redis 7's HISTOGRAM, and the event subcommands of a server
// that records no latency events) and the latency figures of INFO and
// /stats (server/commands/latency_family.h).
#include "server/commands/latency_family.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"

namespace shmkv {
namespace cmd {

LatencyTotals MergedLatency(CommandContext* c) {
  if (c->publish_stats) c->publish_stats();
  return c->latency != nullptr ? c->latency->Merge()
                               : LatencyTotals(kMaxCommands);
}

StatsTotals MergedStats(CommandContext* c) {
  if (c->publish_stats) c->publish_stats();
  return c->stats != nullptr ? c->stats->Merge() : StatsTotals();
}

double LatencyUs(const StatsTotals& t, const LatencyTotals& lat, size_t i,
                 size_t q) {
  if (lat[i] != nullptr) return lat[i]->Quantile(kQuantiles[q]) / 1000;
  return t.est[i * 3 + q].Estimate();
}

// LATENCY HISTOGRAM [command ...] | LATENCY LATEST | LATENCY HISTORY event
// | LATENCY RESET [event ...] | LATENCY GRAPH event | LATENCY DOCTOR |
// LATENCY HELP. HISTOGRAM is Redis 7's, from the workers' sketches
// (server/store/latency.h). shmkv keeps no latency events (Redis's
// latency monitor, off by default there too): LATEST and HISTORY are
// empty, RESET resets none, GRAPH has no samples.
void Latency(const Args& a, CommandContext* c, Reply* r) {
  std::string sub = Lower(a[1]);
  auto arity = [&](bool ok) {
    if (!ok) SubcommandArityError("latency", sub, r);
    return ok;
  };
  if (sub == "histogram") {
    LatencyTotals lat = MergedLatency(c);
    std::vector<size_t> ids;
    if (a.size() == 2) {
      for (size_t i = 0; i < lat.size(); ++i) {
        if (lat[i] != nullptr && lat[i]->Count() != 0) ids.push_back(i);
      }
    } else {
      for (size_t i = 2; i < a.size(); ++i) {
        const CommandRow* row = Commands().Find(a[i]);
        if (row != nullptr && row->id < lat.size() && lat[row->id] != nullptr &&
            lat[row->id]->Count() != 0) {
          ids.push_back(row->id);
        }
      }
    }
    r->Map(ids.size());
    for (size_t id : ids) {
      const shmc::QuantileSketch& k = *lat[id];
      r->Bulk(CommandName(id));
      r->Map(2);
      r->Bulk("calls");
      r->Int(static_cast<int64_t>(k.Count()));
      r->Bulk("histogram_usec");
      // Redis's buckets: from 1,024 ns, doubling, each up to its bound
      // with two significant digits (1/128 over), named in whole
      // microseconds; a bucket is listed when its cumulative count grew.
      std::vector<std::pair<int64_t, int64_t>> cdf;
      uint64_t before = 0;
      for (uint64_t low = 1024; before < k.Count() && low < (uint64_t{1} << 50);
           low *= 2) {
        uint64_t bound = low + low / 128 - 1;
        uint64_t n = k.CountAtMost(bound);
        if (n > before) {
          cdf.emplace_back(static_cast<int64_t>(bound / 1000),
                           static_cast<int64_t>(n));
          before = n;
        }
      }
      r->Map(cdf.size());
      for (const auto& [us, n] : cdf) {
        r->Int(us);
        r->Int(n);
      }
    }
  } else if (sub == "latest") {
    if (arity(a.size() == 2)) r->Array(0);
  } else if (sub == "history") {
    if (arity(a.size() == 3)) r->Array(0);
  } else if (sub == "reset") {
    r->Int(0);
  } else if (sub == "graph") {
    if (arity(a.size() == 3)) {
      r->Error("ERR No samples available for event '" + std::string(a[2]) +
               "'");
    }
  } else if (sub == "doctor") {
    if (arity(a.size() == 2)) {
      r->Verbatim("shmkv records no latency events (it has no latency "
                  "monitor). Per-command latency: LATENCY HISTOGRAM and INFO "
                  "latencystats.\n");
    }
  } else if (sub == "help") {
    if (!arity(a.size() == 2)) return;
    HelpReply(r, "LATENCY", {
        "HISTOGRAM [<command> ...]",
        "    Each command's latency as a cumulative distribution.",
        "    (Every command timed, when none is named.)",
        "LATEST",
        "    Latency events: none are recorded (an empty array).",
        "HISTORY <event>",
        "    The samples of an event: none are recorded (an empty array).",
        "RESET [<event> ...]",
        "    Resets the events named: none are recorded (0).",
        "GRAPH <event>",
        "    A graph of an event's samples: there are none.",
        "DOCTOR",
        "    What is known of latency here."});
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
             "'. Try LATENCY HELP.");
  }
}

}  // namespace cmd
}  // namespace shmkv
