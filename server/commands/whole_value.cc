#include "server/commands/whole_value.h"

#include <string>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hash_value.h"
#include "server/commands/list_value.h"
#include "server/commands/packed.h"
#include "server/commands/stream_value.h"
#include "server/commands/zset_value.h"

namespace shmkv {
namespace cmd {

// The whole value at `key` as RDB sees it.
Whole ReadWhole(CommandContext* c, std::string_view key, rdb::Value* out,
                int64_t* expire_ms) {
  Value meta;
  if (!ReadValue(c, key, &meta)) return Whole::kNone;
  if (expire_ms != nullptr) *expire_ms = meta.expire_ms;
  auto opened = [](Load l) {
    return l == Load::kOk          ? Whole::kValue
           : l == Load::kWrongType ? Whole::kWrongType
                                   : Whole::kDamaged;
  };
  switch (meta.type) {
    case ValueType::kString:
      out->kind = rdb::Value::kString;
      out->str.swap(meta.bytes);
      return Whole::kValue;
    case ValueType::kHash:
    case ValueType::kSet: {
      const bool set = meta.type == ValueType::kSet;
      HashValue h(set ? kSetShape : kHashShape);
      Whole w = opened(h.Open(c, key));
      if (w != Whole::kValue) return w;
      std::vector<std::pair<std::string_view, std::string_view>> all;
      if (!h.All(&all)) return Whole::kDamaged;
      out->kind = set ? rdb::Value::kSet : rdb::Value::kHash;
      for (const auto& [f, v] : all) {
        if (set) {
          out->items.emplace_back(f);
        } else {
          out->pairs.emplace_back(std::string(f), std::string(v));
        }
      }
      return Whole::kValue;
    }
    case ValueType::kList: {
      ListValue l;
      Whole w = opened(l.Open(c, key));
      if (w != Whole::kValue) return w;
      std::vector<std::string_view> all;
      if (l.size() > 0 && !l.Range(0, l.size() - 1, &all)) {
        return Whole::kDamaged;
      }
      out->kind = rdb::Value::kList;
      out->items.assign(all.begin(), all.end());
      return Whole::kValue;
    }
    case ValueType::kStream: {
      StreamValue st;
      Whole w = opened(st.Open(c, key));
      if (w != Whole::kValue) return w;
      out->kind = rdb::Value::kStream;
      rdb::StreamBody& b = out->stream;
      const StreamValue::Counters& k = st.counters();
      b.last_ms = k.last.ms;
      b.last_seq = k.last.seq;
      b.deleted_ms = k.max_deleted.ms;
      b.deleted_seq = k.max_deleted.seq;
      b.added = k.added;
      std::vector<std::string_view> fields;
      bool ok = true;
      const bool walked = st.Walk(StreamId{}, true, [&](const StreamEntry& e) {
        if (!Unpack(e.fields, &fields)) return ok = false;
        b.entries.push_back(rdb::StreamEntry{
            e.id.ms, e.id.seq,
            std::vector<std::string>(fields.begin(), fields.end())});
        return true;
      });
      if (!walked || !ok) return Whole::kDamaged;
      std::vector<StreamGroup>* gs = st.Groups();
      if (gs == nullptr) return Whole::kDamaged;
      for (StreamGroup& g : *gs) {
        rdb::StreamGroup bg;
        bg.name = g.name;
        bg.last_ms = g.last.ms;
        bg.last_seq = g.last.seq;
        bg.entries_read = g.entries_read;
        for (const StreamConsumer& k : g.consumers) {
          bg.consumers.push_back(rdb::StreamConsumer{k.name, k.seen_ms});
        }
        // Every pending entry is a consumer's (else the bytes are not a
        // group: an RDB could not say whose it is).
        const bool pel = st.PelWalk(g, StreamId{}, [&](const StreamNack& n) {
          if (g.Find(n.consumer) == nullptr) return ok = false;
          bg.pending.push_back(rdb::StreamPending{
              n.id.ms, n.id.seq, n.delivery_ms, n.count,
              std::string(n.consumer)});
          return true;
        });
        if (!pel || !ok) return Whole::kDamaged;
        b.groups.push_back(std::move(bg));
      }
      return st.ok() ? Whole::kValue : Whole::kDamaged;
    }
    case ValueType::kZSet: {
      ZSetValue z;
      Whole w = opened(z.Open(c, key));
      if (w != Whole::kValue) return w;
      std::vector<ZEntry> all;
      if (!z.All(&all)) return Whole::kDamaged;
      out->kind = rdb::Value::kZSet;
      for (const ZEntry& e : all) {
        out->scored.emplace_back(std::string(e.member), e.score);
      }
      return Whole::kValue;
    }
  }
  return Whole::kDamaged;
}

// Writes `v` as the value of `key` (which holds nothing now) with no
// TTL: the store's status.
Store::Status WriteWhole(CommandContext* c, std::string_view key,
                         const rdb::Value& v, bool* whole) {
  *whole = true;
  switch (v.kind) {
    case rdb::Value::kString:
      return c->txn->Put(key, v.str, 0);
    case rdb::Value::kHash:
    case rdb::Value::kSet: {
      const bool set = v.kind == rdb::Value::kSet;
      HashValue h(set ? kSetShape : kHashShape);
      if (h.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      // Members and fields arrive checked free of repeats (rdb::Undump).
      std::vector<std::pair<std::string_view, std::string_view>> all;
      if (set) {
        for (const std::string& m : v.items) {
          h.Grow(m);
          all.emplace_back(m, std::string_view());
        }
      } else {
        for (const auto& [f, val] : v.pairs) {
          h.Grow(f);
          h.Grow(val);
          all.emplace_back(f, val);
        }
      }
      h.SetAllNew(all);
      *whole = h.ok();
      return h.ok() ? h.Save(c, key) : Store::Status::kOk;
    }
    case rdb::Value::kList: {
      ListValue l;
      if (l.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      for (const std::string& s : v.items) l.Push(false, s);
      *whole = l.ok();
      return l.ok() ? l.Save(c, key) : Store::Status::kOk;
    }
    case rdb::Value::kStream: {
      StreamValue st;
      if (st.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      st.Create();
      const rdb::StreamBody& b = v.stream;
      std::vector<std::string_view> fields;
      std::string packed;
      for (const rdb::StreamEntry& e : b.entries) {
        fields.assign(e.fields.begin(), e.fields.end());
        packed.clear();
        Pack(fields, &packed);
        st.Append(StreamId{e.ms, e.seq}, packed,
                  c->store->Limits().stream_node_entries);
      }
      StreamValue::Counters* k = st.mutable_counters();
      k->last = StreamId{b.last_ms, b.last_seq};
      k->added = b.added;
      k->max_deleted = StreamId{b.deleted_ms, b.deleted_seq};
      for (const rdb::StreamGroup& bg : b.groups) {
        const StreamId last{bg.last_ms, bg.last_seq};
        StreamGroup* g = st.AddGroup(
            bg.name, last,
            bg.estimate_read ? st.EstimateRead(last) : bg.entries_read);
        if (g == nullptr) break;  // damage (names are checked unique)
        for (const rdb::StreamConsumer& k : bg.consumers) {
          g->Add(k.name, k.seen_ms);
        }
        for (const rdb::StreamPending& p : bg.pending) {
          st.PelPut(*g, StreamNack{StreamId{p.ms, p.seq}, p.delivery_ms,
                                   p.count, p.consumer});
        }
      }
      *whole = st.ok();
      return st.ok() ? st.Save(c, key) : Store::Status::kOk;
    }
    case rdb::Value::kZSet: {
      ZSetValue z;
      if (z.Open(c, key) != Load::kOk) return Store::Status::kCollision;
      std::vector<ZEntry> all;
      all.reserve(v.scored.size());
      for (const auto& [m, score] : v.scored) all.push_back(ZEntry{m, score});
      z.SetAllNew(all);
      *whole = z.ok();
      return z.ok() ? z.Save(c, key) : Store::Status::kOk;
    }
  }
  return Store::Status::kOk;
}

}  // namespace cmd
}  // namespace shmkv
