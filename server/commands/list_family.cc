// shmkv's list commands, with Redis 7's replies and error texts
// (docs/server.md, "Lists"), over ListValue (server/commands/
// list_value.h): a short list packed in one blob, a long one in linked
// chunks. Write commands run in the transaction dispatch opened for them;
// reads outside one are lock-free, over one consistent view
// (ReadConsistently).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/blocking.h"
#include "server/commands/command_util.h"
#include "server/commands/list_value.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;
using Elements = std::vector<std::string_view>;

bool OpenList(CommandContext* c, std::string_view key, ListValue* l,
              Reply* r) {
  return Opened(l->Open(c, key), r);
}

bool SaveList(CommandContext* c, std::string_view key, ListValue* l,
              Reply* r) {
  Status st = l->ok() ? l->Save(c, key) : Status::kOk;
  return Saved(st, l->ok(), r) && NotifyIfEmptied(c, l, key);
}

// Redis's index rule: negative counts from the end; false when outside.
bool NormalIndex(int64_t i, uint64_t size, uint64_t* out) {
  if (i < 0) i += static_cast<int64_t>(size);
  if (i < 0 || static_cast<uint64_t>(i) >= size) return false;
  *out = static_cast<uint64_t>(i);
  return true;
}

// LRANGE's and LTRIM's range rule: both ends clamped; false when empty.
bool NormalRange(int64_t start, int64_t stop, uint64_t size, uint64_t* from,
                 uint64_t* to) {
  int64_t n = static_cast<int64_t>(size);
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > stop || start >= n) return false;
  if (stop >= n) stop = n - 1;
  *from = static_cast<uint64_t>(start);
  *to = static_cast<uint64_t>(stop);
  return true;
}

// LPUSH, RPUSH, LPUSHX and RPUSHX.
void PushCommon(const Args& a, CommandContext* c, Reply* r, bool front,
                bool only_existing) {
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  if (only_existing && !l.exists()) return r->Int(0);
  for (size_t i = 2; i < a.size(); ++i) l.Push(front, a[i]);
  Notify(c, kNotifyList, front ? "lpush" : "rpush", a[1]);
  if (SaveList(c, a[1], &l, r)) r->Int(static_cast<int64_t>(l.size()));
}

// LPOP and RPOP: one element, or `count` of them.
void PopCommon(const Args& a, CommandContext* c, Reply* r, bool front) {
  int64_t count = 1;
  if (a.size() > 3) {
    return r->Error("ERR wrong number of arguments for '" + Lower(a[0]) +
                    "' command");
  }
  if (a.size() == 3 && (!ToInt(a[2], &count) || count < 0)) {
    return r->Error("ERR value is out of range, must be positive");
  }
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  if (!l.exists()) return a.size() == 3 ? r->NullArray() : r->Null();
  Elements out;
  if (!l.Pop(front, static_cast<uint64_t>(count), &out)) return Damaged(r);
  // A count of 0 pops nothing: the list is not written (not touched).
  if (out.empty()) return r->Array(0);
  Notify(c, kNotifyList, front ? "lpop" : "rpop", a[1]);
  if (!SaveList(c, a[1], &l, r)) return;
  if (a.size() == 2) return r->Bulk(out[0]);
  r->Array(out.size());
  for (std::string_view v : out) r->Bulk(v);
}

}  // namespace

// LPUSH key element [element ...]
void LPush(const Args& a, CommandContext* c, Reply* r) {
  PushCommon(a, c, r, true, false);
}

// RPUSH key element [element ...]
void RPush(const Args& a, CommandContext* c, Reply* r) {
  PushCommon(a, c, r, false, false);
}

// LPUSHX key element [element ...]
void LPushX(const Args& a, CommandContext* c, Reply* r) {
  PushCommon(a, c, r, true, true);
}

// RPUSHX key element [element ...]
void RPushX(const Args& a, CommandContext* c, Reply* r) {
  PushCommon(a, c, r, false, true);
}

// LPOP key [count]
void LPop(const Args& a, CommandContext* c, Reply* r) {
  PopCommon(a, c, r, true);
}

