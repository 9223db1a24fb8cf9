// shmkv's set commands, with Redis 7's replies and error texts
// (docs/server.md, "Sets"). A set is the table a hash is, with empty
// values (server/commands/hash_value.h, kSetShape): packed and sorted
// while its members are at most 512 integers (Redis's intset), in
// buckets otherwise. Write commands run in the transaction dispatch
// opened for them; reads outside one are lock-free, over one consistent
// view (ReadConsistently).
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;
using Pairs = std::vector<std::pair<std::string_view, std::string_view>>;
using Members = std::vector<std::string_view>;

// A set: the table of kSetShape.
class SetValue : public HashValue {
 public:
  SetValue() : HashValue(kSetShape) {}
};

bool OpenSet(CommandContext* c, std::string_view key, SetValue* s,
             Reply* r) {
  return Opened(s->Open(c, key), r);
}

bool SaveSet(CommandContext* c, std::string_view key, SetValue* s,
             Reply* r) {
  Status st = s->ok() ? s->Save(c, key) : Status::kOk;
  return Saved(st, s->ok(), r) && NotifyIfEmptied(c, s, key);
}

bool MembersOf(SetValue* s, Members* out) {
  Pairs all;
  if (!s->All(&all)) return false;
  for (const auto& p : all) out->push_back(p.first);
  return true;
}

// as_set: distinct members (a RESP3 set; SRANDMEMBER's may repeat).
void ReplyMembers(const Members& m, bool as_set, Reply* r) {
  as_set ? r->Set(m.size()) : r->Array(m.size());
  for (std::string_view v : m) r->Bulk(v);
}

uint64_t NextRandom() {
  static std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// The order Redis gives a set it builds (SUNION, SDIFF): an intset's,
// ascending, while every member is an integer and there are at most
// set-max-intset-entries.
void AsRedisBuildsIt(Members* m, uint64_t intset_entries) {
  if (m->size() > intset_entries) return;
  std::vector<std::pair<int64_t, std::string_view>> ints;
  for (std::string_view v : *m) {
    int64_t n = 0;
    if (!ParseInt64(v, &n)) return;
    ints.emplace_back(n, v);
  }
  std::sort(ints.begin(), ints.end());
  for (size_t i = 0; i < ints.size(); ++i) (*m)[i] = ints[i].second;
}

}  // namespace

// SADD key member [member ...]
void SAdd(const Args& a, CommandContext* c, Reply* r) {
  SetValue s;
  if (!OpenSet(c, a[1], &s, r)) return;
  for (size_t i = 2; i < a.size(); ++i) s.Grow(a[i]);
  int64_t added = 0;
  for (size_t i = 2; i < a.size(); ++i) added += s.Set(a[i], "");
  if (!s.ok()) return Damaged(r);
  if (added > 0) Notify(c, kNotifySet, "sadd", a[1]);
  if (added > 0 && !SaveSet(c, a[1], &s, r)) return;
  r->Int(added);
}

// SREM key member [member ...]
void SRem(const Args& a, CommandContext* c, Reply* r) {
  RemoveFields(a, c, r, kSetShape, kNotifySet, "srem");
}

// SMEMBERS key
void SMembers(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    SetValue s;
    if (!OpenSet(c, a[1], &s, r)) return;
    Members m;
    if (!MembersOf(&s, &m)) return Damaged(r);
    ReplyMembers(m, true, r);
  });
}

// SISMEMBER key member
void SIsMember(const Args& a, CommandContext* c, Reply* r) {
  ReplyFieldLookup(a, c, r, kSetShape, [&](bool found, std::string_view) {
    r->Int(found ? 1 : 0);
  });
}

// SMISMEMBER key member [member ...]
void SMIsMember(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    SetValue s;
    if (!OpenSet(c, a[1], &s, r)) return;
    std::vector<int64_t> found;
    for (size_t i = 2; i < a.size(); ++i) {
      std::string_view v;
      found.push_back(s.Find(a[i], &v) ? 1 : 0);
    }
    if (!s.ok()) return Damaged(r);
    r->Array(found.size());
    for (int64_t f : found) r->Int(f);
  });
}

// SCARD key
void SCard(const Args& a, CommandContext* c, Reply* r) {
  SetValue s;
  if (OpenSet(c, a[1], &s, r)) r->Int(static_cast<int64_t>(s.size()));
}

