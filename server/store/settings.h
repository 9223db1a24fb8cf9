// The settings CONFIG SET changes at run time and every worker reads
// (docs/server.md, "Settings"): the sizes below which a collection keeps
// its compact form, under Redis's names (hash-max-listpack-entries, ...),
// the time after which a script makes other clients wait (busy-reply-
// threshold), maxmemory (a limit below --memory), min-replicas-to-write,
// replica-serve-stale-data, the streams' node sizes and the save points.
//
// They live in a small POSIX segment of their own (SettingsKey), made by
// whichever process of the store opens it first, so a change made
// through one worker is seen by all of them and survives a hot restart.
// A word counts only while its bit in `given` is set; a new segment is
// all zero, so every setting reads as its default (Redis's) until one is
// given. Layout (u64 words):
//
//   0  magic ("smkvset1")   1  given (bit i: words[i] holds a value; bit
//                              kSaveGiven: the save points below do)
//   2..15  words[Setting]   as int64_t
//   16  save_seq  odd while save points are written (under the store's
//                 write lock; a writer that died leaves it odd, and the
//                 next one makes it even again)
//   17  save_count          18..49  save points: seconds, changes
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "server/store/small_block.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

enum class Setting : uint32_t {
  kHashEntries = 0,  // hash-max-listpack-entries
  kHashValue,        // hash-max-listpack-value
  kSetIntsetEntries,  // set-max-intset-entries
  kZSetEntries,      // zset-max-listpack-entries
  kZSetValue,        // zset-max-listpack-value
  kListSize,         // list-max-listpack-size
  kListCompress,     // list-compress-depth
  kBusyReplyThreshold,  // busy-reply-threshold (lua-time-limit), ms
  kMaxMemory,        // maxmemory: bytes, 0 for --memory (a lower limit)
  kMinReplicas,      // min-replicas-to-write (shmkv serves none)
  kMinReplicasLag,   // min-replicas-max-lag, seconds (kept and shown)
  kServeStaleData,   // replica-serve-stale-data: 1 yes, 0 no
  kStreamNodeBytes,  // stream-node-max-bytes (kept and shown)
  kStreamNodeEntries,  // stream-node-max-entries
  // Past the first block's 14 words: in the second block (SettingsMore).
  kHllSparseMaxBytes,  // hll-sparse-max-bytes
  kCount,
};
constexpr uint32_t kSettings = static_cast<uint32_t>(Setting::kCount);

// One setting as CONFIG knows it: Redis's name, its older alias (none:
// empty), its default, and the range CONFIG SET takes.
struct SettingSpec {
  Setting id;
  const char* name;
  const char* alias;
  int64_t def, min, max;
  bool yes_no = false;  // shown and set as yes (1) / no (0)
};
// Redis 7.0's names, defaults and ranges.
inline const SettingSpec (&SettingSpecs())[kSettings] {
  static const SettingSpec specs[kSettings] = {
      {Setting::kHashEntries, "hash-max-listpack-entries",
       "hash-max-ziplist-entries", 512, 0, INT64_MAX},
      {Setting::kHashValue, "hash-max-listpack-value",
       "hash-max-ziplist-value", 64, 0, INT64_MAX},
      {Setting::kSetIntsetEntries, "set-max-intset-entries", "", 512, 0,
       INT64_MAX},
      {Setting::kZSetEntries, "zset-max-listpack-entries",
       "zset-max-ziplist-entries", 128, 0, INT64_MAX},
      {Setting::kZSetValue, "zset-max-listpack-value",
       "zset-max-ziplist-value", 64, 0, INT64_MAX},
      {Setting::kListSize, "list-max-listpack-size", "list-max-ziplist-size",
       -2, INT32_MIN, INT32_MAX},
      {Setting::kListCompress, "list-compress-depth", "", 0, 0, INT32_MAX},
      {Setting::kBusyReplyThreshold, "busy-reply-threshold",
       "lua-time-limit", 5000, 0, INT64_MAX},
      {Setting::kMaxMemory, "maxmemory", "", 0, 0, INT64_MAX},
      {Setting::kMinReplicas, "min-replicas-to-write", "min-slaves-to-write",
       0, 0, INT32_MAX},
      {Setting::kMinReplicasLag, "min-replicas-max-lag", "min-slaves-max-lag",
       10, 0, INT32_MAX},
      {Setting::kServeStaleData, "replica-serve-stale-data",
       "slave-serve-stale-data", 1, 0, 1, true},
      {Setting::kStreamNodeBytes, "stream-node-max-bytes", "", 4096, 0,
       INT64_MAX},
      {Setting::kStreamNodeEntries, "stream-node-max-entries", "", 100, 0,
       INT64_MAX},
      {Setting::kHllSparseMaxBytes, "hll-sparse-max-bytes", "", 3000, 0,
       INT64_MAX},
  };
  return specs;
}

