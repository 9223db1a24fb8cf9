// shmkv's sorted-set commands, with Redis 7's replies and error texts
// (docs/server.md, "Sorted sets"), over ZSetValue (server/commands/
// zset_value.h). Write commands run in the transaction dispatch opened
// for them; reads outside one run over one consistent view of the set's
// blobs (ReadConsistently).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/blocking.h"
#include "server/commands/reply.h"
#include "server/commands/zset_combine.h"
#include "server/commands/zset_range.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;
using Entries = std::vector<ZEntry>;

bool OpenZSet(CommandContext* c, std::string_view key, ZSetValue* z,
              Reply* r) {
  return Opened(z->Open(c, key), r);
}

bool SaveZSet(CommandContext* c, std::string_view key, ZSetValue* z,
              Reply* r) {
  return Saved(z->Save(c, key), z->ok(), r) && NotifyIfEmptied(c, z, key);
}

void NotFloat(Reply* r) { r->Error("ERR value is not a valid float"); }


// Reads the range `s` of `key` and replies it.
void RangeReply(CommandContext* c, std::string_view key, const RangeSpec& s,
                Reply* r) {
  ReadConsistently(c, r, [&] {
    ZSetValue z;
    if (!OpenZSet(c, key, &z, r)) return;
    Entries es;
    if (!Select(&z, s, &es)) return Damaged(r);
    ReplyEntries(es, s.with_scores, r);
  });
}

// Runs `body` over the sorted set at `key`, opened over one consistent
// view; a set found damaged on the way answers so, whatever body replied.
template <class F>
void ReadZSet(CommandContext* c, std::string_view key, Reply* r, F body) {
  ReadConsistently(c, r, [&] {
    ZSetValue z;
    if (!OpenZSet(c, key, &z, r)) return;
    size_t mark = r->Mark();
    body(&z);
    if (!z.ok()) {
      r->Retry(mark);
      Damaged(r);
    }
  });
}

uint64_t NextRandom() {
  static std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// ZRANDMEMBER's picks: `count` distinct entries (all when there are no
// more), or -count entries each drawn anew.
bool RandomEntries(ZSetValue* z, int64_t count, Entries* picks) {
  uint64_t n = z->size();
  if (n == 0 || count == 0) return z->ok();
  auto pick = [&](uint64_t rank) {
    ZEntry e;
    if (!z->At(rank, &e)) return false;
    picks->push_back(e);
    return true;
  };
  if (count < 0) {
    for (int64_t i = 0; i < -count; ++i) {
      if (!pick(NextRandom() % n)) return false;
    }
    return true;
  }
  uint64_t want = static_cast<uint64_t>(count);
  if (want >= n) {
    // The whole set, highest first: the order Redis gives this case.
    if (!z->All(picks)) return false;
    std::reverse(picks->begin(), picks->end());
    return true;
  }
  if (want * 3 < n) {
    // Few of many: distinct ranks drawn at random, each one walk.
    std::unordered_set<uint64_t> ranks;
    while (ranks.size() < want) {
      uint64_t rank = NextRandom() % n;
      if (ranks.insert(rank).second && !pick(rank)) return false;
    }
    return true;
  }
  Entries all;
  if (!z->All(&all)) return false;
  for (uint64_t i = 0; i < want; ++i) {
    std::swap(all[i], all[i + NextRandom() % (all.size() - i)]);
  }
  picks->assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(want));
  return true;
}

}  // namespace

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
void ZAdd(const Args& a, CommandContext* c, Reply* r) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false,
       incr = false;
  size_t j = 2;
  for (; j < a.size(); ++j) {
    if (Eq(a[j], "nx")) nx = true;
    else if (Eq(a[j], "xx")) xx = true;
    else if (Eq(a[j], "gt")) gt = true;
    else if (Eq(a[j], "lt")) lt = true;
    else if (Eq(a[j], "ch")) ch = true;
    else if (Eq(a[j], "incr")) incr = true;
    else break;
  }
  size_t elements = a.size() - j;
  if (elements == 0 || elements % 2 != 0) return r->Error("ERR syntax error");
  if (nx && xx) {
    return r->Error("ERR XX and NX options at the same time are not "
                    "compatible");
  }
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    return r->Error("ERR GT, LT, and/or NX options at the same time are "
                    "not compatible");
  }
  if (incr && elements > 2) {
    return r->Error("ERR INCR option supports a single increment-element "
                    "pair");
  }
  std::vector<double> scores;
  for (size_t k = j; k < a.size(); k += 2) {
    double v = 0;
    if (!ToScore(a[k], &v)) return NotFloat(r);
    scores.push_back(v);
  }
  ZSetValue z;
  if (!OpenZSet(c, a[1], &z, r)) return;
  int64_t added = 0, changed = 0;
  bool done = false;
  double result = 0;
  for (size_t k = j, i = 0; k < a.size(); k += 2, ++i) {
    std::string_view member = a[k + 1];
    double cur = 0;
    if (z.Score(member, &cur)) {
      if (nx) continue;
      double next = incr ? cur + scores[i] : scores[i];
      if (std::isnan(next)) {
        return r->Error("ERR resulting score is not a number (NaN)");
      }
      if ((gt && next <= cur) || (lt && next >= cur)) continue;
      if (next != cur) {
        z.Set(member, next);
        ++changed;
      }
      result = next;
      done = true;
    } else {
      if (xx) continue;
      z.Set(member, scores[i]);
      ++added;
      result = scores[i];
      done = true;
    }
  }
  if (added + changed > 0) Notify(c, kNotifyZSet, incr ? "zincr" : "zadd", a[1]);
  if (!SaveZSet(c, a[1], &z, r)) return;
  if (incr) return done ? ReplyScore(result, r) : r->Null();
  r->Int(ch ? added + changed : added);
}

