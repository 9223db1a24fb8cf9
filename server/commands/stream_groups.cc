// A stream's consumer groups and pending entries (server/commands/
// stream_value.h, the groups' form): part 0's groups and consumers, the
// pending entries' tree, and Redis's entries-read and lag arithmetic.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/commands/packed.h"
#include "server/commands/stream_value.h"

namespace shmkv {
namespace cmd {

namespace {

constexpr size_t kGroupFixed = 40;
constexpr size_t kConsumerFixed = 8;
constexpr size_t kNackFixed = 40;  // tag, ID, delivery time, count

}  // namespace


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
  StoreBigEndian(tag, k);
  char idk[16];
  id.Key(idk);
  std::memcpy(k + 8, idk, 16);
  made_.emplace_back(k, 24);
  return made_.back();
}

bool StreamValue::DecodeNack(const ZEntry& z, uint64_t tag, StreamNack* n) {
  if (z.member.size() < kNackFixed || z.score != 0) return ok_ = false;
  if (LoadBigEndian(z.member.data()) != tag) return false;
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
