// shmkv's pub/sub commands (docs/server.md, "Pub/sub"): SUBSCRIBE,
// UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE,
// PUBLISH, SPUBLISH and PUBSUB, over the worker's hub
// (server/commands/pubsub_hub.h). Subscriptions and publishing take the
// store's write lock, which orders them across workers.
#include <memory>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/pubsub_hub.h"

namespace shmkv {
namespace cmd {

namespace {

// Runs f under the store's write lock: the transaction the command runs
// in, or one of its own (committing nothing).
template <class F>
void Locked(CommandContext* c, F f) {
  if (c->txn != nullptr) return f();
  auto txn = c->store->Begin();
  f();
}

bool NoHub(CommandContext* c, Reply* r) {
  if (c->pubsub != nullptr) return false;
  r->Error("ERR pub/sub is not available on this connection");
  return true;
}

const char* SubName(char kind) {
  return kind == 'p' ? "psubscribe" : kind == 's' ? "ssubscribe" : "subscribe";
}
const char* UnsubName(char kind) {
  return kind == 'p' ? "punsubscribe"
                     : kind == 's' ? "sunsubscribe" : "unsubscribe";
}

// The count Redis answers with: shard subscriptions alone for the shard
// commands, channels and patterns together for the others.
int64_t CountFor(const ClientState* cl, char kind) {
  if (kind == 's') return static_cast<int64_t>(cl->shards.size());
  return static_cast<int64_t>(cl->channels.size() + cl->patterns.size());
}

// SUBSCRIBE channel [channel ...] (PSUBSCRIBE pattern ..., SSUBSCRIBE)
void SubscribeGeneric(const Args& a, CommandContext* c, Reply* r, char kind) {
  if (NoHub(c, r)) return;
  Locked(c, [&] {
    for (size_t i = 1; i < a.size(); ++i) {
      if (!c->pubsub->Subscribe(c->client, kind, a[i])) {
        r->Error("ERR the pub/sub registry is full");
        return;
      }
      r->Push(3);
      r->Bulk(SubName(kind));
      r->Bulk(a[i]);
      r->Int(CountFor(c->client, kind));
    }
  });
}

// UNSUBSCRIBE [channel ...] (PUNSUBSCRIBE [pattern ...], SUNSUBSCRIBE)
void UnsubscribeGeneric(const Args& a, CommandContext* c, Reply* r,
                        char kind) {
  if (NoHub(c, r)) return;
  ClientState* cl = c->client;
  std::vector<std::string> names(a.begin() + 1, a.end());
  if (names.empty()) {
    const auto& mine = kind == 'p' ? cl->patterns
                       : kind == 's' ? cl->shards : cl->channels;
    names.assign(mine.begin(), mine.end());
    if (names.empty()) {
      r->Push(3);
      r->Bulk(UnsubName(kind));
      r->Null();
      r->Int(CountFor(cl, kind));
      return;
    }
  }
  Locked(c, [&] {
    for (const std::string& n : names) {
      c->pubsub->Unsubscribe(cl, kind, n);
      r->Push(3);
      r->Bulk(UnsubName(kind));
      r->Bulk(n);
      r->Int(CountFor(cl, kind));
    }
  });
}

// The rows' handlers, one per kind ('c', 'p', 's').
template <char kKind>
void Subscribe(const Args& a, CommandContext* c, Reply* r) {
  SubscribeGeneric(a, c, r, kKind);
}
template <char kKind>
void Unsubscribe(const Args& a, CommandContext* c, Reply* r) {
  UnsubscribeGeneric(a, c, r, kKind);
}

// PUBLISH channel message (SPUBLISH shardchannel message)
void PublishGeneric(const Args& a, CommandContext* c, Reply* r, char kind) {
  if (c->pubsub == nullptr) return r->Int(0);
  if (a[1].size() + a[2].size() > kMaxPublish) {
    return r->Error("ERR the message is larger than the pub/sub ring "
                    "carries (" + std::to_string(kMaxPublish) + " bytes)");
  }
  Locked(c, [&] {
    r->Int(static_cast<int64_t>(c->pubsub->Publish(kind, a[1], a[2])));
  });
}

template <char kKind>
void Publish(const Args& a, CommandContext* c, Reply* r) {
  PublishGeneric(a, c, r, kKind);
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT |
// SHARDCHANNELS [pattern] | SHARDNUMSUB [channel ...] | HELP
void PubSub(const Args& a, CommandContext* c, Reply* r) {
  // As Redis: NUMPAT's and HELP's arity is checked by the table, the
  // others' by the command.
  auto arity = [&](const char* sub) {
    if (std::string_view(sub) == "numpat" || std::string_view(sub) == "help") {
      return r->Error(std::string("ERR wrong number of arguments for 'pubsub|") +
                      sub + "' command");
    }
    r->Error("ERR unknown subcommand or wrong number of arguments for '" +
             std::string(a[1].substr(0, 128)) + "'. Try PUBSUB HELP.");
  };
  bool shard = Eq(a[1], "shardchannels") || Eq(a[1], "shardnumsub");
  char kind = shard ? 's' : 'c';
  if (Eq(a[1], "channels") || Eq(a[1], "shardchannels")) {
    if (a.size() > 3) return arity(shard ? "shardchannels" : "channels");
    std::vector<std::string> names;
    if (c->pubsub != nullptr) {
      c->pubsub->Names(kind, [&](std::string_view n, uint64_t) {
        if (a.size() == 2 || GlobMatch(a[2], n)) names.emplace_back(n);
      });
    }
    r->Array(names.size());
    for (const std::string& n : names) r->Bulk(n);
  } else if (Eq(a[1], "numsub") || Eq(a[1], "shardnumsub")) {
    r->Array(2 * (a.size() - 2));
    for (size_t i = 2; i < a.size(); ++i) {
      r->Bulk(a[i]);
      r->Int(c->pubsub == nullptr
                 ? 0
                 : static_cast<int64_t>(c->pubsub->Count(kind, a[i])));
    }
  } else if (Eq(a[1], "numpat")) {
    if (a.size() != 2) return arity("numpat");
    r->Int(c->pubsub == nullptr ? 0
                                : static_cast<int64_t>(c->pubsub->NumPat()));
  } else if (Eq(a[1], "help")) {
    if (a.size() != 2) return arity("help");
    HelpReply(r, "PUBSUB", {
        "CHANNELS [<pattern>]",
        ("    The channels with subscribers (every worker's), or those "
         "matching <pattern>."),
        "NUMPAT",
        "    How many patterns have subscribers.",
        "NUMSUB [<channel> ...]",
        "    Each channel with its number of subscribers.",
        "SHARDCHANNELS [<pattern>]",
        "    CHANNELS for shard channels.",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    NUMSUB for shard channels."});
  } else {
    r->Error("ERR unknown subcommand '" + std::string(a[1].substr(0, 128)) +
             "'. Try PUBSUB HELP.");
  }
}

constexpr uint32_t kSub = kPubSub | kNoScript | kLoading | kStale;

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kPubSubRows[] = {
    {"subscribe", 164, -2, kSub, 0, 0, 0, Subscribe<'c'>},
    {"unsubscribe", 165, -1, kSub, 0, 0, 0, Unsubscribe<'c'>},
    {"psubscribe", 166, -2, kSub, 0, 0, 0, Subscribe<'p'>},
    {"punsubscribe", 167, -1, kSub, 0, 0, 0, Unsubscribe<'p'>},
    {"ssubscribe", 168, -2, kSub, 1, -1, 1, Subscribe<'s'>},
    {"sunsubscribe", 169, -1, kSub, 1, -1, 1, Unsubscribe<'s'>},
    {"publish", 170, 3, kPubSub | kLoading | kStale | kFast | kMayReplicate,
     0, 0, 0, Publish<'c'>},
    {"spublish", 171, 3, kPubSub | kLoading | kStale | kFast | kMayReplicate,
     1, 1, 1, Publish<'s'>},
    {"pubsub", 172, -2, kPubSub | kLoading | kStale | kContainer, 0, 0, 0, PubSub},
};

}  // namespace

void RegisterPubSubFamily(Registry* r) { r->Add(kPubSubRows, "pubsub"); }

}  // namespace cmd
}  // namespace shmkv
