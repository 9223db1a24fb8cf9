// The ranges of the sorted-set commands (docs/server.md, "Sorted sets"):
// scores and score bounds, member (lex) bounds, and ZRANGE's options, read
// as Redis reads them, and the entries a range selects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/reply.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

// A score argument (ZADD, ZINCRBY, WEIGHTS): the whole argument a double,
// no leading space, no overflow, no NaN.
bool ToScore(std::string_view s, double* out);

// A range of scores: "(" before a bound excludes it; read as a C string
// with strtod, as Redis reads it ("" is 0; NaN is refused).
struct ScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;
  bool Holds(double v) const {
    return (minex ? v > min : v >= min) && (maxex ? v < max : v <= max);
  }
};

bool ParseScoreRange(std::string_view min, std::string_view max,
                     ScoreRange* r);

// A range of members: "[x" includes x, "(x" excludes it, "-" and "+" are
// the ends.
struct LexRange {
  std::string min, max;
  bool minex = false, maxex = false;
  bool min_low = false, max_high = false;  // "-" / "+"
  bool min_high = false, max_low = false;  // "+" as min, "-" as max
  bool Holds(std::string_view m) const {
    if (min_high || max_low) return false;
    bool above = min_low || (minex ? m > min : m >= min);
    bool below = max_high || (maxex ? m < max : m <= max);
    return above && below;
  }
};

bool ParseLexRange(std::string_view min, std::string_view max, LexRange* r);

// What ZRANGE and its older forms select.
enum class RangeBy { kRank, kScore, kLex };
struct RangeSpec {
  RangeBy by = RangeBy::kRank;
  bool rev = false;
  bool with_scores = false;
  bool limit = false;
  int64_t offset = 0, count = -1;
  int64_t start = 0, stop = 0;
  ScoreRange scores;
  LexRange lex;
};

// The ranks [*from, *to) a range of scores, members or ranks covers
// (REV and LIMIT aside); false when it is empty.
bool RanksOf(ZSetValue* z, const RangeSpec& s, uint64_t* from,
             uint64_t* to);
// The entries a range selects, in reply order, into *out; false when
// the set is damaged.
bool Select(ZSetValue* z, const RangeSpec& s, std::vector<ZEntry>* out);

// Parses a range command's two bounds at a[bounds] and its options from
// a[from] on (`by_ok`: BYSCORE, BYLEX and REV allowed, as for ZRANGE and
// ZRANGESTORE; `scores_ok`: WITHSCORES read); false after replying.
bool ParseRange(const Args& a, size_t bounds, size_t from, bool by_ok,
                bool scores_ok, RangeSpec* s, Reply* r);

}  // namespace cmd
}  // namespace shmkv
