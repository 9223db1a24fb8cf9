// A stream as the stream commands see it (docs/server.md, "Streams"):
// its entries in ID order, each an ID and its fields and values, and the
// counters Redis keeps beside them (the last ID given, the entries ever
// added, the largest ID deleted), with the grouping of entries into
// nodes that Redis's trimming with `~` removes whole (a node is closed at
// stream-node-max-entries entries, deleted ones counted, as Redis closes
// its listpacks). Two forms:
//
//  - packed (kStreamPacked): one blob, the counters (Counters, ten u64
//    words: last ms, last seq, added, deleted ms, deleted seq, nodes,
//    tail entries, tail live, tail first ms, tail first seq) then the
//    entries, packed (server/commands/packed.h), one string each; while
//    it has at most kPackedEntries entries of at most kPackedBytes bytes
//    in all;
//  - in parts (kStreamTree): the entries in the B+tree the sorted sets
//    use (server/commands/zset_tree.h, the odd parts; every score 0, so
//    the order is the entries' bytes'), under a root of
//      PartsRoot {id, parts}  u64 nodes  u64 top  u64 free  u64 height
//      then the ten counter words
//    with parts = 2 * nodes. An append, a delete and a trim of one entry
//    cost one path of the tree, whatever the stream's length.
//
// A stream that has (or had) consumer groups is always in parts, its
// root four words longer, then one:
//      ... the ten counter words, then the pending entries' tree's
//      u64 nodes  u64 top  u64 free  u64 height, then u64 next group tag
// with parts = max(2 * nodes, 2 * pending nodes + 1): part 0 holds the
// groups, packed (per group, sorted by name: its name, then 40 bytes
// (u64 tag, last delivered ms, seq, entries read (-1: not known),
// consumers), then per consumer, sorted by name: its name, then 8 bytes
// (the time it was last seen, in ms)); the pending entries (every
// group's) are a second tree of the same kind in the even parts from 2
// on (node n is part 2n + 2), one member each: the group's tag and the
// entry's ID (24 big-endian bytes: a group's entries are together, in ID
// order), the last delivery time and the delivery count (u64 each), then
// the consumer's name.
//
// An entry's bytes are its ID as 16 big-endian bytes (ms, then seq: the
// bytes order as the IDs do), a flag byte (1: the first live entry of a
// node), then its fields and values, packed. A stream that empties is
// packed again (Redis keeps an empty stream as a key). Every length,
// count and order read from shared memory is checked: what does not
// parse makes ok() false, and the command answers the damaged-value
// error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/command_util.h"
#include "server/commands/zset_tree.h"
#include "server/store/blob.h"