namespace {

// `count` distinct random members of `s` (count < its size).
bool DistinctMembers(SetValue* s, uint64_t count, Members* out) {
  if (count * 4 > s->size() || !s->in_buckets()) {
    Members all;
    if (!MembersOf(s, &all)) return false;
    for (uint64_t i = 0; i < count; ++i) {
      std::swap(all[i], all[i + NextRandom() % (all.size() - i)]);
    }
    out->assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(count));
    return true;
  }
  std::unordered_set<std::string_view> seen;
  while (out->size() < count) {
    std::string_view m, unused;
    if (!s->Random(NextRandom, &m, &unused)) return false;
    if (seen.insert(m).second) out->push_back(m);
  }
  return true;
}

// SPOP's and SRANDMEMBER's count; false after replying the error.
bool CountArg(const Args& a, bool allow_negative, int64_t* count, Reply* r) {
  if (a.size() > 3) {
    r->Error("ERR syntax error");
    return false;
  }
  bool parsed = ToInt(a[2], count);
  if (!allow_negative && (!parsed || *count < 0)) {
    r->Error("ERR value is out of range, must be positive");
    return false;
  }
  if (!parsed) {
    NotInt(r);
    return false;
  }
  if (*count == INT64_MIN) {
    r->Error("ERR value is out of range, value must between "
             "-9223372036854775807 and 9223372036854775807");
    return false;
  }
  return true;
}

}  // namespace

// SPOP key [count]
void SPop(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 1;
  if (a.size() >= 3 && !CountArg(a, false, &count, r)) return;
  SetValue s;
  if (!OpenSet(c, a[1], &s, r)) return;
  if (a.size() == 2) {
    if (s.size() == 0) return r->Null();
    std::string_view m, unused;
    if (!s.Random(NextRandom, &m, &unused)) return Damaged(r);
    std::string member(m);
    s.Remove(member);
    Notify(c, kNotifySet, "spop", a[1]);
    if (SaveSet(c, a[1], &s, r)) r->Bulk(member);
    return;
  }
  if (s.size() == 0 || count == 0) return r->Set(0);
  Members picks;
  bool ok = static_cast<uint64_t>(count) >= s.size()
                ? MembersOf(&s, &picks)
                : DistinctMembers(&s, static_cast<uint64_t>(count), &picks);
  if (!ok) return Damaged(r);
  std::vector<std::string> owned(picks.begin(), picks.end());
  for (const std::string& m : owned) s.Remove(m);
  Notify(c, kNotifySet, "spop", a[1]);
  if (!SaveSet(c, a[1], &s, r)) return;
  r->Set(owned.size());
  for (const std::string& m : owned) r->Bulk(m);
}

// SRANDMEMBER key [count]
void SRandMember(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 0;
  if (a.size() >= 3 && !CountArg(a, true, &count, r)) return;
  ReadConsistently(c, r, [&] {
    SetValue s;
    if (!OpenSet(c, a[1], &s, r)) return;
    std::string_view m, unused;
    if (a.size() == 2) {
      if (s.size() == 0) return r->Null();
      if (!s.Random(NextRandom, &m, &unused)) return Damaged(r);
      return r->Bulk(m);
    }
    if (s.size() == 0 || count == 0) return r->Array(0);
    Members picks;
    if (count < 0) {
      for (int64_t i = 0; i < -count; ++i) {
        if (!s.Random(NextRandom, &m, &unused)) return Damaged(r);
        picks.push_back(m);
      }
    } else if (static_cast<uint64_t>(count) >= s.size()) {
      if (!MembersOf(&s, &picks)) return Damaged(r);
    } else if (!DistinctMembers(&s, static_cast<uint64_t>(count), &picks)) {
      return Damaged(r);
    }
    ReplyMembers(picks, false, r);
  });
}

