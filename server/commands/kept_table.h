// What one thread parsed from a collection's parts and keeps for its next
// commands, by (store, collection, item): a sorted set's inner nodes
// (zset_tree.cc), a list's chunk heads (list_value.cc). Each user checks
// what it takes against the part's stamp (PartStamp) before it trusts
// it; this table only holds and bounds.
//
// Bounded in bytes (each entry's cost is its owner's estimate): an entry
// that would pass the bound empties the table first. An entry is held by
// shared_ptr, so a command that took one keeps it whole however the table
// changes meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

namespace shmkv {
namespace cmd {

template <class V>
class KeptTable {
 public:
  struct Key {
    uint64_t store = 0, id = 0, item = 0;
    bool operator==(const Key& o) const {
      return store == o.store && id == o.id && item == o.item;
    }
  };

  explicit KeptTable(size_t max_bytes) : max_bytes_(max_bytes) {}

  size_t max_bytes() const { return max_bytes_; }
  size_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }

  // The entry kept for `k`, or null.
  std::shared_ptr<V> Find(const Key& k) const {
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : it->second.value;
  }

  // Keeps `v` for `k` (replacing what was kept) at `cost` bytes; false,
  // keeping nothing, when one entry alone would pass the bound.
  bool Put(const Key& k, std::shared_ptr<V> v, size_t cost) {
    if (cost > max_bytes_) return false;
    auto it = map_.find(k);
    const size_t had = it == map_.end() ? 0 : it->second.cost;
    if (bytes_ - had + cost > max_bytes_) {
      map_.clear();
      bytes_ = 0;
      map_.emplace(k, Slot{std::move(v), cost});
    } else if (it == map_.end()) {
      map_.emplace(k, Slot{std::move(v), cost});
      bytes_ -= had;
    } else {
      it->second = Slot{std::move(v), cost};
      bytes_ -= had;
    }
    bytes_ += cost;
    return true;
  }

  void Clear() {
    map_.clear();
    bytes_ = 0;
  }

 private:
  struct Slot {
    std::shared_ptr<V> value;
    size_t cost = 0;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = k.id * 0x9e3779b97f4a7c15ULL ^ k.item;
      h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL ^ k.store;
      return static_cast<size_t>(h ^ (h >> 32));
    }
  };
  const size_t max_bytes_;
  std::unordered_map<Key, Slot, KeyHash> map_;
  size_t bytes_ = 0;
};

}  // namespace cmd
}  // namespace shmkv
