// The ordered half of a large sorted set (docs/server.md, "Sorted
// sets"): a B+tree of its (score, member) entries whose nodes are parts
// of the set's collection (server/store/blob.h), each inner node
// counting the entries under every child, so that a rank, a score bound
// and a member bound are each one walk from the top.
//
// Node n is part 2n + 1 of the collection (the member table's buckets
// take the even parts: server/commands/hash_value.h, Attach). A node's
// bytes are packed (server/commands/packed.h): a one-byte tag, then
//   a leaf (tag 0):     member, score, member, score, ...
//   an inner node (tag = its level, 1 above its children):
//                       child, sep score, sep member, ...  where child is
//                       u64 node  u64 entries under it
//   a free node (tag kFreeTag): u64 next free node (kNone: the last)
// with a score as its 8 IEEE-754 bytes. Child i > 0 of an inner node
// holds entries no less than its separator, child i - 1 entries below
// it; child 0's separator is not read. A separator is the shortest
// (score, member prefix) between the two entries a split parts, and is
// not moved when they go: it need not be an entry of the set.
//
// A write loads and rewrites the nodes on one path from the top (a leaf
// of at most kLeafEntries entries, inner nodes of at most kInnerChildren
// children), so its cost grows with the log of the set's size. A node
// that empties is freed onto a free list; one that falls under a
// quarter full is merged into a neighbour when both fit in one.
//
// Every index, level, count and order read from shared memory is checked
// on load (a child's level must be its parent's less one, so no walk can
// loop; a child's entries must be what its parent counts): a node that
// does not parse makes the tree fail (ok() false), and the command
// answers the damaged-value error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command.h"
#include "server/commands/kept_table.h"
#include "server/store/store.h"

namespace shmkv {
namespace cmd {

struct ZEntry {
  std::string_view member;
  double score;
};

// Redis's order: by score, then by member bytes.
inline bool ZLess(const ZEntry& a, const ZEntry& b) {
  return a.score < b.score || (a.score == b.score && a.member < b.member);
}

class ZTree {
 public:
  static constexpr size_t kLeafEntries = 16;
  static constexpr size_t kLeafBytes = 2048;
  static constexpr size_t kInnerChildren = 32;
  static constexpr size_t kInnerBytes = 1024;
  static constexpr uint64_t kNone = ~0ULL;
  static constexpr uint8_t kFreeTag = 0xff;
  static constexpr uint64_t kMaxHeight = 32;

  // What the set's root keeps of the tree.
  struct Shape {
    uint64_t nodes = 0;    // node indexes are 0 .. nodes-1
    uint64_t top = 0;      // the top node
    uint64_t free = kNone;  // the first free node
    uint64_t height = 1;   // 1: the top is a leaf
  };
  // Node n is part 2n + base of its collection: base 1 (the odd parts)
  // for a sorted set's and a stream's entries, 2 for a stream's pending
  // entries (server/commands/stream_value.h).
  uint64_t PartOf(uint64_t node) const { return 2 * node + base_; }

  // Opens a tree the root describes (checked against `capacity`, the
  // most parts the map can hold): false when the shape cannot be one.
  bool Attach(CommandContext* c, uint64_t id, const Shape& s,
              uint64_t capacity, uint64_t base = 1);
  // Makes a new tree of `sorted` (in order, each member once; views that
  // must outlive Save).
  void Build(CommandContext* c, uint64_t id, const std::vector<ZEntry>& sorted,
             uint64_t base = 1);
  const Shape& shape() const { return shape_; }
  bool ok() const { return ok_; }

  // The number of entries (0 when damaged).
  uint64_t size();
  // Adds `e` (whose member must not be in the tree) / removes it (false
  // when it is not there).
  void Insert(const ZEntry& e);
  bool Erase(const ZEntry& e);
  // How many entries `less` holds for; `less` must hold for a prefix of
  // the order (every entry below one it holds for).
  uint64_t Count(const std::function<bool(const ZEntry&)>& less);
  // The entry at `rank` (< size()).
  bool At(uint64_t rank, ZEntry* e);
  // Entries from `rank` on, up (forward) or down, while f returns true.
  bool Walk(uint64_t rank, bool forward,
            const std::function<bool(const ZEntry&)>& f);

  // Writes the nodes that changed.
  Store::Status Save(CommandContext* c);

 private:
  struct Child {
    uint64_t node;
    uint64_t count;
    ZEntry sep;
  };
  struct Node {
    uint64_t index = 0;
    uint8_t level = 0;  // 0: a leaf; kFreeTag: free
    std::vector<ZEntry> entries;  // a leaf's
    std::vector<Child> kids;      // an inner node's
    uint64_t next_free = kNone;   // a free node's
    bool dirty = false;
    std::string_view orig;  // the bytes it was read from (none: made here)
  };
  // An inner node this process parsed, kept while its part's stamp holds
  // (zset_tree.cc), and this thread's table of them.
  struct Cached;
  static KeptTable<const Cached>& Nodes();
  struct Step {
    Node* node;
    size_t pos;  // the child taken
  };

  Node* Get(uint64_t index, uint8_t level, uint64_t count);
  bool Stamp(uint64_t index, PartStamp* s);
  bool Fits(const Cached& c) const;
  bool Load(uint64_t index, const PartStamp* stamp, Node* n);
  Node* Top();
  bool Parse(std::string_view bytes, Node* n);
  uint64_t Total(const Node* n) const;
  size_t Bytes(const Node* n) const;
  bool Over(const Node* n) const;
  bool Under(const Node* n) const;
  Node* Alloc(uint8_t level);
  void Free(Node* n);
  bool Descend(const ZEntry& e, std::vector<Step>* path);
  // Where an insert lands: at the set's last or first place, or inside.
  enum class Edge { kNone, kRight, kLeft };
  void SplitChild(Node* parent, size_t pos, Edge edge);
  void GrowTop(Edge edge);
  void Rebalance(Node* parent, size_t pos);
  bool WalkIn(Node* n, uint64_t skip, bool forward,
              const std::function<bool(const ZEntry&)>& f, bool* stop);

  CommandContext* c_ = nullptr;
  uint64_t id_ = 0;
  uint64_t base_ = 1;
  Shape shape_;
  bool ok_ = true;
  bool fresh_ = false;  // built here: no node is read from the map
  std::map<uint64_t, Node> loaded_;
  std::deque<std::string> arena_;  // the bytes read; entries view them
  std::vector<std::shared_ptr<const Cached>> held_;  // cached ones viewed
};

}  // namespace cmd
}  // namespace shmkv
