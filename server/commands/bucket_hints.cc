// Where the buckets of large collections are, for read-ahead
// (server/commands/bucket_hints.h).
#include "server/commands/bucket_hints.h"

#include <array>

#include "server/commands/hash_value.h"
#include "server/store/key_hash.h"
#include "server/store/stats.h"
#include "shmc/hash.h"

namespace shmkv {
namespace cmd {

namespace {

size_t SlotOf(uint32_t db, std::string_view key) {
  return (shmc::HashBytes(key.data(), key.size()) + db) %
         BucketHints::kSlots;
}

}  // namespace

void BucketHints::Note(uint32_t db, std::string_view key, uint64_t id,
                       uint64_t buckets, uint64_t stride) {
  Slot& s = slots_[SlotOf(db, key)];
  if (s.key != key) s.key.assign(key.data(), key.size());
  s.db = db;
  s.id = id;
  s.buckets = buckets;
  s.stride = stride;
}

bool BucketHints::Part(uint32_t db, std::string_view key,
                       std::string_view field, uint64_t* id,
                       uint64_t* part) const {
  const Slot& s = slots_[SlotOf(db, key)];
  if (s.buckets == 0 || s.db != db || s.key != key) return false;
  *id = s.id;
  *part = HashValue::BucketOf(Hash2(field.data(), field.size()), s.buckets) *
          s.stride;
  return true;
}

// By the command's statistics slot, worked out from its name once.
BucketHints::Fields BucketHints::FieldsOf(const CommandRow& row) {
  static const std::array<uint8_t, kMaxCommands> table = [] {
    std::array<uint8_t, kMaxCommands> t{};
    struct Named {
      const char* name;
      Fields fields;
    };
    static const Named kNamed[] = {
        {"hget", kOne},       {"hexists", kOne},     {"hstrlen", kOne},
        {"hsetnx", kOne},     {"hincrby", kOne},     {"hincrbyfloat", kOne},
        {"sismember", kOne},  {"zscore", kOne},      {"zrank", kOne},
        {"zrevrank", kOne},   {"hmget", kAll},       {"hdel", kAll},
        {"smismember", kAll}, {"zmscore", kAll},     {"sadd", kAll},
        {"srem", kAll},       {"zrem", kAll},        {"hset", kPairs},
        {"hmset", kPairs},
    };
    for (const Named& n : kNamed) {
      const CommandRow* r = Commands().Find(n.name);
      if (r != nullptr && r->id < t.size()) t[r->id] = n.fields;
    }
    return t;
  }();
  return row.id < table.size() ? static_cast<Fields>(table[row.id]) : kNone;
}

BucketHints& Hints() {
  thread_local BucketHints hints;
  return hints;
}

}  // namespace cmd
}  // namespace shmkv
