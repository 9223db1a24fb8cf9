// Pub/sub in one worker process (docs/server.md, "Pub/sub"): which of
// its clients subscribed to what, delivery to them, and the way to the
// other workers through what they share (server/store/pubsub_shared.h).
//
// PUBLISH (under the store's write lock) delivers to this worker's
// subscribers at once, counts the other workers' from the registry, and,
// when some other worker holds a subscriber that may want the message,
// puts it on the ring and wakes those workers; each of them reads the
// ring (Poll) and delivers to its own. So a publisher's messages reach
// every subscriber in the order it sent them, and PUBLISH answers the
// number of subscribers of every worker.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/store/pubsub_shared.h"
#include "server/store/store.h"

namespace shmkv {

struct ClientState;

// The largest channel and message PUBLISH takes: what one record of the
// ring carries (a quarter of it, less the record's head).
constexpr uint64_t kMaxPublish = PubSubShared::kRingBytes / 4 - 64;
// What a worker's wake socket (server/net/waker.h) carries to say "the
// ring has messages for you", in place of a key's hash.
constexpr uint64_t kPubSubWake = ~0ULL;

class PubSubHub {
 public:
  // deliver(client, frame): appends a message to the client's output.
  // wake(pid): tells worker `pid` the ring has something for it.
  using Deliver = std::function<void(ClientState*, std::string_view)>;
  using Wake = std::function<void(uint32_t)>;
  PubSubHub(Store* store, uint32_t self, Deliver deliver, Wake wake)
      : store_(store), self_(self), deliver_(std::move(deliver)),
        wake_(std::move(wake)) {}

  // Attaches the shared registry and ring (and forgets what a dead
  // process of this pid left there).
  bool Open(std::string* err);

  // kind: 'c' channel, 'p' pattern, 's' shard channel. Subscribe and
  // Unsubscribe run under the write lock (the caller holds a Txn); false
  // when the registry is full.
  bool Subscribe(ClientState* cl, char kind, std::string_view name);
  bool Unsubscribe(ClientState* cl, char kind, std::string_view name);
  // A client that goes: every subscription of it (takes the write lock).
  void Drop(ClientState* cl);

  // Under the write lock: delivers, returns the subscribers reached.
  // The channel and message together are at most kMaxPublish bytes
  // (PUBLISH refuses larger ones before).
  uint64_t Publish(char kind, std::string_view channel,
                   std::string_view message);

  // Wakes the workers the messages published since the last call are
  // for: once each, however many messages (a pipelined batch of
  // PUBLISHes costs one wake per worker). The worker calls it after each
  // batch of commands, before their replies go out.
  void SendWakes();
  // Delivers what other workers put on the ring since the last call.
  // Lost: messages this worker fell a ring behind on (counted).
  void Poll();
  bool has_subscribers() const { return local_ > 0; }
  uint64_t lost() const { return lost_; }

  // PUBSUB CHANNELS / NUMSUB / NUMPAT / SHARDCHANNELS / SHARDNUMSUB
  void Names(char kind,
             const std::function<void(std::string_view, uint64_t)>& f) const;
  uint64_t Count(char kind, std::string_view name) const;
  uint64_t NumPat() const;

  // Hot restart (docs/server.md, "Pub/sub"): a subscriber moves to the
  // worker `to` with its subscriptions and loses no message.
  // HandOver, under the write lock: delivers what the ring holds for
  // this worker, then moves the client's registrations to `to` and drops
  // it here; *pos is where `to` goes on reading the ring for it. False
  // (nothing changed) when the registry is full.
  bool HandOver(ClientState* cl, uint32_t to, uint64_t* pos);
  // Adopt, under the write lock: the client of a HandOver to this
  // worker, its subscriptions in `subs` (kind, name) already registered
  // for it; delivers to it what the ring got since `pos`. False when the
  // ring has passed `pos` (messages were lost: the caller closes it).
  bool Adopt(ClientState* cl,
             const std::vector<std::pair<char, std::string>>& subs,
             uint64_t pos);
  // While a worker may still adopt subscribers (its predecessor drains),
  // everything it publishes also goes on the ring: a message for a
  // client registered here but not adopted yet is found there.
  void set_adopting(bool on) { adopting_ = on; }

 private:
  using Clients = std::unordered_set<ClientState*>;
  std::unordered_map<std::string, Clients>& Of(char kind);
  // only: deliver to that client alone (an adopted one catching up).
  uint64_t DeliverLocal(char kind, std::string_view channel,
                        std::string_view message,
                        const ClientState* only = nullptr);

  Store* store_;
  uint32_t self_;
  Deliver deliver_;
  Wake wake_;
  PubSubShared shared_;
  bool open_ = false;
  bool adopting_ = false;
  std::unordered_map<std::string, Clients> channels_, patterns_, shards_;
  uint64_t local_ = 0;  // this worker's subscriptions, all kinds
  uint64_t ring_pos_ = 0;
  uint64_t lost_ = 0;
  std::vector<PubSubShared::Holder> holders_;
  std::vector<std::string> pattern_names_;
  std::unordered_set<uint32_t> to_wake_, pending_wakes_;
};

}  // namespace shmkv
