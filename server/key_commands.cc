// shmkv's key commands: existence, renaming, copying, expiry and
// iteration, with Redis 7's replies and error texts (docs/server.md). As
// the string commands, writes run in the caller's Store::Txn.
#include <cerrno>
#include <cstdlib>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/command_util.h"
#include "server/resp.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;

}  // namespace

// --- keys ----------------------------------------------------------------

void Del(const Args& a, CommandContext* c, std::string* o, bool* e) {
  int64_t n = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    Status st = W(c)->Delete(a[i]);
    if (st == Status::kOk) {
      ++n;
    } else if (st != Status::kNotFound && st != Status::kCollision) {
      return StoreError(st, o, e);
    }
  }
  ReplyInt(o, n);
}

void Exists(const Args& a, CommandContext* c, std::string* o, bool*) {
  int64_t n = 0;
  std::string v;
  for (size_t i = 1; i < a.size(); ++i) {
    if (c->txn == nullptr) {
      n += c->store->Exists(a[i]);
    } else {
      n += ReadKey(c, a[i], &v);
    }
  }
  ReplyInt(o, n);
}

void Touch(const Args& a, CommandContext* c, std::string* o, bool* e) {
  Exists(a, c, o, e);
}

void Type(const Args& a, CommandContext* c, std::string* o, bool*) {
  std::string v;
  ReplySimple(o, ReadKey(c, a[1], &v) ? "string" : "none");
}

namespace {

// RENAME and RENAMENX: the value and its TTL move to the new name.
void RenameCommon(const Args& a, bool nx, CommandContext* c, std::string* o,
                  bool* e) {
  std::string v, dummy;
  int64_t expire = 0;
  if (!ReadKey(c, a[1], &v, &expire)) return Err(o, e, "ERR no such key");
  if (a[1] == a[2]) return nx ? ReplyInt(o, 0) : ReplySimple(o, "OK");
  if (nx && ReadKey(c, a[2], &dummy)) return ReplyInt(o, 0);
  Status st = W(c)->Put(a[2], v, expire);
  if (st == Status::kOk) st = W(c)->Delete(a[1]);
  if (st != Status::kOk) return StoreError(st, o, e);
  nx ? ReplyInt(o, 1) : ReplySimple(o, "OK");
}

}  // namespace

void Rename(const Args& a, CommandContext* c, std::string* o, bool* e) {
  RenameCommon(a, false, c, o, e);
}
void RenameNx(const Args& a, CommandContext* c, std::string* o, bool* e) {
  RenameCommon(a, true, c, o, e);
}

void Copy(const Args& a, CommandContext* c, std::string* o, bool* e) {
  bool replace = false;
  for (size_t i = 3; i < a.size(); ++i) {
    if (Eq(a[i], "replace")) {
      replace = true;
    } else if (Eq(a[i], "db") && i + 1 < a.size()) {
      int64_t db = 0;
      if (!ToInt(a[++i], &db)) return NotInt(o, e);
      if (db != 0) return Err(o, e, "ERR DB index is out of range");
    } else {
      return Err(o, e, "ERR syntax error");
    }
  }
  if (a[1] == a[2]) {
    return Err(o, e, "ERR source and destination objects are the same");
  }
  std::string v, dummy;
  int64_t expire = 0;
  if (!ReadKey(c, a[1], &v, &expire)) return ReplyInt(o, 0);
  if (!replace && ReadKey(c, a[2], &dummy)) return ReplyInt(o, 0);
  Status st = W(c)->Put(a[2], v, expire);
  if (st != Status::kOk) return StoreError(st, o, e);
  ReplyInt(o, 1);
}

namespace {

// Inside EXEC the commands that look at the whole keyspace see the
// transaction's own writes, as in Redis (where the queued commands run
// one after another): the keys it deleted are left out and the keys it
// created are added. Outside EXEC both sets are empty.
struct TxnView {
  std::set<std::string, std::less<>> deleted;
  std::vector<std::string> created;  // live ones (KEYS, SCAN, RANDOMKEY)
  int64_t created_count = 0;         // expired ones too (DBSIZE)
  bool Deleted(std::string_view k) const {
    return !deleted.empty() && deleted.find(k) != deleted.end();
  }
};
TxnView ViewOf(CommandContext* c) {
  TxnView v;
  if (c->txn != nullptr) {
    c->txn->Changed([&](std::string_view k, bool now, bool live) {
      if (!now) {
        v.deleted.emplace(k);
        return;
      }
      ++v.created_count;
      if (live) v.created.emplace_back(k);
    });
  }
  return v;
}

}  // namespace