// ZINCRBY key increment member
void ZIncrBy(const Args& a, CommandContext* c, Reply* r) {
  double by = 0;
  if (!ToScore(a[2], &by)) return NotFloat(r);
  ZSetValue z;
  if (!OpenZSet(c, a[1], &z, r)) return;
  double cur = 0;
  bool existed = z.Score(a[3], &cur);
  double next = existed ? cur + by : by;
  if (std::isnan(next)) {
    return r->Error("ERR resulting score is not a number (NaN)");
  }
  z.Set(a[3], next);
  // (an unchanged score is no event, as Redis)
  if (!existed || next != cur) Notify(c, kNotifyZSet, "zincr", a[1]);
  if (SaveZSet(c, a[1], &z, r)) ReplyScore(next, r);
}

// ZREM key member [member ...]
void ZRem(const Args& a, CommandContext* c, Reply* r) {
  ZSetValue z;
  if (!OpenZSet(c, a[1], &z, r)) return;
  int64_t removed = 0;
  for (size_t i = 2; i < a.size(); ++i) removed += z.Remove(a[i]);
  if (removed > 0) Notify(c, kNotifyZSet, "zrem", a[1]);
  if (SaveZSet(c, a[1], &z, r)) r->Int(removed);
}

// ZCARD key
void ZCard(const Args& a, CommandContext* c, Reply* r) {
  ReadZSet(c, a[1], r,
           [&](ZSetValue* z) { r->Int(static_cast<int64_t>(z->size())); });
}

// ZSCORE key member
void ZScore(const Args& a, CommandContext* c, Reply* r) {
  ReadZSet(c, a[1], r, [&](ZSetValue* z) {
    double score = 0;
    if (!z->Score(a[2], &score)) return r->Null();
    ReplyScore(score, r);
  });
}

// ZMSCORE key member [member ...]
void ZMScore(const Args& a, CommandContext* c, Reply* r) {
  ReadZSet(c, a[1], r, [&](ZSetValue* z) {
    r->Array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      double score = 0;
      if (z->Score(a[i], &score)) {
        ReplyScore(score, r);
      } else {
        r->Null();
      }
    }
  });
}

