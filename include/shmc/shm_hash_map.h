// ShmHashMap<Key, Alloc>: keys (standard-layout, trivially copyable, with
// ==) to variable-length byte-string values, in two segments: the index
// ShmHashTable "<key>0" and the values ShmLinkTable "<key>1" (the
// reference's naming). One writer process, any number of readers.
//
// Each index node holds the key and the value's handle in one atomic word.
// Writing the handle is the single commit point of Insert, Replace and
// Erase; the link table records each write's intent first, so a writer
// killed at any instruction is recovered by the next InitForWrite in
// O(value size): nothing leaks and no half-written value is ever visible.
// Readers never block: they read the handle, copy the value with per-node
// validation, and check the handle and key again afterwards (retrying a few
// times if the writer replaced the value meanwhile).
//
// Differences from the reference: empty values are allowed; copy-free reads
// (Find into a caller buffer, Visit in place); a writer lease refuses a
// second live writer (kSharedWriters opts out); crash recovery.
// Limits: a value is at most 4 GiB - 1 and must fit in the free nodes
// (a Replace needs room for the new value before the old one is freed).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "shmc/common_utils.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_table.h"
#include "shmc/shm_link_table.h"

#ifdef UNIT_TEST
template <class Alloc>
class ShmHashMapTest;
#endif

namespace shmc {

namespace detail {

// An index node: the key and the value's handle. The field names are the
// reference's (`key`, `link_buf` with its `m.head`/`m.tag` view), because
// its test suite damages nodes through them; the library itself touches
// both only through the atomic words.
template <class K>
struct MapNode {
  static constexpr size_t kWords = (sizeof(K) + 7) / 8;
  struct KeyWords {
    std::atomic<uint64_t> words[kWords];
    // Assigning a key stores its bytes (relaxed: published by the handle's
    // release store, as in ShmHashMap's Write).
    void operator=(const K& k) volatile {
      StoreWords(const_cast<std::atomic<uint64_t>*>(words), &k, sizeof(K));
    }
  } key;
  union LinkWord {
    std::atomic<uint64_t> word;  // packed link_buf_t; low 32 bits 0 = empty
    struct {
      uint32_t head;
      uint32_t tag;
    } m;  // the reference's view of the handle's halves; never used here
  } link_buf;

