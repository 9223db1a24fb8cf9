// Redis's numbered databases over one map (docs/server.md, "Databases").
//
// A key of database d is its blob with d in the head (server/store/
// blob.h) under HashKeyIn(d, key) (server/store/key_hash.h): the map
// holds every database at once. The database a client names (SELECT) is
// logical; SWAPDB swaps two logical numbers' physical databases by one
// word, the map below, so the swap is atomic and moves no key.
//
// The words live in a small POSIX segment of their own (DbsKey), made by
// whichever process of the store opens it first (a worker of this build
// started by the master of an older one, in a hot upgrade, finds none):
// the map and each physical database's counts of keys, which commits
// keep under the write lock as they keep the count of parts; a writer
// that died under the lock leaves them recounted from the map. A new
// segment is all zero: its map reads as the identity and its counts as
// not counted yet, so it needs no setting up beyond its magic.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "server/store/blob.h"
#include "server/store/small_block.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

constexpr uint32_t kDatabases = 16;

struct DbBlock {
  std::atomic<uint64_t> magic;    // kDbMagic once made
  std::atomic<uint64_t> map;      // logical database i's physical: nibble i
  std::atomic<uint64_t> counted;  // 1 once keys[] were counted from the map
  // notify-keyspace-events' classes (server/commands/notify.h). Was a
  // reserved word, zero in a block an older build made: no events.
  std::atomic<uint64_t> notify;
  std::atomic<uint64_t> keys[kDatabases];     // Redis keys per physical db
  std::atomic<uint64_t> expires[kDatabases];  // of them, keys with a TTL
};
static_assert(std::is_standard_layout<DbBlock>::value &&
                  sizeof(DbBlock) == 32 + 16 * kDatabases,
              "DbBlock lives in shared memory: a change is a new kDbMagic");
// "smkvdbs1": the first layout.
constexpr uint64_t kDbMagic = 0x31736264766b6d73ULL;
// Database i is physical database i.
constexpr uint64_t kIdentityMap = 0xfedcba9876543210ULL;

// The physical database of logical `db` under `map`. A map that is not a
// permutation of 0..15 (damage: no SWAPDB writes one) reads as the
// identity, so two names never share one database.
inline uint32_t PhysicalDb(uint64_t map, uint32_t db) {
  uint32_t seen = 0;
  for (uint32_t i = 0; i < kDatabases; ++i) {
    seen |= 1u << ((map >> (4 * i)) & 0xf);
  }
  if (seen != 0xffffu) map = kIdentityMap;
  return static_cast<uint32_t>((map >> (4 * (db % kDatabases))) & 0xf);
}

// `map` with logical databases a and b swapped.
inline uint64_t SwappedMap(uint64_t map, uint32_t a, uint32_t b) {
  uint64_t pa = PhysicalDb(map, a), pb = PhysicalDb(map, b);
  uint64_t out = 0;
  for (uint32_t i = 0; i < kDatabases; ++i) {
    uint64_t p = PhysicalDb(map, i);
    if (i == a) p = pb;
    else if (i == b) p = pa;
    out |= p << (4 * i);
  }
  return out;
}

// The databases' words of one store, over the map `Map` whose blobs it
// counts. Every method but Physical runs under the store's write lock.
template <class Map>
class DbWords {
 public:
  // Maps the segment `key`, made when missing.
  bool Open(const std::string& key, std::string* err) {
    b_ = OpenSmallBlock(&arr_, key, kDbMagic, "databases", err);
    return b_ != nullptr;
  }

  uint32_t Physical(uint32_t logical) const {
    return PhysicalDb(b_->map.load(std::memory_order_acquire), logical);
  }
  uint64_t Mapping() const { return b_->map.load(std::memory_order_acquire); }
  // The logical database physical database `physical` is, under the map.
  uint32_t Logical(uint32_t physical) const {
    uint64_t map = Mapping();
    for (uint32_t i = 0; i < kDatabases; ++i) {
      if (PhysicalDb(map, i) == physical % kDatabases) return i;
    }
    return physical % kDatabases;
  }
  uint32_t Notify() const {
    return static_cast<uint32_t>(b_->notify.load(std::memory_order_relaxed));
  }
  void SetNotify(uint32_t flags) {
    b_->notify.store(flags, std::memory_order_relaxed);
  }
  void SetMapping(uint64_t map) {
    b_->map.store(map, std::memory_order_release);
  }

  bool Counted() const {
    return b_->counted.load(std::memory_order_relaxed) != 0;
  }
  // Counts every database's keys (and those with a TTL) from the map.
  void Count(Map* map) {
    uint64_t n[kDatabases] = {}, e[kDatabases] = {};
    map->Travel([&](const auto&, const std::string& blob) {
      Blob b;
      if (b.Parse(blob.data(), blob.size()) && !b.part()) {
        ++n[b.db % kDatabases];
        e[b.db % kDatabases] += b.expire_ms != 0;
      }
    });
    for (uint32_t i = 0; i < kDatabases; ++i) {
      b_->keys[i].store(n[i], std::memory_order_relaxed);
      b_->expires[i].store(e[i], std::memory_order_relaxed);
    }
    b_->counted.store(1, std::memory_order_relaxed);
  }
  // The keys of `physical`: counted, but database 0's derived from the
  // map (`blobs` less `parts` less every other database's count), so that
  // keys written by a build without databases (whose draining workers
  // write database 0 in a hot upgrade, counting nothing) count too.
  uint64_t KeysOf(uint32_t physical, uint64_t blobs, uint64_t parts) const {
    if (physical % kDatabases != 0) return Keys(physical);
    uint64_t others = parts;
    for (uint32_t i = 1; i < kDatabases; ++i) others += Keys(i);
    return blobs > others ? blobs - others : 0;
  }
  uint64_t Keys(uint32_t physical) const {
    return b_->keys[physical % kDatabases].load(std::memory_order_relaxed);
  }
  uint64_t Expires(uint32_t physical) const {
    return b_->expires[physical % kDatabases].load(
        std::memory_order_relaxed);
  }
  // A key of `physical` came (+1) or went (-1); with a TTL or not.
  void Adjust(uint32_t physical, int64_t keys, int64_t expires) {
    Add(&b_->keys[physical % kDatabases], keys);
    Add(&b_->expires[physical % kDatabases], expires);
  }
  void Zero(uint32_t physical) {
    b_->keys[physical % kDatabases].store(0, std::memory_order_relaxed);
    b_->expires[physical % kDatabases].store(0, std::memory_order_relaxed);
  }

 private:
  static void Add(std::atomic<uint64_t>* w, int64_t d) {
    w->store(w->load(std::memory_order_relaxed) + static_cast<uint64_t>(d),
             std::memory_order_relaxed);
  }

  shmc::ShmArray<DbBlock, shmc::POSIX> arr_;
  DbBlock* b_ = nullptr;
};

}  // namespace shmkv