void RandomKey(const Args&, CommandContext* c, std::string* o, bool*) {
  TxnView v = ViewOf(c);
  std::string k;
  // A key this transaction deleted is drawn again (a few times: it may
  // have deleted them all), then one it created stands in.
  for (int tries = 0; tries < 16 && c->store->RandomKey(&k); ++tries) {
    if (!v.Deleted(k)) return ReplyBulk(o, k);
  }
  if (!v.created.empty()) {
    return ReplyBulk(o, v.created[static_cast<size_t>(NowMs()) %
                                  v.created.size()]);
  }
  ReplyNull(o);
}

namespace {

// Every EXPIRE form: [NX | XX | GT | LT] checked as Redis checks them
// (options first, then the time, then the key).
void ExpireCommon(const Args& a, bool secs, bool abs, CommandContext* c,
                  std::string* o, bool* e) {
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t i = 3; i < a.size(); ++i) {
    if (Eq(a[i], "nx")) {
      nx = true;
    } else if (Eq(a[i], "xx")) {
      xx = true;
    } else if (Eq(a[i], "gt")) {
      gt = true;
    } else if (Eq(a[i], "lt")) {
      lt = true;
    } else {
      return Err(o, e, "ERR Unsupported option " + std::string(a[i]));
    }
  }
  if (nx && (xx || gt || lt)) {
    return Err(o, e, "ERR NX and XX, GT or LT options at the same time are "
                     "not compatible");
  }
  if (gt && lt) {
    return Err(o, e, "ERR GT and LT options at the same time are not "
                     "compatible");
  }
  int64_t v = 0, when = 0;
  if (!ToInt(a[2], &v)) return NotInt(o, e);
  if (!AbsoluteExpiry(v, secs, abs, &when)) return Err(o, e, InvalidExpire(a[0]));
  std::string value;
  int64_t cur = 0;
  if (!ReadKey(c, a[1], &value, &cur)) return ReplyInt(o, 0);
  // No TTL is an infinite one: GT never beats it, LT always does.
  if ((nx && cur != 0) || (xx && cur == 0) || (gt && (cur == 0 || when <= cur)) ||
      (lt && cur != 0 && when >= cur)) {
    return ReplyInt(o, 0);
  }
  Status st = when <= NowMs() ? W(c)->Delete(a[1])
                              : W(c)->Put(a[1], value, when);
  if (st != Status::kOk) return StoreError(st, o, e);
  ReplyInt(o, 1);
}

void TtlCommon(const Args& a, bool ms, bool abs, CommandContext* c,
               std::string* o) {
  std::string v;
  int64_t expire = 0;
  if (!ReadKey(c, a[1], &v, &expire)) return ReplyInt(o, -2);
  if (expire == 0) return ReplyInt(o, -1);
  int64_t left = abs ? expire : expire - NowMs();
  if (left < 0) left = 0;
  ReplyInt(o, ms ? left : (left + 500) / 1000);
}

}  // namespace

void Expire(const Args& a, CommandContext* c, std::string* o, bool* e) {
  ExpireCommon(a, true, false, c, o, e);
}
void PExpire(const Args& a, CommandContext* c, std::string* o, bool* e) {
  ExpireCommon(a, false, false, c, o, e);
}
void ExpireAt(const Args& a, CommandContext* c, std::string* o, bool* e) {
  ExpireCommon(a, true, true, c, o, e);
}
void PExpireAt(const Args& a, CommandContext* c, std::string* o, bool* e) {
  ExpireCommon(a, false, true, c, o, e);
}
void Ttl(const Args& a, CommandContext* c, std::string* o, bool*) {
  TtlCommon(a, false, false, c, o);
}
void PTtl(const Args& a, CommandContext* c, std::string* o, bool*) {
  TtlCommon(a, true, false, c, o);
}
void ExpireTime(const Args& a, CommandContext* c, std::string* o, bool*) {
  TtlCommon(a, false, true, c, o);
}
void PExpireTime(const Args& a, CommandContext* c, std::string* o, bool*) {
  TtlCommon(a, true, true, c, o);
}

