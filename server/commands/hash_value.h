// A hash as the hash commands see it, in either of its two forms
// (docs/server.md, "Hashes"):
//
//  - packed (kHashListpack, and kHashTable as the build before wrote it):
//    one blob, its fields and values packed in insertion order
//    (server/commands/packed.h);
//  - in buckets (kHashBuckets): a root under the key and buckets as parts
//    of the collection (server/store/blob.h). The root's bytes are
//      PartsRoot {id, buckets}  u64 fields
//    and bucket i holds, packed, the pairs whose field hashes to it by
//    linear hashing over `buckets` buckets: a write loads and rewrites
//    one bucket, and the root only when the number of fields or buckets
//    changes, whatever the hash's size.
//
// A hash converts from packed to buckets once it passes Redis's listpack
// limits (512 fields, a field or value over 64 bytes), as Redis converts
// a listpack to a hash table, and never back.
//
// Every length and count comes from shared memory and is checked before
// use: bytes that do not parse make the operation fail (ok() false), and
// the command answers the damaged-value error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/store/blob.h"

namespace shmkv {
namespace cmd {

// A collection held in buckets (Redis's "hashtable").
constexpr uint8_t kHashBuckets = kEncodingParts | 1;
// A set is the same table with empty values: packed while its members
// are all integers (canonical, as Redis's intset takes them) and at most
// 512, sorted by value (kSetIntset, Redis's intset); else in buckets.
constexpr uint8_t kSetIntset = 0;
constexpr uint8_t kSetBuckets = kEncodingParts | 1;

// What a table holds: its type and encodings, and whether its packed
// form is a sorted set of integers.
struct TableShape {
  ValueType type;
  uint8_t packed;   // encoding of the packed form
  uint8_t buckets;  // encoding of the bucketed form
  bool sorted_ints;
};
constexpr TableShape kHashShape{ValueType::kHash, kHashListpack,
                                kHashBuckets, false};
constexpr TableShape kSetShape{ValueType::kSet, kSetIntset, kSetBuckets,
                               true};

class HashValue {
 public:
  explicit HashValue(const TableShape& shape = kHashShape) : shape_(shape) {}

  // Redis's default listpack limits (hash-max-listpack-entries / -value,
  // set-max-intset-entries): CONFIG SET changes them (EncodingLimits).
  static constexpr size_t kListpackEntries = 512;
  static constexpr size_t kListpackValue = 64;
  // A bucket splits the next bucket in turn past this many fields on
  // average, or when it is written past this many bytes.
  static constexpr uint64_t kBucketFields = 8;
  static constexpr size_t kBucketBytes = 8192;
  // Random reads a table of at most this many buckets whole.
  static constexpr uint64_t kWholeDrawBuckets = 64;

  using Load = cmd::Load;
  // Reads the hash at `key` (none: an empty hash that does not exist).
  Load Open(CommandContext* c, std::string_view key);
  bool exists() const { return exists_; }
  uint64_t size() const { return count_; }
  bool in_buckets() const { return buckets_mode_; }
  // False once a read met bytes that did not parse.
  bool ok() const { return ok_; }

  // The value of `field` (a view valid until this hash changes): false
  // when absent (or damaged: see ok()).
  bool Find(std::string_view field, std::string_view* value);
  // Sets a field (the views must outlive Save); true when it is new.
  bool Set(std::string_view field, std::string_view value);
  // Adds every pair to a value that holds none of their fields, no two
  // alike (a value decoded whole: RESTORE, an RDB file), without the
  // look-up Set makes per field: building n fields costs O(n), not n
  // look-ups in a growing packed value.
  void SetAllNew(
      const std::vector<std::pair<std::string_view, std::string_view>>& pairs);
  bool Remove(std::string_view field);
  // Every pair, in the hash's order (packed: insertion; buckets: bucket
  // by bucket). False when damaged.
  bool All(std::vector<std::pair<std::string_view, std::string_view>>* out);
  // Pairs of buckets from *cursor on, at least `count` (when there are
  // that many left); *cursor: the next bucket, 0 when done. A packed hash
  // is one page.
  bool Page(uint64_t* cursor, size_t count,
            std::vector<std::pair<std::string_view, std::string_view>>* out);
  // A random pair (the hash must not be empty), every field equally
  // likely (hash_value.cc).
  bool Random(uint64_t (*rng)(), std::string_view* field,
              std::string_view* value);
  // Marks the hash's encoding "hashtable" when a written field or value
  // passes the listpack limit (a set's: when a member is no integer).
  void Grow(std::string_view written);

