// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD (docs/
// server.md, "Sorted sets"): sorted sets and sets (scores of 1) combined
// with WEIGHTS and AGGREGATE, with Redis 7's replies and errors.
#include "server/commands/zset_combine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/zset_range.h"

namespace shmkv {
namespace cmd {

namespace {

using Entries = std::vector<ZEntry>;

enum class Combine { kUnion, kInter, kDiff };
enum class Aggregate { kSum, kMin, kMax };

// An input of ZUNION and its kin: a sorted set, or a set (scores 1).
struct Input {
  ZSetValue z;
  std::vector<std::pair<std::string, double>> set_members;
  bool exists = false;
  // False when the sorted set is damaged.
  bool Members(std::vector<std::pair<std::string_view, double>>* out) {
    Entries es;
    if (!z.All(&es)) return false;
    for (const ZEntry& e : es) out->emplace_back(e.member, e.score);
    for (const auto& m : set_members) out->emplace_back(m.first, m.second);
    return true;
  }
};

bool OpenInput(CommandContext* c, std::string_view key, Input* in,
               Reply* r) {
  Value v;
  if (!ReadValue(c, key, &v)) return true;
  in->exists = true;
  if (v.type == ValueType::kSet) {
    HashValue set(kSetShape);
    std::vector<std::pair<std::string_view, std::string_view>> all;
    if (set.Open(c, key) != HashValue::Load::kOk || !set.All(&all)) {
      Damaged(r);
      return false;
    }
    for (const auto& p : all) in->set_members.emplace_back(p.first, 1.0);
    return true;
  }
  return Opened(in->z.Open(c, key), r);
}

double Weighted(double score, double weight) {
  double v = score * weight;
  return std::isnan(v) ? 0 : v;
}

double Merge(double a, double b, Aggregate agg) {
  switch (agg) {
    case Aggregate::kSum: {
      double v = a + b;
      return std::isnan(v) ? 0 : v;
    }
    case Aggregate::kMin: return std::min(a, b);
    case Aggregate::kMax: return std::max(a, b);
  }
  return a;
}

// ZUNION, ZINTER, ZDIFF and their STORE forms.
void CombineCommon(const Args& a, CommandContext* c, Reply* r, Combine op,
                   bool store) {
  size_t at = store ? 2 : 1;
  int64_t numkeys = 0;
  if (!ToInt(a[at], &numkeys)) return NotInt(r);
  if (numkeys < 1) {
    return r->Error("ERR at least 1 input key is needed for '" +
                    Lower(a[0]) + "' command");
  }
  size_t first = at + 1;
  if (numkeys > static_cast<int64_t>(a.size() - first)) {
    return r->Error("ERR syntax error");
  }
  size_t end = first + static_cast<size_t>(numkeys);
  std::vector<double> weights(static_cast<size_t>(numkeys), 1.0);
  Aggregate agg = Aggregate::kSum;
  bool with_scores = false;
  for (size_t j = end; j < a.size(); ++j) {
    if (op != Combine::kDiff && Eq(a[j], "weights") &&
        j + static_cast<size_t>(numkeys) < a.size()) {
      for (size_t k = 0; k < weights.size(); ++k) {
        if (!ToScore(a[j + 1 + k], &weights[k])) {
          return r->Error("ERR weight value is not a float");
        }
      }
      j += weights.size();
    } else if (op != Combine::kDiff && Eq(a[j], "aggregate") &&
               j + 1 < a.size()) {
      ++j;
      if (Eq(a[j], "sum")) agg = Aggregate::kSum;
      else if (Eq(a[j], "min")) agg = Aggregate::kMin;
      else if (Eq(a[j], "max")) agg = Aggregate::kMax;
      else return r->Error("ERR syntax error");
    } else if (!store && Eq(a[j], "withscores")) {
      with_scores = true;
    } else {
      return r->Error("ERR syntax error");
    }
  }
  std::vector<Input> inputs(static_cast<size_t>(numkeys));
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!OpenInput(c, a[first + k], &inputs[k], r)) return;
  }
  std::unordered_map<std::string_view, double> acc;
  std::vector<std::string_view> order;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::unordered_map<std::string_view, double> mine;
    std::vector<std::pair<std::string_view, double>> members;
    if (!inputs[k].Members(&members)) return Damaged(r);
    for (const auto& [m, s] : members) {
      mine[m] = Weighted(s, op == Combine::kDiff ? 1.0 : weights[k]);
    }
    if (k == 0) {
      for (const auto& [m, s] : mine) {
        acc[m] = s;
        order.push_back(m);
      }
      continue;
    }
    if (op == Combine::kUnion) {
      for (const auto& [m, s] : mine) {
        auto it = acc.find(m);
        if (it == acc.end()) {
          acc[m] = s;
          order.push_back(m);
        } else {
          it->second = Merge(it->second, s, agg);
        }
      }
    } else {
      for (auto it = acc.begin(); it != acc.end();) {
        auto hit = mine.find(it->first);
        bool keep = op == Combine::kInter ? hit != mine.end()
                                          : hit == mine.end();
        if (!keep) {
          it = acc.erase(it);
        } else {
          if (op == Combine::kInter) {
            it->second = Merge(it->second, hit->second, agg);
          }
          ++it;
        }
      }
    }
  }
  Entries result;
  for (std::string_view m : order) {
    auto it = acc.find(m);
    if (it != acc.end()) result.push_back(ZEntry{m, it->second});
  }
  std::sort(result.begin(), result.end(), ZLess);
  if (store) {
    StoreEntries(c, a[1], result,
                 op == Combine::kUnion   ? "zunionstore"
                 : op == Combine::kInter ? "zinterstore"
                                         : "zdiffstore",
                 r);
  } else {
    ReplyEntries(result, with_scores, r);
  }
}

}  // namespace

// ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
//   [WITHSCORES]
void ZUnion(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] { CombineCommon(a, c, r, Combine::kUnion, false); });
}

// ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
//   [WITHSCORES]
void ZInter(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] { CombineCommon(a, c, r, Combine::kInter, false); });
}

// ZDIFF numkeys key [key ...] [WITHSCORES]
void ZDiff(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] { CombineCommon(a, c, r, Combine::kDiff, false); });
}

// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS w ...]
//   [AGGREGATE SUM|MIN|MAX]
void ZUnionStore(const Args& a, CommandContext* c, Reply* r) {
  CombineCommon(a, c, r, Combine::kUnion, true);
}

// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS w ...]
//   [AGGREGATE SUM|MIN|MAX]
void ZInterStore(const Args& a, CommandContext* c, Reply* r) {
  CombineCommon(a, c, r, Combine::kInter, true);
}

// ZDIFFSTORE destination numkeys key [key ...]
void ZDiffStore(const Args& a, CommandContext* c, Reply* r) {
  CombineCommon(a, c, r, Combine::kDiff, true);
}

// ZINTERCARD numkeys key [key ...] [LIMIT limit]
void ZInterCard(const Args& a, CommandContext* c, Reply* r) {
  int64_t numkeys = 0;
  if (!ToInt(a[1], &numkeys)) return NotInt(r);
  if (numkeys < 1) {
    return r->Error("ERR at least 1 input key is needed for 'zintercard' "
                    "command");
  }
  if (numkeys > static_cast<int64_t>(a.size()) - 2) {
    return r->Error("ERR syntax error");
  }
  size_t end = 2 + static_cast<size_t>(numkeys);
  int64_t limit = 0;
  if (!ParseCardLimit(a, end, &limit, r)) return;
  ReadConsistently(c, r, [&] {
    std::vector<Input> inputs(static_cast<size_t>(numkeys));
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!OpenInput(c, a[2 + k], &inputs[k], r)) return;
    }
    std::vector<std::unordered_set<std::string_view>> sets(inputs.size());
    std::vector<std::vector<std::pair<std::string_view, double>>> members(
        inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].Members(&members[k])) return Damaged(r);
      for (const auto& p : members[k]) sets[k].insert(p.first);
    }
    int64_t n = 0;
    for (std::string_view m : sets[0]) {
      bool all = true;
      for (size_t k = 1; k < sets.size() && all; ++k) all = sets[k].count(m);
      n += all;
      if (limit > 0 && n >= limit) break;
    }
    r->Int(n);
  });
}

}  // namespace cmd
}  // namespace shmkv
