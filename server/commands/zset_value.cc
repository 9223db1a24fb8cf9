// A sorted set, packed or in parts (server/commands/zset_value.h).
#include "server/commands/zset_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "server/commands/bucket_hints.h"
#include "server/commands/command_util.h"
#include "server/commands/packed.h"
#include "shmc/hash.h"

namespace shmkv {
namespace cmd {

std::string ScoreText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buf[64];
  if (v > -4503599627370495.0 && v < 4503599627370496.0 &&
      v == static_cast<double>(static_cast<long long>(v))) {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  }
  return buf;
}

ZSetValue::Load ZSetValue::Open(CommandContext* c, std::string_view key) {
  c_ = c;
  exists_ = ReadValue(c, key, &value_);
  if (!exists_) return Load::kOk;
  if (value_.type != ValueType::kZSet) return Load::kWrongType;
  encoding_ = value_.encoding;
  if (encoding_ == kZSetTree) {
    if (!ReadRoot(value_.bytes)) return Load::kDamaged;
    Hints().Note(CurrentDb(c), key, id_, buckets_, 2);  // as dict_'s
    return Load::kOk;
  }
  std::vector<std::string_view> items;
  if ((encoding_ != kZSetListpack && encoding_ != kZSetSkiplist) ||
      !Unpack(value_.bytes, &items) || items.size() % 2 != 0) {
    return Load::kDamaged;
  }
  entries_.reserve(items.size() / 2);
  for (size_t i = 0; i < items.size(); i += 2) {
    double score = 0;
    if (items[i + 1].size() != sizeof(score)) return Load::kDamaged;
    std::memcpy(&score, items[i + 1].data(), sizeof(score));
    if (std::isnan(score)) return Load::kDamaged;
    ZEntry e{items[i], score};
    // In order, each member once: else the bytes are not a sorted set.
    if (!entries_.empty() && !ZLess(entries_.back(), e)) {
      return Load::kDamaged;
    }
    entries_.push_back(e);
  }
  // Strictly ordered by (score, member) does not forbid one member at
  // two scores: look for that too.
  return UniqueMembers(entries_) ? Load::kOk : Load::kDamaged;
}

bool ZSetValue::ReadRoot(std::string_view bytes) {
  uint64_t w[7];
  if (bytes.size() != sizeof(w)) return false;
  std::memcpy(w, bytes.data(), sizeof(w));
  id_ = w[0];
  buckets_ = w[2];
  shape_ = ZTree::Shape{w[3], w[4], w[5], w[6]};
  uint64_t capacity = c_->store->Capacity();
  if (id_ == 0 || buckets_ == 0 || buckets_ > capacity ||
      w[1] != 2 * std::max(buckets_, shape_.nodes) ||
      !tree_.Attach(c_, id_, shape_, capacity)) {
    return false;
  }
  dict_.Attach(c_, id_, buckets_, 2);
  in_parts_ = true;
  return true;
}

// Whether no member appears twice: a table of the members' hashes, one
// allocation and O(n), comparing members only where hashes meet (a sort
// of the members did this in O(n log n) and was most of the cost of
// every command on a large sorted set).
bool ZSetValue::UniqueMembers(const std::vector<ZEntry>& es) {
  size_t cap = 16;
  while (cap < es.size() * 2) cap <<= 1;
  std::vector<size_t> slots(cap, 0);  // an entry's index + 1; 0: free
  for (size_t i = 0; i < es.size(); ++i) {
    size_t s = shmc::HashBytes(es[i].member.data(), es[i].member.size()) &
               (cap - 1);
    while (slots[s] != 0) {
      if (es[slots[s] - 1].member == es[i].member) return false;
      s = (s + 1) & (cap - 1);
    }
    slots[s] = i + 1;
  }
  return true;
}

ptrdiff_t ZSetValue::Find(std::string_view member) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].member == member) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

std::string_view ZSetValue::ScoreBytes(double score) {
  scores_.emplace_back(reinterpret_cast<const char*>(&score), sizeof(score));
  return scores_.back();
}

uint64_t ZSetValue::size() {
  return in_parts_ ? tree_.size() : entries_.size();
}

bool ZSetValue::Score(std::string_view member, double* score) {
  if (!in_parts_) {
    ptrdiff_t at = Find(member);
    if (at < 0) return false;
    *score = entries_[static_cast<size_t>(at)].score;
    return true;
  }
  std::string_view v;
  if (!dict_.Find(member, &v)) return false;
  if (v.size() != sizeof(double)) return ok_ = false;
  std::memcpy(score, v.data(), sizeof(double));
  if (std::isnan(*score)) return ok_ = false;
  return true;
}

int64_t ZSetValue::Rank(std::string_view member) {
  if (!in_parts_) return Find(member);
  double score = 0;
  if (!Score(member, &score)) return -1;
  ZEntry e{member, score};
  return static_cast<int64_t>(
      tree_.Count([&](const ZEntry& x) { return ZLess(x, e); }));
}

bool ZSetValue::Set(std::string_view member, double score) {
  double old = 0;
  bool had = Score(member, &old);
  if (!ok()) return false;
  if (had && old == score) return false;
  changed_ = true;
  if (!in_parts_) {
    if (had) entries_.erase(entries_.begin() + Find(member));
    ZEntry e{member, score};
    entries_.insert(
        std::upper_bound(entries_.begin(), entries_.end(), e, ZLess), e);
    if (!had) {
      added_ = true;
      longest_ = std::max(longest_, member.size());
    }
    return !had;
  }
  // The table says where the member is in the tree: a tree without it
  // there is damage.
  if (had && !tree_.Erase(ZEntry{member, old})) return ok_ = false;
  tree_.Insert(ZEntry{member, score});
  dict_.Set(member, ScoreBytes(score));
  return !had;
}