  K LoadKey() const volatile {
    K k;
    LoadWords(&k, const_cast<const std::atomic<uint64_t>*>(key.words),
              sizeof(K));
    return k;
  }
  void StoreKey(const K& k) volatile { key = k; }
  std::atomic<uint64_t>* link_word() volatile {
    return const_cast<std::atomic<uint64_t>*>(&link_buf.word);
  }
  uint64_t LoadLink() const volatile {
    // SYNC POINT (acquire): pairs with the commit in PublishValue; the key
    // words and value nodes written before it are visible after it.
    return const_cast<const std::atomic<uint64_t>&>(link_buf.word).load(
        std::memory_order_acquire);
  }
  std::pair<bool, K> Key() const volatile {
    uint64_t l = LoadLink();
    return {static_cast<uint32_t>(l) != 0, LoadKey()};
  }
};
static_assert(sizeof(MapNode<uint64_t>) == 16 &&
                  offsetof(MapNode<uint64_t>, link_buf) == 8,
              "a u64-keyed index node is the key word, then the handle word");

// A map's index node, known by its size alone (the `shmc` tool's view):
// whole key words, then the value's handle word, last. ShmHashMap asserts
// that its MapNode<K> is so for every K.
constexpr uint64_t MapHandleOffset(uint64_t node_size) {
  return node_size - 8;
}
constexpr bool MapIndexNodeOk(uint64_t node_size) {
  return node_size >= 16 && node_size % 8 == 0;
}
// The handle word of index slot `slot` in a map index mapped at `base`.
inline std::atomic<uint64_t>* MapHandleWord(char* base,
                                            const FixedLayout& index,
                                            uint64_t slot) {
  return reinterpret_cast<std::atomic<uint64_t>*>(
      base + index.node_offset(slot) + MapHandleOffset(index.node_size()));
}
// Link-table operations name an index slot by its index + 1 (0: none);
// recovery resolves the id back to the slot's handle word.
constexpr uint64_t MapSlotId(uint64_t slot) { return slot + 1; }
template <class HandleOf>
LinkSlotResolver MapResolver(uint64_t slots, HandleOf handle_of) {
  return [slots, handle_of](uint64_t id) -> std::atomic<uint64_t>* {
    return id == 0 || id > slots ? nullptr : handle_of(id - 1);
  };
}

template <class LinkStat>
struct MapHealthStat {
  LinkStat lt_stat;
  size_t total_key_values;
  size_t bad_key_values;
  size_t cleared_key_values;
  size_t leaked_values;
  size_t recycled_leaked_values;
  // Index nodes whose tag does not match their key (unreachable by lookups;
  // ShmHashMap::HealthCheck only, and re-tagged with auto_fix).
  size_t untagged_keys;
  // The index's own checks (ShmHashTable::HealthCheck), tags and depth.
  TableHealth index;
};

// ShmHashMap::HealthCheck over any index: each_slot(f) calls f with the
// handle word of every index node in use (false if it cannot walk). Shared
// with the `shmc` tool, which walks a map's index knowing only its node
// size.
template <class Links, class EachSlot>
bool MapHealthCheck(Links& links, const EachSlot& each_slot,
                    MapHealthStat<typename Links::HealthStat>* hs,
                    bool auto_fix) {
  if (hs == nullptr) return false;
  std::memset(hs, 0, sizeof(*hs));
  if (!links.HealthCheck(&hs->lt_stat, auto_fix)) return false;
  std::vector<uint8_t> referenced(links.total_nodes() + 1, 0);
  bool ok = each_slot([&](std::atomic<uint64_t>* word) {
    link_buf_t lb = link_buf_t::Unpack(word->load(std::memory_order_acquire));
    uint32_t len = 0;
    if (links.HeadLength(lb, &len)) {
      ++hs->total_key_values;
      referenced[lb.head()] = 1;
    } else {
      ++hs->bad_key_values;
      if (auto_fix) {
        word->store(0, std::memory_order_release);
        ++hs->cleared_key_values;
      }
    }
  });
  if (!ok) return false;
  std::vector<link_buf_t> leaked;
  links.Travel([&](link_buf_t lb) {
    if (!referenced[lb.head()]) leaked.push_back(lb);
  });
  hs->leaked_values = leaked.size();
  if (auto_fix) {
    for (link_buf_t lb : leaked) {
      if (links.Free(lb)) ++hs->recycled_leaked_values;
    }
  }
  return true;
}

// The same check over an extent table: the handles the index names are
// the values; a live extent none names is leaked (auto_fix frees it), and
// a repair of broken extents keeps every value the index names.
template <class A, class EachSlot>
bool MapHealthCheck(ShmExtentTable<A>& links, const EachSlot& each_slot,
                    MapHealthStat<typename ShmExtentTable<A>::HealthStat>* hs,
                    bool auto_fix) {
  if (hs == nullptr) return false;
  std::memset(hs, 0, sizeof(*hs));
  if (auto_fix && !links.is_initialized()) return false;
  std::vector<std::pair<link_buf_t, std::atomic<uint64_t>*>> named;
  bool ok = each_slot([&](std::atomic<uint64_t>* word) {
    link_buf_t lb = link_buf_t::Unpack(word->load(std::memory_order_acquire));
    uint32_t len = 0;
    if (links.HeadLength(lb, &len)) {
      named.push_back({lb, word});
    } else {
      ++hs->bad_key_values;
      if (auto_fix) {
        word->store(0, std::memory_order_release);
        ++hs->cleared_key_values;
      }
    }
  });
  if (!ok) return false;
  // Two slots naming one value: damage; the second is not a value.
  std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) {
    return a.first.head() < b.first.head();
  });
  std::vector<link_buf_t> keep;
  for (const auto& n : named) {
    if (!keep.empty() && keep.back().head() == n.first.head()) {
      ++hs->bad_key_values;
      if (auto_fix) {
        n.second->store(0, std::memory_order_release);
        ++hs->cleared_key_values;
      }
      continue;
    }
    keep.push_back(n.first);
  }
  hs->total_key_values = keep.size();
  std::vector<link_buf_t> leaked;
  links.Travel([&](link_buf_t lb) {
    auto it = std::lower_bound(
        keep.begin(), keep.end(), lb,
        [](link_buf_t a, link_buf_t b) { return a.head() < b.head(); });
    if (it == keep.end() || it->head() != lb.head()) leaked.push_back(lb);
  });
  hs->leaked_values = leaked.size();
  if (auto_fix) {
    for (link_buf_t lb : leaked) {
      if (links.Free(lb)) ++hs->recycled_leaked_values;
    }
  }
  return links.HealthCheck(&hs->lt_stat, auto_fix, &keep);
}