namespace {

// ZCOUNT and ZLEXCOUNT: how many entries the range `s` covers.
void ReplyRangeCount(CommandContext* c, std::string_view key,
                     const RangeSpec& s, Reply* r) {
  ReadZSet(c, key, r, [&](ZSetValue* z) {
    uint64_t from = 0, to = 0;
    r->Int(RanksOf(z, s, &from, &to) ? static_cast<int64_t>(to - from) : 0);
  });
}

void RankCommon(const Args& a, CommandContext* c, Reply* r, bool rev) {
  ReadZSet(c, a[1], r, [&](ZSetValue* z) {
    int64_t at = z->Rank(a[2]);
    if (at < 0) return r->Null();
    r->Int(rev ? static_cast<int64_t>(z->size()) - 1 - at : at);
  });
}

}  // namespace

// ZRANK key member
void ZRank(const Args& a, CommandContext* c, Reply* r) {
  RankCommon(a, c, r, false);
}

// ZREVRANK key member
void ZRevRank(const Args& a, CommandContext* c, Reply* r) {
  RankCommon(a, c, r, true);
}

// ZCOUNT key min max
void ZCount(const Args& a, CommandContext* c, Reply* r) {
  ScoreRange range;
  if (!ParseScoreRange(a[2], a[3], &range)) {
    return r->Error("ERR min or max is not a float");
  }
  RangeSpec s;
  s.by = RangeBy::kScore;
  s.scores = range;
  ReplyRangeCount(c, a[1], s, r);
}