// The compact forms' limits, read once per command.
struct EncodingLimits {
  uint64_t hash_entries = 512, hash_value = 64;
  uint64_t set_intset_entries = 512;
  uint64_t zset_entries = 128, zset_value = 64;
  uint64_t stream_node_entries = 100;
};

// Redis's `save`: a BGSAVE once `secs` have passed since the last save
// and at least `changes` keys changed.
struct SavePoint {
  int64_t secs = 0;
  int64_t changes = 0;
};
// The most save points CONFIG SET save keeps.
constexpr size_t kMaxSavePoints = 16;
constexpr uint32_t kSaveGiven = 63;  // the save points' bit of `given`

struct SettingsBlock {
  std::atomic<uint64_t> magic;
  std::atomic<uint64_t> given;
  std::atomic<uint64_t> words[14];
  std::atomic<uint64_t> save_seq;
  std::atomic<uint64_t> save_count;
  std::atomic<uint64_t> save[2 * kMaxSavePoints];
};
constexpr uint32_t kFirstBlockSettings = 14;
static_assert(std::is_standard_layout<SettingsBlock>::value &&
                  sizeof(SettingsBlock) == 400 &&
                  offsetof(SettingsBlock, words) == 16 &&
                  offsetof(SettingsBlock, save_seq) == 128 &&
                  offsetof(SettingsBlock, save) == 144,
              "SettingsBlock lives in shared memory: a change is a new "
              "kSettingsMagic");
// The settings added after the first block was full, in a segment of
// their own (SettingsKey + ".more"), so a store whose first block an
// older master made keeps it: words[i] holds setting kFirstBlockSettings
// + i while bit i of `given` is set. A master of an older build neither
// reads nor resets this block (its settings are then those a newer
// worker gave, or the defaults).
struct SettingsMoreBlock {
  std::atomic<uint64_t> magic;
  std::atomic<uint64_t> given;
  std::atomic<uint64_t> words[30];
};
static_assert(std::is_standard_layout<SettingsMoreBlock>::value &&
                  sizeof(SettingsMoreBlock) == 256 &&
                  offsetof(SettingsMoreBlock, words) == 16 &&
                  kSettings <= kFirstBlockSettings + 30,
              "SettingsMoreBlock lives in shared memory: a change is a new "
              "kSettingsMoreMagic");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "settings are shared between processes: lock-free words");
// "smkvset1": the first layout.
constexpr uint64_t kSettingsMagic = 0x31746573766b6d73ULL;
// "smkvsetm": the second block's first layout.
constexpr uint64_t kSettingsMoreMagic = 0x6d746573766b6d73ULL;

class Settings {
 public:
  // Maps the segment `key`, made when missing.
  bool Open(const std::string& key, std::string* err) {
    b_ = OpenSmallBlock(&arr_, key, kSettingsMagic, "settings", err);
    if (b_ == nullptr) return false;
    m_ = OpenSmallBlock(&more_, key + ".more", kSettingsMoreMagic,
                        "settings", err);
    if (m_ == nullptr) b_ = nullptr;
    return m_ != nullptr;
  }