// The write protocol of a map's value pool.
template <class Values>
struct ValuesWriter;
template <class A>
struct ValuesWriter<ShmLinkTable<A>> {
  using type = LinkTableWriter<A>;
};
template <class A>
struct ValuesWriter<ShmExtentTable<A>> {
  using type = ExtentTableWriter<A>;
};

}  // namespace detail

// A map lives in two segments: its index (a ShmHashTable) at the key with
// kMapIndexSuffix appended, its values (a ShmLinkTable) with
// kMapValuesSuffix. Tools that list, check or remove maps name them so.
constexpr const char* kMapIndexSuffix = "0";
constexpr const char* kMapValuesSuffix = "1";

// Values: the pool the values live in, ShmLinkTable<Alloc> (the
// reference's, chained fixed nodes) or ShmExtentTable<Alloc> (shmc
// addition: each value whole in an extent of its own size).
template <class KeyType, class Alloc = SVIPC,
          class Values = ShmLinkTable<Alloc>>
class ShmHashMap {
  static_assert(std::is_trivially_copyable<KeyType>::value &&
                    std::is_standard_layout<KeyType>::value,
                "map keys are stored in shared memory as bytes");
  using Node = detail::MapNode<KeyType>;
  using Table = ShmHashTable<KeyType, Node, Alloc>;
  using Links = Values;
  using Writer = typename detail::ValuesWriter<Values>::type;
  static_assert(detail::MapIndexNodeOk(sizeof(Node)) &&
                    offsetof(Node, link_buf) ==
                        detail::MapHandleOffset(sizeof(Node)),
                "the tool finds the handle as the index node's last word");

