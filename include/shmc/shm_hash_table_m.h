// ShmHashTableM<Key, Node, Alloc>: the reference's classic hash table, kept
// for compatibility. `row_num` rows of `col_num` nodes; row r is addressed
// modulo the r-th largest prime <= col_num, so a key has one candidate node
// per row. Slower than ShmHashTable (one random line per row probed; a miss
// probes every row), but reaches >90% fill with ~50 rows.
//
//   [SegmentHeader 512][rows * cols nodes, from offset 512 rounded to 64]
//
// Node contract and concurrency: as ShmHashTable (see shm_hash_table.h),
// with the fixed hash of shmc/hash.h. Row primes are recomputed from the
// geometry; nothing but the header describes the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/node_key.h"
#include "shmc/detail/segment.h"
#include "shmc/detail/travel.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/hash.h"
#include "shmc/shm_alloc.h"

namespace shmc {

template <class Key, class Node, class Alloc = SVIPC>
class ShmHashTableM {
  static_assert(std::is_standard_layout<Node>::value,
                "Node lives in shared memory: it must be standard-layout");

 public:
  static constexpr uint32_t kLayoutVersion = detail::kTableMLayoutVersion;
  static constexpr size_t kMinRows = detail::kTableMMinRows;
  static constexpr size_t kMaxRows = detail::kTableMMaxRows;

  ShmHashTableM() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmHashTableM);

  // `col_num` nodes per row (capacity / row_num), `row_num` in 10..200
  // (50 recommended). `user_arg` is kept for the reference's signature.
  // Errors: create errors; kWriterBusy; kInvalidArgument for rows or
  // columns out of range, or fewer than row_num primes <= col_num.
  bool InitForWrite(const std::string& shm_key, size_t col_num,
                    size_t row_num, void* user_arg = nullptr) {
    error_.Clear();
    user_arg_ = user_arg;
    const char* who = "ShmHashTableM::InitForWrite";
    if (!detail::FixedLayout::TableMShapeOk(row_num, col_num)) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "need %zu <= row_num <= %zu and row_num < col_num <= 2^32 "
          "(got rows %zu, cols %zu)", kMinRows, kMaxRows, row_num, col_num);
    }
    std::vector<uint64_t> mods;
    if (!detail::LargestPrimes(col_num, row_num, &mods)) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "fewer than %zu primes <= %zu", row_num, col_num);
    }
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, Layout(row_num, col_num, {}).spec(),
                           flags, nullptr, who, &error_) ||
        !seg_.TakeWriterLease(flags, who, &error_)) {
      return false;
    }
    Bind(col_num, std::move(mods));
    return true;
  }

  // Attaches an existing table read-only.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key, void* user_arg = nullptr) {
    error_.Clear();
    user_arg_ = user_arg;
    const char* who = "ShmHashTableM::InitForRead";
    detail::FixedLayout lay = Layout(0, 0, {});
    if (!detail::OpenFixedForRead(&seg_, shm_key, &lay, who, &error_)) {
      return false;
    }
    Bind(lay.cols(), lay.mods());
    return true;
  }

  const volatile Node* Find(const Key& key) const { return Lookup(key); }
  volatile Node* Find(const Key& key) { return Lookup(key); }

  volatile Node* FindOrAlloc(const Key& key, bool* is_found) {
    if (is_found != nullptr) *is_found = false;
    if (nodes_ == nullptr) return nullptr;  // never initialized
    uint64_t h = ShmHash<Key>()(key);
    volatile Node* empty = nullptr;
    for (size_t r = 0; r < mods_.size(); ++r) {
      volatile Node* n = nodes_ + r * cols_ + h % mods_[r];
      auto kv = n->Key();
      if (kv.first) {
        if (kv.second == key) {
          if (is_found != nullptr) *is_found = true;
          return n;
        }
      } else if (empty == nullptr) {
        empty = n;
      }
    }
    // A read-only handle returns an existing key's node but hands out no
    // empty one: the caller's write to it would fault.
    return seg_.read_only() ? nullptr : empty;
  }

  using TravelPos = detail::TableTravelPos;

  // As ShmHashTable::Travel; visits the first mods[r] nodes of each row
  // (the ones a key can reach).
  bool Travel(TravelPos* pos, size_t max_travel_nodes,
              std::function<void(volatile Node*)> f) {
    if (nodes_ == nullptr) return false;
    return detail::TravelRows(
        pos, mods_.size(), max_travel_nodes,
        [this](size_t r) -> uint64_t { return mods_[r]; },
        [this](size_t r, uint64_t c) { return nodes_ + r * cols_ + c; }, f);
  }
  bool Travel(std::function<void(volatile Node*)> f) {
    TravelPos pos;
    return Travel(&pos, 0, std::move(f));
  }

  size_t ideal_capacity() const { return capacity_; }
  size_t expected_capacity() const { return ideal_capacity() * 90 / 100; }

  const Error& last_error() const { return error_; }
  bool is_initialized() const { return nodes_ != nullptr; }

 private:
  static detail::FixedLayout Layout(uint64_t rows, uint64_t cols,
                                    std::vector<uint64_t> mods) {
    return detail::FixedLayout::TableM(sizeof(Node), alignof(Node),
                                       ShmHash<Key>::kId, rows, cols,
                                       std::move(mods));
  }

  void Bind(uint64_t cols, std::vector<uint64_t> mods) {
    cols_ = cols;
    mods_ = std::move(mods);
    capacity_ = 0;
    for (uint64_t m : mods_) capacity_ += m;
    nodes_ = reinterpret_cast<volatile Node*>(
        seg_.base() + Layout(0, 0, {}).nodes_offset());
  }

  volatile Node* Lookup(const Key& key) const {
    if (nodes_ == nullptr) return nullptr;  // never initialized
    uint64_t h = ShmHash<Key>()(key);
    for (size_t r = 0; r < mods_.size(); ++r) {
      volatile Node* n = nodes_ + r * cols_ + h % mods_[r];
      auto kv = n->Key();
      if (kv.first && kv.second == key) return n;
    }
    return nullptr;
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  std::vector<uint64_t> mods_;
  uint64_t cols_ = 0;
  size_t capacity_ = 0;
  void* user_arg_ = nullptr;
  volatile Node* nodes_ = nullptr;
};

}  // namespace shmc
