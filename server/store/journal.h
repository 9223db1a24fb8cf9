// The commit journal of shmkv's store (docs/server.md, "Reads never lock,
// writes are transactions"): the records of a multi-key commit, the
// seqlock word lock-free readers check, and the versions WATCH compares.
// One POSIX segment of 64-bit words, shared by the master and every
// worker:
//
//   word 0..15        header (Word below)
//   word 16..16399    kWatchSlots versions, one per key-hash bucket
//   word 16400..      records of the commit in progress, each
//                       u64 hash.a  u64 hash.b  u32 new_len  u32 old_len
//                       new blob  old blob  (padded to 8 bytes)
//                     a length of kNoBlob: no key (a delete, or a key
//                     that did not exist); an old length of 0: the key
//                     existed and its old blob was not kept (the store
//                     writes these; journals of earlier builds keep it);
//                     a new length with kPatch set: a patch of the key's
//                     blob in place, its bytes pieces of
//                       u32 offset (into the blob)  u32 n  n bytes
//                     (old length 0: nothing kept)
//
// Writers call every method under the store's write lock; lock-free
// readers use only Seq()/SeqValid(), and INFO reads Counter().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"

namespace shmkv {

class Journal {
 public:
  enum Word : size_t {
    kMagic = 0,
    kSeq = 1,        // odd while a commit is being applied
    kState = 2,      // kIdle, kApplying or kUndoing
    kCount = 3,      // records
    kDone = 4,       // records applied so far (undoing: still applied)
    kBytes = 5,      // record bytes
    kSum = 6,        // hash of the record bytes
    kEpoch = 7,      // bumped by every recovery: WATCHes fail
    kRecovered = 8,  // commits of dead writers finished by another process
    kUndone = 9,     // commits undone because the map was full
    kDropped = 10,   // damaged journals dropped by recovery
    // The store's own words (server/store/store.cc), in what was spare
    // header (zero in a segment an older build made):
    kNextCollection = 11,  // the last collection id given (parts' ids)
    kParts = 12,           // part blobs in the map (not keys: DBSIZE)
    kPartsCounted = 13,    // 1 once kParts was counted from the map
    // A background save (server/store/cow.h): the one in progress
    // (0: none) and what its log holds.
    kSnapshot = 14,
    kSnapshotLog = 15,
    kVersions = 16,
  };
  static constexpr size_t kWatchSlots = 16384;
  static constexpr size_t kRecords = kVersions + kWatchSlots;
  static constexpr uint64_t kIdle = 0, kApplying = 1, kUndoing = 2;
  static constexpr uint32_t kNoBlob = 0xffffffffu;
  static constexpr uint32_t kPatch = 0x80000000u;  // in new_len
  // Each record: this head, the new blob, the old blob, zeros to a multiple
  // of 8 bytes.
  struct RecordHead {
    uint64_t ha, hb;   // the key's two hashes
    uint32_t new_len;  // kNoBlob: the key is deleted
    uint32_t old_len;  // kNoBlob: the key did not exist
  };
  // What a record costs beyond its blobs, at most (head and padding).
  static constexpr size_t kRecordOverhead = sizeof(RecordHead) + 8;

  // Attaches (creating it, if the create flags say so) with room for
  // `bytes` of records; a master initializes a new one.
  bool Open(const std::string& key, uint64_t bytes, bool master,
            std::string* err);
  size_t capacity() const { return cap_; }  // record bytes

  // Seqlock, reader side: Seq() (odd: wait), reads, SeqValid(token).
  uint64_t Seq() const;
  bool SeqValid(uint64_t token) const;
  // Writer side, for a change that is not journaled (FLUSHALL), which
  // bumps the version of each key it changes itself.
  void BeginUnjournaled();
  void EndUnjournaled();

  uint64_t Version(uint64_t hash) const;
  // The sum of every version: keys changed so far, in commits (a part
  // of a collection counts as its own key), for save points.
  uint64_t VersionSum() const;
  void Bump(uint64_t hash);  // after the key's new value is in the map
  uint64_t Epoch() const;

