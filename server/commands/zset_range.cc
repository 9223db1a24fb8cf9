// The ranges of the sorted-set commands (server/commands/zset_range.h).
#include "server/commands/zset_range.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace shmkv {
namespace cmd {

// A score argument (ZADD, ZINCRBY, WEIGHTS): the whole argument a double,
// no leading space, no overflow, no NaN.
bool ToScore(std::string_view s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || std::isnan(v) ||
      (errno == ERANGE &&
       (v == HUGE_VAL || v == -HUGE_VAL || std::fpclassify(v) == FP_ZERO))) {
    return false;
  }
  *out = v;
  return true;
}

namespace {

bool ScoreBound(std::string_view arg, double* v, bool* ex) {
  std::string s(arg);
  const char* p = s.c_str();
  *ex = p[0] == '(';
  if (*ex) ++p;
  char* end = nullptr;
  *v = std::strtod(p, &end);
  return *end == '\0' && !std::isnan(*v);
}

}  // namespace

bool ParseScoreRange(std::string_view min, std::string_view max,
                     ScoreRange* r) {
  return ScoreBound(min, &r->min, &r->minex) &&
         ScoreBound(max, &r->max, &r->maxex);
}

namespace {

bool LexBound(std::string_view arg, std::string* v, bool* ex, bool* low,
              bool* high) {
  if (arg == "-") {
    *low = true;
    return true;
  }
  if (arg == "+") {
    *high = true;
    return true;
  }
  if (arg.empty() || (arg[0] != '(' && arg[0] != '[')) return false;
  *ex = arg[0] == '(';
  v->assign(arg.substr(1));
  return true;
}

}  // namespace

bool ParseLexRange(std::string_view min, std::string_view max, LexRange* r) {
  bool unused = false;
  return LexBound(min, &r->min, &r->minex, &r->min_low, &r->min_high) &&
         LexBound(max, &r->max, &r->maxex, &r->max_low, &r->max_high) &&
         !unused;
}

namespace {

// The entries below the range's low end (upper false), or not past its
// high end (upper true).
uint64_t Below(ZSetValue* z, const RangeSpec& s, bool upper) {
  if (s.by == RangeBy::kScore) {
    const ScoreRange& r = s.scores;
    return z->Count([&](const ZEntry& e) {
      return upper ? (r.maxex ? e.score < r.max : e.score <= r.max)
                   : (r.minex ? e.score <= r.min : e.score < r.min);
    });
  }
  const LexRange& r = s.lex;
  if (upper) {
    if (r.max_high) return z->size();
    if (r.max_low) return 0;
    return z->Count([&](const ZEntry& e) {
      return r.maxex ? e.member < r.max : e.member <= r.max;
    });
  }
  if (r.min_low) return 0;
  if (r.min_high) return z->size();
  return z->Count([&](const ZEntry& e) {
    return r.minex ? e.member <= r.min : e.member < r.min;
  });
}

}  // namespace

bool RanksOf(ZSetValue* z, const RangeSpec& s, uint64_t* from,
             uint64_t* to) {
  uint64_t n = z->size();
  if (s.by == RangeBy::kRank) {
    int64_t size = static_cast<int64_t>(n);
    int64_t start = s.start, stop = s.stop;
    if (start < 0) start += size;
    if (stop < 0) stop += size;
    if (start < 0) start = 0;
    if (start > stop || start >= size) return false;
    if (stop >= size) stop = size - 1;
    *from = static_cast<uint64_t>(start);
    *to = static_cast<uint64_t>(stop) + 1;
    return true;
  }
  *from = Below(z, s, false);
  *to = Below(z, s, true);
  return *from < *to;
}

bool Select(ZSetValue* z, const RangeSpec& s, std::vector<ZEntry>* out) {
  uint64_t from = 0, to = 0;
  if (!RanksOf(z, s, &from, &to)) return z->ok();
  uint64_t n = z->size();
  if (s.by == RangeBy::kRank) {
    // REV counts ranks from the top.
    uint64_t want = to - from;
    return z->Walk(s.rev ? n - 1 - from : from, !s.rev,
                   [&](const ZEntry& e) {
                     out->push_back(e);
                     return out->size() < want;
                   }) &&
           z->ok();
  }
  if (s.offset < 0) return z->ok();
  uint64_t offset = static_cast<uint64_t>(s.offset);
  if (offset >= to - from) return z->ok();
  uint64_t want = to - from - offset;
  if (s.count >= 0) want = std::min<uint64_t>(want, s.count);
  if (want == 0) return z->ok();
  // Forward from the range's first, back from its last.
  uint64_t start = s.rev ? to - 1 - offset : from + offset;
  return z->Walk(start, !s.rev,
                 [&](const ZEntry& e) {
                   out->push_back(e);
                   return out->size() < want;
                 }) &&
         z->ok();
}

// Parses a range command's options from a[from] on and its two bounds;
// `by_ok`: BYSCORE/BYLEX/REV allowed (ZRANGE, ZRANGESTORE). False after
// replying the error.
bool ParseRange(const Args& a, size_t bounds, size_t from, bool by_ok,
                bool scores_ok, RangeSpec* s, Reply* r) {
  for (size_t j = from; j < a.size(); ++j) {
    if (scores_ok && Eq(a[j], "withscores")) {
      s->with_scores = true;
    } else if (Eq(a[j], "limit") && j + 2 < a.size()) {
      if (!ToInt(a[j + 1], &s->offset) || !ToInt(a[j + 2], &s->count)) {
        NotInt(r);
        return false;
      }
      s->limit = true;
      j += 2;
    } else if (by_ok && s->by == RangeBy::kRank && Eq(a[j], "byscore")) {
      s->by = RangeBy::kScore;  // (each of these once: then a syntax error)
    } else if (by_ok && s->by == RangeBy::kRank && Eq(a[j], "bylex")) {
      s->by = RangeBy::kLex;
    } else if (by_ok && !s->rev && Eq(a[j], "rev")) {
      s->rev = true;
    } else {
      r->Error("ERR syntax error");
      return false;
    }
  }
  if (s->limit && s->by == RangeBy::kRank) {
    // A count of -1 (no limit) passes, its offset unread, as in Redis.
    if (s->count != -1) {
      r->Error("ERR syntax error, LIMIT is only supported in combination "
               "with either BYSCORE or BYLEX");
      return false;
    }
    s->limit = false;
    s->offset = 0;
  }
  if (s->with_scores && s->by == RangeBy::kLex) {
    r->Error("ERR syntax error, WITHSCORES not supported in combination "
             "with BYLEX");
    return false;
  }
  std::string_view lo = a[bounds], hi = a[bounds + 1];
  if (s->rev && s->by != RangeBy::kRank) std::swap(lo, hi);
  switch (s->by) {
    case RangeBy::kRank:
      if (!ToInt(lo, &s->start) || !ToInt(hi, &s->stop)) {
        NotInt(r);
        return false;
      }
      return true;
    case RangeBy::kScore:
      if (!ParseScoreRange(lo, hi, &s->scores)) {
        r->Error("ERR min or max is not a float");
        return false;
      }
      return true;
    case RangeBy::kLex:
      if (!ParseLexRange(lo, hi, &s->lex)) {
        r->Error("ERR min or max not valid string range item");
        return false;
      }
      return true;
  }
  return false;
}

}  // namespace cmd
}  // namespace shmkv