 public:
  ShmHashMap() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmHashMap);

  // The keys of the map's two segments: {index, values}.
  static std::pair<std::string, std::string> SegmentKeys(
      const std::string& shm_key) {
    return {shm_key + kMapIndexSuffix, shm_key + kMapValuesSuffix};
  }

  // `key_num` keys; values stored in `val_node_num` nodes of
  // `val_node_size` bytes.
  // Errors: the create errors and kWriterBusy of its index (a
  // ShmHashTable at SegmentKeys().first) and of its values (a ShmLinkTable
  // at .second), with their arguments' kInvalidArgument; the message names
  // the segment. When the values segment fails, an index segment this call
  // created is removed again: a failed call leaves no half map behind.
  bool InitForWrite(const std::string& shm_key, size_t key_num,
                    size_t val_node_size, size_t val_node_num) {
    error_.Clear();
    if (!hash_table_.InitForWrite(SegmentKeys(shm_key).first, key_num)) {
      error_ = hash_table_.last_error();
      return false;
    }
    detail::LinkSlotResolver resolve = Resolver();
    if (!Writer::InitForWrite(link_table_, SegmentKeys(shm_key).second,
                              val_node_size, val_node_num, &resolve)) {
      error_ = link_table_.last_error();
      hash_table_.DetachRemovingCreated();
      return false;
    }
    return true;
  }

  // Attaches both segments read-only.
  // Errors: attach errors of either segment.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    if (!hash_table_.InitForRead(SegmentKeys(shm_key).first)) {
      error_ = hash_table_.last_error();
      return false;
    }
    if (!link_table_.InitForRead(SegmentKeys(shm_key).second)) {
      error_ = link_table_.last_error();
      return false;
    }
    return true;
  }

  bool Find(const KeyType& key, std::string* val) const {
    return Read(key, [&](link_buf_t lb) { return link_table_.Read(lb, val); });
  }

  // Copy-free (shmc addition): copies at most *len bytes into buf, sets
  // *len to the value's full length. No allocation.
  bool Find(const KeyType& key, void* buf, size_t* len) const {
    size_t cap = *len;
    return Read(key, [&](link_buf_t lb) {
      *len = cap;
      return link_table_.Read(lb, buf, len);
    });
  }

  // Length FindMany reports for a key it did not find.
  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  // Batched copy-free read (shmc addition): for each keys[i], copies at
  // most `stride` bytes of its value to bufs + i * stride and sets lens[i]
  // to the value's full length (as Find(key, buf, len) does), or kNotFound.
  // No allocation. Keys go through in batches of 16 on a four-stage
  // pipeline: the index tags of batch b+3 requested, batch b+2's tags
  // compared and only the index node they point at requested, batch b+1
  // looked up in those nodes and its values' first nodes requested, batch
  // b read; so one core keeps many misses in flight. Each value is read
  // and validated as Find reads it (a node found a stage earlier is
  // checked again). Returns how many keys were found. With bufs null (or
  // stride 0) only lengths are reported; keys and lens must hold n
  // entries.
  size_t FindMany(const KeyType* keys, size_t n, void* bufs, size_t stride,
                  size_t* lens) const {
    if (keys == nullptr || lens == nullptr) return 0;
    if (bufs == nullptr) stride = 0;
    // Stage buffers by batch number mod 4: batch b+3's hashes go where
    // batch b-1's were, which its read no longer needs.
    const volatile Node* nodes[4][kBatch];
    // Zeroed only to quiet GCC 12 (maybe-uninitialized): reads stay below n.
    uint64_t hashes[4][kBatch] = {};
    char* out = static_cast<char*>(bufs);
    size_t found = 0;
    for (size_t s = 0; s < 3; ++s) {
      PrefetchTags(keys, n, s * kBatch, hashes[s]);
    }
    PrefetchCandidates(n, 0, hashes[0], nodes[0]);
    PrefetchCandidates(n, kBatch, hashes[1], nodes[1]);
    LookUpBatch(keys, n, 0, hashes[0], nodes[0]);
    for (size_t c = 0, b = 0; c < n; c += kBatch, b = (b + 1) % 4) {
      PrefetchTags(keys, n, c + 3 * kBatch, hashes[(b + 3) % 4]);
      PrefetchCandidates(n, c + 2 * kBatch, hashes[(b + 2) % 4],
                         nodes[(b + 2) % 4]);
      LookUpBatch(keys, n, c + kBatch, hashes[(b + 1) % 4],
                  nodes[(b + 1) % 4]);
      for (size_t i = c; i < n && i < c + kBatch; ++i) {
        const volatile Node* node = nodes[b][i - c];
        char* buf = out + i * stride;
        size_t len = stride;
        Attempt a = Attempt::kGone;
        if (node != nullptr) {
          a = ReadOnce(node, keys[i], [&](link_buf_t lb) {
            len = stride;
            return link_table_.Read(lb, buf, &len);
          });
        }
        // Not found at lookup time is a miss, as for Find; a value that
        // changed under the read is looked up again.
        if (a != Attempt::kDone) {
          len = stride;
          if (node == nullptr || !Find(keys[i], buf, &len)) len = kNotFound;
        }
        lens[i] = len;
        found += len != kNotFound;
      }
    }
    return found;
  }

  // Read-ahead for lookups to come (shmc addition): requests the lines a
  // Find of each key will read (its index tags, the index node they name,
  // its value's first node), in groups of 16 through FindMany's first
  // three stages, and returns nothing. For a caller that knows its next
  // keys before it looks them up one at a time (a server's pipelined
  // requests): those lookups then find their lines arriving, not each
  // waiting for its misses in turn. Changes nothing; what it reads is
  // checked as FindMany checks it.
  void Prefetch(const KeyType* keys, size_t n) const {
    if (keys == nullptr) return;
    uint64_t hashes[kBatch];
    const volatile Node* nodes[kBatch];
    for (size_t c = 0; c < n; c += kBatch) {
      PrefetchTags(keys, n, c, hashes);
      PrefetchCandidates(n, c, hashes, nodes);
      LookUpBatch(keys, n, c, hashes, nodes);
    }
  }

  enum VisitResult { kVisitFound, kVisitNotFound, kVisitRetry };
  // In-place read (shmc addition): piece(data, n) sees the value in place,
  // piece by piece. kVisitRetry: the value changed while being visited;
  // discard what was seen and call again.
  VisitResult Visit(const KeyType& key,
                    const std::function<void(const char*, size_t)>& piece)
      const {
    const volatile Node* n = hash_table_.Find(key);
    if (n == nullptr) return kVisitNotFound;
    Attempt a = ReadOnce(n, key, [&](link_buf_t lb) {
      return link_table_.Visit(lb, piece);
    });
    // kGone: erased, or moved to another node; a retry will tell which.
    return a == Attempt::kDone ? kVisitFound : kVisitRetry;
  }

  bool Insert(const KeyType& key, const void* val_buf, size_t val_buf_len) {
    return Write(key, val_buf, val_buf_len, false);
  }
  bool Insert(const KeyType& key, const std::string& val) {
    return Insert(key, val.data(), val.size());
  }
  bool Replace(const KeyType& key, const void* val_buf, size_t val_buf_len) {
    return Write(key, val_buf, val_buf_len, true);
  }
  bool Replace(const KeyType& key, const std::string& val) {
    return Replace(key, val.data(), val.size());
  }

  // Changes `n` bytes of the key's value in place, from byte `offset` on
  // (shmc addition): false, with nothing written, when the key is absent
  // or the range passes the value's end. The map's lock-free readers do
  // not see a value change under them (its handle stays the same): only
  // for a writer whose readers check a sequence of their own around each
  // read, as shmkv's store does (its journal's seqlock).
  bool Overwrite(const KeyType& key, size_t offset, const void* p,
                 size_t n) {
    volatile Node* node = hash_table_.Find(key);
    if (node == nullptr) return false;
    link_buf_t lb = link_buf_t::Unpack(node->LoadLink());
    return lb && link_table_.Overwrite(lb, offset, p, n);
  }

  bool Erase(const KeyType& key) {
    volatile Node* n = hash_table_.Find(key);
    if (n == nullptr) return false;
    link_buf_t old = link_buf_t::Unpack(n->LoadLink());
    if (!old) return false;
    return Writer::Erase(link_table_, n->link_word(), SlotId(n), old);
  }

  bool Dump(const KeyType& key) const {
    const volatile Node* n = hash_table_.Find(key);
    if (n == nullptr) {
      detail::Log(kInfo, "ShmHashMap::Dump: key not found\n");
      return false;
    }
    return link_table_.Dump(link_buf_t::Unpack(n->LoadLink()));
  }

  struct TravelPos : public Table::TravelPos {};

  bool Travel(TravelPos* pos, size_t max_travel_nodes,
              std::function<void(const KeyType&, const std::string&)> f) {
    std::string val;
    return hash_table_.Travel(pos, max_travel_nodes, [&](volatile Node* n) {
      for (int attempt = 0; attempt < kReadTries; ++attempt) {
        KeyType k = n->LoadKey();
        Attempt a = ReadOnce(n, k, [&](link_buf_t lb) {
          return link_table_.Read(lb, &val);
        });
        if (a == Attempt::kDone) f(k, val);
        if (a != Attempt::kChanged) break;
      }
    });
  }
  bool Travel(std::function<void(const KeyType&, const std::string&)> f) {
    TravelPos pos;
    return Travel(&pos, 0, std::move(f));
  }

  using HealthStat = detail::MapHealthStat<typename Links::HealthStat>;

  // Full scan of both segments: values every key points to must be live,
  // and every live value must be pointed to. With auto_fix (writer only),
  // keys with bad values are dropped and unreferenced values freed.
  bool HealthCheck(HealthStat* hs, bool auto_fix) {
    if (!detail::MapHealthCheck(
            link_table_,
            [this](const std::function<void(std::atomic<uint64_t>*)>& slot) {
              return hash_table_.Travel(
                  [&](volatile Node* n) { slot(n->link_word()); });
            },
            hs, auto_fix)) {
      return false;
    }
    // MapHealthCheck has already refused auto_fix on a read-only map, so
    // this fails only for an uninitialized table.
    if (!hash_table_.HealthCheck(&hs->index, auto_fix)) return false;
    hs->untagged_keys =
        static_cast<size_t>(hs->index.untagged + hs->index.mistagged);
    return true;
  }

  size_t size() const { return link_table_.link_bufs(); }
  size_t hash_table_free_percentage() const {
    size_t capa = hash_table_.expected_capacity();
    size_t used = link_table_.link_bufs();
    return capa <= used ? 0 : (capa - used) * 100 / capa;
  }
  size_t link_table_free_percentage() const {
    size_t total = link_table_.total_nodes();
    return total == 0 ? 0 : link_table_.free_nodes() * 100 / total;
  }
  size_t free_percentage() const {
    return std::min(hash_table_free_percentage(),
                    link_table_free_percentage());
  }

  // shmc additions

  // Completes or rolls back a write that a crashed writer left half done.
  // InitForWrite does this when it takes over a dead writer's lease;
  // programs that serialize their writers themselves (kSharedWriters) call
  // it, under their lock, when they learn a writer died mid-write (e.g.
  // EOWNERDEAD from a robust mutex). Nothing to do: returns at once.
  // False when the interrupted write's record is damaged (last_error()).
  bool Recover() {
    detail::LinkSlotResolver resolve = Resolver();
    if (Writer::Recover(link_table_, &resolve)) return true;
    error_ = link_table_.last_error();
    return false;
  }

  const Error& last_error() const { return error_; }
  const Table& hash_table() const { return hash_table_; }
  const Links& link_table() const { return link_table_; }
  // shmc addition (writer): makes sure the value pool has `nodes` nodes on
  // its free list, reserving further steps of a pool made with
  // kGrowInSteps (ShmLinkTable::Reserve): a writer that must not fail
  // halfway through several writes asks for all their nodes first.
  bool ReserveNodes(uint64_t nodes) {
    if (link_table_.Reserve(nodes)) return true;
    error_ = link_table_.last_error();
    return false;
  }

 private:
  static constexpr int kReadTries = 8;  // then "not found", as the reference

  // Recovery's way from a slot id back to the index node's handle word.
  detail::LinkSlotResolver Resolver() {
    return detail::MapResolver(
        hash_table_.ideal_capacity(),
        [this](uint64_t slot) -> std::atomic<uint64_t>* {
          volatile Node* n = hash_table_.node_at(slot);
          return n == nullptr ? nullptr : n->link_word();
        });
  }
  uint64_t SlotId(const volatile Node* n) const {
    return detail::MapSlotId(hash_table_.node_index(n));
  }

  bool Write(const KeyType& key, const void* buf, size_t len, bool replace) {
    bool found = false;
    volatile Node* n = hash_table_.FindOrAlloc(key, &found);
    if (n == nullptr || (found && !replace)) return false;
    link_buf_t old;
    if (found) {
      old = link_buf_t::Unpack(n->LoadLink());
    } else {
      n->StoreKey(key);  // published by the handle's release store
    }
    return Writer::Publish(link_table_, n->link_word(), SlotId(n), old, buf,
                           len);
  }

  enum class Attempt {
    kDone,     // read a value that was the key's for the whole read
    kGone,     // the node no longer holds the key (erased, or reused)
    kChanged,  // the value was replaced during the read
  };

  // One read of node n's value for `key` with read(lb): the handle is loaded
  // (acquire), the key checked, the value read with its own validation, and
  // the handle checked again, so the value was the key's throughout.
  template <class ReadFn>
  Attempt ReadOnce(const volatile Node* n, const KeyType& key,
                   const ReadFn& read) const {
    uint64_t l = n->LoadLink();
    if (static_cast<uint32_t>(l) == 0 || !(n->LoadKey() == key)) {
      return Attempt::kGone;
    }
    if (!read(link_buf_t::Unpack(l)) || n->LoadLink() != l) {
      return Attempt::kChanged;
    }
    return Attempt::kDone;
  }

  static constexpr size_t kBatch = 16;

  // FindMany's stages, each on keys [c, c + kBatch) (those below n).
  // First: requests the keys' index tags and keeps their hashes.
  void PrefetchTags(const KeyType* keys, size_t n, size_t c,
                    uint64_t* hashes) const {
    for (size_t i = c; i < n && i < c + kBatch; ++i) {
      hashes[i - c] = hash_table_.PrefetchTags(keys[i]);
    }
  }
  // Second: compares the tags requested a stage earlier and requests the
  // index node each points at (the candidate, or nullptr).
  void PrefetchCandidates(size_t n, size_t c, const uint64_t* hashes,
                          const volatile Node** nodes) const {
    for (size_t i = c; i < n && i < c + kBatch; ++i) {
      nodes[i - c] = hash_table_.PrefetchCandidate(hashes[i - c]);
    }
  }
  // Third: looks the keys up given their candidates, replacing each with
  // the node found (or nullptr), and requests the first node of each value
  // found.
  void LookUpBatch(const KeyType* keys, size_t n, size_t c,
                   const uint64_t* hashes, const volatile Node** nodes) const {
    for (size_t i = c; i < n && i < c + kBatch; ++i) {
      const volatile Node* node =
          hash_table_.FindCandidate(keys[i], hashes[i - c], nodes[i - c]);
      nodes[i - c] = node;
      if (node != nullptr) {
        link_table_.Prefetch(link_buf_t::Unpack(node->LoadLink()));
      }
    }
  }

  // Finds the key and reads its value; on any change, looks the key up
  // again (it may have been erased, replaced, or re-inserted elsewhere).
  template <class ReadFn>
  bool Read(const KeyType& key, const ReadFn& read) const {
    for (int attempt = 0; attempt < kReadTries; ++attempt) {
      const volatile Node* n = hash_table_.Find(key);
      if (n == nullptr) return false;
      if (ReadOnce(n, key, read) == Attempt::kDone) return true;
    }
    return false;
  }

#ifdef UNIT_TEST
  // Test hook (only with -DUNIT_TEST): the reference's test fixture reaches
  // hash_table_ and link_table_ to damage a map and then checks that
  // HealthCheck finds and fixes the damage.
  friend class ::ShmHashMapTest<Alloc>;
#endif

  Table hash_table_;
  Links link_table_;
  Error error_;
};

}  // namespace shmc
