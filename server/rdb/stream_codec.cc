// A stream's body in an RDB (types 15 and 19): written as Redis 7.0
// writes type 19, read from either with every count, size, ID order and
// reference checked.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/rdb/codec.h"
#include "server/rdb/codec_internal.h"

namespace shmkv {
namespace rdb {

// A stream's nodes: up to 100 entries or about 4 KiB each (Redis's
// stream-node-max-entries and -bytes), each node's first entry's fields
// its master fields, an entry with the same field names coded as their
// values alone.
void WriteStream(Writer* w, const StreamBody& s) {
  struct Node {
    std::string key;
    std::string lp;
  };
  std::vector<Node> nodes;
  size_t i = 0;
  while (i < s.entries.size()) {
    const StreamEntry& master = s.entries[i];
    std::vector<std::string_view> names;
    for (size_t k = 0; k < master.fields.size(); k += 2) {
      names.push_back(master.fields[k]);
    }
    size_t j = i;
    size_t bytes = 0;
    while (j < s.entries.size() && j - i < 100 &&
           (j == i || bytes < 4096)) {
      for (const std::string& f : s.entries[j].fields) bytes += f.size() + 2;
      ++j;
    }
    ListpackBuilder lp;
    lp.Int(static_cast<int64_t>(j - i));  // entries
    lp.Int(0);                            // deleted
    lp.Int(static_cast<int64_t>(names.size()));
    for (std::string_view n : names) lp.Str(n);
    lp.Int(0);  // the master entry's end
    for (size_t k = i; k < j; ++k) {
      const StreamEntry& e = s.entries[k];
      bool same = e.fields.size() == 2 * names.size();
      for (size_t f = 0; same && f < names.size(); ++f) {
        same = e.fields[2 * f] == names[f];
      }
      lp.Int(same ? 2 : 0);  // flags: same fields
      lp.Int(static_cast<int64_t>(e.ms - master.ms));
      lp.Int(static_cast<int64_t>(e.seq - master.seq));
      const size_t pairs = e.fields.size() / 2;
      if (same) {
        for (size_t f = 1; f < e.fields.size(); f += 2) lp.Str(e.fields[f]);
      } else {
        lp.Int(static_cast<int64_t>(pairs));
        for (const std::string& f : e.fields) lp.Str(f);
      }
      lp.Int(static_cast<int64_t>(same ? pairs + 3 : 2 * pairs + 4));
    }
    Node node;
    node.key.resize(16);
    for (int b = 0; b < 8; ++b) {
      node.key[b] = static_cast<char>(master.ms >> (56 - 8 * b));
      node.key[8 + b] = static_cast<char>(master.seq >> (56 - 8 * b));
    }
    node.lp = lp.Finish();
    nodes.push_back(std::move(node));
    i = j;
  }
  w->Length(nodes.size());
  for (const Node& n : nodes) {
    w->String(n.key);
    w->String(n.lp);
  }
  w->Length(s.entries.size());
  w->Length(s.last_ms);
  w->Length(s.last_seq);
  w->Length(s.entries.empty() ? 0 : s.entries.front().ms);
  w->Length(s.entries.empty() ? 0 : s.entries.front().seq);
  w->Length(s.deleted_ms);
  w->Length(s.deleted_seq);
  w->Length(s.added);
  w->Length(s.groups.size());
  auto id = [&](uint64_t ms, uint64_t seq) {  // 16 big-endian bytes
    for (int b = 7; b >= 0; --b) w->Byte(static_cast<uint8_t>(ms >> (8 * b)));
    for (int b = 7; b >= 0; --b) w->Byte(static_cast<uint8_t>(seq >> (8 * b)));
  };
  auto time = [&](uint64_t ms) {  // 8 little-endian bytes
    for (int b = 0; b < 8; ++b) w->Byte(static_cast<uint8_t>(ms >> (8 * b)));
  };
  for (const StreamGroup& g : s.groups) {
    w->String(g.name);
    w->Length(g.last_ms);
    w->Length(g.last_seq);
    w->Length(static_cast<uint64_t>(g.entries_read));
    w->Length(g.pending.size());
    for (const StreamPending& p : g.pending) {
      id(p.ms, p.seq);
      time(p.delivery_ms);
      w->Length(p.count);
    }
    w->Length(g.consumers.size());
    for (const StreamConsumer& k : g.consumers) {
      w->String(k.name);
      time(k.seen_ms);
      uint64_t own = 0;
      for (const StreamPending& p : g.pending) own += p.consumer == k.name;
      w->Length(own);
      for (const StreamPending& p : g.pending) {
        if (p.consumer == k.name) id(p.ms, p.seq);
      }
    }
  }
}

bool Reader::Stream(uint8_t type, StreamBody* s) {
  uint64_t nodes = 0;
  if (!Count(&nodes, 2)) return false;
  std::string key, blob;
  std::vector<std::string> flat;
  bool any = false;
  uint64_t prev_ms = 0, prev_seq = 0;
  for (uint64_t n = 0; n < nodes; ++n) {
    if (!String(&key) || !String(&blob)) return false;
    if (key.size() != 16) return Fail("a stream node key that is not an ID");
    uint64_t mms = 0, mseq = 0;
    for (int b = 0; b < 8; ++b) {
      mms = mms << 8 | static_cast<uint8_t>(key[b]);
      mseq = mseq << 8 | static_cast<uint8_t>(key[8 + b]);
    }
    flat.clear();
    if (!Listpack(blob, &flat)) return false;
    size_t at = 0;
    auto num = [&](int64_t* v) {
      if (at >= flat.size() || !CanonicalInt(flat[at], v)) {
        return Fail("a stream node whose entries do not parse");
      }
      ++at;
      return true;
    };
    int64_t live = 0, dead = 0, nmaster = 0;
    if (!num(&live) || !num(&dead) || !num(&nmaster) || live < 0 ||
        dead < 0 || nmaster < 1 ||
        static_cast<uint64_t>(nmaster) >= flat.size() - at) {
      return Fail("a stream node whose master entry does not parse");
    }
    const size_t names = at;
    at += static_cast<size_t>(nmaster);
    int64_t end = -1;
    if (!num(&end) || end != 0) {
      return Fail("a stream node whose master entry does not end");
    }
    int64_t seen_live = 0, seen_dead = 0;
    while (at < flat.size()) {
      int64_t flags = 0, dms = 0, dseq = 0, nf = nmaster, lpcount = 0;
      if (!num(&flags) || !num(&dms) || !num(&dseq)) return false;
      const bool same = (flags & 2) != 0;
      if (!same && (!num(&nf) || nf < 1)) {
        return Fail("a stream entry without fields");
      }
      const uint64_t strings = static_cast<uint64_t>(nf) * (same ? 1 : 2);
      if (strings > flat.size() - at) {
        return Fail("a stream entry that runs past its node");
      }
      StreamEntry e;
      e.ms = mms + static_cast<uint64_t>(dms);
      e.seq = mseq + static_cast<uint64_t>(dseq);
      for (int64_t f = 0; f < nf; ++f) {
        if (same) {
          e.fields.push_back(flat[names + static_cast<size_t>(f)]);
          e.fields.push_back(std::move(flat[at++]));
        } else {
          e.fields.push_back(std::move(flat[at++]));
          e.fields.push_back(std::move(flat[at++]));
        }
      }
      if (!num(&lpcount) ||
          lpcount != static_cast<int64_t>(same ? nf + 3 : 2 * nf + 4)) {
        return Fail("a stream entry whose count is not its size");
      }
      if ((flags & 1) != 0) {
        ++seen_dead;
        continue;
      }
      if (any && !(e.ms > prev_ms || (e.ms == prev_ms && e.seq > prev_seq))) {
        return Fail("a stream whose entries are not in ID order");
      }
      any = true;
      prev_ms = e.ms;
      prev_seq = e.seq;
      ++seen_live;
      s->entries.push_back(std::move(e));
    }
    if (seen_live != live || seen_dead != dead) {
      return Fail("a stream node that counts other entries than it holds");
    }
  }
  uint64_t length = 0, first_ms = 0, first_seq = 0, groups = 0;
  if (!Length(&length) || !Length(&s->last_ms) || !Length(&s->last_seq)) {
    return false;
  }
  if (type == kTypeStreamListpacks2) {
    if (!Length(&first_ms) || !Length(&first_seq) ||
        !Length(&s->deleted_ms) || !Length(&s->deleted_seq) ||
        !Length(&s->added)) {
      return false;
    }
  } else {
    s->added = length;  // as Redis takes a stream of the older type
  }
  if (length != s->entries.size()) {
    return Fail("a stream whose length is not its entries");
  }
  if (any && (s->last_ms < prev_ms ||
              (s->last_ms == prev_ms && s->last_seq < prev_seq))) {
    return Fail("a stream whose last ID is below its last entry");
  }
  // A group takes at least 4 bytes; a pending entry 25, a consumer 10.
  if (!Count(&groups, 4)) return false;
  return Groups(type, groups, s);
}

namespace {

bool IdLess(uint64_t ams, uint64_t aseq, uint64_t bms, uint64_t bseq) {
  return ams < bms || (ams == bms && aseq < bseq);
}

}  // namespace

bool Reader::Groups(uint8_t type, uint64_t groups, StreamBody* s) {
  std::string_view raw;
  auto id = [&](uint64_t* ms, uint64_t* seq) {
    if (!Bytes(16, &raw)) return false;
    *ms = *seq = 0;
    for (int b = 0; b < 8; ++b) {
      *ms = *ms << 8 | static_cast<uint8_t>(raw[b]);
      *seq = *seq << 8 | static_cast<uint8_t>(raw[8 + b]);
    }
    return true;
  };
  auto time = [&](uint64_t* ms) {
    if (!Bytes(8, &raw)) return false;
    *ms = LoadLE(raw.data(), 8);
    return true;
  };
  for (uint64_t n = 0; n < groups; ++n) {
    StreamGroup g;
    if (!String(&g.name) || !Length(&g.last_ms) || !Length(&g.last_seq)) {
      return false;
    }
    if (!s->groups.empty() && !(s->groups.back().name < g.name)) {
      // Redis writes them in name order, each once.
      return Fail("a stream whose consumer groups repeat or are out of "
                  "order");
    }
    if (type == kTypeStreamListpacks2) {
      uint64_t read = 0;
      if (!Length(&read)) return false;
      g.entries_read = static_cast<int64_t>(read);
      if (g.entries_read < -1) {
        return Fail("a consumer group whose entries-read is negative");
      }
    } else {
      g.estimate_read = true;  // worked out from the stream, as Redis does
    }
    uint64_t pending = 0;
    if (!Count(&pending, 25)) return false;
    g.pending.reserve(pending);
    for (uint64_t k = 0; k < pending; ++k) {
      StreamPending p;
      if (!id(&p.ms, &p.seq) || !time(&p.delivery_ms) || !Length(&p.count)) {
        return false;
      }
      if (!g.pending.empty() && !IdLess(g.pending.back().ms,
                                        g.pending.back().seq, p.ms, p.seq)) {
        return Fail("a consumer group whose pending entries repeat or are "
                    "out of order");
      }
      g.pending.push_back(std::move(p));
    }
    uint64_t consumers = 0;
    if (!Count(&consumers, 10)) return false;
    uint64_t owned = 0;
    std::vector<char> taken(g.pending.size(), 0);
    for (uint64_t k = 0; k < consumers; ++k) {
      StreamConsumer c;
      uint64_t own = 0;
      if (!String(&c.name) || !time(&c.seen_ms) || !Count(&own, 16)) {
        return false;
      }
      if (!g.consumers.empty() && !(g.consumers.back().name < c.name)) {
        return Fail("a consumer group whose consumers repeat or are out of "
                    "order");
      }
      for (uint64_t e = 0; e < own; ++e) {
        uint64_t ms = 0, seq = 0;
        if (!id(&ms, &seq)) return false;
        // The group's entry of that ID (binary search: they are in order).
        size_t lo = 0, hi = g.pending.size();
        while (lo < hi) {
          const size_t mid = lo + (hi - lo) / 2;
          if (IdLess(g.pending[mid].ms, g.pending[mid].seq, ms, seq)) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        if (lo == g.pending.size() || g.pending[lo].ms != ms ||
            g.pending[lo].seq != seq) {
          return Fail("a consumer's pending entry that its group lacks");
        }
        if (taken[lo]) return Fail("a pending entry that two consumers hold");
        taken[lo] = 1;
        g.pending[lo].consumer = c.name;
        ++owned;
      }
      g.consumers.push_back(std::move(c));
    }
    if (owned != g.pending.size()) {
      return Fail("a pending entry without a consumer");
    }
    s->groups.push_back(std::move(g));
  }
  return true;
}

}  // namespace rdb
}  // namespace shmkv
