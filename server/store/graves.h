// The parts of collections whose key is gone (server/store/blob.h,
// "Collections in parts"), and the count of parts the store keeps.
//
// A root that leaves the map with more parts than one commit removes
// leaves a grave: a part at (id, kGraveIndex) holding the collection's
// PartsRoot. Reaping removes its parts from the highest index down,
// lowering the grave's count after them, and the grave with the last:
// each step is one map write, so a process killed anywhere leaves a
// grave that claims no fewer parts than remain, and the next reap (the
// sweep meets every grave) finishes it. Removing a part already gone is
// a no-op.
//
// The number of part blobs in the map (DBSIZE counts the rest) lives in
// the journal's store words; it is recounted from the map whenever it is
// not known to be right (a journal an older build made, a writer that
// died under the lock). Every method runs under the store's write lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "server/store/blob.h"
#include "server/store/journal.h"
#include "server/store/key_hash.h"

namespace shmkv {

// Parts of a dead collection removed at once after the commit that
// buried it; the rest go with the sweep, as many per visit.
constexpr uint64_t kReapBudget = 4096;

template <class Map>
class Graves {
 public:
  // `capacity` (the map's keys) bounds a damaged count of parts: twice
  // it, as a sorted set's part indexes are sparse.
  Graves(Map* map, Journal* journal, uint64_t capacity)
      : map_(map), journal_(journal), capacity_(capacity) {}

  // Counts the part blobs in the map into the journal's word.
  void Count() {
    uint64_t parts = 0;
    map_->Travel([&](const KeyHash&, const std::string& blob) {
      Blob b;
      if (b.Parse(blob.data(), blob.size()) && b.part()) ++parts;
    });
    journal_->SetWord(Journal::kParts, parts);
    journal_->SetWord(Journal::kPartsCounted, 1);
  }
  bool Counted() const {
    return journal_->Counter(Journal::kPartsCounted) != 0;
  }
  void Adjust(int64_t delta) {
    journal_->SetWord(Journal::kParts, journal_->Counter(Journal::kParts) +
                                           static_cast<uint64_t>(delta));
  }

  // The collection id of a grave blob (false: `b` is no grave).
  static bool IdOf(const Blob& b, uint64_t* id) {
    PartKey pk;
    if (!b.part() || b.key.size() != sizeof(pk)) return false;
    std::memcpy(&pk, b.key.data(), sizeof(pk));
    *id = pk.id;
    return pk.index == kGraveIndex;
  }

  // Writes the grave of a collection whose root is leaving the map
  // outside a commit (an expired root: dead to every reader already).
  // A grave already there is kept; with no room for one, the parts go at
  // once, highest first.
  void Bury(const PartsRoot& root) {
    PartsRoot old;
    if (ReadGrave(root.id, &old)) return;
    if (WriteGrave(root)) {
      Adjust(1);
      return;
    }
    for (uint64_t i = std::min(root.parts, 2 * capacity_); i > 0; --i) {
      if (map_->Erase(HashPart(root.id, i - 1))) Adjust(-1);
    }
  }

  // Removes up to `budget` parts of collection `id`'s grave, as above.
  void Reap(uint64_t id, uint64_t budget) {
    PartsRoot grave;
    if (!ReadGrave(id, &grave)) return;
    // A damaged count past what the map can hold is cut to that.
    uint64_t n = std::min(grave.parts, 2 * capacity_);
    for (uint64_t done = 0; n > 0 && done < budget; ++done) {
      if (map_->Erase(HashPart(id, n - 1))) Adjust(-1);
      --n;
      if (n != 0 && (n % 256 == 0 || done + 1 == budget)) {
        grave.parts = n;
        WriteGrave(grave);
      }
    }
    if (n == 0 && map_->Erase(HashPart(id, kGraveIndex))) Adjust(-1);
  }

 private:
  bool ReadGrave(uint64_t id, PartsRoot* out) {
    char buf[kBlobHeader + sizeof(PartKey) + sizeof(PartsRoot)];
    size_t len = sizeof(buf);
    if (!map_->Find(HashPart(id, kGraveIndex), buf, &len) ||
        len != sizeof(buf)) {
      return false;
    }
    char kb[16];
    Blob b;
    uint64_t grave_id = 0;
    if (!b.Parse(buf, len) || !IdOf(b, &grave_id) || grave_id != id ||
        b.key != PartKeyBytes(PartKey{id, kGraveIndex}, kb)) {
      return false;
    }
    std::memcpy(out, b.value.data(), sizeof(*out));
    return true;
  }

  bool WriteGrave(const PartsRoot& root) {
    char kb[16];
    MakeBlob(&blob_, PartKeyBytes(PartKey{root.id, kGraveIndex}, kb),
             static_cast<ValueType>(kPartType), 0,
             std::string_view(reinterpret_cast<const char*>(&root),
                              sizeof(root)),
             0);
    return map_->Replace(HashPart(root.id, kGraveIndex), blob_);
  }

  Map* map_;
  Journal* journal_;
  uint64_t capacity_;
  std::string blob_;
};

}  // namespace shmkv
