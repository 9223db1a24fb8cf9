// The stream commands (docs/server.md, "Streams"): XADD, XLEN, XRANGE,
// XREVRANGE, XDEL, XTRIM, XSETID and XREAD (BLOCK included), with Redis
// 7.0's replies and errors, over StreamValue (server/commands/
// stream_value.h).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/blocking.h"
#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/packed.h"
#include "server/commands/registry.h"
#include "server/commands/stream_util.h"
#include "server/commands/stream_value.h"

namespace shmkv {
namespace cmd {

void InvalidId(Reply* r) {
  r->Error("ERR Invalid stream ID specified as stream command argument");
}

void SyntaxError(Reply* r) { r->Error("ERR syntax error"); }

bool ParseIntervalId(std::string_view arg, uint64_t missing, StreamId* id,
                     bool* exclusive) {
  *exclusive = arg.size() > 1 && arg[0] == '(';
  return *exclusive ? ParseStreamId(arg.substr(1), missing, true, id)
                    : ParseStreamId(arg, missing, false, id);
}

bool OpenStream(CommandContext* c, std::string_view key, StreamValue* s,
                Reply* r) {
  return Opened(s->Open(c, key), r);
}

bool SaveStream(CommandContext* c, std::string_view key, StreamValue* s,
                Reply* r) {
  return Saved(s->Save(c, key), s->ok(), r);
}

void ReplyEntry(const StreamEntry& e, Reply* r) {
  r->Array(2);
  r->Bulk(e.id.Text());
  PackedReader p(e.fields);
  r->Array(p.count());
  std::string_view s;
  while (p.Next(&s)) r->Bulk(s);
}

bool ReplyRange(StreamValue* s, StreamId start, StreamId end, bool rev,
                uint64_t count, Reply* r) {
  std::vector<StreamEntry> out;
  if (start <= end) {
    const bool ok = s->Walk(rev ? end : start, !rev, [&](const StreamEntry& e) {
      if (rev ? e.id < start : end < e.id) return false;
      out.push_back(e);
      return count == 0 || out.size() < count;
    });
    if (!ok) return false;
  }
  r->Array(out.size());
  for (const StreamEntry& e : out) ReplyEntry(e, r);
  return true;
}

bool ParseReadArgs(const Args& a, CommandContext* c, bool xreadgroup,
                   ReadArgs* out, Reply* r) {
  for (size_t i = 1; i < a.size(); ++i) {
    const size_t more = a.size() - 1 - i;
    if (Eq(a[i], "block") && more > 0) {
      if (c->script_resp != 0) {
        r->Error("ERR " + std::string(a[0]) +
                 " command is not allowed with BLOCK option from scripts");
        return false;
      }
      if (!ToInt(a[++i], &out->timeout)) {
        r->Error("ERR timeout is not an integer or out of range");
        return false;
      }
      if (out->timeout < 0) {
        r->Error("ERR timeout is negative");
        return false;
      }
    } else if (Eq(a[i], "count") && more > 0) {
      if (!ToInt(a[++i], &out->count)) {
        NotInt(r);
        return false;
      }
      if (out->count < 0) out->count = 0;
    } else if (Eq(a[i], "streams") && more > 0) {
      out->streams = i + 1;
      if ((a.size() - out->streams) % 2 != 0) {
        r->Error("ERR Unbalanced XREAD list of streams: for each stream key "
                 "an ID or '$' must be specified.");
        return false;
      }
      break;
    } else if (Eq(a[i], "group") && more >= 2) {
      if (!xreadgroup) {
        r->Error("ERR The GROUP option is only supported by XREADGROUP. You "
                 "called XREAD instead.");
        return false;
      }
      out->group = a[i + 1];
      out->consumer = a[i + 2];
      out->grouped = true;
      i += 2;
    } else if (Eq(a[i], "noack")) {
      if (!xreadgroup) {
        r->Error("ERR The NOACK option is only supported by XREADGROUP. You "
                 "called XREAD instead.");
        return false;
      }
      out->noack = true;
    } else {
      SyntaxError(r);
      return false;
    }
  }
  if (out->streams == 0) {
    SyntaxError(r);
    return false;
  }
  return true;
}

namespace {

// XADD's and XTRIM's trimming and options, as Redis reads them.
struct TrimArgs {
  enum Strategy { kNone, kMaxLen, kMinId } strategy = kNone;
  bool approx = false;
  int64_t maxlen = 0;
  StreamId minid;
  int64_t limit = 0;  // 0: no limit
  bool no_mkstream = false;
  bool id_given = false;
  bool seq_given = true;
  StreamId id;
};

// Reads from a[2] on; returns the ID's position (XADD), or 0 after
// replying an error.
size_t ParseTrim(const Args& a, bool xadd, uint64_t node_entries,
                 TrimArgs* t, Reply* r) {
  size_t i = 2;
  bool limit_given = false;
  for (; i < a.size(); ++i) {
    const size_t more = a.size() - 1 - i;
    const std::string_view opt = a[i];
    if (xadd && opt == "*") break;
    if ((Eq(opt, "maxlen") || Eq(opt, "minid")) && more > 0) {
      if (t->strategy != TrimArgs::kNone) {
        r->Error("ERR syntax error, MAXLEN and MINID options at the same "
                 "time are not compatible");
        return 0;
      }
      const bool maxlen = Eq(opt, "maxlen");
      t->approx = false;
      if (more >= 2 && a[i + 1] == "~") {
        t->approx = true;
        ++i;
      } else if (more >= 2 && a[i + 1] == "=") {
        ++i;
      }
      if (maxlen) {
        if (!ToInt(a[i + 1], &t->maxlen)) {
          NotInt(r);
          return 0;
        }
        if (t->maxlen < 0) {
          r->Error("ERR The MAXLEN argument must be >= 0.");
          return 0;
        }
      } else if (!ParseStreamId(a[i + 1], 0, true, &t->minid)) {
        InvalidId(r);
        return 0;
      }
      ++i;
      t->strategy = maxlen ? TrimArgs::kMaxLen : TrimArgs::kMinId;
    } else if (Eq(opt, "limit") && more > 0) {
      if (!ToInt(a[i + 1], &t->limit)) {
        NotInt(r);
        return 0;
      }
      if (t->limit < 0) {
        r->Error("ERR The LIMIT argument must be >= 0.");
        return 0;
      }
      limit_given = true;
      ++i;
    } else if (xadd && Eq(opt, "nomkstream")) {
      t->no_mkstream = true;
    } else if (xadd) {
      if (!ParseStreamId(opt, 0, true, &t->id, &t->seq_given)) {
        InvalidId(r);
        return 0;
      }
      t->id_given = true;
      break;
    } else {
      SyntaxError(r);
      return 0;
    }
  }
  if (t->limit != 0 && t->strategy == TrimArgs::kNone) {
    r->Error("ERR syntax error, LIMIT cannot be used without specifying a "
             "trimming strategy");
    return 0;
  }
  if (!xadd && t->strategy == TrimArgs::kNone) {
    r->Error("ERR syntax error, XTRIM must be called with a trimming "
             "strategy");
    return 0;
  }
  if (limit_given) {
    if (!t->approx) {
      r->Error("ERR syntax error, LIMIT cannot be used without the special "
               "~ option");
      return 0;
    }
  } else {
    // Redis's default bound on an approximate trim's work: 100 nodes of
    // stream-node-max-entries entries (10,000 when that is 0, at most a
    // million).
    int64_t bound = node_entries > 10000 ? 1000000
                                         : 100 * static_cast<int64_t>(node_entries);
    if (bound <= 0) bound = 10000;
    if (bound > 1000000) bound = 1000000;
    t->limit = t->approx ? bound : 0;
  }
  return i;
}

// Trims `s` as `t` says: the entries removed.
uint64_t Trim(StreamValue* s, const TrimArgs& t) {
  StreamValue::TrimSpec spec;
  spec.by_length = t.strategy == TrimArgs::kMaxLen;
  spec.maxlen = static_cast<uint64_t>(t.maxlen);
  spec.minid = t.minid;
  spec.approx = t.approx;
  spec.limit = static_cast<uint64_t>(t.limit);
  return s->Trim(spec);
}

uint64_t NodeEntries(CommandContext* c) {
  return c->store->Limits().stream_node_entries;
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
//      *|id field value [field value ...]
void XAdd(const Args& a, CommandContext* c, Reply* r) {
  TrimArgs t;
  const size_t idpos = ParseTrim(a, true, NodeEntries(c), &t, r);
  if (idpos == 0) return;
  const size_t fields = idpos + 1;
  if (fields > a.size() || a.size() - fields < 2 ||
      (a.size() - fields) % 2 == 1) {
    return r->Error("ERR wrong number of arguments for 'xadd' command");
  }
  if (t.id_given && t.seq_given && t.id.zero()) {
    return r->Error("ERR The ID specified in XADD must be greater than 0-0");
  }
  StreamValue s;
  if (!OpenStream(c, a[1], &s, r)) return;
  if (!s.exists()) {
    if (t.no_mkstream) return r->Null();
    s.Create();
  }
  const StreamId last = s.counters().last;
  if (last.max()) {
    return r->Error("ERR The stream has exhausted the last possible ID, "
                    "unable to add more items");
  }
  StreamId id;
  bool ok = true;
  if (t.id_given && t.seq_given) {
    id = t.id;
  } else if (t.id_given) {  // ms-*
    id = t.id;
    if (last.ms == t.id.ms) {
      id = last;
      ok = id.Next() && last.ms == id.ms;
    }
  } else {
    const uint64_t now = static_cast<uint64_t>(WallMs());
    if (now > last.ms) {
      id = StreamId{now, 0};
    } else {
      id = last;
      ok = id.Next();
    }
  }
  if (!ok || !(last < id)) {
    return r->Error("ERR The ID specified in XADD is equal or smaller than "
                    "the target stream top item");
  }
  std::vector<std::string_view> fv(a.begin() + static_cast<ptrdiff_t>(fields),
                                   a.end());
  std::string packed;
  Pack(fv, &packed);
  s.Append(id, packed, NodeEntries(c));
  Notify(c, kNotifyStream, "xadd", a[1]);
  if (t.strategy != TrimArgs::kNone && Trim(&s, t) > 0) {
    Notify(c, kNotifyStream, "xtrim", a[1]);
  }
  if (SaveStream(c, a[1], &s, r)) r->Bulk(id.Text());
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
void XTrim(const Args& a, CommandContext* c, Reply* r) {
  TrimArgs t;
  if (ParseTrim(a, false, NodeEntries(c), &t, r) == 0) return;
  StreamValue s;
  if (!OpenStream(c, a[1], &s, r)) return;
  if (!s.exists()) return r->Int(0);
  const uint64_t removed = Trim(&s, t);
  if (removed > 0) Notify(c, kNotifyStream, "xtrim", a[1]);
  if (SaveStream(c, a[1], &s, r)) r->Int(static_cast<int64_t>(removed));
}

// XDEL key id [id ...]
void XDel(const Args& a, CommandContext* c, Reply* r) {
  StreamValue s;
  if (!OpenStream(c, a[1], &s, r)) return;
  if (!s.exists()) return r->Int(0);
  std::vector<StreamId> ids(a.size() - 2);
  for (size_t i = 2; i < a.size(); ++i) {
    if (!ParseStreamId(a[i], 0, true, &ids[i - 2])) return InvalidId(r);
  }
  int64_t deleted = 0;
  for (const StreamId& id : ids) {
    if (!s.Delete(id)) continue;
    if (s.counters().max_deleted < id) s.mutable_counters()->max_deleted = id;
    ++deleted;
  }
  if (deleted > 0) Notify(c, kNotifyStream, "xdel", a[1]);
  if (SaveStream(c, a[1], &s, r)) r->Int(deleted);
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID id]
void XSetId(const Args& a, CommandContext* c, Reply* r) {
  StreamId id, max_deleted;
  int64_t added = -1;
  if (!ParseStreamId(a[2], 0, true, &id)) return InvalidId(r);
  for (size_t i = 3; i < a.size(); i += 2) {
    const bool more = i + 1 < a.size();
    if (Eq(a[i], "entriesadded") && more) {
      if (!ToInt(a[i + 1], &added)) return NotInt(r);
      if (added < 0) return r->Error("ERR entries_added must be positive");
    } else if (Eq(a[i], "maxdeletedid") && more) {
      if (!ParseStreamId(a[i + 1], 0, true, &max_deleted)) {
        return InvalidId(r);
      }
      if (id < max_deleted) {
        return r->Error("ERR The ID specified in XSETID is smaller than the "
                        "provided max_deleted_entry_id");
      }
    } else {
      return SyntaxError(r);
    }
  }
  StreamValue s;
  if (!OpenStream(c, a[1], &s, r)) return;
  if (!s.exists()) return r->Error("ERR no such key");
  if (s.size() > 0) {
    StreamEntry top;
    if (!s.Edge(false, &top)) return Damaged(r);
    if (id < top.id) {
      return r->Error("ERR The ID specified in XSETID is smaller than the "
                      "target stream top item");
    }
    if (added != -1 && s.size() > static_cast<uint64_t>(added)) {
      return r->Error("ERR The entries_added specified in XSETID is smaller "
                      "than the target stream length");
    }
  }
  StreamValue::Counters* k = s.mutable_counters();
  k->last = id;
  if (added != -1) k->added = static_cast<uint64_t>(added);
  if (!max_deleted.zero()) k->max_deleted = max_deleted;
  Notify(c, kNotifyStream, "xsetid", a[1]);
  if (SaveStream(c, a[1], &s, r)) r->Simple("OK");
}

// XLEN key
void XLen(const Args& a, CommandContext* c, Reply* r) {
  ReadConsistently(c, r, [&] {
    StreamValue s;
    if (!OpenStream(c, a[1], &s, r)) return;
    const uint64_t n = s.size();
    if (!s.ok()) return Damaged(r);
    r->Int(static_cast<int64_t>(n));
  });
}

// XRANGE key start end [COUNT count] / XREVRANGE key end start [COUNT n]
void RangeCommand(const Args& a, CommandContext* c, Reply* r, bool rev) {
  std::string_view start_arg = rev ? a[3] : a[2];
  std::string_view end_arg = rev ? a[2] : a[3];
  StreamId start, end;
  bool ex = false;
  if (!ParseIntervalId(start_arg, 0, &start, &ex)) return InvalidId(r);
  if (ex && !start.Next()) {
    return r->Error("ERR invalid start ID for the interval");
  }
  if (!ParseIntervalId(end_arg, ~0ULL, &end, &ex)) return InvalidId(r);
  if (ex && !end.Prev()) {
    return r->Error("ERR invalid end ID for the interval");
  }
  int64_t count = -1;
  for (size_t j = 4; j < a.size(); ++j) {
    if (Eq(a[j], "count") && j + 1 < a.size()) {
      if (!ToInt(a[++j], &count)) return NotInt(r);
      if (count < 0) count = 0;
    } else {
      return SyntaxError(r);
    }
  }
  ReadConsistently(c, r, [&] {
    StreamValue s;
    if (!OpenStream(c, a[1], &s, r)) return;
    if (!s.exists()) return r->Array(0);
    if (count == 0) return r->NullArray();
    const size_t mark = r->Mark();
    if (!ReplyRange(&s, start, end, rev, count < 0 ? 0 : count, r)) {
      r->Retry(mark);
      Damaged(r);
    }
  });
}

void XRange(const Args& a, CommandContext* c, Reply* r) {
  RangeCommand(a, c, r, false);
}
void XRevRange(const Args& a, CommandContext* c, Reply* r) {
  RangeCommand(a, c, r, true);
}

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
//
// With BLOCK and nothing newer than the IDs given, the client waits on
// the blocking board (docs/server.md, "Blocking commands") as BLPOP does,
// and is tried again when one of its keys is written: the look and the
// wait are one step under the store's lock, so no XADD falls between
// them. The command kept for the retries has each "$" replaced by the ID
// it stood for, so an entry added meanwhile is not skipped.
void XRead(const Args& a, CommandContext* c, Reply* r) {
  ReadArgs ra;
  if (!ParseReadArgs(a, c, false, &ra, r)) return;
  const int64_t count = ra.count, timeout = ra.timeout;
  const size_t streams = ra.streams;
  const size_t n = (a.size() - streams) / 2;
  const bool retry = c->ticket != 0;
  const bool may_wait = timeout >= 0 && !c->deny_blocking && c->may_block &&
                        c->waits != nullptr && c->waits->open();
  std::unique_ptr<Store::Txn> own;
  if (may_wait && c->txn == nullptr) {
    own = BeginOwn(c);
    c->txn = own.get();
  }
  std::vector<StreamId> after(n);
  bool waits = false;
  ReadConsistently(c, r, [&] {
    waits = false;
    // Each key's "after" ID: "$" is its last ID now (0-0 for none).
    for (size_t i = 0; i < n; ++i) {
      const std::string_view key = a[streams + i];
      const std::string_view arg = a[streams + n + i];
      StreamValue s;
      const Load l = s.Open(c, key);
      // Once waiting, a key of another type is waited past, as Redis
      // waits for a stream there.
      if (!(retry && l == Load::kWrongType) && !Opened(l, r)) return;
      if (arg == "$") {
        after[i] = s.exists() && l == Load::kOk ? s.counters().last
                                                : StreamId{};
      } else if (arg == ">") {
        return r->Error("ERR The > ID can be specified only when calling "
                        "XREADGROUP using the GROUP <group> <consumer> "
                        "option.");
      } else if (!ParseStreamId(arg, 0, true, &after[i])) {
        return InvalidId(r);
      }
    }
    const size_t mark = r->Mark();
    std::string body;
    Reply inner(r, &body);
    size_t served = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string_view key = a[streams + i];
      StreamValue s;
      if (s.Open(c, key) != Load::kOk) continue;  // checked above
      StreamEntry top;
      if (!s.exists() || s.size() == 0) continue;
      if (!s.Edge(false, &top)) return Damaged(r);
      if (!(after[i] < top.id)) continue;
      StreamId start = after[i];
      start.Next();
      if (!inner.resp3()) inner.Array(2);
      inner.Bulk(key);
      if (!ReplyRange(&s, start, StreamId{~0ULL, ~0ULL}, false,
                      static_cast<uint64_t>(count), &inner)) {
        r->Retry(mark);
        return Damaged(r);
      }
      ++served;
    }
    if (served > 0) {
      if (retry) c->waits->Remove(c->ticket);
      inner.resp3() ? r->Map(served) : r->Array(served);
      r->Raw(body);
      return;
    }
    if (!may_wait) return r->NullArray();
    waits = true;
  });
  if (own != nullptr) c->txn = nullptr;
  if (!waits) return;
  const std::vector<std::string_view> keys(
      a.begin() + static_cast<ptrdiff_t>(streams),
      a.begin() + static_cast<ptrdiff_t>(streams + n));
  WaitOn(c, r, keys, timeout);
  if (retry || c->blocked.ticket == 0) return;
  // The command tried again: "$" as the ID it stood for now.
  c->blocked.args.assign(a.begin(), a.end());
  for (size_t i = 0; i < n; ++i) {
    if (a[streams + n + i] == "$") {
      c->blocked.args[streams + n + i] = after[i].Text();
    }
  }
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kStreamRows[] = {
    {"xadd", 194, -5, kWrite | kDenyOom | kFast, 1, 1, 1, XAdd},
    {"xrange", 195, -4, kReadOnly, 1, 1, 1, XRange},
    {"xrevrange", 196, -4, kReadOnly, 1, 1, 1, XRevRange},
    {"xlen", 197, 2, kReadOnly | kFast, 1, 1, 1, XLen},
    {"xread", 198, -4, kReadOnly | kBlocking | kMovableKeys, 0, 0, 0, XRead},
    {"xdel", 199, -3, kWrite | kFast, 1, 1, 1, XDel},
    {"xtrim", 200, -4, kWrite, 1, 1, 1, XTrim},
    {"xsetid", 201, -3, kWrite | kDenyOom | kFast, 1, 1, 1, XSetId},
    {"xinfo", 202, -2, kReadOnly | kContainer, 2, 2, 1, XInfo},
};

}  // namespace

void RegisterStreamFamily(Registry* r) { r->Add(kStreamRows, "stream"); }

}  // namespace cmd
}  // namespace shmkv
