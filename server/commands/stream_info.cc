// XINFO STREAM, GROUPS, CONSUMERS and HELP (docs/server.md, "Streams"),
// with Redis 7.0's replies, over StreamValue (server/commands/
// stream_value.h).
#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/stream_util.h"
#include "server/commands/stream_value.h"

namespace shmkv {
namespace cmd {

namespace {

// A group's lag (a null when it cannot be known).
void ReplyLag(StreamValue* s, const StreamGroup& g, Reply* r) {
  int64_t lag = 0;
  if (s->Lag(g, &lag)) {
    r->Int(lag);
  } else {
    r->Null();
  }
}

void ReplyEntriesRead(const StreamGroup& g, Reply* r) {
  if (g.entries_read != -1) {
    r->Int(g.entries_read);
  } else {
    r->Null();
  }
}

// XINFO GROUPS key: per group, its name, consumers, pending entries,
// last delivered ID, entries read and lag.
bool ReplyGroups(StreamValue* s, Reply* r) {
  std::vector<StreamGroup>* gs = s->Groups();
  if (gs == nullptr) return false;
  r->Array(gs->size());
  for (const StreamGroup& g : *gs) {
    r->Map(6);
    r->Bulk("name");
    r->Bulk(g.name);
    r->Bulk("consumers");
    r->Int(static_cast<int64_t>(g.consumers.size()));
    r->Bulk("pending");
    r->Int(static_cast<int64_t>(s->PelCount(g)));
    r->Bulk("last-delivered-id");
    r->Bulk(g.last.Text());
    r->Bulk("entries-read");
    ReplyEntriesRead(g, r);
    r->Bulk("lag");
    ReplyLag(s, g, r);
  }
  return s->ok();
}

// XINFO CONSUMERS key group: per consumer, its name, pending entries and
// idle time.
bool ReplyConsumers(StreamValue* s, const StreamGroup& g, Reply* r) {
  std::vector<std::pair<std::string, uint64_t>> per;
  if (!s->PelPerConsumer(g, &per)) return false;
  const int64_t now = WallMs();
  r->Array(g.consumers.size());
  for (size_t i = 0; i < g.consumers.size(); ++i) {
    const StreamConsumer& k = g.consumers[i];
    r->Map(3);
    r->Bulk("name");
    r->Bulk(k.name);
    r->Bulk("pending");
    r->Int(static_cast<int64_t>(per[i].second));
    r->Bulk("idle");
    const int64_t idle = now - static_cast<int64_t>(k.seen_ms);
    r->Int(idle < 0 ? 0 : idle);
  }
  return true;
}

// XINFO STREAM key FULL's groups: each with up to `count` (0: all) of
// its pending entries and of each consumer's.
bool ReplyFullGroups(StreamValue* s, uint64_t count, Reply* r) {
  std::vector<StreamGroup>* gs = s->Groups();
  if (gs == nullptr) return false;
  r->Array(gs->size());
  for (const StreamGroup& g : *gs) {
    r->Map(7);
    r->Bulk("name");
    r->Bulk(g.name);
    r->Bulk("last-delivered-id");
    r->Bulk(g.last.Text());
    r->Bulk("entries-read");
    ReplyEntriesRead(g, r);
    r->Bulk("lag");
    ReplyLag(s, g, r);
    r->Bulk("pel-count");
    r->Int(static_cast<int64_t>(s->PelCount(g)));
    r->Bulk("pending");
    // One walk of the group's pending entries: the first `count` of the
    // group's and of each consumer's, and each consumer's total.
    const size_t cap = count == 0 ? SIZE_MAX : count;
    std::vector<StreamNack> head;
    std::vector<std::vector<StreamNack>> mine(g.consumers.size());
    std::vector<uint64_t> owned(g.consumers.size(), 0);
    if (!s->PelWalk(g, StreamId{}, [&](const StreamNack& nk) {
          if (head.size() < cap) head.push_back(nk);
          auto it = std::lower_bound(
              g.consumers.begin(), g.consumers.end(), nk.consumer,
              [](const StreamConsumer& k, std::string_view n) {
                return k.name < n;
              });
          if (it != g.consumers.end() && it->name == nk.consumer) {
            const size_t at = static_cast<size_t>(it - g.consumers.begin());
            ++owned[at];
            if (mine[at].size() < cap) mine[at].push_back(nk);
          }
          return true;
        })) {
      return false;
    }
    r->Array(head.size());
    for (const StreamNack& nk : head) {
      r->Array(4);
      r->Bulk(nk.id.Text());
      r->Bulk(nk.consumer);
      r->Int(static_cast<int64_t>(nk.delivery_ms));
      r->Int(static_cast<int64_t>(nk.count));
    }
    r->Bulk("consumers");
    r->Array(g.consumers.size());
    for (size_t c = 0; c < g.consumers.size(); ++c) {
      const StreamConsumer& k = g.consumers[c];
      r->Map(4);
      r->Bulk("name");
      r->Bulk(k.name);
      r->Bulk("seen-time");
      r->Int(static_cast<int64_t>(k.seen_ms));
      r->Bulk("pel-count");
      r->Int(static_cast<int64_t>(owned[c]));
      r->Bulk("pending");
      r->Array(mine[c].size());
      for (const StreamNack& nk : mine[c]) {
        r->Array(3);
        r->Bulk(nk.id.Text());
        r->Int(static_cast<int64_t>(nk.delivery_ms));
        r->Int(static_cast<int64_t>(nk.count));
      }
    }
  }
  return s->ok();
}

}  // namespace

// XINFO STREAM key [FULL [COUNT n]] | GROUPS key | CONSUMERS key group |
// HELP.
void XInfo(const Args& a, CommandContext* c, Reply* r) {
  const std::string sub = Lower(a[1]);
  if (sub == "help") {
    if (a.size() != 2) return SubcommandArityError("xinfo", sub, r);
    return HelpReply(r, "XINFO",
                     {"CONSUMERS <key> <groupname>",
                      "    Show consumers of <groupname>.", "GROUPS <key>",
                      "    Show the stream consumer groups.",
                      "STREAM <key> [FULL [COUNT <count>]",
                      "    Show information about the stream."});
  }
  const int arity = sub == "stream" ? -3 : sub == "groups" ? 3
                    : sub == "consumers"                  ? 4
                                                          : 0;
  if (arity == 0) {
    return r->Error("ERR unknown subcommand '" +
                    std::string(a[1].substr(0, 128)) + "'. Try XINFO HELP.");
  }
  if (arity > 0 ? a.size() != static_cast<size_t>(arity)
                : a.size() < static_cast<size_t>(-arity)) {
    return SubcommandArityError("xinfo", sub, r);
  }
  ReadConsistently(c, r, [&] {
    StreamValue s;
    if (!OpenStream(c, a[2], &s, r)) return;
    if (!s.exists()) return r->Error("ERR no such key");
    const size_t mark = r->Mark();
    auto damaged = [&] {
      r->Retry(mark);
      Damaged(r);
    };
    if (sub == "consumers") {
      const StreamGroup* g = s.FindGroup(a[3]);
      if (!s.ok()) return damaged();
      if (g == nullptr) {
        return r->Error("NOGROUP No such consumer group '" +
                        std::string(a[3]) + "' for key name '" +
                        std::string(a[2]) + "'");
      }
      if (!ReplyConsumers(&s, *g, r)) damaged();
      return;
    }
    if (sub == "groups") {
      if (!ReplyGroups(&s, r)) damaged();
      return;
    }
    // STREAM's options, read once the key is there, as Redis reads them.
    bool full = false;
    int64_t count = 10;
    if (a.size() > 3) {
      const size_t opts = a.size() - 3;
      if ((opts != 1 && opts != 3) || !Eq(a[3], "full") ||
          (opts == 3 && !Eq(a[4], "count"))) {
        return r->Error("ERR unknown subcommand or wrong number of "
                        "arguments for '" +
                        std::string(a[1].substr(0, 128)) +
                        "'. Try XINFO HELP.");
      }
      full = true;
      if (opts == 3) {
        if (!ToInt(a[5], &count)) return NotInt(r);
        if (count < 0) count = 10;
      }
    }
    const StreamValue::Counters& k = s.counters();
    const uint64_t length = s.size();
    StreamEntry first;
    const bool any = length > 0 && s.Edge(true, &first);
    const std::vector<StreamGroup>* gs = s.Groups();
    if (gs == nullptr) return damaged();
    r->Map(full ? 9 : 10);
    r->Bulk("length");
    r->Int(static_cast<int64_t>(length));
    r->Bulk("radix-tree-keys");
    r->Int(static_cast<int64_t>(k.nodes));
    // Redis's radix tree's own nodes: one more than its keys while they
    // share no prefix (a stream of up to one node); shmkv has no such
    // tree, and gives that figure.
    r->Bulk("radix-tree-nodes");
    r->Int(static_cast<int64_t>(k.nodes + 1));
    r->Bulk("last-generated-id");
    r->Bulk(k.last.Text());
    r->Bulk("max-deleted-entry-id");
    r->Bulk(k.max_deleted.Text());
    r->Bulk("entries-added");
    r->Int(static_cast<int64_t>(k.added));
    r->Bulk("recorded-first-entry-id");
    r->Bulk(any ? first.id.Text() : StreamId{}.Text());
    const StreamId top{~0ULL, ~0ULL};
    bool ok = true;
    if (!full) {
      r->Bulk("groups");
      r->Int(static_cast<int64_t>(gs->size()));
      for (bool rev : {false, true}) {
        r->Bulk(rev ? "last-entry" : "first-entry");
        StreamEntry e;
        if (length == 0) {
          r->Null();
        } else if (s.Edge(!rev, &e)) {
          ReplyEntry(e, r);
        } else {
          ok = false;
        }
      }
    } else {
      r->Bulk("entries");
      ok = ReplyRange(&s, StreamId{}, top, false,
                      static_cast<uint64_t>(count), r);
      if (ok) {
        r->Bulk("groups");
        ok = ReplyFullGroups(&s, static_cast<uint64_t>(count), r);
      }
    }
    if (!ok || !s.ok()) damaged();
  });
}

}  // namespace cmd
}  // namespace shmkv
