// SORT and SORT_RO (docs/server.md, "Keys"): the elements of a list, a set
// or a sorted set, ordered by their own value or by keys a pattern names,
// as Redis 7.0 orders them, with the values of other keys fetched per
// element, and SORT's result optionally stored as a list. Rows in the
// keyspace family.
#include "server/commands/sort_family.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/list_value.h"
#include "server/commands/notify.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;

struct SortArgs {
  bool desc = false, alpha = false, dontsort = false;
  bool has_by = false;
  std::string_view by;
  int64_t limit_start = 0, limit_count = -1;
  std::vector<std::string_view> gets;
  bool store = false;
  std::string_view dest;
};

// The options after the key, as Redis reads them (each word anywhere,
// LIMIT's two numbers and BY's, GET's and STORE's one argument after
// them); false after replying the error.
bool ParseSort(const Args& a, bool readonly, SortArgs* s, Reply* r) {
  for (size_t j = 2; j < a.size(); ++j) {
    size_t left = a.size() - j - 1;
    if (Eq(a[j], "asc")) {
      s->desc = false;
    } else if (Eq(a[j], "desc")) {
      s->desc = true;
    } else if (Eq(a[j], "alpha")) {
      s->alpha = true;
    } else if (Eq(a[j], "limit") && left >= 2) {
      if (!ToInt(a[j + 1], &s->limit_start) ||
          !ToInt(a[j + 2], &s->limit_count)) {
        NotInt(r);
        return false;
      }
      j += 2;
    } else if (Eq(a[j], "store") && left >= 1 && !readonly) {
      s->store = true;
      s->dest = a[++j];
    } else if (Eq(a[j], "by") && left >= 1) {
      s->has_by = true;
      s->by = a[++j];
      // A pattern without '*' names one key for every element: the
      // elements stay in their order (Redis's "BY nosort"), and stay so
      // whatever BY follows, as in Redis.
      if (s->by.find('*') == std::string_view::npos) s->dontsort = true;
    } else if (Eq(a[j], "get") && left >= 1) {
      s->gets.push_back(a[++j]);
    } else {
      r->Error("ERR syntax error");
      return false;
    }
  }
  return true;
}

// The string a pattern names for one element, as Redis's SORT looks it up:
// "#" is the element itself; otherwise the first '*' is replaced by the
// element, and "->field" after it names a hash's field. Nothing (a key
// that is missing or of another type, a field that is not there, a
// pattern without '*') is nullopt.
std::optional<std::string> ByPattern(CommandContext* c, std::string_view pat,
                                     std::string_view element) {
  if (pat == "#") return std::string(element);
  size_t star = pat.find('*');
  if (star == std::string_view::npos) return std::nullopt;
  std::string_view field;
  size_t arrow = pat.find("->", star + 1);
  std::string_view rest = pat.substr(star + 1);
  if (arrow != std::string_view::npos && arrow + 2 < pat.size()) {
    field = pat.substr(arrow + 2);
    rest = pat.substr(star + 1, arrow - star - 1);
  }
  std::string key(pat.substr(0, star));
  key.append(element);
  key.append(rest);
  if (field.empty()) {
    Value v;
    if (!ReadValue(c, key, &v) || v.type != ValueType::kString) {
      return std::nullopt;
    }
    return std::move(v.bytes);
  }
  HashValue h;
  std::string_view got;
  if (h.Open(c, key) != Load::kOk || !h.exists() || !h.Find(field, &got)) {
    return std::nullopt;
  }
  return std::string(got);
}

// Redis's reading of a sort score: strtod over the whole string (so
// leading spaces, "inf" and hexadecimal are numbers, "" is 0), refusing
// what is left over, NaN, and what under- or overflows.
bool SortScore(const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno != ERANGE && !std::isnan(*out);
}

struct Item {
  std::string element;
  double score = 0;
  std::optional<std::string> by;  // ALPHA with BY: the string compared
};

