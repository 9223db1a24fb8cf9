// Copy-on-write of the store for a background save (BGSAVE,
// docs/server.md, "Snapshots").
//
// A save reads the store as it was at one instant while every worker
// goes on writing. The worker that was asked forks the saving process;
// the instant is when it then publishes that process, under the write
// lock, in the journal's kSnapshot word; from then on, until the saver clears the
// word, every process that changes a blob of the map (a key's or a
// collection's part's) first appends the blob as it was to the save's
// log, a file beside the RDB file:
//
//   <dir>/temp-shmkv-<saver pid>.cow    records, each
//     u64 hash.a  u64 hash.b  u32 length (kNoBlob: the blob did not
//     exist)  u32 zero  the blob's bytes, zeros to a multiple of 8
//
// A process logs each blob once a save; several processes may log one
// blob, and the first record of a blob is its state at the instant (its
// first change came after it). The saver reads a blob from the map, then
// looks for a record of it: a record written before the change it may
// have read is in the log by then (a writer logs, then changes). So the
// saver sees the instant's store, and the log costs disk, not memory: the
// blobs changed while the save runs, each once per writing process.
//
// Writers append with pwrite at the log's committed length (kSnapshotLog,
// bits 0..61), then move the length past the record: a writer killed
// mid-record leaves bytes past the length, which the next record
// overwrites. A record that cannot be written (a full disk) sets
// kLogFailed: the save cannot be whole and fails. kSaveFailed records
// that the last save failed (INFO's rdb_last_bgsave_status).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "server/store/journal.h"
#include "server/store/key_hash.h"

namespace shmkv {

struct KeyHashHasher {
  size_t operator()(const KeyHash& h) const { return h.a ^ (h.b << 1); }
};

// kSnapshot's value: when the save began (seconds) and who saves.
inline uint64_t SnapshotWord(int64_t start_s, pid_t pid) {
  return (static_cast<uint64_t>(start_s) << 32) |
         static_cast<uint32_t>(pid);
}
inline pid_t SnapshotPid(uint64_t word) {
  return static_cast<pid_t>(word & 0xffffffffu);
}
inline int64_t SnapshotStart(uint64_t word) {
  return static_cast<int64_t>(word >> 32);
}
constexpr uint64_t kLogFailed = uint64_t{1} << 63;
constexpr uint64_t kSaveFailed = uint64_t{1} << 62;
constexpr uint64_t kLogLength = kSaveFailed - 1;

// A save's files, named after the process that writes them.
std::string SnapshotLogPath(const std::string& dir, pid_t pid);
std::string SnapshotRdbPath(const std::string& dir, pid_t pid);
// Removes the temporary files (the log and the RDB being written) of
// saving processes that are gone, in `dir`; how many it removed. Only
// names of the form temp-shmkv-<pid>.cow / .rdb are touched.
size_t RemoveStaleSnapshotFiles(const std::string& dir);
// Whether process `pid` runs (not a zombie) and, when started_s is not
// 0, began within two seconds of started_s (so a pid given again to
// another process is not taken for the one that had it).
bool ProcessRuns(pid_t pid, int64_t started_s);

struct CowRecordHead {
  uint64_t ha, hb;
  uint32_t len;  // Journal::kNoBlob: the blob did not exist
  uint32_t zero;
};
static_assert(sizeof(CowRecordHead) == 24, "the log's record head");

// The writers' side: called under the write lock, before each map write.
class CowLog {
 public:
  void Init(Journal* j, std::string dir) {
    j_ = j;
    dir_ = std::move(dir);
  }
  // Whether the blob `h` must be logged before it changes: a save is in
  // progress and this process has not logged `h` for it.
  bool Wanted(const KeyHash& h) {
    const uint64_t s = j_->Counter(Journal::kSnapshot);
    if (s != attached_) Attach(s);  // a save began or ended
    if (s == 0) return false;
    return logged_.insert(h).second;
  }
  // Appends `h`'s blob as the map holds it now (null: none).
  void Record(const KeyHash& h, const std::string* old);
  // In a forked process, whose descriptors were closed: nothing to close.
  void Forget() {
    fd_ = -1;
    attached_ = 0;
    logged_.clear();
  }

 private:
  void Attach(uint64_t s);

  Journal* j_ = nullptr;
  std::string dir_;
  uint64_t attached_ = 0;
  int fd_ = -1;
  std::unordered_set<KeyHash, KeyHashHasher> logged_;
};

// The map of the store with every write logged first (as the log asks).
template <class Base>
class CowMap : public Base {
 public:
  void set_cow(CowLog* log) { cow_ = log; }
  bool Replace(const KeyHash& k, const void* p, size_t n) {
    Before(k);
    return Base::Replace(k, p, n);
  }
  bool Replace(const KeyHash& k, const std::string& v) {
    return Replace(k, v.data(), v.size());
  }
  bool Insert(const KeyHash& k, const void* p, size_t n) {
    Before(k);
    return Base::Insert(k, p, n);
  }
  bool Insert(const KeyHash& k, const std::string& v) {
    return Insert(k, v.data(), v.size());
  }
  bool Erase(const KeyHash& k) {
    Before(k);
    return Base::Erase(k);
  }
  bool Overwrite(const KeyHash& k, size_t offset, const void* p, size_t n) {
    Before(k);
    return Base::Overwrite(k, offset, p, n);
  }

 private:
  void Before(const KeyHash& k) {
    if (cow_ == nullptr || !cow_->Wanted(k)) return;
    std::string old;
    const bool had = Base::Find(k, &old);
    cow_->Record(k, had ? &old : nullptr);
  }

  CowLog* cow_ = nullptr;
};

// The saver's side: the blobs logged so far, by the first record of each.
class CowReader {
 public:
  ~CowReader();
  bool Open(const std::string& path, const Journal* j, std::string* err);
  // Takes in the records written since the last call.
  void Refresh();
  enum class Found { kNone, kAbsent, kBlob };
  // `h` as the save's instant had it, if it was logged: kAbsent (it did
  // not exist) or kBlob (in *blob); kNone: not logged (the map's is).
  Found Find(const KeyHash& h, std::string* blob);
  // f(h, blob) for every logged blob that existed at the instant.
  void Each(const std::function<void(const KeyHash&, const std::string&)>& f);
  bool damaged() const { return damaged_; }

 private:
  static constexpr uint64_t kAbsentAt = ~uint64_t{0};
  bool ReadAt(uint64_t off, size_t n, std::string* out);

  const Journal* j_ = nullptr;
  int fd_ = -1;
  uint64_t read_ = 0;  // records before this offset are indexed
  bool damaged_ = false;
  // A blob's first record: the offset of its bytes and their length.
  struct At {
    uint64_t off;
    uint32_t len;
  };
  std::unordered_map<KeyHash, At, KeyHashHasher> first_;
};

}  // namespace shmkv
