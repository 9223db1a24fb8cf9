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
  w->Length(0);  // consumer groups
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
  if (!Length(&groups)) return false;
  if (groups != 0) {
    return Fail("a stream with consumer groups, which shmkv does not hold "
                "yet");
  }
  return true;
}

}  // namespace rdb
}  // namespace shmkv