// RPOP key [count]
void RPop(const Args& a, CommandContext* c, Reply* r) {
  PopCommon(a, c, r, false);
}

// LLEN key
void LLen(const Args& a, CommandContext* c, Reply* r) {
  ListValue l;
  if (OpenList(c, a[1], &l, r)) r->Int(static_cast<int64_t>(l.size()));
}

// LINDEX key index
void LIndex(const Args& a, CommandContext* c, Reply* r) {
  int64_t i = 0;
  if (!ToInt(a[2], &i)) return NotInt(r);
  ReadConsistently(c, r, [&] {
    ListValue l;
    if (!OpenList(c, a[1], &l, r)) return;
    uint64_t at = 0;
    if (!NormalIndex(i, l.size(), &at)) return r->Null();
    std::string_view v;
    if (!l.Index(at, &v)) return Damaged(r);
    r->Bulk(v);
  });
}

// LSET key index element
void LSet(const Args& a, CommandContext* c, Reply* r) {
  int64_t i = 0;
  if (!ToInt(a[2], &i)) return NotInt(r);
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  if (!l.exists()) return r->Error("ERR no such key");
  uint64_t at = 0;
  if (!NormalIndex(i, l.size(), &at)) {
    return r->Error("ERR index out of range");
  }
  if (!l.SetAt(at, a[3])) return Damaged(r);
  Notify(c, kNotifyList, "lset", a[1]);
  if (SaveList(c, a[1], &l, r)) r->Simple("OK");
}

// LRANGE key start stop
void LRange(const Args& a, CommandContext* c, Reply* r) {
  int64_t start = 0, stop = 0;
  if (!ToInt(a[2], &start) || !ToInt(a[3], &stop)) return NotInt(r);
  ReadConsistently(c, r, [&] {
    ListValue l;
    if (!OpenList(c, a[1], &l, r)) return;
    uint64_t from = 0, to = 0;
    if (!NormalRange(start, stop, l.size(), &from, &to)) return r->Array(0);
    Elements out;
    if (!l.Range(from, to, &out)) return Damaged(r);
    r->Array(out.size());
    for (std::string_view v : out) r->Bulk(v);
  });
}

// LTRIM key start stop
void LTrim(const Args& a, CommandContext* c, Reply* r) {
  int64_t start = 0, stop = 0;
  if (!ToInt(a[2], &start) || !ToInt(a[3], &stop)) return NotInt(r);
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  uint64_t size = l.size(), from = 0, to = 0;
  Elements dropped;
  if (!NormalRange(start, stop, size, &from, &to)) {
    if (!l.Pop(true, size, &dropped)) return Damaged(r);
  } else if (!l.Pop(true, from, &dropped) ||
             !l.Pop(false, size - 1 - to, &dropped)) {
    return Damaged(r);
  }
  if (l.exists()) Notify(c, kNotifyList, "ltrim", a[1]);
  if (SaveList(c, a[1], &l, r)) r->Simple("OK");
}

// LINSERT key BEFORE|AFTER pivot element
void LInsert(const Args& a, CommandContext* c, Reply* r) {
  bool after = Eq(a[2], "after");
  if (!after && !Eq(a[2], "before")) return r->Error("ERR syntax error");
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  if (!l.exists()) return r->Int(0);
  bool found = false;
  if (!l.InsertAt(a[3], after, a[4], &found)) return Damaged(r);
  if (!found) return r->Int(-1);
  Notify(c, kNotifyList, "linsert", a[1]);
  if (SaveList(c, a[1], &l, r)) r->Int(static_cast<int64_t>(l.size()));
}