// SORT key ... | SORT_RO key ...
void SortGeneric(const Args& a, CommandContext* c, Reply* r, bool readonly) {
  SortArgs s;
  if (!ParseSort(a, readonly, &s, r)) return;
  auto run = [&] {
    Value v;
    std::vector<std::string> elements;
    bool found = ReadValue(c, a[1], &v);
    ValueType type = found ? v.type : ValueType::kList;
    if (found && type != ValueType::kList && type != ValueType::kSet &&
        type != ValueType::kZSet) {
      return WrongType(r);
    }
    bool dontsort = s.dontsort;
    // A set's own order is its table's: stored, or in a script, it is
    // sorted as strings instead, as Redis does for a result that must be
    // the same everywhere.
    bool alpha = s.alpha;
    bool has_by = s.has_by;
    if (dontsort && type == ValueType::kSet &&
        (s.store || c->script_resp != 0)) {
      dontsort = false;
      alpha = true;
      has_by = false;
    }
    if (found) {
      if (type == ValueType::kList) {
        ListValue l;
        if (l.Open(c, a[1]) != Load::kOk) return Damaged(r);
        std::vector<std::string_view> out;
        if (l.size() > 0 && !l.Range(0, l.size() - 1, &out)) {
          return Damaged(r);
        }
        elements.assign(out.begin(), out.end());
      } else if (type == ValueType::kSet) {
        HashValue h(kSetShape);
        std::vector<std::pair<std::string_view, std::string_view>> pairs;
        if (h.Open(c, a[1]) != Load::kOk || !h.All(&pairs)) {
          return Damaged(r);
        }
        for (const auto& p : pairs) elements.emplace_back(p.first);
      } else {
        ZSetValue z;
        std::vector<ZEntry> entries;
        if (z.Open(c, a[1]) != Load::kOk || !z.All(&entries)) {
          return Damaged(r);
        }
        for (const ZEntry& e : entries) elements.emplace_back(e.member);
      }
    }
    // Unsorted, a list's or a sorted set's order is kept, DESC reversing
    // it (a set's order is not reversed: it has none).
    if (dontsort && s.desc && type != ValueType::kSet) {
      std::reverse(elements.begin(), elements.end());
    }
    std::vector<Item> items(elements.size());
    for (size_t i = 0; i < elements.size(); ++i) {
      items[i].element = std::move(elements[i]);
    }
    if (!dontsort) {
      bool bad_score = false;
      for (Item& it : items) {
        std::optional<std::string> by;
        if (has_by) {
          by = ByPattern(c, s.by, it.element);
          if (!by) continue;  // score 0; compared as nothing when ALPHA
        }
        if (alpha) {
          if (has_by) it.by = std::move(by);
        } else if (!SortScore(has_by ? *by : it.element, &it.score)) {
          bad_score = true;
        }
      }
      if (bad_score) {
        return r->Error("ERR One or more scores can't be converted into "
                        "double");
      }
      // ALPHA compares as Redis does: whole strings byte by byte for a
      // result it stores, else with strcoll, which under the C locales
      // Redis runs in compares bytes up to the first zero byte (strings
      // equal that far keep their order).
      auto text = [&](const std::string& x, const std::string& y) {
        if (s.store) return x.compare(y);
        return std::string_view(x.c_str()).compare(y.c_str());
      };
      auto cmp = [&](const Item& x, const Item& y) -> int {
        if (!alpha) {
          if (x.score != y.score) return x.score < y.score ? -1 : 1;
          return x.element.compare(y.element);
        }
        if (!has_by) return text(x.element, y.element);
        if (!x.by || !y.by) return x.by == y.by ? 0 : !x.by ? -1 : 1;
        return text(*x.by, *y.by);
      };
      std::stable_sort(items.begin(), items.end(),
                       [&](const Item& x, const Item& y) {
                         int k = cmp(x, y);
                         return s.desc ? k > 0 : k < 0;
                       });
    }
    // LIMIT as Redis clamps it.
    int64_t n = static_cast<int64_t>(items.size());
    int64_t start = s.limit_start < 0 ? 0 : s.limit_start;
    int64_t end = n - 1;  // (start past the end: nothing)
    if (start < n && s.limit_count >= 0 && s.limit_count < n - start) {
      end = start + s.limit_count - 1;
    }
    std::vector<std::optional<std::string>> out;
    for (int64_t j = start; j <= end; ++j) {
      const std::string& e = items[static_cast<size_t>(j)].element;
      if (s.gets.empty()) {
        out.emplace_back(e);
        continue;
      }
      for (std::string_view g : s.gets) out.push_back(ByPattern(c, g, e));
    }
    if (!s.store) {
      r->Array(out.size());
      for (const auto& o : out) o ? r->Bulk(*o) : r->Null();
      return;
    }
    // STORE: the result as a list (a missing GET as ""), replacing what
    // the destination held; an empty result deletes it.
    Status st = c->txn->Delete(s.dest);
    if (st != Status::kOk && st != Status::kNotFound) return StoreError(st, r);
    if (!out.empty()) {
      ListValue l;
      if (l.Open(c, s.dest) != Load::kOk) return Damaged(r);
      for (const auto& o : out) l.Push(false, o ? std::string_view(*o) : "");
      Status saved = l.Save(c, s.dest);
      if (saved != Status::kOk) return StoreError(saved, r);
    }
    NotifyStored(c, kNotifyList, "sortstore", s.dest, !out.empty(),
                 st == Status::kOk);
    r->Int(static_cast<int64_t>(out.size()));
  };
  if (c->txn != nullptr) return run();
  ReadConsistently(c, r, run);
}

}  // namespace

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
//      [ALPHA] [STORE destination]
void Sort(const Args& a, CommandContext* c, Reply* r) {
  SortGeneric(a, c, r, false);
}

// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...]
//         [ASC|DESC] [ALPHA]
void SortRo(const Args& a, CommandContext* c, Reply* r) {
  SortGeneric(a, c, r, true);
}

}  // namespace cmd
}  // namespace shmkv