// SMOVE source destination member
void SMove(const Args& a, CommandContext* c, Reply* r) {
  SetValue src, other;
  if (!OpenSet(c, a[1], &src, r)) return;
  // No source: 0, whatever the destination holds (as Redis checks).
  if (!src.exists()) return r->Int(0);
  bool same = a[1] == a[2];
  if (!same && !OpenSet(c, a[2], &other, r)) return;
  std::string_view v;
  bool member = src.Find(a[3], &v);
  if (!src.ok()) return Damaged(r);
  if (same || !member) return r->Int(member ? 1 : 0);
  src.Remove(a[3]);
  other.Grow(a[3]);
  bool added = other.Set(a[3], "");
  // Redis's order: the removal (and the source's deletion), then the add.
  Notify(c, kNotifySet, "srem", a[1]);
  if (!SaveSet(c, a[1], &src, r)) return;
  MarkEvents(c);  // (a new destination is announced after the source's)
  // A destination that held the member already is not written: as in
  // Redis, it is not touched (a WATCH on it holds).
  if (!added) return r->Int(1);
  Notify(c, kNotifySet, "sadd", a[2]);
  if (SaveSet(c, a[2], &other, r)) r->Int(1);
}

namespace {

// The sets named by a[from, to): false after replying WRONGTYPE or the
// damaged-value error. A missing key is an empty set.
bool OpenSets(const Args& a, size_t from, size_t to, CommandContext* c,
              std::vector<SetValue>* sets, Reply* r) {
  sets->resize(to - from);
  for (size_t i = from; i < to; ++i) {
    if (!OpenSet(c, a[i], &(*sets)[i - from], r)) return false;
  }
  return true;
}

// SINTER's members (up to `limit`; 0: all), in the smallest set's order.
bool Intersect(std::vector<SetValue>* sets, uint64_t limit, Members* out) {
  size_t smallest = 0;
  for (size_t i = 0; i < sets->size(); ++i) {
    if ((*sets)[i].size() == 0) return true;
    if ((*sets)[i].size() < (*sets)[smallest].size()) smallest = i;
  }
  Members first;
  if (!MembersOf(&(*sets)[smallest], &first)) return false;
  for (std::string_view m : first) {
    bool in_all = true;
    for (size_t i = 0; i < sets->size() && in_all; ++i) {
      std::string_view v;
      if (i != smallest) in_all = (*sets)[i].Find(m, &v);
      if (!(*sets)[i].ok()) return false;
    }
    if (in_all) out->push_back(m);
    if (limit != 0 && out->size() >= limit) break;
  }
  return true;
}

// SUNION's or SDIFF's members, in the order Redis's result set has.
bool Combine(std::vector<SetValue>* sets, bool diff, uint64_t intset_entries,
             Members* out) {
  std::unordered_set<std::string_view> seen;
  Members first;
  if (!MembersOf(&(*sets)[0], &first)) return false;
  for (std::string_view m : first) {
    bool keep = true;
    for (size_t i = 1; diff && keep && i < sets->size(); ++i) {
      std::string_view v;
      keep = !(*sets)[i].Find(m, &v);
      if (!(*sets)[i].ok()) return false;
    }
    if (keep && seen.insert(m).second) out->push_back(m);
  }
  for (size_t i = 1; !diff && i < sets->size(); ++i) {
    Members more;
    if (!MembersOf(&(*sets)[i], &more)) return false;
    for (std::string_view m : more) {
      if (seen.insert(m).second) out->push_back(m);
    }
  }
  AsRedisBuildsIt(out, intset_entries);
  return true;
}

enum class SetOp { kInter, kUnion, kDiff };

// SINTER, SUNION, SDIFF and their STORE forms (store: a[1] is the
// destination).
void SetOpCommon(const Args& a, CommandContext* c, Reply* r, SetOp op,
                 bool store) {
  size_t first = store ? 2 : 1;
  auto run = [&] {
    std::vector<SetValue> sets;
    if (!OpenSets(a, first, a.size(), c, &sets, r)) return;
    Members result;
    bool ok = op == SetOp::kInter ? Intersect(&sets, 0, &result)
                                  : Combine(&sets, op == SetOp::kDiff,
                                            c->store->Limits()
                                                .set_intset_entries,
                                            &result);
    if (!ok) return Damaged(r);
    if (!store) return ReplyMembers(result, true, r);
    // The destination is replaced whole, whatever it held.
    std::vector<std::string> owned(result.begin(), result.end());
    SetValue dst;
    Status st = c->txn->Delete(a[1]);
    if (st != Status::kOk && st != Status::kNotFound) return StoreError(st, r);
    if (!OpenSet(c, a[1], &dst, r)) return;
    for (const std::string& m : owned) dst.Grow(m);
    for (const std::string& m : owned) dst.Set(m, "");
    NotifyStored(c, kNotifySet,
                 op == SetOp::kInter   ? "sinterstore"
                 : op == SetOp::kUnion ? "sunionstore"
                                       : "sdiffstore",
                 a[1], !owned.empty(), st == Status::kOk);
    if (SaveSet(c, a[1], &dst, r)) r->Int(static_cast<int64_t>(owned.size()));
  };
  if (store) {
    run();
  } else {
    ReadConsistently(c, r, run);
  }
}

}  // namespace

