// Read-ahead for the buckets of large collections (docs/server.md,
// "Pipelining"): a worker remembers, for the collections in buckets it
// last opened, the collection id and bucket count each key held, so that
// the field look-ups of a pipeline (HGET, SISMEMBER, ZSCORE, HSET, ...)
// can have their buckets' lines requested from memory before the commands
// run, their misses overlapping instead of each waiting in turn.
//
// A hint is a guess, never read as data: one gone stale (the collection
// rewritten, grown, deleted) costs a read-ahead of lines nobody reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/commands/registry.h"

namespace shmkv {
namespace cmd {

class BucketHints {
 public:
  static constexpr size_t kSlots = 512;  // direct-mapped by key hash

  // `key` of physical database `db` holds `buckets` buckets, bucket b
  // being part b * stride of collection `id`.
  void Note(uint32_t db, std::string_view key, uint64_t id, uint64_t buckets,
            uint64_t stride);
  // The part holding `field` of `key`, by the hint: false when there is
  // no hint for the key.
  bool Part(uint32_t db, std::string_view key, std::string_view field,
            uint64_t* id, uint64_t* part) const;

  // f(i) for each argument of a command (a row of argc arguments, its
  // key at 1) that names a field or member it looks up in that key's
  // table; nothing for commands that look none up.
  template <class F>
  static void ForEachField(const CommandRow& row, size_t argc, F&& f);

 private:
  enum Fields : uint8_t { kNone, kOne, kAll, kPairs };  // from argument 2
  static Fields FieldsOf(const CommandRow& row);
  struct Slot {
    std::string key;  // empty: unused
    uint32_t db = 0;
    uint64_t id = 0, buckets = 0, stride = 1;
  };
  Slot slots_[kSlots];
};

// This thread's hints (a worker has one thread that runs commands).
BucketHints& Hints();

template <class F>
void BucketHints::ForEachField(const CommandRow& row, size_t argc, F&& f) {
  switch (FieldsOf(row)) {
    case kNone: return;
    case kOne: if (argc > 2) f(size_t{2}); return;
    case kAll: for (size_t i = 2; i < argc; ++i) f(i); return;
    case kPairs: for (size_t i = 2; i < argc; i += 2) f(i); return;
  }
}

}  // namespace cmd
}  // namespace shmkv
