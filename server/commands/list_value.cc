// A list in its packed or chunked form (server/commands/list_value.h).
#include "server/commands/list_value.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "server/commands/command_util.h"
#include "server/commands/kept_table.h"
#include "server/commands/packed.h"

namespace shmkv {
namespace cmd {

// A list's chunk heads this thread keeps (Heads below).
struct ListValue::HeadTable {
  struct Head {
    uint64_t version = 0;  // its part's, before it was read
    uint64_t prev = 0, next = 0;
    uint32_t count = 0;  // 0: not kept
  };
  uint64_t epoch = 0;
  std::vector<Head> heads;  // by chunk index
};

namespace {

constexpr size_t kRootBytes = sizeof(PartsRoot) + 3 * 8;
constexpr size_t kChunkHead = 16;  // prev, next

// The chunk heads (links and count) this thread read, per list, each
// with the stamp its part had before it was read (PartStamp): a walk to
// the middle of a long list (LINDEX, LRANGE, LSET) takes a head from
// here while its part's version is unchanged, instead of a map look-up
// per chunk. A list's table only grows, and only when the list is opened
// (a walk's table stays put while it walks); lists longer than a quarter
// of the bound are not kept.
constexpr size_t kHeadBytes = size_t{16} << 20;

KeptTable<ListValue::HeadTable>& Heads() {
  thread_local KeptTable<ListValue::HeadTable> kept(kHeadBytes);
  return kept;
}

// The table of list `id` for a walk over `chunks` chunks (null when a
// list that long is not kept).
std::shared_ptr<ListValue::HeadTable> OpenHeads(uint64_t store, uint64_t id,
                                                uint64_t chunks) {
  using Table = ListValue::HeadTable;
  if (chunks > kHeadBytes / sizeof(Table::Head) / 4) return nullptr;
  const KeptTable<Table>::Key key{store, id, 0};
  std::shared_ptr<Table> t = Heads().Find(key);
  const bool kept = t != nullptr;
  if (!kept) t = std::make_shared<Table>();
  if (!kept || t->heads.size() < chunks) {
    if (t->heads.size() < chunks) t->heads.resize(chunks);
    Heads().Put(key, t, t->heads.size() * sizeof(Table::Head) + 128);
  }
  return t;
}

size_t ItemBytes(const std::vector<std::string_view>& items) {
  size_t n = 0;
  for (std::string_view s : items) n += s.size();
  return n;
}

}  // namespace

ListValue::Load ListValue::Open(CommandContext* c, std::string_view key) {
  c_ = c;
  exists_ = ReadValue(c, key, &value_);
  if (!exists_) return Load::kOk;
  if (value_.type != ValueType::kList) return Load::kWrongType;
  if ((value_.encoding & kEncodingParts) != 0) {
    if (value_.encoding != kListChunks || !ReadRoot(value_.bytes)) {
      return Load::kDamaged;
    }
    chunked_ = true;
    return Load::kOk;
  }
  if (value_.encoding != kListPacked) return Load::kDamaged;
  arena_.push_back(std::move(value_.bytes));
  if (!Unpack(arena_.back(), &packed_.items)) return Load::kDamaged;
  count_ = packed_.items.size();
  packed_.src = arena_.back();
  packed_.run_hi = count_;
  return Load::kOk;
}

bool ListValue::ReadRoot(std::string_view bytes) {
  PartsRoot root;
  if (bytes.size() != kRootBytes) return false;
  std::memcpy(&root, bytes.data(), sizeof(root));
  std::memcpy(&count_, bytes.data() + 16, 8);
  std::memcpy(&head_, bytes.data() + 24, 8);
  std::memcpy(&tail_, bytes.data() + 32, 8);
  if (root.id == 0 || root.parts == 0 ||
      root.parts > c_->store->Capacity() || head_ >= root.parts ||
      tail_ >= root.parts) {
    return false;
  }
  id_ = root.id;
  chunks_ = root.parts;
  return true;
}

ListValue::Chunk* ListValue::Get(uint64_t index) {
  auto it = loaded_.find(index);
  if (it != loaded_.end()) return it->second.removed ? nullptr : &it->second;
  if (index >= chunks_) {
    ok_ = false;
    return nullptr;
  }
  Chunk& ch = loaded_[index];
  ch.index = index;
  std::string& bytes = arena_.emplace_back();
  bool found = c_->txn != nullptr
                   ? c_->txn->ReadPart(id_, index, &bytes) ==
                         Store::Status::kOk
                   : c_->store->GetPart(id_, index, &bytes);
  bool good = found && bytes.size() >= kChunkHead;
  if (good) {
    std::memcpy(&ch.prev, bytes.data(), 8);
    std::memcpy(&ch.next, bytes.data() + 8, 8);
    good = (ch.prev == kNone || ch.prev < chunks_) &&
           (ch.next == kNone || ch.next < chunks_) &&
           Unpack(std::string_view(bytes).substr(kChunkHead), &ch.items);
  }
  if (!good) {
    loaded_.erase(index);
    ok_ = false;
    return nullptr;
  }
  ch.src = std::string_view(bytes).substr(kChunkHead);
  ch.run_hi = ch.items.size();
  return &ch;
}

// `take` elements gone from one end: the run read keeps its place.
void ListValue::Chunk::Popped(bool front, size_t take) {
  if (front) {
    run_lo = std::max(run_lo, take) - take;
    run_hi = std::max(run_hi, take) - take;
  } else {
    run_hi = std::min(run_hi, items.size());
    run_lo = std::min(run_lo, run_hi);
  }
}

// The links and element count of chunk `index`. A reader that has not
// loaded the chunk reads its head alone (links and count: the first bytes
// of its part), so a walk that skips whole chunks copies none of their
// elements; in a transaction the chunk is loaded (the transaction may
// have changed it).
bool ListValue::Peek(uint64_t index, uint64_t* prev, uint64_t* next,
                     uint64_t* count) {
  auto it = loaded_.find(index);
  // The part's stamp before its head is read: false when a transaction
  // holds the part itself (or a save reads the past).
  PartStamp stamp;
  const bool stamped =
      it == loaded_.end() && index < chunks_ &&
      (c_->txn != nullptr ? c_->txn->StampPart(id_, index, &stamp)
                          : c_->store->StampPart(id_, index, &stamp));
  if (it != loaded_.end() || (c_->txn != nullptr && !stamped)) {
    Chunk* ch = Get(index);
    if (ch == nullptr) return false;
    *prev = ch->prev;
    *next = ch->next;
    *count = ch->items.size();
    return true;
  }
  if (index >= chunks_) {
    ok_ = false;
    return false;
  }
  // A head kept while its part is unchanged (checked again below as a
  // head just read is: the list may have fewer chunks now).
  HeadTable::Head* kept = nullptr;
  if (stamped) {
    if (heads_ == nullptr || heads_store_ != stamp.store) {
      heads_ = OpenHeads(stamp.store, id_, chunks_);
      heads_store_ = stamp.store;
    }
    if (heads_ != nullptr && index < heads_->heads.size()) {
      if (heads_->epoch != stamp.epoch) {
        for (HeadTable::Head& h : heads_->heads) h.count = 0;
        heads_->epoch = stamp.epoch;
      }
      kept = &heads_->heads[index];
      if (kept->count != 0 && kept->version == stamp.version) {
        return CheckHead(kept->prev, kept->next, kept->count, prev, next,
                         count);
      }
    }
  }
  constexpr size_t kCountBytes = 5;  // the longest varint
  std::string& head = peek_;  // (kept: a walk peeks thousands of heads)
  uint32_t n = 0;
  if (!c_->store->GetPartHead(id_, index, kChunkHead + kCountBytes, &head) ||
      head.size() < kChunkHead + 1 ||
      !PackedCount(std::string_view(head).substr(kChunkHead), &n)) {
    ok_ = false;
    return false;
  }
  uint64_t p = 0, x = 0;
  std::memcpy(&p, head.data(), 8);
  std::memcpy(&x, head.data() + 8, 8);
  if (!CheckHead(p, x, n, prev, next, count)) return false;
  if (kept != nullptr) *kept = HeadTable::Head{stamp.version, p, x, n};
  return true;
}

// A chunk head's links and count, checked: a chunk holds 1 .. 2 *
// kChunkElements elements (Normalize splits above that, and unlinks an
// empty one) and links to chunks there are.
bool ListValue::CheckHead(uint64_t p, uint64_t x, uint64_t n, uint64_t* prev,
                          uint64_t* next, uint64_t* count) {
  if ((p != kNone && p >= chunks_) || (x != kNone && x >= chunks_) ||
      n == 0 || n > 2 * kChunkElements) {
    ok_ = false;
    return false;
  }
  *prev = p;
  *next = x;
  *count = n;
  return true;
}

// The chunk that holds element *skip counted from one end, *skip made the
// element's place in it: the chunks before it are skipped by their heads
// (Peek), their links checked both ways as Advance checks them.
ListValue::Chunk* ListValue::Skip(bool front, uint64_t* skip) {
  steps_ = 0;
  if (!chunked_) return &packed_;
  uint64_t at = front ? head_ : tail_, from = kNone, count = 0;
  for (;;) {
    uint64_t prev = kNone, next = kNone;
    if (!Peek(at, &prev, &next, &count)) return nullptr;
    if ((front ? prev : next) != from) {
      ok_ = false;  // links that disagree, or an end with a chunk beyond
      return nullptr;
    }
    if (*skip < count) break;
    *skip -= count;
    uint64_t to = front ? next : prev;
    if (to == kNone || ++steps_ > chunks_) {
      ok_ = false;  // fewer elements than the root counts, or a loop
      return nullptr;
    }
    from = at;
    at = to;
  }
  Chunk* ch = Get(at);
  if (ch != nullptr && ch->items.size() != count) {
    ok_ = false;  // its head and its elements disagree
    return nullptr;
  }
  return ch;
}

ListValue::Chunk* ListValue::First(bool front) {
  steps_ = 0;
  if (!chunked_) return &packed_;
  Chunk* ch = Get(front ? head_ : tail_);
  // The end chunk has nothing beyond it.
  if (ch != nullptr && (front ? ch->prev : ch->next) != kNone) {
    ok_ = false;
    return nullptr;
  }
  return ch;
}

ListValue::Chunk* ListValue::Advance(const Chunk* ch, bool front) {
  if (!chunked_) return nullptr;
  uint64_t to = front ? ch->next : ch->prev;
  if (to == kNone) return nullptr;
  // A walk longer than the chunks there are goes round a damaged loop.
  if (++steps_ > chunks_) {
    ok_ = false;
    return nullptr;
  }
  Chunk* n = Get(to);
  // Links agree both ways, or they are damaged (a loop among them too).
  if (n != nullptr && (front ? n->prev : n->next) != ch->index) {
    ok_ = false;
    return nullptr;
  }
  return n;
}

bool ListValue::Full(const Chunk& ch) const {
  return ch.items.size() >= kChunkElements ||
         ItemBytes(ch.items) >= kChunkBytes;
}

ListValue::Chunk* ListValue::NewChunk() {
  Chunk& ch = loaded_[chunks_];
  ch = Chunk();
  ch.index = chunks_++;
  ch.dirty = true;
  root_dirty_ = true;
  return &ch;
}

// Takes `ch` out of the chain; its index is given back at Save.
void ListValue::Unlink(Chunk* ch) {
  Chunk* prev = ch->prev == kNone ? nullptr : Get(ch->prev);
  Chunk* next = ch->next == kNone ? nullptr : Get(ch->next);
  if (prev != nullptr) {
    prev->next = ch->next;
    prev->dirty = true;
  } else {
    head_ = ch->next;
  }
  if (next != nullptr) {
    next->prev = ch->prev;
    next->dirty = true;
  } else {
    tail_ = ch->prev;
  }
  ch->removed = true;
  ch->dirty = false;
  root_dirty_ = true;
}

void ListValue::Push(bool front, std::string_view v) {
  ++count_;
  root_dirty_ = true;
  if (!chunked_) {
    auto at = front ? packed_.items.begin() : packed_.items.end();
    packed_.items.insert(at, v);
    if (front) ++packed_.run_lo, ++packed_.run_hi;
    packed_.dirty = true;
    return;
  }
  Chunk* end = Get(front ? head_ : tail_);
  if (end == nullptr) return;
  if (Full(*end)) {
    uint64_t end_index = end->index;
    Chunk* fresh = NewChunk();  // may move map nodes? no: std::map is stable
    end = Get(end_index);
    if (front) {
      fresh->next = end->index;
      end->prev = fresh->index;
      head_ = fresh->index;
    } else {
      fresh->prev = end->index;
      end->next = fresh->index;
      tail_ = fresh->index;
    }
    end->dirty = true;
    end = fresh;
  }
  end->items.insert(front ? end->items.begin() : end->items.end(), v);
  if (front) ++end->run_lo, ++end->run_hi;
  end->dirty = true;
}

bool ListValue::Pop(bool front, uint64_t n,
                    std::vector<std::string_view>* out) {
  while (n > 0 && count_ > 0) {
    Chunk* end = chunked_ ? Get(front ? head_ : tail_) : &packed_;
    if (end == nullptr) return false;
    if (end->items.empty()) {
      ok_ = false;  // the root counts elements its chunks do not hold
      return false;
    }
    uint64_t take = std::min<uint64_t>(n, end->items.size());
    for (uint64_t k = 0; k < take; ++k) {
      if (front) {
        out->push_back(end->items[k]);
      } else {
        out->push_back(end->items[end->items.size() - 1 - k]);
      }
    }
    if (front) {
      end->items.erase(end->items.begin(),
                       end->items.begin() + static_cast<ptrdiff_t>(take));
    } else {
      end->items.resize(end->items.size() - take);
    }
    end->Popped(front, static_cast<size_t>(take));
    end->dirty = true;
    count_ -= take;
    n -= take;
    root_dirty_ = true;
    if (chunked_ && end->items.empty() && count_ > 0) Unlink(end);
  }
  return ok_;
}

bool ListValue::Range(uint64_t start, uint64_t stop,
                      std::vector<std::string_view>* out) {
  // From the nearer end: the tail's side walks backwards, then reverses.
  bool front = start <= count_ - 1 - stop;
  uint64_t skip = front ? start : count_ - 1 - stop;
  uint64_t want = stop - start + 1;
  size_t first = out->size();
  for (Chunk* ch = Skip(front, &skip); ch != nullptr && want > 0;
       ch = Advance(ch, front)) {
    size_t n = ch->items.size();
    for (size_t k = skip; k < n && want > 0; ++k, --want) {
      out->push_back(front ? ch->items[k] : ch->items[n - 1 - k]);
    }
    skip = 0;
  }
  if (!ok_ || want > 0) {
    ok_ = false;  // fewer elements than the root counts
    return false;
  }
  if (!front) std::reverse(out->begin() + static_cast<ptrdiff_t>(first),
                           out->end());
  return true;
}

bool ListValue::Index(uint64_t i, std::string_view* v) {
  std::vector<std::string_view> one;
  if (!Range(i, i, &one)) return false;
  *v = one[0];
  return true;
}

bool ListValue::SetAt(uint64_t i, std::string_view v) {
  bool front = i <= count_ - 1 - i;
  uint64_t skip = front ? i : count_ - 1 - i;
  Chunk* ch = Skip(front, &skip);
  if (ch == nullptr || skip >= ch->items.size()) {
    ok_ = false;
    return false;
  }
  size_t n = ch->items.size();
  ch->items[front ? skip : n - 1 - skip] = v;
  ch->Reordered();
  ch->dirty = true;
  return true;
}

bool ListValue::InsertAt(std::string_view pivot, bool after,
                         std::string_view v, bool* found) {
  *found = false;
  steps_ = 0;
  for (Chunk* ch = First(true); ch != nullptr; ch = Advance(ch, true)) {
    for (size_t k = 0; k < ch->items.size(); ++k) {
      if (ch->items[k] != pivot) continue;
      ch->items.insert(ch->items.begin() + static_cast<ptrdiff_t>(k) +
                           (after ? 1 : 0),
                       v);
      ch->Reordered();
      ch->dirty = true;
      ++count_;
      root_dirty_ = true;
      *found = true;
      return true;
    }
  }
  return ok_;
}

Store::Status ListValue::Save(CommandContext* c, std::string_view key) {
  using Status = Store::Status;
  if (count_ == 0) return exists_ ? c->txn->Delete(key) : Status::kOk;
  std::string bytes;
  if (!chunked_) {
    if (packed_.items.size() <= kChunkElements &&
        ItemBytes(packed_.items) <= kChunkBytes) {
      PackReusing(packed_.items, packed_.run_lo, packed_.run_hi,
                  packed_.src, &bytes);
      return c->txn->Write(key, ValueType::kList, kListPacked, bytes,
                           value_.expire_ms);
    }
    Status st = ToChunks(c);
    if (st != Status::kOk) return st;
  }
  Status st = Normalize(c);
  if (st != Status::kOk) return st;
  for (auto& [index, ch] : loaded_) {
    if (!ch.dirty || ch.removed) continue;
    bytes.assign(kChunkHead, '\0');
    std::memcpy(&bytes[0], &ch.prev, 8);
    std::memcpy(&bytes[8], &ch.next, 8);
    PackReusing(ch.items, ch.run_lo, ch.run_hi, ch.src, &bytes);
    st = c->txn->WritePart(id_, index, bytes);
    if (st != Status::kOk) return st;
  }
  if (!root_dirty_) {
    c->txn->Touched(key);
    return Status::kOk;
  }
  PartsRoot root{id_, chunks_};
  bytes.assign(kRootBytes, '\0');
  std::memcpy(&bytes[0], &root, sizeof(root));
  std::memcpy(&bytes[16], &count_, 8);
  std::memcpy(&bytes[24], &head_, 8);
  std::memcpy(&bytes[32], &tail_, 8);
  return c->txn->Write(key, ValueType::kList, kListChunks, bytes,
                       value_.expire_ms);
}

// From packed to chunks: the elements in order, chunks filled in turn.
Store::Status ListValue::ToChunks(CommandContext* c) {
  id_ = c->txn->NewCollection();
  chunks_ = 0;
  chunked_ = true;
  Chunk* ch = nullptr;
  for (std::string_view v : packed_.items) {
    if (ch == nullptr || Full(*ch)) {
      Chunk* fresh = NewChunk();
      if (ch == nullptr) {
        head_ = fresh->index;
      } else {
        ch->next = fresh->index;
        fresh->prev = ch->index;
      }
      ch = fresh;
    }
    ch->items.push_back(v);
  }
  tail_ = ch->index;
  root_dirty_ = true;
  return Store::Status::kOk;
}

// Before writing: chunks that emptied are unlinked, chunks grown past
// twice the limits (LINSERT, LSET) are split, and the freed indexes are
// filled from the top (Compact).
Store::Status ListValue::Normalize(CommandContext* c) {
  std::vector<uint64_t> dirty;
  for (auto& [index, ch] : loaded_) {
    if (ch.dirty && !ch.removed) dirty.push_back(index);
  }
  for (uint64_t index : dirty) {
    Chunk* ch = &loaded_[index];
    if (ch->items.empty()) {
      Unlink(ch);
      continue;
    }
    while (ch->items.size() > 2 * kChunkElements ||
           (ch->items.size() > 1 && ItemBytes(ch->items) > 2 * kChunkBytes)) {
      // The second half moves to a new chunk linked after this one.
      uint64_t at = ch->index;
      Chunk* fresh = NewChunk();
      ch = &loaded_[at];
      size_t half = ch->items.size() / 2;
      fresh->items.assign(ch->items.begin() + static_cast<ptrdiff_t>(half),
                          ch->items.end());
      ch->items.resize(half);
      ch->Reordered();
      fresh->prev = ch->index;
      fresh->next = ch->next;
      if (ch->next != kNone) {
        Chunk* after = Get(ch->next);
        if (after == nullptr) return Store::Status::kNotFound;
        after->prev = fresh->index;
        after->dirty = true;
      } else {
        tail_ = fresh->index;
      }
      ch->next = fresh->index;
      ch->dirty = true;
      ch = fresh;
    }
  }
  return ok_ ? Compact(c) : Store::Status::kNotFound;
}

// Indexes stay dense: each freed index takes the chunk at the top index
// (its neighbours and the root follow it), and the top index goes.
Store::Status ListValue::Compact(CommandContext* c) {
  std::set<uint64_t> freed;
  for (auto& [index, ch] : loaded_) {
    if (ch.removed) freed.insert(index);
  }
  while (!freed.empty()) {
    uint64_t top = chunks_ - 1;
    if (freed.count(top) == 0) {
      uint64_t hole = *freed.begin();
      Chunk* moving = Get(top);
      if (moving == nullptr) return Store::Status::kNotFound;
      Chunk moved = *moving;
      moving->removed = true;
      moving->dirty = false;
      Chunk& dest = loaded_[hole];
      dest = moved;
      dest.index = hole;
      dest.removed = false;
      dest.dirty = true;
      for (uint64_t side : {dest.prev, dest.next}) {
        if (side == kNone) continue;
        Chunk* n = Get(side);
        if (n == nullptr) return Store::Status::kNotFound;
        if (n->prev == top) n->prev = hole;
        if (n->next == top) n->next = hole;
        n->dirty = true;
      }
      if (head_ == top) head_ = hole;
      if (tail_ == top) tail_ = hole;
      freed.erase(hole);
      freed.insert(top);
    }
    Store::Status st = c->txn->DeletePart(id_, top);
    if (st != Store::Status::kOk && st != Store::Status::kNotFound) return st;
    loaded_.erase(top);
    freed.erase(top);
    --chunks_;
    root_dirty_ = true;
  }
  return Store::Status::kOk;
}

}  // namespace cmd
}  // namespace shmkv