  // A commit's records, built in process memory before Commit().
  static void AppendRecord(std::string* rec, uint64_t ha, uint64_t hb,
                           const std::string_view* next,
                           const std::string_view* old);
  // A patch's record: `pieces` as the header above says. A patch is never
  // undone (nothing of the old blob is kept): a commit journals its
  // patches after every key it adds, as it does its replacements.
  static void AppendPatch(std::string* rec, uint64_t ha, uint64_t hb,
                          std::string_view pieces);
  // A patch's pieces for a value rewritten at its length, `before` ->
  // `after`, the value starting at byte `base` of its blob: a piece per
  // run of changed bytes (runs fewer than 16 equal bytes apart joined, a
  // piece's head costing 8). False, *pieces undefined, when nothing
  // changed, the lengths differ, or the pieces would pass half the value
  // (then it is written whole).
  static bool Diff(std::string_view before, std::string_view after,
                   size_t base, std::string* pieces);
  // Hands a patch's pieces to write(offset, bytes), all or none: they must
  // parse and follow each other without overlap (as Diff makes them), and
  // the last one, handed first, must be written (write returns false when
  // a piece passes the blob's end); every other one then ends within it.
  // False when the pieces do not parse or the last one was refused.
  template <class Write>
  static bool ApplyPieces(std::string_view pieces, Write&& write);
  // Applies one record's side: kPut: replace with blob; kErase; kPatch:
  // write the pieces in `blob` over the key's blob.
  enum class Op { kErase, kPut, kPatch };
  using ApplyFn = std::function<bool(uint64_t ha, uint64_t hb, Op op,
                                     std::string_view blob)>;
  // Writes the records, marks them applying (from here on the commit
  // happens, whoever finishes it), makes the sequence odd and applies
  // them. False when the map filled up and they were undone.
  bool Commit(const std::string& rec, uint64_t count, const ApplyFn& apply);
  // After a writer died holding the lock: its commit is finished (or
  // undone, or dropped if damaged), and every WATCH fails.
  void Recover(const ApplyFn& apply);

  uint64_t Counter(Word w) const;
  // The store's own words (kNextCollection .. kSnapshotLog): written
  // under the write lock.
  void SetWord(Word w, uint64_t v);

 private:
  struct Record {
    uint64_t ha, hb;
    bool has_new = false, has_old = false, patch = false;
    std::string_view next, old;
  };
  bool Parse(std::vector<Record>* out, bool sum) const;
  bool Finish(const ApplyFn& apply, bool sum);
  void Add(Word w);

  shmc::ShmArray<uint64_t, shmc::POSIX> arr_;
  // Reserves the memory of the records' first `bytes` (what this process
  // reserved before stays: reserved_words_, doubled as it grows).
  bool ReserveRecords(uint64_t bytes);
  size_t reserved_words_ = 0;  // record words this process reserved
  uint64_t* w_ = nullptr;
  size_t cap_ = 0;
};
static_assert(sizeof(Journal::RecordHead) == 24 &&
                  offsetof(Journal::RecordHead, new_len) == 16 &&
                  offsetof(Journal::RecordHead, old_len) == 20,
              "journal records of segments already written keep this head");

template <class Write>
bool Journal::ApplyPieces(std::string_view pieces, Write&& write) {
  struct Head {
    uint32_t offset, n;
  };
  auto head_at = [&](size_t at) {
    Head h;
    std::memcpy(&h, pieces.data() + at, sizeof(h));
    return h;
  };
  // Pass 1 checks every piece and finds the last.
  uint64_t end = 0;
  size_t last = 0;
  for (size_t at = 0; at < pieces.size();) {
    if (pieces.size() - at < sizeof(Head)) return false;
    const Head h = head_at(at);
    if (h.n == 0 || h.n > pieces.size() - at - sizeof(Head) ||
        h.offset < end) {
      return false;
    }
    last = at;
    end = uint64_t{h.offset} + h.n;
    at += sizeof(Head) + h.n;
  }
  if (end == 0) return false;
  auto hand = [&](size_t at) {
    const Head h = head_at(at);
    return write(h.offset, pieces.substr(at + sizeof(Head), h.n));
  };
  if (!hand(last)) return false;
  for (size_t at = 0; at < last; at += sizeof(Head) + head_at(at).n) {
    if (!hand(at)) return false;  // (not once the last one was written)
  }
  return true;
}

}  // namespace shmkv