// ZLEXCOUNT key min max
void ZLexCount(const Args& a, CommandContext* c, Reply* r) {
  LexRange range;
  if (!ParseLexRange(a[2], a[3], &range)) {
    return r->Error("ERR min or max not valid string range item");
  }
  RangeSpec s;
  s.by = RangeBy::kLex;
  s.lex = range;
  ReplyRangeCount(c, a[1], s, r);
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
//   [WITHSCORES]
void ZRange(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  if (ParseRange(a, 2, 4, true, true, &s, r)) RangeReply(c, a[1], s, r);
}

// ZREVRANGE key start stop [WITHSCORES]
void ZRevRange(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  s.rev = true;
  if (ParseRange(a, 2, 4, false, true, &s, r)) RangeReply(c, a[1], s, r);
}

// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
void ZRangeByScore(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  s.by = RangeBy::kScore;
  if (ParseRange(a, 2, 4, false, true, &s, r)) RangeReply(c, a[1], s, r);
}

// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
void ZRevRangeByScore(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  s.by = RangeBy::kScore;
  s.rev = true;
  if (ParseRange(a, 2, 4, false, true, &s, r)) RangeReply(c, a[1], s, r);
}

// ZRANGEBYLEX key min max [LIMIT offset count]
void ZRangeByLex(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  s.by = RangeBy::kLex;
  if (ParseRange(a, 2, 4, false, true, &s, r)) RangeReply(c, a[1], s, r);
}

// ZREVRANGEBYLEX key max min [LIMIT offset count]
void ZRevRangeByLex(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  s.by = RangeBy::kLex;
  s.rev = true;
  if (ParseRange(a, 2, 4, false, true, &s, r)) RangeReply(c, a[1], s, r);
}

void ReplyEntries(const Entries& es, bool with_scores, Reply* r) {
  if (!with_scores) {
    r->Array(es.size());
    for (const ZEntry& e : es) r->Bulk(e.member);
    return;
  }
  r->Pairs(es.size());
  for (const ZEntry& e : es) {
    r->Pair();
    r->Bulk(e.member);
    ReplyScore(e.score, r);
  }
}

bool StoreEntries(CommandContext* c, std::string_view dst, const Entries& es,
                  const char* event, Reply* r) {
  std::vector<std::string> members;
  members.reserve(es.size());
  for (const ZEntry& e : es) members.emplace_back(e.member);
  Status st = c->txn->Delete(dst);
  if (st != Status::kOk && st != Status::kNotFound) {
    StoreError(st, r);
    return false;
  }
  ZSetValue z;
  if (!OpenZSet(c, dst, &z, r)) return false;
  for (size_t i = 0; i < es.size(); ++i) z.Set(members[i], es[i].score);
  NotifyStored(c, kNotifyZSet, event, dst, !es.empty(), st == Status::kOk);
  if (!SaveZSet(c, dst, &z, r)) return false;
  r->Int(static_cast<int64_t>(es.size()));
  return true;
}


// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
void ZRangeStore(const Args& a, CommandContext* c, Reply* r) {
  RangeSpec s;
  if (!ParseRange(a, 3, 5, true, false, &s, r)) return;
  ZSetValue z;
  if (!OpenZSet(c, a[2], &z, r)) return;
  Entries es;
  if (!Select(&z, s, &es)) return Damaged(r);
  StoreEntries(c, a[1], es, "zrangestore", r);
}

namespace {

// ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX.
void RemRangeCommon(const Args& a, CommandContext* c, Reply* r,
                    RangeBy by) {
  RangeSpec s;
  s.by = by;
  if (by == RangeBy::kRank) {
    if (!ToInt(a[2], &s.start) || !ToInt(a[3], &s.stop)) return NotInt(r);
  } else if (by == RangeBy::kScore) {
    if (!ParseScoreRange(a[2], a[3], &s.scores)) {
      return r->Error("ERR min or max is not a float");
    }
  } else if (!ParseLexRange(a[2], a[3], &s.lex)) {
    return r->Error("ERR min or max not valid string range item");
  }
  ZSetValue z;
  if (!OpenZSet(c, a[1], &z, r)) return;
  Entries gone;
  if (!Select(&z, s, &gone)) return Damaged(r);
  std::vector<std::string> members;
  for (const ZEntry& e : gone) members.emplace_back(e.member);
  for (const std::string& m : members) z.Remove(m);
  if (!gone.empty()) {
    Notify(c, kNotifyZSet,
           by == RangeBy::kRank    ? "zremrangebyrank"
           : by == RangeBy::kScore ? "zremrangebyscore"
                                   : "zremrangebylex",
           a[1]);
  }
  if (SaveZSet(c, a[1], &z, r)) r->Int(static_cast<int64_t>(gone.size()));
}

}  // namespace

// ZREMRANGEBYRANK key start stop
void ZRemRangeByRank(const Args& a, CommandContext* c, Reply* r) {
  RemRangeCommon(a, c, r, RangeBy::kRank);
}

// ZREMRANGEBYSCORE key min max
void ZRemRangeByScore(const Args& a, CommandContext* c, Reply* r) {
  RemRangeCommon(a, c, r, RangeBy::kScore);
}

// ZREMRANGEBYLEX key min max
void ZRemRangeByLex(const Args& a, CommandContext* c, Reply* r) {
  RemRangeCommon(a, c, r, RangeBy::kLex);
}

namespace {

void PopCommon(const Args& a, CommandContext* c, Reply* r, bool max) {
  int64_t count = 1;
  if (a.size() > 3) return r->Error("ERR syntax error");
  if (a.size() == 3 && (!ToInt(a[2], &count) || count < 0)) {
    return r->Error("ERR value is out of range, must be positive");
  }
  std::vector<std::string> ms;
  std::vector<double> scores;
  if (!PopZSet(c, a[1], max, static_cast<uint64_t>(count), &ms, &scores, r)) {
    return;
  }
  // With a count, RESP3 nests each pair (as Redis); alone, one flat pair.
  if (a.size() == 3) {
    r->Pairs(ms.size());
  } else {
    r->Array(ms.size() * 2);
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    if (a.size() == 3) r->Pair();
    r->Bulk(ms[i]);
    ReplyScore(scores[i], r);
  }
}

}  // namespace

// ZPOPMIN key [count]
void ZPopMin(const Args& a, CommandContext* c, Reply* r) {
  PopCommon(a, c, r, false);
}

// ZPOPMAX key [count]
void ZPopMax(const Args& a, CommandContext* c, Reply* r) {
  PopCommon(a, c, r, true);
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
void ZMPop(const Args& a, CommandContext* c, Reply* r) {
  MPopArgs m;
  if (!ParseMPop(a, "min", "max", &m, r)) return;
  bool max = !m.first_end;
  int64_t count = m.count;
  size_t where = m.end;
  for (size_t k = 2; k < where; ++k) {
    std::vector<std::string> ms;
    std::vector<double> scores;
    if (!PopZSet(c, a[k], max, static_cast<uint64_t>(count), &ms, &scores,
                 r)) {
      return;
    }
    if (ms.empty()) continue;
    ReplyKeyAndPairs(a[k], ms, scores, r);
    return;
  }
  r->NullArray();
}

void ReplyScore(double v, Reply* r) { r->Double(v); }

bool PopZSet(CommandContext* c, std::string_view key, bool max,
             uint64_t count, std::vector<std::string>* members,
             std::vector<double>* scores, Reply* r) {
  members->clear();
  scores->clear();
  ZSetValue z;
  if (!OpenZSet(c, key, &z, r)) return false;
  if (!z.exists()) return true;
  uint64_t size = z.size();
  uint64_t n = std::min<uint64_t>(count, size);
  if (n > 0) {
    z.Walk(max ? size - 1 : 0, !max, [&](const ZEntry& e) {
      members->emplace_back(e.member);
      scores->push_back(e.score);
      return members->size() < n;
    });
  }
  for (const std::string& m : *members) z.Remove(m);
  if (!z.ok()) {
    members->clear();
    scores->clear();
  }
  if (!members->empty()) {
    Notify(c, kNotifyZSet, max ? "zpopmax" : "zpopmin", key);
  }
  return SaveZSet(c, key, &z, r);
}

// ZRANDMEMBER key [count [WITHSCORES]]
void ZRandMember(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 0;
  bool with_scores = false;
  if (a.size() >= 3) {
    if (!ToInt(a[2], &count)) return NotInt(r);
    if (count == INT64_MIN) {
      return r->Error("ERR value is out of range, value must between "
                      "-9223372036854775807 and 9223372036854775807");
    }
    if (a.size() > 4 || (a.size() == 4 && !Eq(a[3], "withscores"))) {
      return r->Error("ERR syntax error");
    }
    with_scores = a.size() == 4;
    if (with_scores && (count < -INT64_MAX / 2 || count > INT64_MAX / 2)) {
      return r->Error("ERR value is out of range");
    }
  }
  ReadZSet(c, a[1], r, [&](ZSetValue* z) {
    Entries picks;
    if (!RandomEntries(z, a.size() == 2 ? 1 : count, &picks)) return;
    if (a.size() == 2) {
      if (picks.empty()) return r->Null();
      return r->Bulk(picks[0].member);
    }
    ReplyEntries(picks, with_scores, r);
  });
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]
void ZScan(const Args& a, CommandContext* c, Reply* r) {
  ScanArgs scan;
  if (!ParseScanCursor(a[2], &scan.cursor)) {
    return r->Error("ERR invalid cursor");
  }
  ReadZSet(c, a[1], r, [&](ZSetValue* z) {
    if (!z->exists()) return EmptyScan(r);
    if (!ParseScanOptions(a, 3, false, &scan, r)) return;
    std::string_view match = scan.match;
    // A packed set is one page, whatever the cursor (as Redis answers for
    // a listpack); one in parts pages its member table bucket by bucket,
    // the cursor being the next bucket.
    uint64_t next = scan.cursor;
    Entries page;
    if (!z->Page(&next, static_cast<size_t>(scan.count), &page)) return;
    Entries hits;
    for (const ZEntry& e : page) {
      if (match.empty() || GlobMatch(match, e.member)) hits.push_back(e);
    }
    // Scores as text, flat, in RESP3 too (as Redis's SCAN family).
    r->Array(2);
    r->Bulk(std::to_string(next));
    r->Array(hits.size() * 2);
    for (const ZEntry& e : hits) {
      r->Bulk(e.member);
      r->Bulk(ScoreText(e.score));
    }
  });
}

namespace {

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kZSetRows[] = {
    {"zadd", 117, -4, kWrite | kDenyOom | kFast, 1, 1, 1, ZAdd},
    {"zincrby", 118, 4, kWrite | kDenyOom | kFast, 1, 1, 1, ZIncrBy},
    {"zrem", 119, -3, kWrite | kFast, 1, 1, 1, ZRem},
    {"zcard", 120, 2, kReadOnly | kFast, 1, 1, 1, ZCard},
    {"zscore", 121, 3, kReadOnly | kFast, 1, 1, 1, ZScore},
    {"zmscore", 122, -3, kReadOnly | kFast, 1, 1, 1, ZMScore},
    {"zrank", 123, 3, kReadOnly | kFast, 1, 1, 1, ZRank},
    {"zrevrank", 124, 3, kReadOnly | kFast, 1, 1, 1, ZRevRank},
    {"zcount", 125, 4, kReadOnly | kFast, 1, 1, 1, ZCount},
    {"zlexcount", 126, 4, kReadOnly | kFast, 1, 1, 1, ZLexCount},
    {"zrange", 127, -4, kReadOnly, 1, 1, 1, ZRange},
    {"zrangestore", 128, -5, kWrite | kDenyOom, 1, 2, 1, ZRangeStore},
    {"zrevrange", 129, -4, kReadOnly, 1, 1, 1, ZRevRange},
    {"zrangebyscore", 130, -4, kReadOnly, 1, 1, 1, ZRangeByScore},
    {"zrevrangebyscore", 131, -4, kReadOnly, 1, 1, 1, ZRevRangeByScore},
    {"zrangebylex", 132, -4, kReadOnly, 1, 1, 1, ZRangeByLex},
    {"zrevrangebylex", 133, -4, kReadOnly, 1, 1, 1, ZRevRangeByLex},
    {"zremrangebyrank", 134, 4, kWrite, 1, 1, 1, ZRemRangeByRank},
    {"zremrangebyscore", 135, 4, kWrite, 1, 1, 1, ZRemRangeByScore},
    {"zremrangebylex", 136, 4, kWrite, 1, 1, 1, ZRemRangeByLex},
    {"zpopmin", 137, -2, kWrite | kFast, 1, 1, 1, ZPopMin},
    {"zpopmax", 138, -2, kWrite | kFast, 1, 1, 1, ZPopMax},
    {"zmpop", 139, -4, kWrite | kMovableKeys, 0, 0, 0, ZMPop},
    {"zrandmember", 140, -2, kReadOnly, 1, 1, 1, ZRandMember},
    {"zscan", 141, -3, kReadOnly, 1, 1, 1, ZScan},
    {"zunion", 142, -3, kReadOnly | kMovableKeys, 0, 0, 0, ZUnion},
    {"zinter", 143, -3, kReadOnly | kMovableKeys, 0, 0, 0, ZInter},
    {"zdiff", 144, -3, kReadOnly | kMovableKeys, 0, 0, 0, ZDiff},
    {"zunionstore", 145, -4, kWrite | kDenyOom | kMovableKeys, 1, 1, 1, ZUnionStore},
    {"zinterstore", 146, -4, kWrite | kDenyOom | kMovableKeys, 1, 1, 1, ZInterStore},
    {"zdiffstore", 147, -4, kWrite | kDenyOom | kMovableKeys, 1, 1, 1, ZDiffStore},
    {"zintercard", 148, -3, kReadOnly | kMovableKeys, 0, 0, 0, ZInterCard},
};

}  // namespace

void RegisterZSetFamily(Registry* r) {
  r->Add(kZSetRows, "zset");
}

}  // namespace cmd
}  // namespace shmkv