void ZSetValue::SetAllNew(const std::vector<ZEntry>& entries) {
  if (entries.empty()) return;
  changed_ = true;
  if (in_parts_) {
    for (const ZEntry& e : entries) {
      tree_.Insert(e);
      dict_.Set(e.member, ScoreBytes(e.score));
    }
    return;
  }
  added_ = true;
  for (const ZEntry& e : entries) {
    entries_.push_back(e);
    longest_ = std::max(longest_, e.member.size());
  }
  std::sort(entries_.begin(), entries_.end(), ZLess);
}

bool ZSetValue::Remove(std::string_view member) {
  double old = 0;
  if (!Score(member, &old)) return false;
  changed_ = true;
  if (!in_parts_) {
    entries_.erase(entries_.begin() + Find(member));
    return true;
  }
  if (!tree_.Erase(ZEntry{member, old})) return ok_ = false;
  dict_.Remove(member);
  return true;
}

bool ZSetValue::At(uint64_t rank, ZEntry* e) {
  if (in_parts_) return tree_.At(rank, e);
  if (rank >= entries_.size()) return false;
  *e = entries_[rank];
  return true;
}

uint64_t ZSetValue::Count(const std::function<bool(const ZEntry&)>& less) {
  if (in_parts_) return tree_.Count(less);
  return static_cast<uint64_t>(
      std::partition_point(entries_.begin(), entries_.end(), less) -
      entries_.begin());
}

bool ZSetValue::Walk(uint64_t rank, bool forward,
                     const std::function<bool(const ZEntry&)>& f) {
  if (in_parts_) return tree_.Walk(rank, forward, f);
  uint64_t n = entries_.size();
  if (rank >= n) return true;
  if (forward) {
    for (uint64_t i = rank; i < n && f(entries_[i]); ++i) {
    }
  } else {
    for (uint64_t i = rank + 1; i > 0 && f(entries_[i - 1]); --i) {
    }
  }
  return true;
}

bool ZSetValue::All(std::vector<ZEntry>* out) {
  if (!in_parts_) {
    out->insert(out->end(), entries_.begin(), entries_.end());
    return true;
  }
  return tree_.Walk(0, true, [&](const ZEntry& e) {
    out->push_back(e);
    return true;
  });
}

bool ZSetValue::Page(uint64_t* cursor, size_t count,
                     std::vector<ZEntry>* out) {
  if (!in_parts_) {
    *cursor = 0;
    return All(out);
  }
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  if (!dict_.Page(cursor, count, &pairs)) return false;
  for (const auto& [member, bytes] : pairs) {
    ZEntry e{member, 0};
    if (bytes.size() != sizeof(double)) return ok_ = false;
    std::memcpy(&e.score, bytes.data(), sizeof(double));
    if (std::isnan(e.score)) return ok_ = false;
    out->push_back(e);
  }
  return true;
}

Store::Status ZSetValue::Save(CommandContext* c, std::string_view key) {
  using Status = Store::Status;
  // Damage is answered as such, and nothing of it written.
  if (!changed_ || !ok()) return Status::kOk;
  if (size() == 0) return exists_ ? c->txn->Delete(key) : Status::kOk;
  if (!in_parts_) {
    // The limits CONFIG SET gave (Redis's by default), checked as Redis
    // checks them: when a member is added, by the count and the added
    // members' lengths (a set packed under higher limits stays so until
    // then).
    const EncodingLimits limits = c->store->Limits();
    if (added_ && (entries_.size() > limits.zset_entries ||
                   longest_ > limits.zset_value)) {
      encoding_ = kZSetSkiplist;
    }
    if (encoding_ == kZSetListpack) {
      std::vector<std::string_view> items;
      items.reserve(entries_.size() * 2);
      for (const ZEntry& e : entries_) {
        // Redis's listpack keeps a score of -0 as 0 (a skiplist, -0).
        items.push_back(e.member);
        items.push_back(ScoreBytes(e.score == 0 ? 0.0 : e.score));
      }
      std::string bytes;
      Pack(items, &bytes);
      return c->txn->Write(key, ValueType::kZSet, kZSetListpack, bytes,
                           value_.expire_ms);
    }
    // Past the listpack limits: to parts, once.
    id_ = c->txn->NewCollection();
    tree_.Build(c, id_, entries_);
    std::vector<std::string_view> pairs;
    pairs.reserve(entries_.size() * 2);
    for (const ZEntry& e : entries_) {
      pairs.push_back(e.member);
      pairs.push_back(ScoreBytes(e.score));
    }
    dict_.Fill(c, id_, 2, pairs);
    in_parts_ = true;
    buckets_ = 0;  // the root is written below
  }
  Status st = tree_.Save(c);
  if (st != Status::kOk) return st;
  dict_.set_size(tree_.size());
  st = dict_.SaveBuckets(c);
  if (st != Status::kOk) return st;
  const ZTree::Shape& s = tree_.shape();
  if (dict_.buckets() == buckets_ && s.nodes == shape_.nodes &&
      s.top == shape_.top && s.free == shape_.free &&
      s.height == shape_.height) {
    c->txn->Touched(key);  // WATCH sees a change to its parts
    return Status::kOk;
  }
  uint64_t w[7] = {id_,   2 * std::max(dict_.buckets(), s.nodes),
                   dict_.buckets(), s.nodes, s.top, s.free, s.height};
  return c->txn->Write(key, ValueType::kZSet, kZSetTree,
                       std::string_view(reinterpret_cast<const char*>(w),
                                        sizeof(w)),
                       value_.expire_ms);
}

}  // namespace cmd
}  // namespace shmkv
