// A sorted set, packed (server/commands/zset_value.h).
#include "server/commands/zset_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

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
  exists_ = ReadValue(c, key, &value_);
  if (!exists_) return Load::kOk;
  if (value_.type != ValueType::kZSet) return Load::kWrongType;
  encoding_ = value_.encoding;
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

ptrdiff_t ZSetValue::Rank(std::string_view member) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].member == member) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

bool ZSetValue::Set(std::string_view member, double score) {
  ptrdiff_t at = Rank(member);
  bool fresh = at < 0;
  if (!fresh) {
    if (entries_[static_cast<size_t>(at)].score == score) return false;
    entries_.erase(entries_.begin() + at);
  }
  ZEntry e{member, score};
  entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e, ZLess),
                  e);
  if (member.size() > kListpackValue) encoding_ = kZSetSkiplist;
  changed_ = true;
  return fresh;
}

bool ZSetValue::Remove(std::string_view member) {
  ptrdiff_t at = Rank(member);
  if (at < 0) return false;
  entries_.erase(entries_.begin() + at);
  changed_ = true;
  return true;
}

void ZSetValue::RemoveRanks(size_t from, size_t to) {
  if (from >= to) return;
  entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(from),
                 entries_.begin() + static_cast<ptrdiff_t>(to));
  changed_ = true;
}

Store::Status ZSetValue::Save(CommandContext* c, std::string_view key) {
  if (!changed_) return Store::Status::kOk;
  if (entries_.empty()) {
    return exists_ ? c->txn->Delete(key) : Store::Status::kOk;
  }
  if (entries_.size() > kListpackEntries) encoding_ = kZSetSkiplist;
  std::vector<std::string> scores(entries_.size());
  std::vector<std::string_view> items;
  items.reserve(entries_.size() * 2);
  for (size_t i = 0; i < entries_.size(); ++i) {
    // Redis's listpack keeps a score of -0 as 0 (a skiplist keeps -0).
    double score = entries_[i].score;
    if (score == 0 && encoding_ == kZSetListpack) score = 0;
    scores[i].assign(reinterpret_cast<const char*>(&score), sizeof(double));
    items.push_back(entries_[i].member);
    items.push_back(scores[i]);
  }
  std::string bytes;
  Pack(items, &bytes);
  return c->txn->Write(key, ValueType::kZSet, encoding_, bytes,
                       value_.expire_ms);
}

}  // namespace cmd
}  // namespace shmkv