// SINTER key [key ...]
void SInter(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kInter, false);
}

// SUNION key [key ...]
void SUnion(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kUnion, false);
}

// SDIFF key [key ...]
void SDiff(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kDiff, false);
}

// SINTERSTORE destination key [key ...]
void SInterStore(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kInter, true);
}

// SUNIONSTORE destination key [key ...]
void SUnionStore(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kUnion, true);
}

// SDIFFSTORE destination key [key ...]
void SDiffStore(const Args& a, CommandContext* c, Reply* r) {
  SetOpCommon(a, c, r, SetOp::kDiff, true);
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
void SInterCard(const Args& a, CommandContext* c, Reply* r) {
  int64_t numkeys = 0;
  if (!ToInt(a[1], &numkeys) || numkeys <= 0) {
    return r->Error("ERR numkeys should be greater than 0");
  }
  if (numkeys > static_cast<int64_t>(a.size()) - 2) {
    return r->Error("ERR Number of keys can't be greater than number of "
                    "args");
  }
  size_t end = 2 + static_cast<size_t>(numkeys);
  int64_t limit = 0;
  if (!ParseCardLimit(a, end, &limit, r)) return;
  ReadConsistently(c, r, [&] {
    std::vector<SetValue> sets;
    if (!OpenSets(a, 2, end, c, &sets, r)) return;
    Members result;
    if (!Intersect(&sets, static_cast<uint64_t>(limit), &result)) {
      return Damaged(r);
    }
    r->Int(static_cast<int64_t>(result.size()));
  });
}

// SSCAN key cursor [MATCH pattern] [COUNT count]
void SScan(const Args& a, CommandContext* c, Reply* r) {
  ReplyTableScan(a, c, r, kSetShape, false);
}

namespace {

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kSetRows[] = {
    {"sadd", 100, -3, kWrite | kDenyOom | kFast, 1, 1, 1, SAdd},
    {"srem", 101, -3, kWrite | kFast, 1, 1, 1, SRem},
    {"smembers", 102, 2, kReadOnly, 1, 1, 1, SMembers},
    {"sismember", 103, 3, kReadOnly | kFast, 1, 1, 1, SIsMember},
    {"smismember", 104, -3, kReadOnly | kFast, 1, 1, 1, SMIsMember},
    {"scard", 105, 2, kReadOnly | kFast, 1, 1, 1, SCard},
    {"spop", 106, -2, kWrite | kFast, 1, 1, 1, SPop},
    {"srandmember", 107, -2, kReadOnly, 1, 1, 1, SRandMember},
    {"smove", 108, 4, kWrite | kFast, 1, 2, 1, SMove},
    {"sinter", 109, -2, kReadOnly, 1, -1, 1, SInter},
    {"sintercard", 110, -3, kReadOnly | kMovableKeys, 0, 0, 0, SInterCard},
    {"sunion", 111, -2, kReadOnly, 1, -1, 1, SUnion},
    {"sdiff", 112, -2, kReadOnly, 1, -1, 1, SDiff},
    {"sinterstore", 113, -3, kWrite | kDenyOom, 1, -1, 1, SInterStore},
    {"sunionstore", 114, -3, kWrite | kDenyOom, 1, -1, 1, SUnionStore},
    {"sdiffstore", 115, -3, kWrite | kDenyOom, 1, -1, 1, SDiffStore},
    {"sscan", 116, -3, kReadOnly, 1, 1, 1, SScan},
};

}  // namespace

void RegisterSetFamily(Registry* r) {
  r->Add(kSetRows, "set");
}

}  // namespace cmd
}  // namespace shmkv
