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
constexpr size_t kGroupFixed = 40;
constexpr size_t kConsumerFixed = 8;
constexpr size_t kNackFixed = 40;  // tag, ID, delivery time, count
constexpr uint64_t kPelBase = 2;

uint64_t PartsOf(const ZTree::Shape& entries, const ZTree::Shape* pel) {
  uint64_t parts = 2 * entries.nodes;
  if (pel != nullptr) parts = std::max(parts, 2 * pel->nodes + 1);
  return parts;
}

uint64_t BigEndian(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void PutBigEndian(uint64_t v, char* p) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
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
  PutBigEndian(ms, out);
  PutBigEndian(seq, out + 8);
}

bool StreamId::FromKey(std::string_view bytes, StreamId* id) {
  if (bytes.size() < 16) return false;
  id->ms = BigEndian(bytes.data());
  id->seq = BigEndian(bytes.data() + 8);
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

// ---- Consumer groups ----

StreamConsumer* StreamGroup::Find(std::string_view name) {
  auto it = std::lower_bound(
      consumers.begin(), consumers.end(), name,
      [](const StreamConsumer& k, std::string_view n) { return k.name < n; });
  return it != consumers.end() && it->name == name ? &*it : nullptr;
}

StreamConsumer* StreamGroup::Add(std::string_view name, uint64_t now_ms) {
  auto it = std::lower_bound(
      consumers.begin(), consumers.end(), name,
      [](const StreamConsumer& k, std::string_view n) { return k.name < n; });
  if (it != consumers.end() && it->name == name) return nullptr;
  return &*consumers.insert(it, StreamConsumer{std::string(name), now_ms});
}

bool StreamValue::Find(StreamId id, StreamEntry* e) {
  bool found = false;
  Walk(id, true, [&](const StreamEntry& x) {
    found = x.id == id;
    if (found) *e = x;
    return false;
  });
  return found && ok();
}

bool StreamValue::ParseGroups(std::string_view bytes) {
  std::vector<std::string_view> items;
  if (!Unpack(bytes, &items)) return false;
  size_t i = 0;
  std::vector<uint64_t> tags;
  while (i < items.size()) {
    if (items.size() - i < 2 || items[i + 1].size() != kGroupFixed) {
      return false;
    }
    StreamGroup g;
    g.name = std::string(items[i]);
    uint64_t w[5];
    std::memcpy(w, items[i + 1].data(), sizeof(w));
    g.tag = w[0];
    g.last = StreamId{w[1], w[2]};
    g.entries_read = static_cast<int64_t>(w[3]);
    i += 2;
    // Names in order, each once; tags below the next one given, each once.
    if ((!groups_.empty() && !(groups_.back().name < g.name)) ||
        g.tag >= next_tag_ || g.entries_read < -1 ||
        std::find(tags.begin(), tags.end(), g.tag) != tags.end() ||
        w[4] > (items.size() - i) / 2) {
      return false;
    }
    tags.push_back(g.tag);
    g.consumers.reserve(w[4]);
    for (uint64_t k = 0; k < w[4]; ++k, i += 2) {
      if (items[i + 1].size() != kConsumerFixed ||
          (!g.consumers.empty() && !(g.consumers.back().name < items[i]))) {
        return false;
      }
      StreamConsumer sc;
      sc.name = std::string(items[i]);
      std::memcpy(&sc.seen_ms, items[i + 1].data(), 8);
      g.consumers.push_back(std::move(sc));
    }
    groups_.push_back(std::move(g));
  }
  return true;
}

void StreamValue::PackGroups(std::string* out) const {
  std::vector<std::string> fixed;
  std::vector<std::string_view> items;
  size_t n = 0;
  for (const StreamGroup& g : groups_) n += 2 + 2 * g.consumers.size();
  fixed.reserve(n);
  for (const StreamGroup& g : groups_) {
    const uint64_t w[5] = {g.tag, g.last.ms, g.last.seq,
                           static_cast<uint64_t>(g.entries_read),
                           g.consumers.size()};
    fixed.emplace_back(reinterpret_cast<const char*>(w), sizeof(w));
    items.push_back(g.name);
    items.push_back(fixed.back());
    for (const StreamConsumer& k : g.consumers) {
      fixed.emplace_back(reinterpret_cast<const char*>(&k.seen_ms), 8);
      items.push_back(k.name);
      items.push_back(fixed.back());
    }
  }
  Pack(items, out);
}

std::vector<StreamGroup>* StreamValue::Groups() {
  if (!grouped_ || groups_loaded_) return ok_ ? &groups_ : nullptr;
  groups_loaded_ = true;
  std::string bytes;
  const bool found =
      c_->txn != nullptr
          ? c_->txn->ReadPart(id_, 0, &bytes) == Store::Status::kOk
          : c_->store->GetPart(id_, 0, &bytes);
  if (!found || !ParseGroups(bytes)) {
    ok_ = false;
    return nullptr;
  }
  return &groups_;
}

StreamGroup* StreamValue::FindGroup(std::string_view name) {
  std::vector<StreamGroup>* gs = Groups();
  if (gs == nullptr) return nullptr;
  for (StreamGroup& g : *gs) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

void StreamValue::ToGroupsForm() {
  if (grouped_) return;
  if (!in_parts_) {
    id_ = c_->txn->NewCollection();
    tree_.Build(c_, id_, entries_);
    in_parts_ = true;
  }
  pel_.Build(c_, id_, {}, kPelBase);
  grouped_ = groups_loaded_ = true;
  next_tag_ = 0;
  GroupsChanged();
}

StreamGroup* StreamValue::AddGroup(std::string_view name, StreamId last,
                                   int64_t entries_read) {
  if (Groups() == nullptr || FindGroup(name) != nullptr) return nullptr;
  ToGroupsForm();
  StreamGroup g;
  g.name = std::string(name);
  g.tag = next_tag_++;
  g.last = last;
  g.entries_read = entries_read;
  auto it = std::lower_bound(
      groups_.begin(), groups_.end(), name,
      [](const StreamGroup& x, std::string_view n) { return x.name < n; });
  GroupsChanged();
  return &*groups_.insert(it, std::move(g));
}

bool StreamValue::DestroyGroup(std::string_view name) {
  StreamGroup* g = FindGroup(name);
  if (g == nullptr) return false;
  std::vector<StreamId> ids;
  PelWalk(*g, StreamId{}, [&](const StreamNack& n) {
    ids.push_back(n.id);
    return true;
  });
  for (const StreamId& id : ids) PelErase(*g, id);
  groups_.erase(groups_.begin() + (g - groups_.data()));
  GroupsChanged();
  return true;
}

uint64_t StreamValue::DeleteConsumer(StreamGroup* g, std::string_view name) {
  std::vector<StreamId> ids;
  PelWalk(*g, StreamId{}, [&](const StreamNack& n) {
    if (n.consumer == name) ids.push_back(n.id);
    return true;
  });
  for (const StreamId& id : ids) PelErase(*g, id);
  auto it = std::find_if(g->consumers.begin(), g->consumers.end(),
                         [&](const StreamConsumer& k) {
                           return k.name == name;
                         });
  if (it != g->consumers.end()) g->consumers.erase(it);
  GroupsChanged();
  return ids.size();
}

std::string_view StreamValue::PelKey(uint64_t tag, StreamId id) {
  char k[24];
  PutBigEndian(tag, k);
  char idk[16];
  id.Key(idk);
  std::memcpy(k + 8, idk, 16);
  made_.emplace_back(k, 24);
  return made_.back();
}

bool StreamValue::DecodeNack(const ZEntry& z, uint64_t tag, StreamNack* n) {
  if (z.member.size() < kNackFixed || z.score != 0) return ok_ = false;
  if (BigEndian(z.member.data()) != tag) return false;
  StreamId::FromKey(z.member.substr(8), &n->id);
  std::memcpy(&n->delivery_ms, z.member.data() + 24, 8);
  std::memcpy(&n->count, z.member.data() + 32, 8);
  n->consumer = z.member.substr(kNackFixed);
  return true;
}

// The pending entry of (tag, id): one look-up, remembered until the
// tree changes (a claim or a delivery looks an entry up, then replaces it).
bool StreamValue::PelFind(uint64_t tag, StreamId id, ZEntry* z) {
  if (!grouped_) return false;
  const std::string_view key = PelKey(tag, id);
  if (pel_hit_valid_ && pel_hit_key_ == key) {
    *z = pel_hit_;
    return true;
  }
  const uint64_t rank = pel_.Count(
      [&](const ZEntry& e) { return e.member.substr(0, 24) < key; });
  if (rank >= pel_.size() || !pel_.At(rank, z) ||
      z->member.substr(0, 24) != key) {
    return false;
  }
  pel_hit_key_.assign(key.data(), key.size());
  pel_hit_ = *z;
  pel_hit_valid_ = true;
  return true;
}

bool StreamValue::PelGet(const StreamGroup& g, StreamId id, StreamNack* n) {
  ZEntry z;
  return PelFind(g.tag, id, &z) && DecodeNack(z, g.tag, n);
}

void StreamValue::PelPut(const StreamGroup& g, const StreamNack& n) {
  PelErase(g, n.id);  // the one it replaces, if any
  std::string bytes(PelKey(g.tag, n.id));
  bytes.append(reinterpret_cast<const char*>(&n.delivery_ms), 8);
  bytes.append(reinterpret_cast<const char*>(&n.count), 8);
  bytes.append(n.consumer.data(), n.consumer.size());
  made_.push_back(std::move(bytes));
  pel_hit_valid_ = false;
  pel_.Insert(ZEntry{made_.back(), 0});
  changed_ = true;
}

bool StreamValue::PelErase(const StreamGroup& g, StreamId id) {
  ZEntry z;
  if (!PelFind(g.tag, id, &z)) return false;
  pel_hit_valid_ = false;
  // The tree's views are into bytes it may drop on erase: a copy.
  made_.emplace_back(z.member);
  if (!pel_.Erase(ZEntry{made_.back(), 0})) return ok_ = false;
  changed_ = true;
  return true;
}

uint64_t StreamValue::PelCount(const StreamGroup& g) {
  if (!grouped_) return 0;
  const std::string_view lo = PelKey(g.tag, StreamId{});
  const std::string_view hi = PelKey(g.tag + 1, StreamId{});
  const uint64_t a = pel_.Count(
      [&](const ZEntry& z) { return z.member.substr(0, 24) < lo; });
  const uint64_t b = pel_.Count(
      [&](const ZEntry& z) { return z.member.substr(0, 24) < hi; });
  return b >= a ? b - a : 0;
}

bool StreamValue::PelWalk(const StreamGroup& g, StreamId from,
                          const std::function<bool(const StreamNack&)>& f) {
  if (!grouped_) return true;
  const std::string_view key = PelKey(g.tag, from);
  const uint64_t rank = pel_.Count(
      [&](const ZEntry& z) { return z.member.substr(0, 24) < key; });
  if (rank >= pel_.size()) return pel_.ok();
  return pel_.Walk(rank, true, [&](const ZEntry& z) {
    StreamNack n;
    if (!DecodeNack(z, g.tag, &n)) return false;
    return f(n);
  }) && ok() && pel_.ok();
}

bool StreamValue::PelLast(const StreamGroup& g, StreamNack* n) {
  if (!grouped_) return false;
  const std::string_view hi = PelKey(g.tag + 1, StreamId{});
  const uint64_t rank = pel_.Count(
      [&](const ZEntry& z) { return z.member.substr(0, 24) < hi; });
  ZEntry z;
  if (rank == 0 || !pel_.At(rank - 1, &z)) return false;
  return DecodeNack(z, g.tag, n);
}

bool StreamValue::PelPerConsumer(
    const StreamGroup& g, std::vector<std::pair<std::string, uint64_t>>* out) {
  out->clear();
  for (const StreamConsumer& k : g.consumers) out->emplace_back(k.name, 0);
  return PelWalk(g, StreamId{}, [&](const StreamNack& n) {
    auto it = std::lower_bound(
        out->begin(), out->end(), n.consumer,
        [](const std::pair<std::string, uint64_t>& p, std::string_view s) {
          return p.first < s;
        });
    if (it != out->end() && it->first == n.consumer) ++it->second;
    return true;
  });
}

int64_t StreamValue::EstimateRead(StreamId id) {
  const Counters& k = counters_;
  if (k.added == 0) return 0;
  const uint64_t length = size();
  if (length == 0 && id <= k.last) return static_cast<int64_t>(k.added);
  if (id == k.last) return static_cast<int64_t>(k.added);
  if (k.last < id) return -1;
  StreamEntry first;
  if (!Edge(true, &first)) return -1;
  if (k.max_deleted.zero() || k.max_deleted < first.id) {
    if (id < first.id) return static_cast<int64_t>(k.added - length);
    if (id == first.id) return static_cast<int64_t>(k.added - length + 1);
  }
  return -1;
}

bool StreamValue::TombstonesFrom(StreamId from) {
  const Counters& k = counters_;
  if (size() == 0 || k.max_deleted.zero()) return false;
  StreamEntry first;
  if (!Edge(true, &first)) return false;
  if (k.max_deleted < first.id) return false;
  return from <= k.max_deleted;
}

bool StreamValue::Lag(const StreamGroup& g, int64_t* lag) {
  const Counters& k = counters_;
  if (k.added == 0) {
    *lag = 0;
    return true;
  }
  if (g.entries_read != -1 && !TombstonesFrom(g.last)) {
    *lag = static_cast<int64_t>(k.added) - g.entries_read;
    return true;
  }
  const int64_t read = EstimateRead(g.last);
  if (read == -1) return false;
  *lag = static_cast<int64_t>(k.added) - read;
  return true;
}

}  // namespace cmd
}  // namespace shmkv
