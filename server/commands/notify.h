// Keyspace notifications (docs/server.md, "Keyspace notifications"):
// `notify-keyspace-events` as Redis 7.0 spells it, kept in the store's
// shared database block so that every worker (and the master's active
// expiry) sees one setting, and the events commands publish on
// `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>` through the
// pub/sub of the process that made them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shmkv {

struct CommandContext;
class PubSubHub;
class Store;

namespace cmd {

// The event classes, one bit each, in Redis's letters.
enum NotifyClass : uint32_t {
  kNotifyKeyspace = 1u << 0,   // K
  kNotifyKeyevent = 1u << 1,   // E
  kNotifyGeneric = 1u << 2,    // g
  kNotifyString = 1u << 3,     // $
  kNotifyList = 1u << 4,       // l
  kNotifySet = 1u << 5,        // s
  kNotifyHash = 1u << 6,       // h
  kNotifyZSet = 1u << 7,       // z
  kNotifyExpired = 1u << 8,    // x
  kNotifyEvicted = 1u << 9,    // e
  kNotifyStream = 1u << 10,    // t
  kNotifyKeyMiss = 1u << 11,   // m
  kNotifyModule = 1u << 12,    // d
  kNotifyNew = 1u << 13,       // n
};
// 'A': every class but key misses and new keys (as Redis).
constexpr uint32_t kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList |
                                kNotifySet | kNotifyHash | kNotifyZSet |
                                kNotifyExpired | kNotifyEvicted |
                                kNotifyStream | kNotifyModule;

// Reads a setting ("KEA", "Kx", ""): false for a letter Redis refuses.
bool ParseNotifyClasses(std::string_view text, uint32_t* flags);
// The setting as CONFIG GET shows it (Redis's order: "AKE" for "KEA").
std::string NotifyClassesText(uint32_t flags);

// Event `event` of class `cls` on `key` of the client's database, if
// the setting asks for it: kept in c->events until the command's
// transaction commits (an event of a write that did not happen would
// mislead), then published by PublishEvents.
// db: the logical database, when not the client's (MOVE, COPY ... DB).
void Notify(CommandContext* c, uint32_t cls, const char* event,
            std::string_view key, int db = -1);
// The "new" event of a key a write just made (the store's create
// listener), in logical database `db`: placed before the events the
// command has given so far, as Redis announces the key's creation first.
void NotifyNew(CommandContext* c, uint32_t db, std::string_view key);
// Marks where the next "new" event goes (a command that writes a second
// key after the events of its first: SMOVE).
void MarkEvents(CommandContext* c);
// A *STORE's destination: `event` when the result has members; "del"
// when an empty result removed a key that was there.
void NotifyStored(CommandContext* c, uint32_t cls, const char* event,
                  std::string_view key, bool filled, bool removed);
// After collection `v` was saved: the "del" event when it existed and is
// now empty (its key went with its last element). True, to chain after
// Saved().
template <class V>
bool NotifyIfEmptied(CommandContext* c, V* v, std::string_view key) {
  if (v->exists() && v->size() == 0) Notify(c, kNotifyGeneric, "del", key);
  return true;
}
// After a commit, under the write lock: publishes c->events, clears them.
void PublishEvents(CommandContext* c);
// The same from outside a command: `logical` is the database's number.
void NotifyIn(Store* store, PubSubHub* hub, uint32_t logical, uint32_t cls,
              std::string_view event, std::string_view key);

}  // namespace cmd
}  // namespace shmkv