void Persist(const Args& a, CommandContext* c, std::string* o, bool* e) {
  bool changed = false;
  Status st = Store::SetExpireIn(W(c), a[1], 0, &changed);
  if (st != Status::kOk) return StoreError(st, o, e);
  ReplyInt(o, changed ? 1 : 0);
}

void DbSize(const Args&, CommandContext* c, std::string* o, bool*) {
  TxnView v = ViewOf(c);
  int64_t n = static_cast<int64_t>(c->store->Keys()) + v.created_count -
              static_cast<int64_t>(v.deleted.size());
  ReplyInt(o, n < 0 ? 0 : n);
}

void FlushAll(const Args& a, CommandContext* c, std::string* o, bool* e) {
  if (a.size() > 2 || (a.size() == 2 && !Eq(a[1], "sync") &&
                       !Eq(a[1], "async"))) {
    return Err(o, e, "ERR syntax error");
  }
  if (c->txn != nullptr) {
    uint64_t n = 0;
    Status st = c->txn->FlushAll(&n);
    if (st != Status::kOk) return StoreError(st, o, e);
  } else {
    c->store->FlushAll();
  }
  ReplySimple(o, "OK");
}

void Keys(const Args& a, CommandContext* c, std::string* o, bool*) {
  TxnView v = ViewOf(c);
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  do {
    c->store->Scan(&cursor, 4096, [&](std::string_view k) {
      if (GlobMatch(a[1], k) && !v.Deleted(k)) keys.emplace_back(k);
    });
  } while (cursor != 0);
  for (const std::string& k : v.created) {
    if (GlobMatch(a[1], k)) keys.push_back(k);
  }
  ReplyArray(o, keys.size());
  for (const std::string& k : keys) ReplyBulk(o, k);
}

void Scan(const Args& a, CommandContext* c, std::string* o, bool* e) {
  // Redis reads the cursor with strtoul: "-1" is a (huge) cursor, not an
  // error; leading space, trailing bytes or overflow are. Read as a C
  // string, as Redis does: an empty cursor is 0, a zero byte ends it.
  uint64_t cur = 0;
  {
    std::string s(a[1]);
    char* end = nullptr;
    errno = 0;
    cur = std::strtoull(s.c_str(), &end, 10);
    if (std::isspace(static_cast<unsigned char>(s[0])) || errno == ERANGE ||
        *end != '\0') {
      return Err(o, e, "ERR invalid cursor");
    }
  }
  std::string_view match;
  int64_t count = 10;
  bool strings = true;  // TYPE other than string: every key is a string
  for (size_t i = 2; i < a.size(); ++i) {
    if (Eq(a[i], "match") && i + 1 < a.size()) {
      match = a[++i];
    } else if (Eq(a[i], "count") && i + 1 < a.size()) {
      if (!ToInt(a[++i], &count)) return NotInt(o, e);
      if (count < 1) return Err(o, e, "ERR syntax error");
    } else if (Eq(a[i], "type") && i + 1 < a.size()) {
      strings = Eq(a[++i], "string");
    } else {
      return Err(o, e, "ERR syntax error");
    }
  }
  TxnView v = ViewOf(c);
  auto wanted = [&](std::string_view k) {
    return strings && (match.empty() || GlobMatch(match, k));
  };
  std::vector<std::string> keys;
  uint64_t cursor = cur;
  c->store->Scan(&cursor, static_cast<size_t>(count), [&](std::string_view k) {
    if (wanted(k) && !v.Deleted(k)) keys.emplace_back(k);
  });
  // The keys the transaction created come with the scan's last page.
  if (cursor == 0) {
    for (const std::string& k : v.created) {
      if (wanted(k)) keys.push_back(k);
    }
  }
  ReplyArray(o, 2);
  ReplyBulk(o, std::to_string(cursor));
  ReplyArray(o, keys.size());
  for (const std::string& k : keys) ReplyBulk(o, k);
}

}  // namespace cmd
}  // namespace shmkv
