// A stream, packed or in parts (server/commands/stream_value.h).
#include "server/commands/stream_value.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "server/commands/packed.h"
#include "server/store/int_text.h"

namespace shmkv {
namespace cmd {

namespace {

constexpr size_t kCounterWords = 10;
constexpr size_t kCounterBytes = kCounterWords * 8;
constexpr size_t kRootWords = 6 + kCounterWords;
constexpr size_t kGroupedRootWords = kRootWords + 5;

uint64_t PartsOf(const ZTree::Shape& entries, const ZTree::Shape* pel) {
  uint64_t parts = 2 * entries.nodes;
  if (pel != nullptr) parts = std::max(parts, 2 * pel->nodes + 1);
  return parts;
}

// Redis's string2ull: an integer as its strict rule reads one (no sign,
// no leading zero), else as strtoull(3) reads the whole text.
bool TextToU64(const std::string& s, uint64_t* v) {
  int64_t ll = 0;
  if (ParseInt64(s, &ll)) {
    if (ll < 0) return false;
    *v = static_cast<uint64_t>(ll);
    return true;
  }
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (errno == EINVAL || errno == ERANGE || *end != '\0') return false;
  *v = x;
  return true;
}

std::string_view Prefix(const ZEntry& z) { return z.member.substr(0, 16); }

}  // namespace

bool StreamId::Next() {
  if (seq != ~0ULL) {
    ++seq;
    return true;
  }
  if (ms == ~0ULL) return false;
  ++ms;
  seq = 0;
  return true;
}

bool StreamId::Prev() {
  if (seq != 0) {
    --seq;
    return true;
  }
  if (ms == 0) return false;
  --ms;
  seq = ~0ULL;
  return true;
}

std::string StreamId::Text() const {
  char buf[48];
  int n = std::snprintf(buf, sizeof(buf), "%llu-%llu",
                        static_cast<unsigned long long>(ms),
                        static_cast<unsigned long long>(seq));
  return std::string(buf, static_cast<size_t>(n));
}

void StreamId::Key(char (&out)[16]) const {
  StoreBigEndian(ms, out);
  StoreBigEndian(seq, out + 8);
}

bool StreamId::FromKey(std::string_view bytes, StreamId* id) {
  if (bytes.size() < 16) return false;
  id->ms = LoadBigEndian(bytes.data());
  id->seq = LoadBigEndian(bytes.data() + 8);
  return true;
}

bool ParseStreamId(std::string_view s, uint64_t missing_seq, bool strict,
                   StreamId* id, bool* seq_given) {
  if (s.size() > 127) return false;
  // Redis reads the argument as a C string: up to its first NUL.
  const std::string buf(s.data(), strnlen(s.data(), s.size()));
  if (strict && (buf == "-" || buf == "+")) return false;
  if (seq_given != nullptr) *seq_given = true;
  if (buf == "-") {
    *id = StreamId{0, 0};
    return true;
  }
  if (buf == "+") {
    *id = StreamId{~0ULL, ~0ULL};
    return true;
  }
  const size_t dash = buf.find('-');
  StreamId out;
  if (!TextToU64(buf.substr(0, dash), &out.ms)) return false;
  if (dash == std::string::npos) {
    out.seq = missing_seq;
  } else {
    const std::string rest = buf.substr(dash + 1);
    if (seq_given != nullptr && rest == "*") {
      out.seq = 0;
      *seq_given = false;
    } else if (!TextToU64(rest, &out.seq)) {
      return false;
    }
  }
  *id = out;
  return true;
}

bool StreamValue::ReadCounters(const char* p) {
  uint64_t w[kCounterWords];
  std::memcpy(w, p, sizeof(w));
  counters_.last = StreamId{w[0], w[1]};
  counters_.added = w[2];
  counters_.max_deleted = StreamId{w[3], w[4]};
  counters_.nodes = w[5];
  counters_.tail_total = w[6];
  counters_.tail_live = w[7];
  counters_.tail_first = StreamId{w[8], w[9]};
  return true;
}

void StreamValue::PutCounters(uint64_t* w) const {
  w[0] = counters_.last.ms;
  w[1] = counters_.last.seq;
  w[2] = counters_.added;
  w[3] = counters_.max_deleted.ms;
  w[4] = counters_.max_deleted.seq;
  w[5] = counters_.nodes;
  w[6] = counters_.tail_total;
  w[7] = counters_.tail_live;
  w[8] = counters_.tail_first.ms;
  w[9] = counters_.tail_first.seq;
}

StreamValue::Load StreamValue::Open(CommandContext* c, std::string_view key) {
  c_ = c;
  exists_ = ReadValue(c, key, &value_);
  if (!exists_) return Load::kOk;
  if (value_.type != ValueType::kStream) return Load::kWrongType;
  const std::string_view bytes = value_.bytes;
  if (value_.encoding == kStreamTree) {
    uint64_t w[kGroupedRootWords];
    grouped_ = bytes.size() == kGroupedRootWords * 8;
    if (bytes.size() != kRootWords * 8 && !grouped_) return Load::kDamaged;
    std::memcpy(w, bytes.data(), bytes.size());
    id_ = w[0];
    shape_ = ZTree::Shape{w[2], w[3], w[4], w[5]};
    if (grouped_) {
      pel_shape_ = ZTree::Shape{w[16], w[17], w[18], w[19]};
      next_tag_ = w[20];
    }
    const uint64_t capacity = c->store->Capacity();
    if (id_ == 0 ||
        w[1] != PartsOf(shape_, grouped_ ? &pel_shape_ : nullptr) ||
        !tree_.Attach(c, id_, shape_, capacity) ||
        (grouped_ &&
         !pel_.Attach(c, id_, pel_shape_, capacity, kPelBase))) {
      return Load::kDamaged;
    }
    ReadCounters(bytes.data() + 6 * 8);
    in_parts_ = true;
    return Load::kOk;
  }
  std::vector<std::string_view> items;
  if (value_.encoding != kStreamPacked || bytes.size() < kCounterBytes ||
      !Unpack(bytes.substr(kCounterBytes), &items)) {
    return Load::kDamaged;
  }
  ReadCounters(bytes.data());
  entries_.reserve(items.size());
  for (std::string_view item : items) {
    ZEntry z{item, 0};
    StreamEntry e;
    // In order, each ID once: else the bytes are not a stream.
    if (!Decode(z, &e) ||
        (!entries_.empty() && !(Prefix(entries_.back()) < Prefix(z)))) {
      return Load::kDamaged;
    }
    entries_.push_back(z);
  }
  return Load::kOk;
}

bool StreamValue::Decode(const ZEntry& z, StreamEntry* e) {
  const uint8_t flag =
      z.member.size() > 16 ? static_cast<uint8_t>(z.member[16]) : 0xff;
  const size_t head = flag == kNodeStartMax ? 33 : 17;
  if (z.score != 0 || flag > kNodeStartMax || z.member.size() < head ||
      !StreamId::FromKey(z.member, &e->id)) {
    return false;
  }
  e->fields = z.member.substr(head);
  PackedReader r(e->fields);
  if (!r.ok() || r.count() < 2 || r.count() % 2 != 0) return false;
  std::string_view s;
  while (r.Next(&s)) {
  }
  return r.Done();
}

uint64_t StreamValue::size() {
  return in_parts_ ? tree_.size() : entries_.size();
}

void StreamValue::Create() {
  changed_ = true;
  in_parts_ = false;
  entries_.clear();
  counters_ = Counters{};
  grouped_ = groups_changed_ = false;
  groups_loaded_ = true;
  groups_.clear();
}

std::string_view StreamValue::EntryKey(StreamId id) {
  char k[16];
  id.Key(k);
  made_.emplace_back(k, 16);
  return made_.back();
}

void StreamValue::Append(StreamId id, std::string_view fields,
                         uint64_t node_entries) {
  // An entry at or above the new ID is damage (the counters say the last
  // ID is below it): never an entry out of order.
  StreamEntry last;
  if (size() > 0 && (!Edge(false, &last) || !(last.id < id))) {
    ok_ = false;
    return;
  }
  Counters& k = counters_;
  const bool starts = k.tail_total == 0 ||
                      (node_entries > 0 && k.tail_total >= node_entries);
  if (starts) {
    ++k.nodes;
    k.tail_total = k.tail_live = 0;
    k.tail_first = id;
  }
  ++k.tail_total;
  ++k.tail_live;
  std::string bytes(EntryKey(id));
  bytes.push_back(starts ? 1 : 0);
  bytes.append(fields.data(), fields.size());
  made_.push_back(std::move(bytes));
  const ZEntry z{made_.back(), 0};
  if (in_parts_) {
    tree_.Insert(z);
  } else {
    entries_.push_back(z);
  }
  k.last = id;
  ++k.added;
  changed_ = true;
}

bool StreamValue::EntryAt(uint64_t rank, ZEntry* z) {
  if (rank >= size()) return false;
  if (in_parts_) return tree_.At(rank, z) || (ok_ = false);
  *z = entries_[rank];
  return true;
}

bool StreamValue::WalkRanks(
    uint64_t rank, bool forward,
    const std::function<bool(uint64_t, const ZEntry&)>& f) {
  uint64_t at = rank;
  auto each = [&](const ZEntry& z) {
    const bool go = f(at, z);
    forward ? ++at : --at;
    return go;
  };
  if (rank >= size()) return false;
  if (in_parts_) return tree_.Walk(rank, forward, each) && ok();
  if (forward) {
    for (uint64_t i = rank; i < entries_.size() && each(entries_[i]); ++i) {
    }
  } else {
    for (uint64_t i = rank + 1; i > 0 && each(entries_[i - 1]); --i) {
    }
  }
  return ok();
}

bool StreamValue::NodeMax(const ZEntry& z, StreamId* max) const {
  if (z.member.size() < 33 ||
      static_cast<uint8_t>(z.member[16]) != kNodeStartMax) {
    return false;
  }
  return StreamId::FromKey(z.member.substr(17), max);
}

bool StreamValue::Mark(uint64_t rank, bool start, const StreamId* max) {
  ZEntry z;
  if (!EntryAt(rank, &z) || z.member.size() < 17) return ok_ = false;
  StreamId had;
  const bool has = NodeMax(z, &had);
  if (Starts(z) == start && (max == nullptr ? !has : has && had == *max)) {
    return true;
  }
  std::string bytes(z.member.substr(0, 16));
  const uint8_t flag = !start ? 0 : max != nullptr ? kNodeStartMax : 1;
  bytes.push_back(static_cast<char>(flag));
  if (flag == kNodeStartMax) {
    char k[16];
    max->Key(k);
    bytes.append(k, 16);
  }
  bytes.append(z.member.substr(has ? 33 : 17));
  made_.push_back(std::move(bytes));
  const ZEntry marked{made_.back(), 0};
  if (in_parts_) {
    if (!tree_.Erase(z)) return ok_ = false;
    tree_.Insert(marked);
  } else {
    entries_[rank] = marked;
  }
  changed_ = true;
  return true;
}

uint64_t StreamValue::FirstNodeSize() {
  uint64_t n = 0;
  auto each = [&](const ZEntry& z) {
    if (n > 0 && Starts(z)) return false;
    ++n;
    return true;
  };
  if (in_parts_) {
    if (size() > 0) tree_.Walk(0, true, each);
  } else {
    for (const ZEntry& z : entries_) {
      if (!each(z)) break;
    }
  }
  return n;
}

uint64_t StreamValue::Trim(const TrimSpec& t) {
  Counters& k = counters_;
  uint64_t deleted = 0;
  while (size() > 0 && ok()) {
    if (t.by_length && size() <= t.maxlen) break;
    StreamEntry head;
    if (!Edge(true, &head)) break;
    const bool tail = !(head.id < k.tail_first);  // the last node too
    const uint64_t node = FirstNodeSize();
    if (node == 0) break;
    if (t.limit > 0 && deleted + node > t.limit) break;
    bool whole = false;
    if (t.by_length) {
      whole = size() - node >= t.maxlen;
    } else {
      // Redis judges a node by the last ID its listpack holds, an entry
      // XDEL removed included: the node's start keeps that one's ID.
      ZEntry z, first;
      StreamEntry last;
      StreamId max;
      whole = EntryAt(node - 1, &z) && Decode(z, &last) &&
              EntryAt(0, &first) &&
              (NodeMax(first, &max) && last.id < max ? max : last.id) <
                  t.minid;
    }
    if (whole) {
      PopFront(node);
      deleted += node;
      if (k.nodes > 0) --k.nodes;
      if (tail) k.tail_total = k.tail_live = 0;
      continue;
    }
    if (t.approx) break;
    // Entries from the front of this node, which keeps the rest.
    uint64_t drop = t.by_length ? size() - t.maxlen : CountBelow(t.minid, false);
    if (drop >= node && !t.by_length) {
      // Every live entry is below MINID, the node kept for an entry XDEL
      // removed: Redis keeps the node empty, shmkv has no entry to mark
      // it by and lets it go (docs/server.md, "Streams").
      PopFront(node);
      deleted += node;
      if (k.nodes > 0) --k.nodes;
      if (tail) k.tail_total = k.tail_live = 0;
      break;
    }
    if (drop >= node) drop = node - 1;
    if (drop > 0) {
      ZEntry first;
      StreamId max;
      const bool has = EntryAt(0, &first) && NodeMax(first, &max);
      PopFront(drop);
      Mark(0, true, has ? &max : nullptr);
      deleted += drop;
      if (tail) k.tail_live -= std::min(k.tail_live, drop);
    }
    break;
  }
  if (deleted > 0) changed_ = true;
  return deleted;
}

uint64_t StreamValue::CountBelow(StreamId id, bool inclusive) {
  const std::string_view key = EntryKey(id);
  auto less = [&](const ZEntry& z) {
    return inclusive ? Prefix(z) <= key : Prefix(z) < key;
  };
  if (in_parts_) return tree_.Count(less);
  return static_cast<uint64_t>(
      std::partition_point(entries_.begin(), entries_.end(), less) -
      entries_.begin());
}

bool StreamValue::Delete(StreamId id) {
  const uint64_t rank = CountBelow(id, false);
  if (rank >= size()) return false;
  ZEntry z;
  if (!EntryAt(rank, &z)) return false;
  StreamId at;
  if (!StreamId::FromKey(z.member, &at)) return ok_ = false;
  if (!(at == id)) return false;
  // The node's first live entry: the next one of its node takes the
  // flag, or the node is gone.
  bool emptied = false;
  ZEntry next;
  const bool more = EntryAt(rank + 1, &next) && !Starts(next);
  if (!ok()) return false;
  StreamId max;
  if (Starts(z)) {
    if (more) {
      if (!Mark(rank + 1, true, NodeMax(z, &max) ? &max : nullptr)) {
        return false;
      }
    } else {
      emptied = true;
    }
  } else if (!more) {
    // The node's last entry, its node kept: its start keeps this ID,
    // the node's last as Redis's listpack has it.
    uint64_t start = rank;
    bool hit = false;
    if (rank == 0 ||
        !WalkRanks(rank - 1, false, [&](uint64_t at, const ZEntry& e) {
          start = at;
          hit = Starts(e);
          return !hit;
        })) {
      return ok_ = false;
    }
    ZEntry head;
    if (!hit || !EntryAt(start, &head)) return ok_ = false;
    StreamId had;
    max = NodeMax(head, &had) && id < had ? had : id;
    if (!Mark(start, true, &max)) return false;
  }
  if (in_parts_) {
    if (!tree_.Erase(z)) return ok_ = false;
  } else {
    entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(rank));
  }
  Counters& k = counters_;
  if (emptied && k.nodes > 0) --k.nodes;
  if (!(id < k.tail_first)) {  // in the last node
    if (k.tail_live > 0) --k.tail_live;
    if (emptied) k.tail_total = k.tail_live = 0;
  }
  changed_ = true;
  return true;
}

bool StreamValue::PopFront(uint64_t n) {
  if (n == 0) return true;
  changed_ = true;
  if (!in_parts_) {
    n = std::min<uint64_t>(n, entries_.size());
    entries_.erase(entries_.begin(),
                   entries_.begin() + static_cast<ptrdiff_t>(n));
    return true;
  }
  for (uint64_t i = 0; i < n; ++i) {
    ZEntry z;
    if (!tree_.At(0, &z) || !tree_.Erase(z)) return ok_ = false;
  }
  return true;
}

bool StreamValue::Edge(bool first, StreamEntry* e) {
  const uint64_t n = size();
  if (n == 0) return false;
  ZEntry z;
  if (in_parts_) {
    if (!tree_.At(first ? 0 : n - 1, &z)) return ok_ = false;
  } else {
    z = first ? entries_.front() : entries_.back();
  }
  if (!Decode(z, e)) return ok_ = false;
  return true;
}

bool StreamValue::Walk(StreamId from, bool forward,
                       const std::function<bool(const StreamEntry&)>& f) {
  const uint64_t n = size();
  uint64_t rank = 0;
  if (forward) {
    rank = CountBelow(from, false);
    if (rank >= n) return ok();
  } else {
    rank = CountBelow(from, true);
    if (rank == 0) return ok();
    --rank;
  }
  auto each = [&](const ZEntry& z) {
    StreamEntry e;
    if (!Decode(z, &e)) return ok_ = false;
    return f(e);
  };
  if (in_parts_) return tree_.Walk(rank, forward, each) && ok();
  if (forward) {
    for (uint64_t i = rank; i < n && each(entries_[i]); ++i) {
    }
  } else {
    for (uint64_t i = rank + 1; i > 0 && each(entries_[i - 1]); --i) {
    }
  }
  return ok();
}

Store::Status StreamValue::Save(CommandContext* c, std::string_view key) {
  using Status = Store::Status;
  // Damage is answered as such, and nothing of it written.
  if (!changed_ || !ok() || !pel_.ok()) return Status::kOk;
  if (grouped_) return SaveGrouped(c, key);
  if (in_parts_ && size() == 0) {
    // Emptied: packed again (the write drops the parts).
    in_parts_ = false;
    entries_.clear();
  }
  if (!in_parts_) {
    size_t bytes = 0;
    for (const ZEntry& z : entries_) bytes += z.member.size();
    if (entries_.size() <= kPackedEntries && bytes <= kPackedBytes) {
      uint64_t w[kCounterWords];
      PutCounters(w);
      std::string out(reinterpret_cast<const char*>(w), sizeof(w));
      std::vector<std::string_view> items;
      items.reserve(entries_.size());
      for (const ZEntry& z : entries_) items.push_back(z.member);
      Pack(items, &out);
      return c->txn->Write(key, ValueType::kStream, kStreamPacked, out,
                           value_.expire_ms);
    }
    // Past a packed stream's limits: to parts.
    id_ = c->txn->NewCollection();
    tree_.Build(c, id_, entries_);
    in_parts_ = true;
  }
  Status st = tree_.Save(c);
  if (st != Status::kOk) return st;
  const ZTree::Shape& s = tree_.shape();
  uint64_t w[kRootWords] = {id_, 2 * s.nodes, s.nodes, s.top, s.free,
                            s.height};
  PutCounters(w + 6);
  return c->txn->Write(key, ValueType::kStream, kStreamTree,
                       std::string_view(reinterpret_cast<const char*>(w),
                                        sizeof(w)),
                       value_.expire_ms);
}

Store::Status StreamValue::SaveGrouped(CommandContext* c,
                                       std::string_view key) {
  using Status = Store::Status;
  if (groups_changed_) {
    std::string bytes;
    PackGroups(&bytes);
    Status st = c->txn->WritePart(id_, 0, bytes);
    if (st != Status::kOk) return st;
  }
  Status st = tree_.Save(c);
  if (st == Status::kOk) st = pel_.Save(c);
  if (st != Status::kOk) return st;
  const ZTree::Shape& s = tree_.shape();
  const ZTree::Shape& p = pel_.shape();
  uint64_t w[kGroupedRootWords] = {id_,    PartsOf(s, &p), s.nodes,
                                   s.top,  s.free,         s.height};
  PutCounters(w + 6);
  w[16] = p.nodes;
  w[17] = p.top;
  w[18] = p.free;
  w[19] = p.height;
  w[20] = next_tag_;
  return c->txn->Write(key, ValueType::kStream, kStreamTree,
                       std::string_view(reinterpret_cast<const char*>(w),
                                        sizeof(w)),
                       value_.expire_ms);
}

}  // namespace cmd
}  // namespace shmkv
