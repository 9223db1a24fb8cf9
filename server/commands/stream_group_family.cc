// The consumer-group commands of streams (docs/server.md, "Streams"):
// XGROUP, XREADGROUP (BLOCK included), XACK, XPENDING, XCLAIM and
// XAUTOCLAIM, with Redis 7.0's replies and errors, over StreamValue's
// groups and pending entries (server/commands/stream_value.h).
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/blocking.h"
#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/registry.h"
#include "server/commands/stream_util.h"
#include "server/commands/stream_value.h"
#include "server/store/key_hash.h"

namespace shmkv {
namespace cmd {

namespace {

uint64_t NowMs() { return static_cast<uint64_t>(WallMs()); }

void NoGroup(Reply* r, std::string_view key, std::string_view group,
             std::string_view tail = "") {
  r->Error("NOGROUP No such key '" + std::string(key) +
           "' or consumer group '" + std::string(group) + "'" +
           std::string(tail));
}

void NoGroupForKey(Reply* r, std::string_view key, std::string_view group) {
  r->Error("NOGROUP No such consumer group '" + std::string(group) +
           "' for key name '" + std::string(key) + "'");
}

void SubcommandSyntax(const Args& a, Reply* r) {
  r->Error("ERR unknown subcommand or wrong number of arguments for '" +
           std::string(a[1].substr(0, 128)) + "'. Try XGROUP HELP.");
}

// The consumer `name` of g, seen now; made (with its event) when new.
StreamConsumer* Consumer(CommandContext* c, StreamValue* s, StreamGroup* g,
                         std::string_view key, std::string_view name,
                         uint64_t now) {
  StreamConsumer* k = g->Find(name);
  if (k != nullptr) {
    k->seen_ms = now;
  } else {
    k = g->Add(name, now);
    Notify(c, kNotifyStream, "xgroup-createconsumer", key);
  }
  s->GroupsChanged();
  return k;
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
//        SETID key group id|$ [ENTRIESREAD n]
//        DESTROY key group | CREATECONSUMER key group consumer |
//        DELCONSUMER key group consumer | HELP
void XGroup(const Args& a, CommandContext* c, Reply* r) {
  const std::string sub = Lower(a[1]);
  if (sub == "help") {
    if (a.size() != 2) return SubcommandArityError("xgroup", sub, r);
    return HelpReply(
        r, "XGROUP",
        {"CREATE <key> <groupname> <id|$> [option]",
         "    Create a new consumer group. Options are:", "    * MKSTREAM",
         "      Create the empty stream if it does not exist.",
         "    * ENTRIESREAD entries_read",
         "      Set the group's entries_read counter (internal use).",
         "CREATECONSUMER <key> <groupname> <consumer>",
         "    Create a new consumer in the specified group.",
         "DELCONSUMER <key> <groupname> <consumer>",
         "    Remove the specified consumer.", "DESTROY <key> <groupname>",
         "    Remove the specified group.",
         "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
         "    Set the current group ID and entries_read counter."});
  }
  const int arity = sub == "create" || sub == "setid" ? -5
                    : sub == "destroy"                ? 4
                    : sub == "createconsumer" || sub == "delconsumer"
                        ? 5
                        : 0;
  if (arity == 0) {
    return r->Error("ERR unknown subcommand '" +
                    std::string(a[1].substr(0, 128)) + "'. Try XGROUP HELP.");
  }
  if (arity > 0 ? a.size() != static_cast<size_t>(arity)
                : a.size() < static_cast<size_t>(-arity)) {
    return SubcommandArityError("xgroup", sub, r);
  }
  const bool create = sub == "create", setid = sub == "setid";
  bool mkstream = false;
  int64_t entries_read = -1;
  for (size_t i = 5; i < a.size();) {
    if (create && Eq(a[i], "mkstream")) {
      mkstream = true;
      ++i;
    } else if ((create || setid) && Eq(a[i], "entriesread") &&
               i + 1 < a.size()) {
      if (!ToInt(a[i + 1], &entries_read)) return NotInt(r);
      if (entries_read < -1) {
        return r->Error("ERR value for ENTRIESREAD must be positive or -1");
      }
      i += 2;
    } else {
      return SubcommandSyntax(a, r);
    }
  }
  const std::string_view key = a[2], name = a[3];
  StreamValue s;
  if (!OpenStream(c, key, &s, r)) return;
  StreamGroup* g = nullptr;
  if (!mkstream) {
    if (!s.exists()) {
      return r->Error(
          "ERR The XGROUP subcommand requires the key to exist. Note that "
          "for CREATE you may want to use the MKSTREAM option to create an "
          "empty stream automatically.");
    }
    if (s.Groups() == nullptr) return Damaged(r);
    g = s.FindGroup(name);
    if (g == nullptr && !create && sub != "destroy") {
      return NoGroupForKey(r, key, name);
    }
  }
  if (create) {
    if (a.size() > 8) return SubcommandSyntax(a, r);
    StreamId id;
    if (a[4] == "$") {
      id = s.exists() ? s.counters().last : StreamId{};
    } else if (!ParseStreamId(a[4], 0, true, &id)) {
      return InvalidId(r);
    }
    if (!s.exists()) s.Create();
    if (s.AddGroup(name, id, entries_read) == nullptr) {
      if (!s.ok()) return Damaged(r);
      return r->Error("BUSYGROUP Consumer Group name already exists");
    }
    Notify(c, kNotifyStream, "xgroup-create", key);
    if (SaveStream(c, key, &s, r)) r->Simple("OK");
  } else if (setid) {
    if (a.size() != 5 && a.size() != 7) return SubcommandSyntax(a, r);
    StreamId id;
    if (a[4] == "$") {
      id = s.counters().last;
    } else if (!ParseStreamId(a[4], 0, false, &id)) {
      return InvalidId(r);
    }
    g->last = id;
    g->entries_read = entries_read;
    s.GroupsChanged();
    Notify(c, kNotifyStream, "xgroup-setid", key);
    if (SaveStream(c, key, &s, r)) r->Simple("OK");
  } else if (sub == "destroy") {
    if (g == nullptr) return r->Int(0);
    s.DestroyGroup(name);
    Notify(c, kNotifyStream, "xgroup-destroy", key);
    if (SaveStream(c, key, &s, r)) r->Int(1);
  } else if (sub == "createconsumer") {
    if (g->Add(a[4], NowMs()) == nullptr) return r->Int(0);
    s.GroupsChanged();
    Notify(c, kNotifyStream, "xgroup-createconsumer", key);
    if (SaveStream(c, key, &s, r)) r->Int(1);
  } else {  // delconsumer
    if (g->Find(a[4]) == nullptr) return r->Int(0);
    const uint64_t pending = s.DeleteConsumer(g, a[4]);
    Notify(c, kNotifyStream, "xgroup-delconsumer", key);
    if (SaveStream(c, key, &s, r)) r->Int(static_cast<int64_t>(pending));
  }
}

// The wait board's name for the clients of one group waiting on one
// key (no Redis key is written under it; were one, a write to it would
// only wake them for nothing): a client that blocked later, or one that
// did not block, leaves new entries to the one of the same group that
// blocked first, as Redis serves its blocked clients in order.
std::string GroupWaitKey(std::string_view key, std::string_view group) {
  std::string k(1, '\0');
  k.append("xreadgroup");
  k.push_back('\0');
  k.append(key.data(), key.size());
  k.push_back('\0');
  k.append(group.data(), group.size());
  return k;
}

// A client blocked on XREADGROUP without COUNT takes at most this many
// entries once served (Redis's XREAD_BLOCKED_DEFAULT_COUNT).
constexpr int64_t kBlockedDefaultCount = 1000;

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK]
//            STREAMS key [key ...] id [id ...]
//
// ">" delivers entries past the group's last delivered one (each made
// pending for the consumer unless NOACK); another ID serves the
// consumer's own pending entries above it. With BLOCK and nothing to
// deliver, the client waits on the blocking board as XREAD's does.
void XReadGroup(const Args& a, CommandContext* c, Reply* r) {
  ReadArgs ra;
  if (!ParseReadArgs(a, c, true, &ra, r)) return;
  if (!ra.grouped) {
    return r->Error("ERR Missing GROUP option for XREADGROUP");
  }
  int64_t count = ra.count;
  const int64_t timeout = ra.timeout;
  const size_t streams = ra.streams;
  const bool noack = ra.noack;
  const std::string_view group = ra.group, consumer = ra.consumer;
  const size_t n = (a.size() - streams) / 2;
  const bool retry = c->ticket != 0;
  if (retry && count == 0) count = kBlockedDefaultCount;
  // Each key once (a key named twice is one stream, served twice).
  std::deque<StreamValue> values;
  std::map<std::string_view, StreamValue*> by_key;
  std::vector<StreamValue*> of(n, nullptr);
  std::vector<StreamId> after(n);
  constexpr StreamId kNew{~0ULL, ~0ULL};
  for (size_t i = 0; i < n; ++i) {
    const std::string_view key = a[streams + i];
    const std::string_view arg = a[streams + n + i];
    auto it = by_key.find(key);
    StreamValue* s = nullptr;
    if (it != by_key.end()) {
      s = it->second;
    } else {
      values.emplace_back();
      s = &values.back();
      const Load l = s->Open(c, key);
      // Once waiting, a stream deleted or replaced by another type ends
      // the wait, as in Redis 7.0.
      if (retry &&
          (l == Load::kWrongType || (l == Load::kOk && !s->exists()))) {
        c->waits->Remove(c->ticket);
        return r->Error("UNBLOCKED the stream key no longer exists");
      }
      if (!Opened(l, r)) return;
      by_key[key] = s;
    }
    of[i] = s;
    if (!s->exists() || s->FindGroup(group) == nullptr) {
      if (!s->ok()) return Damaged(r);
      if (retry) {
        c->waits->Remove(c->ticket);
        return r->Error("NOGROUP the consumer group this client was blocked "
                        "on no longer exists");
      }
      return NoGroup(r, key, group, " in XREADGROUP with GROUP option");
    }
    if (arg == "$") {
      return r->Error(
          "ERR The $ ID is meaningless in the context of XREADGROUP: you "
          "want to read the history of this consumer by specifying a proper "
          "ID, or use the > ID to get new messages. The $ ID would just "
          "return an empty result set.");
    }
    if (arg == ">") {
      after[i] = kNew;
    } else if (!ParseStreamId(arg, 0, true, &after[i])) {
      return InvalidId(r);
    }
  }
  std::string body;
  Reply inner(r, &body);
  size_t served = 0;
  const uint64_t now = NowMs();
  const uint64_t limit = static_cast<uint64_t>(count);
  for (size_t i = 0; i < n; ++i) {
    StreamValue* s = of[i];
    const std::string_view key = a[streams + i];
    StreamGroup* g = s->FindGroup(group);
    const bool history = !(after[i] == kNew);
    StreamId gt = after[i];
    if (!history && c->waits != nullptr &&
        c->waits->Older(
            HashKeyIn(c->store->db(), GroupWaitKey(key, group)).a,
            retry ? c->ticket : ~uint64_t{0})) {
      continue;  // a client of the group that blocked earlier goes first
    }
    if (!history) {
      StreamEntry top;
      if (s->size() == 0) continue;
      if (!s->Edge(false, &top)) return Damaged(r);
      if (!(g->last < top.id)) continue;
      gt = g->last;
    }
    ++served;
    if (!inner.resp3()) inner.Array(2);
    inner.Bulk(key);
    StreamConsumer* k = Consumer(c, s, g, key, consumer, now);
    const std::string name = k->name;
    StreamId start = gt;
    const bool any = start.Next();
    if (history) {
      std::vector<StreamNack> mine;
      if (any && !s->PelWalk(*g, start, [&](const StreamNack& nk) {
            if (nk.consumer != name) return true;
            mine.push_back(nk);
            return limit == 0 || mine.size() < limit;
          })) {
        return Damaged(r);
      }
      inner.Array(mine.size());
      for (StreamNack& nk : mine) {
        StreamEntry e;
        if (!s->Find(nk.id, &e)) {
          if (!s->ok()) return Damaged(r);
          inner.Array(2);
          inner.Bulk(nk.id.Text());
          inner.NullArray();
          continue;
        }
        ReplyEntry(e, &inner);
        nk.delivery_ms = now;
        ++nk.count;
        nk.consumer = name;
        s->PelPut(*g, nk);
      }
      continue;
    }
    std::vector<StreamEntry> out;
    if (any && !s->Walk(start, true, [&](const StreamEntry& e) {
          out.push_back(e);
          return limit == 0 || out.size() < limit;
        })) {
      return Damaged(r);
    }
    inner.Array(out.size());
    for (const StreamEntry& e : out) {
      if (g->last < e.id) {
        if (g->entries_read != -1 && !s->TombstonesFrom(e.id)) {
          ++g->entries_read;
        } else if (s->counters().added != 0) {
          g->entries_read = s->EstimateRead(e.id);
        }
        g->last = e.id;
      }
      ReplyEntry(e, &inner);
      if (!noack) s->PelPut(*g, StreamNack{e.id, now, 1, name});
    }
    s->GroupsChanged();
  }
  if (served > 0) {
    for (auto& [key, s] : by_key) {
      if (!SaveStream(c, key, s, r)) return;
    }
    if (retry) c->waits->Remove(c->ticket);
    inner.resp3() ? r->Map(served) : r->Array(served);
    r->Raw(body);
    return;
  }
  if (timeout < 0 || c->deny_blocking || !c->may_block ||
      c->waits == nullptr || !c->waits->open()) {
    if (retry) c->waits->Remove(c->ticket);
    return r->NullArray();
  }
  std::vector<std::string_view> keys(
      a.begin() + static_cast<ptrdiff_t>(streams),
      a.begin() + static_cast<ptrdiff_t>(streams + n));
  std::vector<std::string> lines;  // each key's line of the group
  lines.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    lines.push_back(GroupWaitKey(a[streams + i], group));
  }
  keys.insert(keys.end(), lines.begin(), lines.end());
  WaitOn(c, r, keys, timeout);
}

// Opens the stream at `key` and its group `name` for the commands that
// answer NOGROUP without one; false after replying.
bool OpenGroup(CommandContext* c, const Args& a, StreamValue* s,
               StreamGroup** g, Reply* r) {
  if (!OpenStream(c, a[1], s, r)) return false;
  *g = s->exists() ? s->FindGroup(a[2]) : nullptr;
  if (!s->ok()) {
    Damaged(r);
    return false;
  }
  if (*g == nullptr) {
    NoGroup(r, a[1], a[2]);
    return false;
  }
  return true;
}

// XACK key group id [id ...]
void XAck(const Args& a, CommandContext* c, Reply* r) {
  StreamValue s;
  if (!OpenStream(c, a[1], &s, r)) return;
  StreamGroup* g = s.exists() ? s.FindGroup(a[2]) : nullptr;
  if (!s.ok()) return Damaged(r);
  if (g == nullptr) return r->Int(0);
  std::vector<StreamId> ids(a.size() - 3);
  for (size_t i = 3; i < a.size(); ++i) {
    if (!ParseStreamId(a[i], 0, true, &ids[i - 3])) return InvalidId(r);
  }
  int64_t acked = 0;
  for (const StreamId& id : ids) acked += s.PelErase(*g, id) ? 1 : 0;
  if (SaveStream(c, a[1], &s, r)) r->Int(acked);
}

// XPENDING key group [[IDLE min-idle] start end count [consumer]]
void XPending(const Args& a, CommandContext* c, Reply* r) {
  const bool summary = a.size() == 3;
  if (!summary && (a.size() < 6 || a.size() > 9)) return SyntaxError(r);
  int64_t count = 0, min_idle = 0;
  StreamId start, end;
  std::string_view consumer;
  bool by_consumer = false;
  if (!summary) {
    size_t at = 3;
    if (Eq(a[3], "idle")) {
      if (!ToInt(a[4], &min_idle)) return NotInt(r);
      if (a.size() < 8) return SyntaxError(r);
      at += 2;
    }
    if (!ToInt(a[at + 2], &count)) return NotInt(r);
    if (count < 0) count = 0;
    bool ex = false;
    if (!ParseIntervalId(a[at], 0, &start, &ex)) return InvalidId(r);
    if (ex && !start.Next()) {
      return r->Error("ERR invalid start ID for the interval");
    }
    if (!ParseIntervalId(a[at + 1], ~0ULL, &end, &ex)) return InvalidId(r);
    if (ex && !end.Prev()) {
      return r->Error("ERR invalid end ID for the interval");
    }
    if (at + 3 < a.size()) {
      consumer = a[at + 3];
      by_consumer = true;
    }
  }
  ReadConsistently(c, r, [&] {
    StreamValue s;
    StreamGroup* g = nullptr;
    if (!OpenGroup(c, a, &s, &g, r)) return;
    const size_t mark = r->Mark();
    bool ok = true;
    if (summary) {
      const uint64_t total = s.PelCount(*g);
      r->Array(4);
      r->Int(static_cast<int64_t>(total));
      StreamNack first, last;
      std::vector<std::pair<std::string, uint64_t>> per;
      if (total == 0) {
        r->Null();
        r->Null();
        r->NullArray();
      } else if (s.PelWalk(*g, StreamId{}, [&](const StreamNack& nk) {
                   first = nk;
                   return false;
                 }) &&
                 s.PelLast(*g, &last) && s.PelPerConsumer(*g, &per)) {
        r->Bulk(first.id.Text());
        r->Bulk(last.id.Text());
        size_t with = 0;
        for (const auto& p : per) with += p.second > 0 ? 1 : 0;
        r->Array(with);
        for (const auto& p : per) {
          if (p.second == 0) continue;
          r->Array(2);
          r->Bulk(p.first);
          r->Bulk(std::to_string(p.second));
        }
      } else {
        ok = false;
      }
    } else if (by_consumer && g->Find(consumer) == nullptr) {
      r->Array(0);
    } else {
      const int64_t now = WallMs();
      std::vector<StreamNack> out;
      if (count > 0) {
        ok = s.PelWalk(*g, start, [&](const StreamNack& nk) {
          if (end < nk.id) return false;
          if (by_consumer && nk.consumer != consumer) return true;
          if (min_idle != 0 &&
              now - static_cast<int64_t>(nk.delivery_ms) < min_idle) {
            return true;
          }
          out.push_back(nk);
          return out.size() < static_cast<uint64_t>(count);
        });
      }
      r->Array(out.size());
      for (const StreamNack& nk : out) {
        r->Array(4);
        r->Bulk(nk.id.Text());
        r->Bulk(nk.consumer);
        const int64_t idle = now - static_cast<int64_t>(nk.delivery_ms);
        r->Int(idle < 0 ? 0 : idle);
        r->Int(static_cast<int64_t>(nk.count));
      }
    }
    if (!ok || !s.ok()) {
      r->Retry(mark);
      Damaged(r);
    }
  });
}

// Gives the pending entry `nk` (of the stream's entry `id`) to consumer
// k, and replies it (its ID with JUSTID, else the entry).
void Claim(StreamValue* s, const StreamGroup& g, StreamNack nk,
           const std::string& consumer, uint64_t delivery_ms,
           int64_t retrycount, bool justid, const StreamEntry& e,
           Reply* r) {
  nk.delivery_ms = delivery_ms;
  if (retrycount >= 0) {
    nk.count = static_cast<uint64_t>(retrycount);
  } else if (!justid) {
    ++nk.count;
  }
  nk.consumer = consumer;
  s->PelPut(g, nk);
  if (justid) {
    r->Bulk(e.id.Text());
  } else {
    ReplyEntry(e, r);
  }
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms]
//        [TIME ms-unix-time] [RETRYCOUNT count] [FORCE] [JUSTID]
//        [LASTID id]
void XClaim(const Args& a, CommandContext* c, Reply* r) {
  StreamValue s;
  StreamGroup* g = nullptr;
  if (!OpenGroup(c, a, &s, &g, r)) return;
  int64_t min_idle = 0;
  if (!ToInt(a[4], &min_idle)) {
    return r->Error("ERR Invalid min-idle-time argument for XCLAIM");
  }
  if (min_idle < 0) min_idle = 0;
  std::vector<StreamId> ids;
  size_t j = 5;
  for (; j < a.size(); ++j) {
    StreamId id;
    if (!ParseStreamId(a[j], 0, true, &id)) break;
    ids.push_back(id);
  }
  const int64_t now = WallMs();
  int64_t retrycount = -1, delivery = -1;
  bool force = false, justid = false;
  StreamId last_id;
  for (; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (Eq(a[j], "force")) {
      force = true;
    } else if (Eq(a[j], "justid")) {
      justid = true;
    } else if (Eq(a[j], "idle") && more) {
      if (!ToInt(a[++j], &delivery)) {
        return r->Error("ERR Invalid IDLE option argument for XCLAIM");
      }
      delivery = now - delivery;
    } else if (Eq(a[j], "time") && more) {
      if (!ToInt(a[++j], &delivery)) {
        return r->Error("ERR Invalid TIME option argument for XCLAIM");
      }
    } else if (Eq(a[j], "retrycount") && more) {
      if (!ToInt(a[++j], &retrycount)) {
        return r->Error("ERR Invalid RETRYCOUNT option argument for XCLAIM");
      }
    } else if (Eq(a[j], "lastid") && more) {
      if (!ParseStreamId(a[++j], 0, true, &last_id)) return InvalidId(r);
    } else {
      return r->Error("ERR Unrecognized XCLAIM option '" + std::string(a[j]) +
                      "'");
    }
  }
  if (g->last < last_id) {
    g->last = last_id;
    s.GroupsChanged();
  }
  if (delivery < 0 || delivery > now) delivery = now;
  std::string body;
  Reply inner(r, &body);
  size_t claimed = 0;
  std::string name;
  bool have_consumer = false;
  for (const StreamId& id : ids) {
    StreamNack nk;
    const bool pending = s.PelGet(*g, id, &nk);
    StreamEntry e;
    if (!s.Find(id, &e)) {
      if (!s.ok()) return Damaged(r);
      if (pending) s.PelErase(*g, id);
      continue;
    }
    bool owned = pending;
    if (!pending) {
      if (!force) continue;
      nk = StreamNack{id, 0, 1, {}};
    }
    if (owned && min_idle != 0 &&
        now - static_cast<int64_t>(nk.delivery_ms) < min_idle) {
      continue;
    }
    if (!have_consumer) {
      name = Consumer(c, &s, g, a[1], a[3], static_cast<uint64_t>(now))->name;
      have_consumer = true;
    }
    Claim(&s, *g, nk, name, static_cast<uint64_t>(delivery), retrycount,
          justid, e, &inner);
    ++claimed;
  }
  if (!s.ok()) return Damaged(r);
  if (!SaveStream(c, a[1], &s, r)) return;
  r->Array(claimed);
  r->Raw(body);
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
void XAutoClaim(const Args& a, CommandContext* c, Reply* r) {
  int64_t min_idle = 0;
  if (!ToInt(a[4], &min_idle)) {
    return r->Error("ERR Invalid min-idle-time argument for XAUTOCLAIM");
  }
  if (min_idle < 0) min_idle = 0;
  StreamId start;
  bool ex = false;
  if (!ParseIntervalId(a[5], 0, &start, &ex)) return InvalidId(r);
  if (ex && !start.Next()) {
    return r->Error("ERR invalid start ID for the interval");
  }
  int64_t count = 100;
  bool justid = false;
  constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max() / 16;
  for (size_t j = 6; j < a.size(); ++j) {
    if (Eq(a[j], "count") && j + 1 < a.size()) {
      if (!ToInt(a[j + 1], &count) || count < 1 || count > kMaxCount) {
        return r->Error("ERR COUNT must be > 0");
      }
      ++j;
    } else if (Eq(a[j], "justid")) {
      justid = true;
    } else {
      return SyntaxError(r);
    }
  }
  StreamValue s;
  StreamGroup* g = nullptr;
  if (!OpenGroup(c, a, &s, &g, r)) return;
  const int64_t now = WallMs();
  int64_t attempts = count * 10;
  std::string body;
  Reply inner(r, &body);
  size_t claimed = 0;
  std::vector<StreamId> deleted;
  std::string name;
  bool have_consumer = false;
  // The first pending entry at or above `from`: false when none.
  auto next = [&](StreamId from, StreamNack* out) {
    bool found = false;
    s.PelWalk(*g, from, [&](const StreamNack& nk) {
      *out = nk;
      found = true;
      return false;
    });
    return found;
  };
  StreamId cur = start;
  bool end = false;
  while (attempts-- > 0 && count > 0) {
    StreamNack nk;
    if (!next(cur, &nk)) {
      end = true;
      break;
    }
    cur = nk.id;
    const bool last = !cur.Next();
    StreamEntry e;
    if (!s.Find(nk.id, &e)) {
      if (!s.ok()) return Damaged(r);
      s.PelErase(*g, nk.id);
      deleted.push_back(nk.id);
      --count;
    } else if (min_idle == 0 ||
               now - static_cast<int64_t>(nk.delivery_ms) >= min_idle) {
      if (!have_consumer) {
        name =
            Consumer(c, &s, g, a[1], a[3], static_cast<uint64_t>(now))->name;
        have_consumer = true;
      }
      Claim(&s, *g, nk, name, static_cast<uint64_t>(now), -1, justid, e,
            &inner);
      ++claimed;
      --count;
    }
    if (last) {
      end = true;
      break;
    }
  }
  StreamNack after;
  const StreamId cursor = !end && next(cur, &after) ? after.id : StreamId{};
  if (!s.ok()) return Damaged(r);
  if (!SaveStream(c, a[1], &s, r)) return;
  r->Array(3);
  r->Bulk(cursor.Text());
  r->Array(claimed);
  r->Raw(body);
  r->Array(deleted.size());
  for (const StreamId& id : deleted) r->Bulk(id.Text());
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kStreamGroupRows[] = {
    {"xgroup", 203, -2, kWrite | kContainer, 2, 2, 1, XGroup},
    {"xreadgroup", 204, -7, kWrite | kBlocking | kMovableKeys, 0, 0, 0,
     XReadGroup},
    {"xack", 205, -4, kWrite | kFast, 1, 1, 1, XAck},
    {"xpending", 206, -3, kReadOnly, 1, 1, 1, XPending},
    {"xclaim", 207, -6, kWrite | kFast, 1, 1, 1, XClaim},
    {"xautoclaim", 208, -6, kWrite | kFast, 1, 1, 1, XAutoClaim},
};

}  // namespace

void RegisterStreamGroupFamily(Registry* r) {
  r->Add(kStreamGroupRows, "stream");
}

}  // namespace cmd
}  // namespace shmkv
