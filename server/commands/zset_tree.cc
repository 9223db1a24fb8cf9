// A sorted set's B+tree of entries in parts (server/commands/
// zset_tree.h).
#include "server/commands/zset_tree.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "server/commands/packed.h"

namespace shmkv {
namespace cmd {

namespace {

// A count under one child past this is damage (no map holds that many).
constexpr uint64_t kMaxCount = 1ULL << 48;

bool ReadScore(std::string_view b, double* v) {
  if (b.size() != sizeof(double)) return false;
  std::memcpy(v, b.data(), sizeof(double));
  return !std::isnan(*v);
}

// The bytes of one entry or child in a node, near enough (the lengths'
// bytes counted as two): what the size limits weigh.
size_t EntryBytes(const ZEntry& e) { return e.member.size() + 10; }
constexpr size_t kChildBytes = 16 + 10;

// The shortest separator above `low` and at most `high` (low < high):
// high's score with no member when the scores differ, else high's
// member cut one byte past where it leaves low's.
ZEntry Between(const ZEntry& low, const ZEntry& high) {
  if (low.score < high.score) return ZEntry{high.member.substr(0, 0), high.score};
  size_t k = 0;
  while (k < low.member.size() && k < high.member.size() &&
         low.member[k] == high.member[k]) {
    ++k;
  }
  return ZEntry{high.member.substr(0, k + 1), high.score};
}

}  // namespace

bool ZTree::Attach(CommandContext* c, uint64_t id, const Shape& s,
                   uint64_t capacity, uint64_t base) {
  c_ = c;
  id_ = id;
  base_ = base;
  shape_ = s;
  return s.nodes >= 1 && s.nodes <= capacity && s.top < s.nodes &&
         (s.free == kNone || s.free < s.nodes) && s.height >= 1 &&
         s.height <= kMaxHeight;
}

void ZTree::Build(CommandContext* c, uint64_t id,
                  const std::vector<ZEntry>& sorted, uint64_t base) {
  c_ = c;
  id_ = id;
  base_ = base;
  shape_ = Shape{};
  fresh_ = true;
  // Nodes are made three quarters full, so the next writes split none.
  std::vector<Node*> row;
  Node* leaf = nullptr;
  size_t bytes = 0;
  for (const ZEntry& e : sorted) {
    if (leaf == nullptr || leaf->entries.size() >= kLeafEntries * 3 / 4 ||
        bytes + EntryBytes(e) > kLeafBytes * 3 / 4) {
      leaf = Alloc(0);
      row.push_back(leaf);
      bytes = 0;
    }
    leaf->entries.push_back(e);
    bytes += EntryBytes(e);
  }
  if (row.empty()) row.push_back(Alloc(0));
  uint8_t level = 0;
  while (row.size() > 1) {
    ++level;
    std::vector<Node*> up;
    Node* inner = nullptr;
    for (size_t i = 0; i < row.size(); ++i) {
      Node* n = row[i];
      ZEntry sep = n->level > 0 ? n->kids.front().sep
                   : i == 0     ? ZEntry{{}, 0}
                                : Between(row[i - 1]->entries.back(),
                                          n->entries.front());
      // Two children at least, whatever their size, so each row is
      // smaller than the one below.
      if (inner == nullptr ||
          (inner->kids.size() >= 2 &&
           (inner->kids.size() >= kInnerChildren * 3 / 4 ||
            bytes + kChildBytes + sep.member.size() > kInnerBytes * 3 / 4))) {
        inner = Alloc(level);
        up.push_back(inner);
        bytes = 0;
      }
      inner->kids.push_back(Child{n->index, Total(n), sep});
      bytes += kChildBytes + sep.member.size();
    }
    row.swap(up);
  }
  shape_.top = row[0]->index;
  shape_.height = static_cast<uint64_t>(level) + 1;
}

// A parsed inner node, its bytes and the stamp its part had before they
// were read.
struct ZTree::Cached {
  PartStamp stamp;
  std::string bytes;
  Node node;  // views `bytes`
  uint64_t total = 0;         // the entries under it
  uint64_t parsed_nodes = 0;  // its children were checked below this
  size_t cost = 0;
};

// This process's inner nodes, by store, collection and node: a few
// thousand for a set of a million members, read by every walk from the
// top.
KeptTable<const ZTree::Cached>& ZTree::Nodes() {
  thread_local KeptTable<const Cached> kept(size_t{32} << 20);
  return kept;
}

ZTree::Node* ZTree::Get(uint64_t index, uint8_t level, uint64_t count) {
  if (!ok_) return nullptr;
  auto it = loaded_.find(index);
  if (it != loaded_.end()) {
    Node* n = &it->second;
    if (n->level != level || (count != kNone && Total(n) != count)) {
      ok_ = false;
      return nullptr;
    }
    return n;
  }
  if (index >= shape_.nodes || fresh_) {
    ok_ = false;
    return nullptr;
  }
  // An inner node this process keeps, while its part's stamp holds.
  PartStamp stamp;
  const bool stamped = level > 0 && level != kFreeTag && Stamp(index, &stamp);
  if (stamped) {
    std::shared_ptr<const Cached> hit =
        Nodes().Find({stamp.store, id_, PartOf(index)});
    if (hit != nullptr && hit->stamp == stamp && hit->node.level == level &&
        (count == kNone || hit->total == count) && Fits(*hit)) {
      const Node* kept = &hit->node;
      held_.push_back(std::move(hit));
      // A read without a transaction changes nothing (Insert and Erase
      // refuse to): it walks the kept node itself. A write changes a
      // copy.
      if (c_->txn == nullptr) return const_cast<Node*>(kept);
      return &(loaded_[index] = *kept);
    }
  }
  Node n;
  // Only a read keeps what it loads: a write's nodes are mostly the ones
  // it is about to change (keeping them cost a ZADD at 10^6 members a
  // third more CPU, bench/RESULTS.md), and a read will keep them after.
  const bool keep = stamped && c_->txn == nullptr;
  if (!Load(index, keep ? &stamp : nullptr, &n) || n.level != level ||
      (count != kNone && Total(&n) != count)) {
    ok_ = false;
    return nullptr;
  }
  return &(loaded_[index] = std::move(n));
}

bool ZTree::Stamp(uint64_t index, PartStamp* s) {
  return c_->txn != nullptr ? c_->txn->StampPart(id_, PartOf(index), s)
                            : c_->store->StampPart(id_, PartOf(index), s);
}

// A kept node's children were checked against the shape it was read
// under; a tree only gains node indexes, so that check holds while the
// shape has as many (else it is made again).
bool ZTree::Fits(const Cached& c) const {
  if (shape_.nodes >= c.parsed_nodes) return true;
  for (const Child& k : c.node.kids) {
    if (k.node >= shape_.nodes) return false;
  }
  return true;
}

// Reads and parses node `index`; with a stamp (taken before the read),
// an inner node is kept for the next walks.
bool ZTree::Load(uint64_t index, const PartStamp* stamp, Node* n) {
  std::shared_ptr<Cached> fresh;
  std::string* bytes = nullptr;
  if (stamp != nullptr) {
    fresh = std::make_shared<Cached>();
    fresh->stamp = *stamp;
    bytes = &fresh->bytes;
  } else {
    arena_.emplace_back();
    bytes = &arena_.back();
  }
  const uint64_t part = PartOf(index);
  bool found = c_->txn != nullptr
                   ? c_->txn->ReadPart(id_, part, bytes) == Store::Status::kOk
                   : c_->store->GetPart(id_, part, bytes);
  n->index = index;
  if (!found || !Parse(*bytes, n)) return false;
  n->orig = *bytes;
  if (fresh != nullptr && n->level > 0 && n->level != kFreeTag) {
    fresh->node = *n;
    fresh->total = Total(n);
    fresh->parsed_nodes = shape_.nodes;
    fresh->cost = sizeof(Cached) + bytes->size() +
                  n->kids.capacity() * sizeof(Child) + 64;
    Nodes().Put({stamp->store, id_, PartOf(index)}, fresh, fresh->cost);
    held_.push_back(std::move(fresh));
  }
  return true;
}

ZTree::Node* ZTree::Top() {
  return Get(shape_.top, static_cast<uint8_t>(shape_.height - 1), kNone);
}

bool ZTree::Parse(std::string_view bytes, Node* n) {
  PackedReader r(bytes);
  std::string_view tag;
  if (!r.ok() || !r.Next(&tag) || tag.size() != 1) return false;
  n->level = static_cast<uint8_t>(tag[0]);
  const size_t rest = r.count() - 1;
  if (n->level == kFreeTag) {
    std::string_view next;
    if (rest != 1 || !r.Next(&next) || next.size() != 8 || !r.Done()) {
      return false;
    }
    std::memcpy(&n->next_free, next.data(), 8);
    return n->next_free == kNone || n->next_free < shape_.nodes;
  }
  if (n->level == 0) {
    // An empty leaf is an empty tree (a stream's, in the groups' form).
    if (rest % 2 != 0) return false;
    n->entries.reserve(rest / 2);
    std::string_view member, score;
    while (r.Next(&member)) {
      ZEntry e{member, 0};
      if (!r.Next(&score) || !ReadScore(score, &e.score)) return false;
      // In order, each entry once.
      if (!n->entries.empty() && !ZLess(n->entries.back(), e)) return false;
      n->entries.push_back(e);
    }
    return r.Done();
  }
  if (rest < 3 || rest % 3 != 0) return false;
  n->kids.reserve(rest / 3);
  std::string_view link, score, sep;
  while (r.Next(&link)) {
    if (!r.Next(&score) || !r.Next(&sep)) return false;
    Child k{0, 0, ZEntry{sep, 0}};
    if (link.size() != 16 || !ReadScore(score, &k.sep.score)) return false;
    std::memcpy(&k.node, link.data(), 8);
    std::memcpy(&k.count, link.data() + 8, 8);
    if (k.node >= shape_.nodes || k.count == 0 || k.count > kMaxCount) {
      return false;
    }
    // Separators after the first in order.
    if (n->kids.size() >= 2 && !ZLess(n->kids.back().sep, k.sep)) {
      return false;
    }
    n->kids.push_back(k);
  }
  return r.Done();
}

uint64_t ZTree::Total(const Node* n) const {
  if (n->level == 0) return n->entries.size();
  uint64_t t = 0;
  for (const Child& k : n->kids) t += k.count;
  return t;
}

size_t ZTree::Bytes(const Node* n) const {
  size_t b = 0;
  for (const ZEntry& e : n->entries) b += EntryBytes(e);
  for (const Child& k : n->kids) b += kChildBytes + k.sep.member.size();
  return b;
}

bool ZTree::Over(const Node* n) const {
  if (n->level == 0) {
    return n->entries.size() > kLeafEntries ||
           (n->entries.size() >= 2 && Bytes(n) > kLeafBytes);
  }
  // By bytes only from four children: halves of two at least, so huge
  // separators cannot make a tower of one-child nodes.
  return n->kids.size() > kInnerChildren ||
         (n->kids.size() >= 4 && Bytes(n) > kInnerBytes);
}

bool ZTree::Under(const Node* n) const {
  if (n->level == 0) {
    return n->entries.size() < kLeafEntries / 4 &&
           Bytes(n) < kLeafBytes / 4;
  }
  return n->kids.size() < kInnerChildren / 4 && Bytes(n) < kInnerBytes / 4;
}

ZTree::Node* ZTree::Alloc(uint8_t level) {
  Node* n = nullptr;
  if (shape_.free != kNone) {
    n = Get(shape_.free, kFreeTag, kNone);
    if (n == nullptr) return nullptr;
    shape_.free = n->next_free;
  } else {
    uint64_t index = shape_.nodes++;
    n = &loaded_[index];
    n->index = index;
  }
  n->level = level;
  n->next_free = kNone;
  n->entries.clear();
  n->kids.clear();
  n->dirty = true;
  return n;
}

void ZTree::Free(Node* n) {
  n->level = kFreeTag;
  n->entries.clear();
  n->kids.clear();
  n->next_free = shape_.free;
  shape_.free = n->index;
  n->dirty = true;
}

uint64_t ZTree::size() {
  Node* top = Top();
  return top == nullptr ? 0 : Total(top);
}

bool ZTree::Descend(const ZEntry& e, std::vector<Step>* path) {
  path->clear();
  Node* n = Top();
  while (n != nullptr) {
    if (n->level == 0) {
      path->push_back(Step{n, 0});
      return true;
    }
    if (n->kids.empty()) return false;  // emptied by this command
    // The last child whose separator is at most e (child 0 if none).
    auto it = std::upper_bound(
        n->kids.begin() + 1, n->kids.end(), e,
        [](const ZEntry& x, const Child& k) { return ZLess(x, k.sep); });
    size_t pos = static_cast<size_t>(it - n->kids.begin()) - 1;
    path->push_back(Step{n, pos});
    n = Get(n->kids[pos].node, static_cast<uint8_t>(n->level - 1),
            n->kids[pos].count);
  }
  return false;
}

void ZTree::Insert(const ZEntry& e) {
  if (c_->txn == nullptr && !fresh_) {
    ok_ = false;  // a write outside a transaction: refused, never applied
    return;
  }
  Node* top = Top();
  if (top == nullptr) return;
  if (top->level > 0 && top->kids.empty()) {
    // Emptied by this command: start again from one leaf.
    Free(top);
    top = Alloc(0);
    if (top == nullptr) return;
    shape_.top = top->index;
    shape_.height = 1;
  }
  std::vector<Step> path;
  if (!Descend(e, &path)) return;
  Node* leaf = path.back().node;
  auto at =
      std::upper_bound(leaf->entries.begin(), leaf->entries.end(), e, ZLess);
  // An entry past the last (or before the first) of the whole set: the
  // set grows at that end, and a split there leaves the full side full
  // (else entries added in order would leave every node half empty).
  Edge edge = Edge::kNone;
  bool last = at == leaf->entries.end(), first = at == leaf->entries.begin();
  for (size_t k = 0; k + 1 < path.size() && (last || first); ++k) {
    last = last && path[k].pos + 1 == path[k].node->kids.size();
    first = first && path[k].pos == 0;
  }
  if (last) edge = Edge::kRight;
  else if (first) edge = Edge::kLeft;
  leaf->entries.insert(at, e);
  leaf->dirty = true;
  for (size_t k = path.size() - 1; k-- > 0;) {
    Node* parent = path[k].node;
    ++parent->kids[path[k].pos].count;
    parent->dirty = true;
    if (Over(path[k + 1].node)) SplitChild(parent, path[k].pos, edge);
  }
  if (Over(path[0].node)) GrowTop(edge);
}

// Moves the upper half of child `pos` of `parent` to a new node, its
// right neighbour.
void ZTree::SplitChild(Node* parent, size_t pos, Edge edge) {
  Node* child = Get(parent->kids[pos].node,
                    static_cast<uint8_t>(parent->level - 1),
                    parent->kids[pos].count);
  if (child == nullptr) return;
  Node* right = Alloc(child->level);
  if (right == nullptr) return;
  ZEntry sep;
  auto middle = [edge](size_t n) {
    return edge == Edge::kRight ? n - 1 : edge == Edge::kLeft ? 1 : n / 2;
  };
  if (child->level == 0) {
    size_t mid = middle(child->entries.size());
    right->entries.assign(child->entries.begin() + static_cast<ptrdiff_t>(mid),
                          child->entries.end());
    child->entries.resize(mid);
    sep = Between(child->entries.back(), right->entries.front());
  } else {
    size_t mid = middle(child->kids.size());
    right->kids.assign(child->kids.begin() + static_cast<ptrdiff_t>(mid),
                       child->kids.end());
    child->kids.resize(mid);
    sep = right->kids.front().sep;  // a separator already: child mid's
  }
  uint64_t moved = Total(right);
  child->dirty = true;
  parent->kids[pos].count -= moved;
  parent->kids.insert(parent->kids.begin() + static_cast<ptrdiff_t>(pos) + 1,
                      Child{right->index, moved, sep});
  parent->dirty = true;
}

// A new top over the old one, which then splits.
void ZTree::GrowTop(Edge edge) {
  Node* old = Top();
  if (old == nullptr) return;
  if (shape_.height >= kMaxHeight) {
    ok_ = false;
    return;
  }
  Node* top = Alloc(static_cast<uint8_t>(old->level + 1));
  if (top == nullptr) return;
  top->kids.push_back(Child{old->index, Total(old), ZEntry{{}, 0}});
  shape_.top = top->index;
  ++shape_.height;
  SplitChild(top, 0, edge);
}

bool ZTree::Erase(const ZEntry& e) {
  if (c_->txn == nullptr && !fresh_) {
    ok_ = false;  // as Insert
    return false;
  }
  std::vector<Step> path;
  if (!Descend(e, &path)) return false;
  Node* leaf = path.back().node;
  auto it =
      std::lower_bound(leaf->entries.begin(), leaf->entries.end(), e, ZLess);
  if (it == leaf->entries.end() || it->member != e.member ||
      it->score != e.score) {
    return false;
  }
  leaf->entries.erase(it);
  leaf->dirty = true;
  for (size_t k = path.size() - 1; k-- > 0;) {
    --path[k].node->kids[path[k].pos].count;
    path[k].node->dirty = true;
    Rebalance(path[k].node, path[k].pos);
  }
  // A top of one child gives way to it.
  for (Node* top = Top(); top != nullptr && top->level > 0 &&
                          top->kids.size() == 1;
       top = Top()) {
    shape_.top = top->kids[0].node;
    --shape_.height;
    Free(top);
  }
  return true;
}

// After child `pos` of `parent` lost an entry: an empty child is freed;
// one under a quarter full merges with a neighbour when both fit in one.
void ZTree::Rebalance(Node* parent, size_t pos) {
  uint8_t level = static_cast<uint8_t>(parent->level - 1);
  Node* child = Get(parent->kids[pos].node, level, parent->kids[pos].count);
  if (child == nullptr) return;
  if (parent->kids[pos].count == 0) {
    Free(child);
    parent->kids.erase(parent->kids.begin() + static_cast<ptrdiff_t>(pos));
    parent->dirty = true;
    return;
  }
  if (!Under(child) || parent->kids.size() < 2) return;
  size_t l = pos + 1 < parent->kids.size() ? pos : pos - 1;
  Node* left = Get(parent->kids[l].node, level, parent->kids[l].count);
  Node* right = left == nullptr ? nullptr
                                : Get(parent->kids[l + 1].node, level,
                                      parent->kids[l + 1].count);
  if (right == nullptr) return;
  if (level == 0) {
    if (left->entries.size() + right->entries.size() > kLeafEntries ||
        Bytes(left) + Bytes(right) > kLeafBytes) {
      return;
    }
    left->entries.insert(left->entries.end(), right->entries.begin(),
                         right->entries.end());
  } else {
    if (left->kids.size() + right->kids.size() > kInnerChildren ||
        Bytes(left) + Bytes(right) > kInnerBytes) {
      return;
    }
    // Right's first child is now read by its separator: the parent's.
    right->kids[0].sep = parent->kids[l + 1].sep;
    left->kids.insert(left->kids.end(), right->kids.begin(),
                      right->kids.end());
  }
  left->dirty = true;
  parent->kids[l].count += parent->kids[l + 1].count;
  parent->kids.erase(parent->kids.begin() + static_cast<ptrdiff_t>(l) + 1);
  parent->dirty = true;
  Free(right);
}

uint64_t ZTree::Count(const std::function<bool(const ZEntry&)>& less) {
  uint64_t total = 0;
  Node* n = Top();
  while (n != nullptr && n->level > 0) {
    if (n->kids.empty()) return 0;  // emptied by this command
    // The last child whose separator `less` holds for (child 0 if none):
    // every child before it lies wholly below.
    auto it = std::partition_point(n->kids.begin() + 1, n->kids.end(),
                                   [&](const Child& k) { return less(k.sep); });
    size_t pos = static_cast<size_t>(it - n->kids.begin()) - 1;
    for (size_t j = 0; j < pos; ++j) total += n->kids[j].count;
    n = Get(n->kids[pos].node, static_cast<uint8_t>(n->level - 1),
            n->kids[pos].count);
  }
  if (n == nullptr) return 0;
  return total + static_cast<uint64_t>(
                     std::partition_point(n->entries.begin(),
                                          n->entries.end(), less) -
                     n->entries.begin());
}

bool ZTree::At(uint64_t rank, ZEntry* e) {
  Node* n = Top();
  while (n != nullptr && n->level > 0) {
    size_t pos = 0;
    while (pos < n->kids.size() && rank >= n->kids[pos].count) {
      rank -= n->kids[pos].count;
      ++pos;
    }
    if (pos == n->kids.size()) return false;
    n = Get(n->kids[pos].node, static_cast<uint8_t>(n->level - 1),
            n->kids[pos].count);
  }
  if (n == nullptr || rank >= n->entries.size()) return false;
  *e = n->entries[rank];
  return true;
}

bool ZTree::Walk(uint64_t rank, bool forward,
                 const std::function<bool(const ZEntry&)>& f) {
  Node* top = Top();
  if (top == nullptr) return false;
  uint64_t n = Total(top);
  if (rank >= n) return true;
  bool stop = false;
  return WalkIn(top, forward ? rank : n - 1 - rank, forward, f, &stop);
}

// Visits n's entries from `skip` past its first (forward) or its last.
bool ZTree::WalkIn(Node* n, uint64_t skip, bool forward,
                   const std::function<bool(const ZEntry&)>& f, bool* stop) {
  if (n->level == 0) {
    size_t size = n->entries.size();
    for (size_t i = static_cast<size_t>(skip); i < size; ++i) {
      if (!f(n->entries[forward ? i : size - 1 - i])) {
        *stop = true;
        return true;
      }
    }
    return true;
  }
  size_t kids = n->kids.size();
  for (size_t i = 0; i < kids && !*stop; ++i) {
    // Copied: the walk never changes the tree, but stay safe if it did.
    Child k = n->kids[forward ? i : kids - 1 - i];
    if (skip >= k.count) {
      skip -= k.count;
      continue;
    }
    Node* child = Get(k.node, static_cast<uint8_t>(n->level - 1), k.count);
    if (child == nullptr || !WalkIn(child, skip, forward, f, stop)) {
      return false;
    }
    skip = 0;
  }
  return true;
}

Store::Status ZTree::Save(CommandContext* c) {
  std::string bytes;
  for (auto& [index, n] : loaded_) {
    if (!n.dirty) continue;
    bytes.clear();
    const size_t items = n.level == kFreeTag ? 2
                         : n.level == 0      ? 1 + 2 * n.entries.size()
                                             : 1 + 3 * n.kids.size();
    PackedWriter w(&bytes, items, Bytes(&n) + 5 * items);
    const char tag = static_cast<char>(n.level);
    w.Add(&tag, 1);
    if (n.level == kFreeTag) {
      w.Add(&n.next_free, 8);
    } else if (n.level == 0) {
      for (const ZEntry& e : n.entries) {
        w.Add(e.member);
        w.Add(&e.score, 8);
      }
    } else {
      for (const Child& k : n.kids) {
        uint64_t meta[2] = {k.node, k.count};
        w.Add(meta, 16);
        w.Add(&k.sep.score, 8);
        w.Add(k.sep.member);
      }
    }
    w.Finish();
    // A node whose changes cancel out (a member moved within its
    // children: one count down, one up) is not written again.
    if (!n.orig.empty() && bytes == n.orig) {
      n.dirty = false;
      continue;
    }
    Store::Status st = c->txn->WritePart(id_, PartOf(index), bytes);
    if (st != Store::Status::kOk) return st;
    n.dirty = false;
    n.orig = {};  // no longer what the transaction holds
  }
  return Store::Status::kOk;
}

}  // namespace cmd
}  // namespace shmkv
