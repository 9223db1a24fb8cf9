// Keyspace notifications (server/commands/notify.h).
#include "server/commands/notify.h"

#include <algorithm>
#include <cstddef>

#include "server/commands/command.h"
#include "server/commands/pubsub_hub.h"
#include "server/store/store.h"

namespace shmkv {
namespace cmd {

namespace {

struct Letter {
  char c;
  uint32_t flags;
};
constexpr Letter kLetters[] = {
    {'A', kNotifyAll},       {'g', kNotifyGeneric},  {'$', kNotifyString},
    {'l', kNotifyList},      {'s', kNotifySet},      {'h', kNotifyHash},
    {'z', kNotifyZSet},      {'x', kNotifyExpired},  {'e', kNotifyEvicted},
    {'K', kNotifyKeyspace},  {'E', kNotifyKeyevent}, {'t', kNotifyStream},
    {'m', kNotifyKeyMiss},   {'d', kNotifyModule},   {'n', kNotifyNew},
};

}  // namespace

bool ParseNotifyClasses(std::string_view text, uint32_t* flags) {
  uint32_t f = 0;
  for (char ch : text) {
    bool known = false;
    for (const Letter& l : kLetters) {
      if (l.c == ch) {
        f |= l.flags;
        known = true;
      }
    }
    if (!known) return false;
  }
  *flags = f;
  return true;
}

std::string NotifyClassesText(uint32_t flags) {
  std::string s;
  if ((flags & kNotifyAll) == kNotifyAll) {
    s += 'A';
  } else {
    for (char ch : std::string_view("g$lshzxetdn")) {
      for (const Letter& l : kLetters) {
        if (l.c == ch && (flags & l.flags) != 0) s += ch;
      }
    }
  }
  if ((flags & kNotifyKeyspace) != 0) s += 'K';
  if ((flags & kNotifyKeyevent) != 0) s += 'E';
  if ((flags & kNotifyKeyMiss) != 0) s += 'm';
  return s;
}

void NotifyIn(Store* store, PubSubHub* hub, uint32_t logical, uint32_t cls,
              std::string_view event, std::string_view key) {
  // (a key too long for the ring has no event; keys are at most
  // --max-value, far below it unless that was raised to the ring's size)
  if (hub == nullptr || key.size() + 64 > kMaxPublish) return;
  uint32_t flags = store->NotifyFlags();
  if ((flags & cls) == 0 ||
      (flags & (kNotifyKeyspace | kNotifyKeyevent)) == 0) {
    return;
  }
  std::string db = std::to_string(logical);
  if ((flags & kNotifyKeyspace) != 0) {
    std::string channel = "__keyspace@" + db;
    channel += "__:";
    channel.append(key.data(), key.size());
    hub->Publish('c', channel, event);
  }
  if ((flags & kNotifyKeyevent) != 0) {
    std::string channel = "__keyevent@" + db;
    channel += "__:";
    channel.append(event.data(), event.size());
    hub->Publish('c', channel, key);
  }
}

void Notify(CommandContext* c, uint32_t cls, const char* event,
            std::string_view key, int db) {
  if (c->pubsub == nullptr) return;
  uint32_t flags = c->store->NotifyFlags();
  if ((flags & cls) == 0 ||
      (flags & (kNotifyKeyspace | kNotifyKeyevent)) == 0) {
    return;
  }
  c->events.push_back({cls, event,
                       db < 0 ? c->client->db : static_cast<uint32_t>(db),
                       std::string(key)});
}

void NotifyNew(CommandContext* c, uint32_t db, std::string_view key) {
  if (c->pubsub == nullptr || c->client == nullptr) return;
  uint32_t flags = c->store->NotifyFlags();
  if ((flags & kNotifyNew) == 0 ||
      (flags & (kNotifyKeyspace | kNotifyKeyevent)) == 0) {
    return;
  }
  size_t at = std::min(c->events_mark, c->events.size());
  c->events.insert(c->events.begin() + static_cast<std::ptrdiff_t>(at),
                   CommandContext::Event{kNotifyNew, "new", db,
                                         std::string(key)});
  c->events_mark = at + 1;
}

void NotifyStored(CommandContext* c, uint32_t cls, const char* event,
                  std::string_view key, bool filled, bool removed) {
  if (filled) {
    Notify(c, cls, event, key);
  } else if (removed) {
    Notify(c, kNotifyGeneric, "del", key);
  }
}

void MarkEvents(CommandContext* c) { c->events_mark = c->events.size(); }

void PublishEvents(CommandContext* c) {
  for (const CommandContext::Event& e : c->events) {
    NotifyIn(c->store, c->pubsub, e.db, e.cls, e.name, e.key);
  }
  c->events.clear();
}

}  // namespace cmd
}  // namespace shmkv
