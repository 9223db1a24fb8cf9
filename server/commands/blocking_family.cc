// The blocking commands: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
// BZPOPMIN, BZPOPMAX and BZMPOP, with Redis 7's replies and error texts.
// Each either serves at once from a ready key, as its non-blocking form
// would, or blocks: the worker holds the client and tries the command
// again, with its place in line, when a key it waits on is written
// (docs/server.md, "Blocking commands"; server/store/waits.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/blocking.h"
#include "server/commands/command_util.h"
#include "server/store/key_hash.h"
#include "shmc/detail/process.h"

namespace shmkv {
namespace cmd {

bool ParseBlockTimeout(std::string_view s, int64_t* ms, Reply* r) {
  long double v = 0;
  if (!ToLongDouble(s, &v)) {
    r->Error("ERR timeout is not a float or out of range");
    return false;
  }
  // Milliseconds, rounded up; past the 64-bit range the conversion Redis
  // makes gives the most negative number, hence its "negative" error for
  // huge or infinite timeouts.
  long double t = std::ceil(v * 1000.0L);
  constexpr long double kLimit = 9223372036854775808.0L;  // 2^63
  if (!(t >= -kLimit && t < kLimit) || t < 0) {
    r->Error("ERR timeout is negative");
    return false;
  }
  *ms = static_cast<int64_t>(t);
  return true;
}

void ReplyKeyAndAll(std::string_view key, const std::vector<std::string>& v,
                    Reply* r) {
  r->Array(2);
  r->Bulk(key);
  r->Array(v.size());
  for (const std::string& e : v) r->Bulk(e);
}

void ReplyKeyAndPairs(std::string_view key,
                      const std::vector<std::string>& members,
                      const std::vector<double>& scores, Reply* r) {
  r->Array(2);
  r->Bulk(key);
  r->Array(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    r->Array(2);
    r->Bulk(members[i]);
    ReplyScore(scores[i], r);
  }
}

void ServeOrBlock(CommandContext* c, Reply* r,
                  const std::vector<std::string_view>& keys, ValueType type,
                  int64_t timeout_ms, bool null_bulk,
                  const std::function<void(std::string_view)>& take) {
  Store::Txn* t = c->txn;  // the command's (the blocking ones write)
  const bool retry = c->ticket != 0;
  const uint64_t mine = retry ? c->ticket : ~uint64_t{0};
  Value v;
  for (std::string_view key : keys) {
    Store::Status st = t->Read(key, &v);
    if (st == Store::Status::kNotFound) continue;
    if (st != Store::Status::kOk) return StoreError(st, r);
    // A key of another type fails the first try, as in Redis; once
    // blocked, the client waits on past it (Redis 7.0 serves only a key
    // of the type it waits for).
    if (v.type != type) {
      if (retry) continue;
      return WrongType(r);
    }
    if (c->waits != nullptr &&
        c->waits->Older(HashKeyIn(c->store->db(), key).a, mine)) {
      continue;  // a client that blocked first is served first
    }
    if (retry) c->waits->Remove(c->ticket);
    take(key);
    return;
  }
  if (c->deny_blocking && null_bulk) return r->Null();
  if (c->deny_blocking || !c->may_block || c->waits == nullptr ||
      !c->waits->open()) {
    return r->NullArray();
  }
  WaitOn(c, r, keys, timeout_ms);
}

void WaitOn(CommandContext* c, Reply* r,
            const std::vector<std::string_view>& keys, int64_t timeout_ms) {
  if (c->ticket != 0) {  // still waiting, in the same place
    c->blocked.ticket = c->ticket;
    return;
  }
  std::vector<uint64_t> hashes;
  hashes.reserve(keys.size());
  for (std::string_view key : keys) {
    hashes.push_back(HashKeyIn(c->store->db(), key).a);
  }
  uint64_t ticket = c->waits->Register(hashes);
  if (ticket == 0) {
    return r->Error("ERR too many clients are blocked at once (the wait "
                    "board is full)");
  }
  c->blocked.ticket = ticket;
  c->blocked.keys = std::move(hashes);
  c->blocked.deadline_ns = 0;
  constexpr int64_t kMaxMs = std::numeric_limits<int64_t>::max() / 2000000;
  if (timeout_ms > 0 && timeout_ms < kMaxMs) {
    c->blocked.deadline_ns = shmc::detail::MonotonicNs() +
                             static_cast<uint64_t>(timeout_ms) * 1000000ULL;
  }
}

namespace {

using Keys = std::vector<std::string_view>;

// BLPOP and BRPOP: [key, element].
void BlockingPop(const Args& a, CommandContext* c, Reply* r, bool front) {
  int64_t ms = 0;
  if (!ParseBlockTimeout(a.back(), &ms, r)) return;
  Keys keys(a.begin() + 1, a.end() - 1);
  ServeOrBlock(c, r, keys, ValueType::kList, ms, false,
               [&](std::string_view key) {
    std::vector<std::string> out;
    if (!PopList(c, key, front, 1, &out, r)) return;
    r->Array(2);
    r->Bulk(key);
    r->Bulk(out.at(0));
  });
}

// LEFT or RIGHT; false when neither.
bool End(std::string_view s, bool* front) {
  *front = Eq(s, "left");
  return *front || Eq(s, "right");
}

void BlockingMove(CommandContext* c, Reply* r, std::string_view from,
                  std::string_view to, bool from_front, bool to_front,
                  std::string_view timeout) {
  int64_t ms = 0;
  if (!ParseBlockTimeout(timeout, &ms, r)) return;
  ServeOrBlock(c, r, Keys{from}, ValueType::kList, ms, true,
               [&](std::string_view key) {
                 MoveElement(c, r, key, to, from_front, to_front);
               });
}

// BZPOPMIN and BZPOPMAX: [key, member, score].
void BlockingZPop(const Args& a, CommandContext* c, Reply* r, bool max) {
  int64_t ms = 0;
  if (!ParseBlockTimeout(a.back(), &ms, r)) return;
  Keys keys(a.begin() + 1, a.end() - 1);
  ServeOrBlock(c, r, keys, ValueType::kZSet, ms, false,
               [&](std::string_view key) {
    std::vector<std::string> ms_out;
    std::vector<double> scores;
    if (!PopZSet(c, key, max, 1, &ms_out, &scores, r)) return;
    r->Array(3);
    r->Bulk(key);
    r->Bulk(ms_out.at(0));
    ReplyScore(scores.at(0), r);
  });
}

// BLMPOP and BZMPOP: timeout numkeys key [key ...] END [COUNT count],
// parsed as LMPOP's and ZMPOP's tail, then the timeout (Redis's order).
void BlockingMPop(const Args& a, CommandContext* c, Reply* r, bool list) {
  Args tail(a.begin() + 1, a.end());
  MPopArgs m;
  if (!ParseMPop(tail, list ? "left" : "min", list ? "right" : "max", &m,
                 r)) {
    return;
  }
  int64_t ms = 0;
  if (!ParseBlockTimeout(a[1], &ms, r)) return;
  Keys keys(a.begin() + 3, a.begin() + 1 + static_cast<ptrdiff_t>(m.end));
  const uint64_t count = static_cast<uint64_t>(m.count);
  const bool first = m.first_end;
  ServeOrBlock(c, r, keys, list ? ValueType::kList : ValueType::kZSet, ms,
               false, [&](std::string_view key) {
                 std::vector<std::string> out;
                 if (list) {
                   if (!PopList(c, key, first, count, &out, r)) return;
                   return ReplyKeyAndAll(key, out, r);
                 }
                 std::vector<double> scores;
                 if (!PopZSet(c, key, !first, count, &out, &scores, r)) {
                   return;
                 }
                 ReplyKeyAndPairs(key, out, scores, r);
               });
}

}  // namespace

// BLPOP key [key ...] timeout
void BLPop(const Args& a, CommandContext* c, Reply* r) {
  BlockingPop(a, c, r, true);
}

// BRPOP key [key ...] timeout
void BRPop(const Args& a, CommandContext* c, Reply* r) {
  BlockingPop(a, c, r, false);
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
void BLMove(const Args& a, CommandContext* c, Reply* r) {
  bool from_front = false, to_front = false;
  if (!End(a[3], &from_front) || !End(a[4], &to_front)) {
    return r->Error("ERR syntax error");
  }
  BlockingMove(c, r, a[1], a[2], from_front, to_front, a[5]);
}

// BRPOPLPUSH source destination timeout
void BRPopLPush(const Args& a, CommandContext* c, Reply* r) {
  BlockingMove(c, r, a[1], a[2], false, true, a[3]);
}

// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
void BLMPop(const Args& a, CommandContext* c, Reply* r) {
  BlockingMPop(a, c, r, true);
}

// BZPOPMIN key [key ...] timeout
void BZPopMin(const Args& a, CommandContext* c, Reply* r) {
  BlockingZPop(a, c, r, false);
}

// BZPOPMAX key [key ...] timeout
void BZPopMax(const Args& a, CommandContext* c, Reply* r) {
  BlockingZPop(a, c, r, true);
}

// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
void BZMPop(const Args& a, CommandContext* c, Reply* r) {
  BlockingMPop(a, c, r, false);
}

namespace {

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kBlockingRows[] = {
    {"blpop", 149, -3, kWrite | kNoScript | kBlocking, 1, -2, 1, BLPop},
    {"brpop", 150, -3, kWrite | kNoScript | kBlocking, 1, -2, 1, BRPop},
    {"blmove", 151, 6, kWrite | kDenyOom | kNoScript | kBlocking, 1, 2, 1,
     BLMove},
    {"brpoplpush", 152, 4, kWrite | kDenyOom | kNoScript | kBlocking, 1, 2,
     1, BRPopLPush},
    {"blmpop", 153, -5, kWrite | kBlocking | kMovableKeys, 0, 0, 0, BLMPop},
    {"bzpopmin", 154, -3, kWrite | kNoScript | kBlocking | kFast, 1, -2, 1,
     BZPopMin},
    {"bzpopmax", 155, -3, kWrite | kNoScript | kBlocking | kFast, 1, -2, 1,
     BZPopMax},
    {"bzmpop", 156, -5, kWrite | kBlocking | kMovableKeys, 0, 0, 0, BZMPop},
};

}  // namespace

void RegisterBlockingFamily(Registry* r) {
  r->Add(kBlockingRows, "blocking");
}

}  // namespace cmd
}  // namespace shmkv