  // Writes what changed (an empty hash deletes the key); the key's TTL is
  // kept. A store status other than kOk on failure.
  Store::Status Save(CommandContext* c, std::string_view key);

  // Linear hashing: the bucket of a field hash among `buckets`.
  static uint64_t BucketOf(uint64_t hash, uint64_t buckets);

  // Buckets inside another collection (a sorted set's member table,
  // server/commands/zset_tree.h): bucket b is part b * stride of
  // collection `id`, and the owner keeps the root. Attach opens
  // `buckets` buckets that exist; Fill makes them from packed pairs
  // (field, value, ...: views that must outlive SaveBuckets).
  void Attach(CommandContext* c, uint64_t id, uint64_t buckets,
              uint64_t stride);
  void Fill(CommandContext* c, uint64_t id, uint64_t stride,
            const std::vector<std::string_view>& pairs);
  // The owner's count of fields (the split rule weighs it).
  void set_size(uint64_t n) { count_ = n; }
  uint64_t buckets() const { return buckets_; }
  // Splits as the count asks and writes the buckets that changed.
  Store::Status SaveBuckets(CommandContext* c);

 private:
  struct Bucket {
    std::string bytes;  // as read
    std::vector<std::string_view> items;  // field, value, ...
    bool dirty = false;
  };
  Bucket* Get(uint64_t index);  // loaded on first use; null: damaged
  Bucket* BucketFor(std::string_view field);
  bool ReadRoot(std::string_view bytes);
  Store::Status SavePacked(CommandContext* c, std::string_view key);
  Store::Status ToBuckets(CommandContext* c);
  void Distribute(const std::vector<std::string_view>& pairs);
  Store::Status SplitOne();
  uint64_t PartOf(uint64_t bucket) const { return bucket * stride_; }

  TableShape shape_;
  CommandContext* c_ = nullptr;
  bool exists_ = false;
  bool ok_ = true;
  bool grow_ = false;  // a set's write was no integer
  size_t longest_ = 0;  // a hash's longest field or value written
  bool added_ = false;  // a field (member) was added
  size_t most_in_bucket_ = 0;  // the most fields a bucket Random read had
  bool set_ = false;    // a field was set (added or given a value)
  bool buckets_mode_ = false;
  Value value_;
  uint8_t encoding_ = 0;
  uint64_t count_ = 0;
  uint64_t id_ = 0, buckets_ = 0;  // in buckets
  uint64_t stride_ = 1;            // bucket b is part b * stride_
  bool root_dirty_ = false;
  Bucket packed_;  // packed: the pairs (kept: buckets made from it view it)
  std::map<uint64_t, Bucket> loaded_;  // in buckets: those read so far
};

// HGET, HSTRLEN, HEXISTS and SISMEMBER: looks a[2] up in the table at
// a[1] over one consistent view and replies reply(found, value) (or
// WRONGTYPE, or the damaged-value error).
template <class F>
void ReplyFieldLookup(const Args& a, CommandContext* c, Reply* r,
                      const TableShape& shape, F reply) {
  ReadConsistently(c, r, [&] {
    HashValue h(shape);
    if (!Opened(h.Open(c, a[1]), r)) return;
    std::string_view v;
    bool found = h.Find(a[2], &v);
    if (!h.ok()) return Damaged(r);
    reply(found, v);
  });
}

// HDEL and SREM: removes a[2..] from the table at a[1] (an emptied table
// takes its key with it) and replies how many were there; the keyspace
// event `event` of class `cls` when any was.
void RemoveFields(const Args& a, CommandContext* c, Reply* r,
                  const TableShape& shape, uint32_t cls, const char* event);

// HSCAN and SSCAN: a page of the table at a[1] (`pairs`: fields with
// their values; else members alone), over one consistent view.
void ReplyTableScan(const Args& a, CommandContext* c, Reply* r,
                    const TableShape& shape, bool pairs);

}  // namespace cmd
}  // namespace shmkv