// LREM key count element
void LRem(const Args& a, CommandContext* c, Reply* r) {
  int64_t count = 0;
  if (!ToInt(a[2], &count)) return NotInt(r);
  ListValue l;
  if (!OpenList(c, a[1], &l, r)) return;
  uint64_t limit = count == 0 ? UINT64_MAX
                              : count < 0 ? 0 - static_cast<uint64_t>(count)
                                          : static_cast<uint64_t>(count);
  int64_t removed = 0;
  bool ok = l.Edit(count >= 0, [&](std::string_view v) {
    if (v != a[3]) return ListValue::Step::kNext;
    ++removed;
    return static_cast<uint64_t>(removed) == limit
               ? ListValue::Step::kRemoveAndStop
               : ListValue::Step::kRemove;
  });
  if (!ok) return Damaged(r);
  if (removed > 0) Notify(c, kNotifyList, "lrem", a[1]);
  if (removed > 0 && !SaveList(c, a[1], &l, r)) return;
  r->Int(removed);
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
void LPos(const Args& a, CommandContext* c, Reply* r) {
  int64_t rank = 1, count = -1, maxlen = 0;
  for (size_t i = 3; i < a.size(); i += 2) {
    if (i + 1 >= a.size()) return r->Error("ERR syntax error");
    int64_t v = 0;
    if (!Eq(a[i], "rank") && !Eq(a[i], "count") && !Eq(a[i], "maxlen")) {
      return r->Error("ERR syntax error");
    }
    // (Redis reads COUNT and MAXLEN as positive numbers: what does not
    // parse gets their "can't be negative" too.)
    const bool parsed = ToInt(a[i + 1], &v);
    if (Eq(a[i], "rank")) {
      if (!parsed) return NotInt(r);
      if (v == 0) {
        return r->Error("ERR RANK can't be zero: use 1 to start from the "
                        "first match, 2 from the second ... or use negative "
                        "to start from the end of the list");
      }
      rank = v;
    } else if (Eq(a[i], "count")) {
      if (!parsed || v < 0) return r->Error("ERR COUNT can't be negative");
      count = v;
    } else {
      if (!parsed || v < 0) return r->Error("ERR MAXLEN can't be negative");
      maxlen = v;
    }
  }
  ReadConsistently(c, r, [&] {
    ListValue l;
    if (!OpenList(c, a[1], &l, r)) return;
    bool front = rank > 0;
    // Redis negates a negative rank: INT64_MIN stays negative, and then
    // every match is past it (as the first match is).
    uint64_t skip = rank > 0 ? static_cast<uint64_t>(rank) - 1
                   : rank == INT64_MIN ? 0
                                       : static_cast<uint64_t>(-rank) - 1;
    uint64_t want = count < 0 ? 1 : count == 0 ? UINT64_MAX
                                                : static_cast<uint64_t>(count);
    uint64_t seen = 0, size = l.size();
    std::vector<int64_t> hits;
    bool ok = l.Edit(front, [&](std::string_view v) {
      uint64_t at = front ? seen : size - 1 - seen;
      ++seen;
      if (v == a[2]) {
        if (skip > 0) {
          --skip;
        } else {
          hits.push_back(static_cast<int64_t>(at));
        }
      }
      bool done = hits.size() >= want ||
                  (maxlen > 0 && seen >= static_cast<uint64_t>(maxlen));
      return done ? ListValue::Step::kStop : ListValue::Step::kNext;
    });
    if (!ok) return Damaged(r);
    if (count < 0) {
      if (hits.empty()) return r->Null();
      return r->Int(hits[0]);
    }
    r->Array(hits.size());
    for (int64_t h : hits) r->Int(h);
  });
}

bool PopList(CommandContext* c, std::string_view key, bool front,
             uint64_t count, std::vector<std::string>* out, Reply* r) {
  ListValue l;
  out->clear();
  if (!OpenList(c, key, &l, r)) return false;
  if (!l.exists()) return true;
  Elements popped;
  if (!l.Pop(front, count, &popped)) {
    Damaged(r);
    return false;
  }
  out->assign(popped.begin(), popped.end());
  if (!out->empty()) Notify(c, kNotifyList, front ? "lpop" : "rpop", key);
  return SaveList(c, key, &l, r);
}

// Pops from one end of `from`, pushes to one end of `to` (the same key
// may be both): the element moved, or nil.
void MoveElement(CommandContext* c, Reply* r, std::string_view from,
                 std::string_view to, bool from_front, bool to_front) {
  ListValue src;
  if (!OpenList(c, from, &src, r)) return;
  if (!src.exists()) return r->Null();
  ListValue other;
  bool same = from == to;
  if (!same && !OpenList(c, to, &other, r)) return;
  ListValue& dst = same ? src : other;
  Elements moved;
  if (!src.Pop(from_front, 1, &moved)) return Damaged(r);
  dst.Push(to_front, moved[0]);
  // Redis's order: the push, the pop, then the source's removal.
  Notify(c, kNotifyList, to_front ? "lpush" : "rpush", to);
  Notify(c, kNotifyList, from_front ? "lpop" : "rpop", from);
  if (!SaveList(c, from, &src, r)) return;
  if (!same && !SaveList(c, to, &dst, r)) return;
  r->Bulk(moved[0]);
}

namespace {

// The LEFT or RIGHT of LMOVE and LMPOP; false when it is neither.
bool Side(std::string_view s, bool* front) {
  if (Eq(s, "left")) {
    *front = true;
  } else if (Eq(s, "right")) {
    *front = false;
  } else {
    return false;
  }
  return true;
}

}  // namespace

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
void LMove(const Args& a, CommandContext* c, Reply* r) {
  bool from_front = false, to_front = false;
  if (!Side(a[3], &from_front) || !Side(a[4], &to_front)) {
    return r->Error("ERR syntax error");
  }
  MoveElement(c, r, a[1], a[2], from_front, to_front);
}

// RPOPLPUSH source destination
void RPopLPush(const Args& a, CommandContext* c, Reply* r) {
  MoveElement(c, r, a[1], a[2], false, true);
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
void LMPop(const Args& a, CommandContext* c, Reply* r) {
  MPopArgs m;
  if (!ParseMPop(a, "left", "right", &m, r)) return;
  bool front = m.first_end;
  int64_t count = m.count;
  size_t where = m.end;
  for (size_t k = 2; k < where; ++k) {
    std::vector<std::string> out;
    if (!PopList(c, a[k], front, static_cast<uint64_t>(count), &out, r)) {
      return;
    }
    if (out.empty()) continue;
    ReplyKeyAndAll(a[k], out, r);
    return;
  }
  r->NullArray();
}

namespace {

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kListRows[] = {
    {"lpush", 83, -3, kWrite | kDenyOom | kFast, 1, 1, 1, LPush},
    {"rpush", 84, -3, kWrite | kDenyOom | kFast, 1, 1, 1, RPush},
    {"lpushx", 85, -3, kWrite | kDenyOom | kFast, 1, 1, 1, LPushX},
    {"rpushx", 86, -3, kWrite | kDenyOom | kFast, 1, 1, 1, RPushX},
    {"lpop", 87, -2, kWrite | kFast, 1, 1, 1, LPop},
    {"rpop", 88, -2, kWrite | kFast, 1, 1, 1, RPop},
    {"llen", 89, 2, kReadOnly | kFast, 1, 1, 1, LLen},
    {"lindex", 90, 3, kReadOnly, 1, 1, 1, LIndex},
    {"lset", 91, 4, kWrite | kDenyOom, 1, 1, 1, LSet},
    {"lrange", 92, 4, kReadOnly, 1, 1, 1, LRange},
    {"ltrim", 93, 4, kWrite, 1, 1, 1, LTrim},
    {"linsert", 94, 5, kWrite | kDenyOom, 1, 1, 1, LInsert},
    {"lrem", 95, 4, kWrite, 1, 1, 1, LRem},
    {"lpos", 96, -3, kReadOnly, 1, 1, 1, LPos},
    {"lmove", 97, 5, kWrite | kDenyOom, 1, 2, 1, LMove},
    {"rpoplpush", 98, 3, kWrite | kDenyOom, 1, 2, 1, RPopLPush},
    {"lmpop", 99, -4, kWrite | kMovableKeys, 0, 0, 0, LMPop},
};

}  // namespace

void RegisterListFamily(Registry* r) {
  r->Add(kListRows, "list");
}

}  // namespace cmd
}  // namespace shmkv