  // The setting's value: its default until one is given. A word out of
  // the setting's range (damage) reads as the default.
  int64_t Get(Setting s) const {
    const SettingSpec& spec = SettingSpecs()[Index(s)];
    if (b_ == nullptr) return spec.def;
    uint32_t bit;
    std::atomic<uint64_t>* word = Word(s, &bit);
    // SYNC POINT (acquire): pairs with Set's release of the bit; the
    // word stored before it is seen.
    uint64_t given = Given(s)->load(std::memory_order_acquire);
    if ((given & (uint64_t{1} << bit)) == 0) return spec.def;
    int64_t v = static_cast<int64_t>(word->load(std::memory_order_relaxed));
    return v < spec.min || v > spec.max ? spec.def : v;
  }
  // Gives a setting a value (in its range: CONFIG SET checks it). Two
  // workers setting one setting at once: one of the two values stays.
  void Set(Setting s, int64_t v) {
    uint32_t bit;
    Word(s, &bit)->store(static_cast<uint64_t>(v), std::memory_order_relaxed);
    // SYNC POINT (release): publishes the word; Get's acquire pairs.
    Given(s)->fetch_or(uint64_t{1} << bit, std::memory_order_release);
  }
  // The save points CONFIG SET save gave: false when none were given
  // (the server's --save holds), or while they are being written.
  bool GetSave(std::vector<SavePoint>* out) const {
    if (b_ == nullptr) return false;
    for (int tries = 0; tries < 64; ++tries) {
      // SYNC POINT (acquire): pairs with SetSave's release of an even
      // sequence; the points written before it are seen.
      uint64_t seq = b_->save_seq.load(std::memory_order_acquire);
      if (seq & 1) continue;
      if ((b_->given.load(std::memory_order_acquire) &
           (uint64_t{1} << kSaveGiven)) == 0) {
        return false;
      }
      uint64_t n = b_->save_count.load(std::memory_order_relaxed);
      if (n > kMaxSavePoints) return false;  // damage: as none given
      out->clear();
      for (uint64_t i = 0; i < n; ++i) {
        out->push_back(SavePoint{
            static_cast<int64_t>(
                b_->save[2 * i].load(std::memory_order_relaxed)),
            static_cast<int64_t>(
                b_->save[2 * i + 1].load(std::memory_order_relaxed))});
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (b_->save_seq.load(std::memory_order_relaxed) == seq) return true;
    }
    return false;
  }
  // Replaces the save points (at most kMaxSavePoints): the caller holds
  // the store's write lock, so writers never meet.
  void SetSave(const std::vector<SavePoint>& points) {
    uint64_t seq = b_->save_seq.load(std::memory_order_relaxed) | 1;
    b_->save_seq.store(seq, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    size_t n = points.size() < kMaxSavePoints ? points.size() : kMaxSavePoints;
    for (size_t i = 0; i < n; ++i) {
      b_->save[2 * i].store(static_cast<uint64_t>(points[i].secs),
                            std::memory_order_relaxed);
      b_->save[2 * i + 1].store(static_cast<uint64_t>(points[i].changes),
                                std::memory_order_relaxed);
    }
    b_->save_count.store(n, std::memory_order_relaxed);
    b_->given.fetch_or(uint64_t{1} << kSaveGiven, std::memory_order_relaxed);
    // SYNC POINT (release): publishes the points; GetSave's acquire pairs.
    b_->save_seq.store(seq + 1, std::memory_order_release);
  }

  // Every setting back to its default, the save points to none given: a
  // master's start (CONFIG SET lasts while the server runs, as Redis's;
  // a hot restart keeps it).
  void Reset() {
    b_->given.store(0, std::memory_order_release);
    m_->given.store(0, std::memory_order_release);
  }

  EncodingLimits Limits() const {
    EncodingLimits l;
    l.hash_entries = static_cast<uint64_t>(Get(Setting::kHashEntries));
    l.hash_value = static_cast<uint64_t>(Get(Setting::kHashValue));
    l.set_intset_entries =
        static_cast<uint64_t>(Get(Setting::kSetIntsetEntries));
    l.zset_entries = static_cast<uint64_t>(Get(Setting::kZSetEntries));
    l.zset_value = static_cast<uint64_t>(Get(Setting::kZSetValue));
    l.stream_node_entries =
        static_cast<uint64_t>(Get(Setting::kStreamNodeEntries));
    return l;
  }

 private:
  static uint32_t Index(Setting s) {
    return static_cast<uint32_t>(s) % kSettings;
  }
  // The setting's word and its bit in its block's `given`.
  std::atomic<uint64_t>* Word(Setting s, uint32_t* bit) const {
    uint32_t i = Index(s);
    if (i < kFirstBlockSettings) {
      *bit = i;
      return &b_->words[i];
    }
    *bit = i - kFirstBlockSettings;
    return &m_->words[*bit];
  }
  std::atomic<uint64_t>* Given(Setting s) const {
    return Index(s) < kFirstBlockSettings ? &b_->given : &m_->given;
  }
  shmc::ShmArray<SettingsBlock, shmc::POSIX> arr_;
  shmc::ShmArray<SettingsMoreBlock, shmc::POSIX> more_;
  SettingsBlock* b_ = nullptr;
  SettingsMoreBlock* m_ = nullptr;
};

}  // namespace shmkv