namespace shmkv {
namespace cmd {

constexpr uint8_t kStreamPacked = 0;
constexpr uint8_t kStreamTree = kEncodingParts | 1;

// u64 as 8 big-endian bytes (an ID's and a group tag's key bytes order
// as the numbers do).
inline uint64_t LoadBigEndian(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline void StoreBigEndian(uint64_t v, char* p) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

struct StreamId {
  uint64_t ms = 0, seq = 0;
  bool operator<(const StreamId& o) const {
    return ms < o.ms || (ms == o.ms && seq < o.seq);
  }
  bool operator==(const StreamId& o) const {
    return ms == o.ms && seq == o.seq;
  }
  bool operator<=(const StreamId& o) const { return !(o < *this); }
  bool zero() const { return ms == 0 && seq == 0; }
  bool max() const { return ms == ~0ULL && seq == ~0ULL; }
  // The next ID / the one before: false (and unchanged) past the ends.
  bool Next();
  bool Prev();
  std::string Text() const;  // "ms-seq"
  void Key(char (&out)[16]) const;
  static bool FromKey(std::string_view bytes, StreamId* id);
};

struct StreamEntry {
  StreamId id;
  std::string_view fields;  // field, value, ... packed
};

struct StreamConsumer {
  std::string name;
  uint64_t seen_ms = 0;
};

// A consumer group; entries_read -1: not known (Redis's
// SCG_INVALID_ENTRIES_READ).
struct StreamGroup {
  std::string name;
  uint64_t tag = 0;  // its pending entries' key prefix
  StreamId last;
  int64_t entries_read = -1;
  std::vector<StreamConsumer> consumers;  // sorted by name
  StreamConsumer* Find(std::string_view name);
  // Adds `name` (seen now); nullptr when it is there.
  StreamConsumer* Add(std::string_view name, uint64_t now_ms);
};

// A pending entry of a group: delivered, not yet acknowledged.
struct StreamNack {
  StreamId id;
  uint64_t delivery_ms = 0;
  uint64_t count = 0;
  std::string_view consumer;
};

class StreamValue {
 public:
  static constexpr size_t kPackedEntries = 100;
  static constexpr size_t kPackedBytes = 4096;
  // The pending entries' tree's nodes: parts 2n + kPelBase.
  static constexpr uint64_t kPelBase = 2;

  struct Counters {
    StreamId last;         // the last ID given (XADD, XSETID)
    uint64_t added = 0;    // entries ever added
    StreamId max_deleted;  // the largest ID XDEL removed
    uint64_t nodes = 0;       // nodes holding a live entry
    uint64_t tail_total = 0;  // entries the last node took (0: none open)
    uint64_t tail_live = 0;   // of them, live
    StreamId tail_first;      // the ID the last node began at
  };
  // How XADD and XTRIM trim (Redis's MAXLEN / MINID, `~`, LIMIT; limit
  // 0: none).
  struct TrimSpec {
    bool by_length = true;
    uint64_t maxlen = 0;
    StreamId minid;
    bool approx = false;
    uint64_t limit = 0;
  };

  using Load = cmd::Load;
  Load Open(CommandContext* c, std::string_view key);
  bool exists() const { return exists_; }
  bool ok() const { return ok_ && tree_.ok(); }
  uint64_t size();
  const Counters& counters() const { return counters_; }
  Counters* mutable_counters() {
    changed_ = true;
    return &counters_;
  }

  // Makes this a new, empty stream (the key holds none).
  void Create();
  // Appends an entry whose ID is above every entry's; `fields` packed. A
  // new node begins when the last one holds `node_entries` (0: no limit).
  void Append(StreamId id, std::string_view fields, uint64_t node_entries);
  // Trims as Redis does: whole nodes from the front, then (not approx)
  // entries of the first node left. The entries removed.
  uint64_t Trim(const TrimSpec& t);
  // Removes the entry of `id`: false when there is none.
  bool Delete(StreamId id);
  // Removes the first n entries (n <= size()).
  bool PopFront(uint64_t n);
  // The first or last entry: false when empty (or damaged).
  bool Edge(bool first, StreamEntry* e);
  // Entries below `id` (inclusive: up to and with it).
  uint64_t CountBelow(StreamId id, bool inclusive);
  // Entries from `from` on, up (forward, ids >= from) or down (ids <=
  // from), while f returns true. Views stay valid while this lives.
  bool Walk(StreamId from, bool forward,
            const std::function<bool(const StreamEntry&)>& f);

  // The entry of `id`: false when there is none.
  bool Find(StreamId id, StreamEntry* e);

  // Consumer groups (sorted by name); nullptr when damaged.
  std::vector<StreamGroup>* Groups();
  StreamGroup* FindGroup(std::string_view name);
  // Adds a group (the stream moves to parts, the groups' form): nullptr
  // when there is one of that name.
  StreamGroup* AddGroup(std::string_view name, StreamId last,
                        int64_t entries_read);
  // Removes a group and its pending entries: false when there is none.
  bool DestroyGroup(std::string_view name);
  // After a change to a group or a consumer.
  void GroupsChanged() { groups_changed_ = changed_ = true; }
  // Removes a consumer and its pending entries: how many it had.
  uint64_t DeleteConsumer(StreamGroup* g, std::string_view name);

  // The group's pending entries: one, adding or replacing one, removing
  // one (false when none), how many, and a walk up from `from`.
  bool PelGet(const StreamGroup& g, StreamId id, StreamNack* n);
  void PelPut(const StreamGroup& g, const StreamNack& n);
  bool PelErase(const StreamGroup& g, StreamId id);
  uint64_t PelCount(const StreamGroup& g);
  bool PelWalk(const StreamGroup& g, StreamId from,
               const std::function<bool(const StreamNack&)>& f);
  bool PelLast(const StreamGroup& g, StreamNack* n);
  // The pending entries of every consumer of the group, by name.
  bool PelPerConsumer(const StreamGroup& g,
                      std::vector<std::pair<std::string, uint64_t>>* out);

  // Redis's logical read counter of `id` (its distance from the first
  // entry ever added), -1 when it cannot be known.
  int64_t EstimateRead(StreamId id);
  // Whether an entry at or above `from` was deleted (Redis's
  // streamRangeHasTombstones with no end).
  bool TombstonesFrom(StreamId from);
  // The group's lag; false when it cannot be known (a null).
  bool Lag(const StreamGroup& g, int64_t* lag);

  // Writes what changed (the key is written when it was made or changed).
  Store::Status Save(CommandContext* c, std::string_view key);

 private:
  bool Decode(const ZEntry& z, StreamEntry* e);
  // An entry's flag byte: 0, 1 (it begins a node), kNodeStartMax (it
  // begins a node, and the 16 bytes after the flag are the highest ID
  // the node held: an entry after the live ones, removed by XDEL).
  static constexpr uint8_t kNodeStartMax = 2;
  bool Starts(const ZEntry& z) const {
    return z.member.size() > 16 && (z.member[16] == 1 ||
                                    z.member[16] == kNodeStartMax);
  }
  bool NodeMax(const ZEntry& z, StreamId* max) const;
  // Entries from `rank` on, with their ranks, while f returns true.
  bool WalkRanks(uint64_t rank, bool forward,
                 const std::function<bool(uint64_t, const ZEntry&)>& f);
  bool EntryAt(uint64_t rank, ZEntry* z);
  // Gives the entry at `rank` the node-start flag `start` (with the
  // node's highest ID `max`, when given).
  bool Mark(uint64_t rank, bool start, const StreamId* max = nullptr);
  // The live entries of the node that begins at rank 0.
  uint64_t FirstNodeSize();
  Store::Status SaveGrouped(CommandContext* c, std::string_view key);
  bool ReadCounters(const char* p);
  void PutCounters(uint64_t* w) const;
  std::string_view EntryKey(StreamId id);
  std::string_view PelKey(uint64_t tag, StreamId id);
  bool DecodeNack(const ZEntry& z, uint64_t tag, StreamNack* n);
  bool PelFind(uint64_t tag, StreamId id, ZEntry* z);
  // Moves the stream to the groups' form (in parts, an empty tree of
  // pending entries, no group).
  void ToGroupsForm();
  bool ParseGroups(std::string_view bytes);
  void PackGroups(std::string* out) const;

  CommandContext* c_ = nullptr;
  bool exists_ = false;
  bool ok_ = true;
  bool changed_ = false;
  bool in_parts_ = false;
  Value value_;
  Counters counters_;
  std::vector<ZEntry> entries_;  // packed
  uint64_t id_ = 0;              // in parts
  ZTree::Shape shape_;
  ZTree tree_;
  // The groups' form (grouped_): part 0 read once asked for.
  bool grouped_ = false;
  bool groups_loaded_ = false;
  bool groups_changed_ = false;
  uint64_t next_tag_ = 0;
  std::vector<StreamGroup> groups_;
  ZTree::Shape pel_shape_;
  ZTree pel_;
  // PelFind's last find, while the tree has not changed since.
  bool pel_hit_valid_ = false;
  std::string pel_hit_key_;
  ZEntry pel_hit_{};
  std::deque<std::string> made_;  // bytes of entries and keys made here
};

// Redis's reading of a stream ID argument (streamGenericParseIDOrReply):
// "-" and "+" (unless strict), "ms" (seq `missing_seq`) and "ms-seq";
// with `seq_given`, "ms-*" too (*seq_given false). False when it is not
// an ID.
bool ParseStreamId(std::string_view s, uint64_t missing_seq, bool strict,
                   StreamId* id, bool* seq_given = nullptr);

}  // namespace cmd
}  // namespace shmkv
