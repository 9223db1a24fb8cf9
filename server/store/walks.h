// Walks over the store's whole map for the commands that look at a
// database's keyspace (RANDOMKEY, SCAN and KEYS, FLUSHDB and FLUSHALL) and
// for the background sweep:
// the map holds every database's keys and the parts of collections, and
// each walk keeps to the live keys of one physical database.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/store/blob.h"
#include "server/store/dbs.h"
#include "server/store/graves.h"
#include "server/store/journal.h"
#include "server/store/store.h"

namespace shmkv {

// One step of the background sweep: the next `count` slots from *pos, and
// of what they hold the keys expired by `now` (database, key) and the
// collections whose removal a killed process left (graves' ids).
template <class Map>
void SweepStep(Map* map, typename Map::TravelPos* pos, size_t count,
               int64_t now,
               std::vector<std::pair<uint32_t, std::string>>* expired,
               std::vector<uint64_t>* graves) {
  map->Travel(pos, count, [&](const auto&, const std::string& blob) {
    Blob b;
    if (!b.Parse(blob.data(), blob.size())) return;
    uint64_t id = 0;
    if (b.part()) {
      if (Graves<Map>::IdOf(b, &id)) graves->push_back(id);
    } else if (b.Expired(now)) {
      expired->emplace_back(b.db, b.key);
    }
  });
}

// Database -1: every database.
constexpr int kEveryDb = -1;

// Every Redis key of physical database `db` (expired ones too): f(hash,
// blob) with the blob parsed.
template <class Map, class F>
void EachKey(Map* map, int db, F f) {
  map->Travel([&](const auto& h, const std::string& blob) {
    Blob b;
    if (b.Parse(blob.data(), blob.size()) && !b.part() &&
        (db == kEveryDb || b.db == static_cast<uint32_t>(db))) {
      f(h, b);
    }
  });
}

// The slot numbered seed modulo the index's slots, as a travel
// position, and in *slots how many the index has.
template <class Map>
typename Map::TravelPos RandomPos(Map* map, uint64_t seed, uint64_t* slots) {
  const auto& table = map->hash_table();
  typename Map::TravelPos pos;
  *slots = std::max<size_t>(1, table.ideal_capacity());
  uint64_t slot = seed % *slots;
  while (pos.row + 1 < table.row_count() &&
         slot >= table.row_slots(pos.row)) {
    slot -= table.row_slots(pos.row++);
  }
  pos.col = static_cast<uint32_t>(
      std::min<uint64_t>(slot, table.row_slots(pos.row) - 1));
  return pos;
}

// Where `pos` is in the table's travel order: the slots before it.
template <class Map>
uint64_t SlotsBefore(Map* map, const typename Map::TravelPos& pos) {
  const auto& table = map->hash_table();
  uint64_t at = pos.col;
  for (uint32_t r = 0; r < pos.row && r < table.row_count(); ++r) {
    at += table.row_slots(r);
  }
  return at;
}

// INFO's avg_ttl for `db`: the mean remaining TTL (ms) of up to
// kTtlSamples keys with one, met walking the index from a random slot,
// wrapping at its end (at most kTtlSlots slots: a store of few such keys
// in a large index is walked far enough to meet them, within a few
// milliseconds; one whose index is smaller is walked whole, each slot
// once); 0 when none was met. An estimate from a sample, as Redis's is
// (it averages the keys its expiry cycle samples).
constexpr size_t kTtlSamples = 64;
constexpr uint64_t kTtlSlots = uint64_t{1} << 21;
template <class Map>
int64_t AverageTtlMs(Map* map, uint64_t seed, uint32_t db) {
  if (map->size() == 0) return 0;
  uint64_t slots = 0;
  typename Map::TravelPos pos = RandomPos(map, seed, &slots);
  const int64_t now = NowMs();
  const uint64_t limit = std::min(slots, kTtlSlots);
  size_t n = 0;
  int64_t sum = 0;
  constexpr uint64_t kStep = 4096;
  for (uint64_t walked = 0; n < kTtlSamples && walked < limit;) {
    const uint64_t from = SlotsBefore(map, pos);
    map->Travel(&pos, std::min(kStep, limit - walked),
                [&](const auto&, const std::string& blob) {
      Blob b;
      if (n < kTtlSamples && b.Parse(blob.data(), blob.size()) && !b.part() &&
          b.db == db && b.expire_ms != 0 && !b.Expired(now)) {
        sum += b.expire_ms - now;
        ++n;
      }
    });
    // A walk that reaches the end goes on from the first slot.
    const uint64_t to = SlotsBefore(map, pos);
    walked += to > from ? to - from : slots - std::min(from, slots - 1);
  }
  return n == 0 ? 0 : sum / static_cast<int64_t>(n);
}

// A live key of `db` near a random slot (seed): the table is walked from
// there, wrapping at its end, to the first such key, so a database with
// a key always answers.
template <class Map>
bool RandomLiveKey(Map* map, uint64_t seed, uint32_t db, std::string* key) {
  if (map->size() == 0) return false;
  uint64_t slots = 0;
  typename Map::TravelPos pos = RandomPos(map, seed, &slots);
  int64_t now = NowMs();
  bool found = false;
  constexpr size_t kStep = 4096;
  for (uint64_t walked = 0; !found && walked <= slots + kStep;
       walked += kStep) {
    map->Travel(&pos, kStep, [&](const auto&, const std::string& blob) {
      Blob b;
      if (!found && b.Parse(blob.data(), blob.size()) && !b.part() &&
          b.db == db && !b.Expired(now)) {
        key->assign(b.key.data(), b.key.size());
        found = true;
      }
    });
  }
  return found;
}

// SCAN over `db`. COUNT is in keys, as in Redis: slots are walked until
// `count` keys of the database were seen or the call's work is done. The
// index is sized for --capacity, not for the keys it holds, so its empty
// slots are weighed by what they cost: a slot holding a blob (whose value
// is read) is one unit, an empty one (a word of the index, read in order)
// 1/kScanEmptyPerUnit; a call does 100 x count units (4,096 at least).
// So a pass over an index of a million empty slots takes a few calls
// whatever COUNT, and a pass over N keys about N / COUNT. Steps grow
// while they find no key (up to kScanMaxStep slots), so a call may return
// more keys than COUNT (at most that many), as Redis's may. A cursor that
// is not a position of the table ends the scan (cursor 0; Redis would
// mask it into its table instead: docs/server.md).
constexpr size_t kScanEmptyPerUnit = 128;
constexpr size_t kScanMaxStep = 1024;
template <class Map>
void ScanLiveKeys(Map* map, uint64_t* cursor, size_t count, uint32_t db,
                  const std::function<void(std::string_view, ValueType)>& f) {
  typename Map::TravelPos pos;
  pos.row = static_cast<uint32_t>(*cursor >> 32);
  pos.col = static_cast<uint32_t>(*cursor);
  int64_t now = NowMs();
  const size_t want = count == 0 ? 1 : count;
  const size_t budget = std::max<size_t>(want * 100, 4096);
  size_t seen = 0, blobs = 0, slots = 0, step = want;
  do {
    size_t found = 0;
    if (!map->Travel(&pos, step, [&](const auto&, const std::string& blob) {
          ++found;
          Blob b;
          if (!b.Parse(blob.data(), blob.size()) || b.part() || b.db != db) {
            return;  // not a key here: not counted either
          }
          if (!b.Expired(now)) f(b.key, b.type);
          ++seen;
        })) {
      pos.row = 0;  // not a position of this table
      pos.col = 0;
      break;
    }
    slots += step;
    blobs += found;
    // Empty steps double (an empty region is crossed in few steps); a
    // step that found blobs goes back to what is still wanted.
    step = found == 0 ? std::min(step * 2, std::max(kScanMaxStep, want))
                      : (seen < want ? want - seen : 1);
  } while (seen < want &&
           blobs + (slots - std::min(slots, blobs)) / kScanEmptyPerUnit <
               budget &&
           (pos.row != 0 || pos.col != 0));
  *cursor = static_cast<uint64_t>(pos.row) << 32 | pos.col;
}

// FLUSHALL (db kEveryDb) and FLUSHDB outside a transaction, under the
// write lock and not journaled (docs/server.md): the keys' removal is
// bracketed so readers wait, and each removed key's WATCH version moves
// (a WATCH of a key that was not there holds, as in Redis). FLUSHALL
// takes every blob, parts included; FLUSHDB sends a collection's parts
// through its grave, as an expired key's. Returns the keys removed.
template <class Map>
uint64_t FlushUnjournaled(Map* map, Journal* journal, Graves<Map>* graves,
                          DbWords<Map>* dbs, int db) {
  struct Gone {
    KeyHash h;
    PartsRoot root;
  };
  std::vector<Gone> gone;
  if (db == kEveryDb) {
    map->Travel([&](const KeyHash& h, const std::string&) {
      gone.push_back(Gone{h, PartsRoot{0, 0}});
    });
  } else {
    EachKey(map, db, [&](const KeyHash& h, const Blob& b) {
      PartsRoot root{0, 0};
      if (!b.Root(&root)) root = PartsRoot{0, 0};
      gone.push_back(Gone{h, root});
    });
  }
  journal->BeginUnjournaled();  // readers wait: no half-flushed MGET
  uint64_t n = 0;
  for (const Gone& g : gone) {
    if (g.root.id != 0) graves->Bury(g.root);
    if (map->Erase(g.h)) {
      ++n;
      journal->Bump(g.h.a);
    }
  }
  journal->EndUnjournaled();
  if (db != kEveryDb) {
    dbs->Zero(static_cast<uint32_t>(db));
    for (const Gone& g : gone) {
      if (g.root.id != 0) graves->Reap(g.root.id, kReapBudget);
    }
    return n;
  }
  uint64_t parts = journal->Counter(Journal::kParts);
  journal->SetWord(Journal::kParts, 0);
  for (uint32_t d = 0; d < kDatabases; ++d) dbs->Zero(d);
  return n >= parts ? n - parts : 0;  // keys, not parts
}

}  // namespace shmkv
