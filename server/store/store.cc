#include "server/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>
#include <random>
#include <type_traits>

#include "server/store/blob.h"
#include "server/store/cow.h"
#include "server/store/graves.h"
#include "server/store/journal.h"
#include "server/store/key_hash.h"
#include "server/store/owners.h"
#include "server/store/pool_units.h"
#include "server/store/repl.h"
#include "server/store/txn_entries.h"
#include "server/store/walks.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/shm_array.h"
#include "shmc/shm_extent_table.h"
#include "shmc/shm_hash_map.h"
#include "shmc/svipc_shm_alloc.h"

namespace shmkv {

namespace {

template <class Alloc, class Values = shmc::ShmLinkTable<Alloc>>
class StoreT : public Store {
 public:
  using Map = CowMap<shmc::ShmHashMap<KeyHash, Alloc, Values>>;
  using Units = PoolUnits<Values>;

  bool Init(const StoreConfig& cfg, bool master, std::string* err) {
    cfg_ = cfg;
    graves_ = Graves<Map>(&map_, &journal_, cfg.capacity);
    // Every process writes: the program serializes writers (the lock).
    // The value pool is made to reserve its memory as data arrives
    // (kGrowInSteps): --memory is a limit, not what a fresh store holds.
    int flags = shmc::kSharedWriters | shmc::kGrowInSteps |
                (master ? shmc::kCreateIfNotExist : shmc::kNoCreate);
    shmc::SetDefaultCreateFlags(flags);
    if (!map_.InitForWrite(cfg.name, cfg.capacity, Units::kInitSize,
                           Units::InitCount(cfg.memory))) {
      *err = map_.last_error().message;
      return false;
    }
    if (!ctl_arr_.InitForWrite(ControlKey(cfg), 1)) {
      *err = ctl_arr_.last_error().message;
      return false;
    }
    if (!journal_.Open(JournalKey(cfg), cfg.journal, master, err) ||
        !dbs_.Open(DbsKey(cfg), err) ||
        !settings_.Open(SettingsKey(cfg), err)) {
      return false;
    }
    cow_.Init(&journal_, cfg.dir);
    map_.set_cow(&cow_);
    ctl_ = const_cast<ControlBlock*>(&ctl_arr_[0]);
    uint64_t magic = ctl_->magic.load(std::memory_order_acquire);
    if (magic != 0 && magic != kControlMagic) {
      // Another shmkv version's block (its lock may be in use): left alone.
      *err = "control segment " + ControlKey(cfg) + " was made by another "
             "shmkv version; stop that server, then remove its segments "
             "(docs/server.md)";
      return false;
    }
    if (master && magic == 0) {
      pthread_mutexattr_t attr;
      pthread_mutexattr_init(&attr);
      pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
      pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
      int rc = pthread_mutex_init(&ctl_->write_lock, &attr);
      pthread_mutexattr_destroy(&attr);
      if (rc != 0) {
        *err = std::string("cannot initialize the write lock: ") +
               std::strerror(rc);
        return false;
      }
      ctl_->magic.store(kControlMagic, std::memory_order_release);
    } else if (ctl_->magic.load(std::memory_order_acquire) != kControlMagic) {
      *err = "control segment " + ControlKey(cfg) + " is not initialized";
      return false;
    }
    if (master) {
      // A write interrupted by kill -9 of every process: finish it now.
      Locked lock(this);
      if (!map_.Recover()) {
        *err = map_.last_error().message;
        return false;
      }
      journal_.Recover(Applier());
      graves_.Count();
      dbs_.Count(&map_);
    }
    return true;
  }

  bool Get(std::string_view key, Value* v) override {
    ValueView view;
    if (!GetView(key, &view)) return false;
    v->type = view.type;
    v->encoding = view.encoding;
    v->bytes.assign(view.bytes.data(), view.bytes.size());
    v->expire_ms = view.expire_ms;
    return true;
  }

  bool GetView(std::string_view key, ValueView* v) override {
    Blob b;
    if (!Lookup(key, &b)) return false;
    v->type = b.type;
    v->encoding = b.encoding;
    v->bytes = b.value;
    v->expire_ms = b.expire_ms;
    return true;
  }

  void Prefetch(const std::string_view* keys, size_t n) override {
    if (asof_ != nullptr) return;  // a save's reads go to its past
    KeyHash hashes[kPrefetchMost];
    n = std::min(n, kPrefetchMost);
    for (size_t i = 0; i < n; ++i) hashes[i] = HashKeyIn(db_, keys[i]);
    map_.Prefetch(hashes, n);
  }

  void PrefetchParts(const PartKey* parts, size_t n) override {
    if (asof_ != nullptr) return;
    KeyHash hashes[kPrefetchMost];
    n = std::min(n, kPrefetchMost);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = HashPart(parts[i].id, parts[i].index);
    }
    map_.Prefetch(hashes, n);
  }

  bool Exists(std::string_view key) override {
    Blob b;
    return Lookup(key, &b);
  }

  bool GetPart(uint64_t id, uint64_t index, std::string* bytes) override {
    return GetPartHead(id, index, ~size_t{0}, bytes);
  }

  // A truncated map read visits only the nodes of the bytes it copies.
  bool GetPartHead(uint64_t id, uint64_t index, size_t max,
                   std::string* bytes) override {
    char kb[16];
    std::string_view key = PartKeyBytes(PartKey{id, index}, kb);
    KeyHash h = HashPart(id, index);
    size_t len = 0;
    if (max >= cfg_.max_value || asof_ != nullptr) {  // the whole part
      if (!ReadBlob(h)) return false;
      len = scratch_len_;
    } else {
      size_t want = kBlobHeader + key.size() + max;
      if (scratch_.size() < want) scratch_.resize(want);
      len = want;
      if (!map_.Find(h, scratch_.data(), &len)) return false;
      len = std::min(len, want);
    }
    Blob b;
    if (!b.Parse(scratch_.data(), len) || !b.part() || b.key != key) {
      return false;
    }
    bytes->assign(b.value.data(), b.value.size());
    return true;
  }

  // Seqlock reader side: an odd sequence means a multi-key commit is being
  // applied. Applying takes microseconds, so the reader yields a while;
  // a sequence that stays odd may belong to a dead writer, and taking the
  // lock waits for the commit or recovers it. Must not be called while
  // this process holds the lock.
  uint64_t ReadBegin() override {
    for (int waits = 0;; ++waits) {
      uint64_t s = journal_.Seq();
      if ((s & 1) == 0) return s;
      if (waits < 2000) {
        sched_yield();
      } else {
        Locked wait(this);
        waits = 0;
      }
    }
  }
  bool ReadValid(uint64_t token) override { return journal_.SeqValid(token); }

  bool StampPart(uint64_t id, uint64_t index, PartStamp* s) override {
    if (asof_ != nullptr) return false;
    StampPartNow(id, index, s);
    return true;
  }
  // Acquire loads: the part read after them is at least as new as they.
  void StampPartNow(uint64_t id, uint64_t index, PartStamp* s) const {
    s->store = instance_;
    s->epoch = journal_.Epoch();
    s->version = journal_.Version(HashPart(id, index).a);
  }

  bool RandomKey(std::string* key) override {
    return RandomLiveKey(&map_, rng_(), db_, key);
  }

  // Read as any reader reads (the seqlock, no write lock), so that a
  // client can WATCH while a script, of its own worker or another, holds
  // the write lock in its transaction (Redis lets WATCH run then).
  WatchStamp Watch(std::string_view key) override {
    KeyHash h = HashKeyIn(db_, key);
    WatchStamp w;
    for (;;) {
      const uint64_t t = ReadBegin();
      w = WatchStamp();
      w.version = journal_.Version(h.a);
      w.epoch = journal_.Epoch();
      w.db = db_;
      Blob b;
      if (Read(key, &b)) w.expire_ms = b.expire_ms;
      w.expired = w.expire_ms != 0 && w.expire_ms <= NowMs();
      if (ReadValid(t)) return w;
    }
  }

  std::unique_ptr<Txn> Begin() override {
    return std::make_unique<TxnImpl>(this);
  }

  // Every key of a database changed: every blocked client is tried (an
  // XREADGROUP's stream is gone).
  uint64_t FlushAll() override {
    Locked lock(this);
    const uint64_t n =
        FlushUnjournaled(&map_, &journal_, &graves_, &dbs_, kEveryDb);
    Observe(kEveryKey);
    return n;
  }

  uint64_t FlushDb(uint32_t physical) override {
    Locked lock(this);
    const uint64_t n = FlushUnjournaled(&map_, &journal_, &graves_, &dbs_,
                                        static_cast<int>(physical));
    Observe(kEveryKey);
    return n;
  }

  uint32_t Physical(uint32_t db) override { return dbs_.Physical(db); }
  uint32_t NotifyFlags() override { return dbs_.Notify(); }
  void SetNotifyFlags(uint32_t flags) override { dbs_.SetNotify(flags); }
  int64_t GetSetting(Setting s) override { return settings_.Get(s); }
  void SetSetting(Setting s, int64_t v) override { settings_.Set(s, v); }
  EncodingLimits Limits() override { return settings_.Limits(); }
  void ResetSettings() override { settings_.Reset(); }
  bool GetSavePoints(std::vector<SavePoint>* out) override {
    return settings_.GetSave(out);
  }
  void SetSavePoints(const std::vector<SavePoint>& points,
                     bool locked) override {
    if (locked) return settings_.SetSave(points);
    Locked lock(this);  // writers of the points never meet
    settings_.SetSave(points);
  }
  void SetExpiryListener(ExpiryListener f) override {
    on_expiry_ = std::move(f);
  }
  void SetCreateListener(ExpiryListener f) override {
    on_create_ = std::move(f);
  }
  uint64_t KeysIn(uint32_t physical, uint64_t* expires, bool locked) override {
    std::optional<Locked> lock;  // counted, and no commit half counted
    if (!locked) lock.emplace(this);
    if (expires != nullptr) *expires = dbs_.Expires(physical);
    return dbs_.KeysOf(physical, map_.size(), journal_.Counter(Journal::kParts));
  }

  int64_t AverageTtl(uint32_t physical) override {
    return AverageTtlMs(&map_, rng_(), physical);
  }

  void Scan(uint64_t* cursor, size_t count,
            const std::function<void(std::string_view, ValueType)>& f)
      override {
    ScanLiveKeys(&map_, cursor, count, db_, f);
  }

  uint64_t Sweep(size_t count) override {
    std::vector<std::pair<uint32_t, std::string>> expired;
    std::vector<uint64_t> graves;
    SweepStep(&map_, &sweep_pos_, count, NowMs(), &expired, &graves);
    uint64_t n = 0;
    // A replica removes no key itself: its master's DELs do (as Redis's
    // replicas: a key the master extended meanwhile stays).
    if (!Replica()) {
      for (const auto& [db, k] : expired) n += ExpireNow(db, k);
    }
    // A grave is a collection whose removal a killed process left.
    for (uint64_t id : graves) {
      Locked lock(this);
      graves_.Reap(id, kReapBudget);
    }
    return n;
  }

  uint64_t Keys() override {
    uint64_t blobs = map_.size(), parts = Parts();
    return blobs >= parts ? blobs - parts : 0;
  }
  uint64_t Parts() override {
    if (journal_.Counter(Journal::kPartsCounted) == 0) {
      Locked lock(this);  // counts them first
    }
    return journal_.Counter(Journal::kParts);
  }
  uint64_t Capacity() override { return cfg_.capacity; }
  uint64_t MemoryTotal() override { return MaxMemoryBytes(); }
  uint64_t MemoryUsed() override { return UsedUnits() * Units::kCost; }
  uint64_t BlobCost(uint64_t bytes) override {
    return map_.link_table().NodesFor(bytes) * Units::kCost +
           sizeof(shmc::detail::MapNode<KeyHash>);
  }
  const char* ValuePool() override { return Units::kName; }
  uint64_t PoolReservedBytes() override {
    return map_.link_table().reserved_bytes();
  }
  uint64_t PoolTopBytes() override {
    return Units::Top(map_.link_table()) * Units::kCost;
  }
  uint64_t IndexBytes() override {
    return map_.hash_table().ideal_capacity() *
           sizeof(shmc::detail::MapNode<KeyHash>);
  }
  ControlBlock* control() override { return ctl_; }

  // A background save (server/store/store_snapshot.h).
  pid_t ForkSnapshot(bool locked, SnapshotPoint* at, bool* busy,
                     std::string* err) override;
  bool ReadAsOfSnapshot(const SnapshotPoint& at, std::string* err) override;
  bool SnapshotKeys(uint32_t physical,
                    const std::function<void(std::string_view)>& f) override;
  bool EndSnapshot(const std::function<bool()>& publish) override;
  SnapshotState Snapshot() override;
  bool ReapSnapshot() override;

  uint64_t ChangeCount() override { return journal_.VersionSum(); }

  JournalStats journal_stats() override {
    JournalStats j;
    j.recovered = journal_.Counter(Journal::kRecovered);
    j.undone = journal_.Counter(Journal::kUndone);
    j.dropped = journal_.Counter(Journal::kDropped);
    return j;
  }

 private:
  class Locked {
   public:
    explicit Locked(StoreT* s) : s_(s) { s_->Lock(); }
    ~Locked() { s_->Unlock(); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    StoreT* s_;
  };

  struct Entry {
    std::string ident;  // kind, database and key: what TxnEntries finds
    KeyHash h{0, 0};
    std::string key;
    uint16_t db = 0;       // physical; 0 for a part
    bool part = false;     // a part of a collection, not a Redis key
    bool present = false;  // the key's state in this transaction
    ValueType type = ValueType::kString;
    uint8_t encoding = 0;
    std::string value;
    int64_t expire = 0;
    bool had_old = false;  // the key's state in the map
    bool old_ttl = false;  // it had a TTL there
    PartsRoot old_root{0, 0};  // the collection it held in the map, if any
    bool dirty = false;
    // Quiet (Txn::Quiet): the key's one write in this transaction changed
    // its encoding only; `sole`: one write so far, so Quiet may say so.
    bool quiet = false, sole = false;
    // A part's value as the map holds it, kept by its first rewrite when
    // it was read whole (kept_orig), so that the commit can journal what
    // changed (Patch); `pristine` while `value` is still the map's.
    bool pristine = false, kept_orig = false;
    std::string orig;
  };

  // The transaction: an overlay of the keys it touched (store_txn.h).
  class TxnImpl;

  // The map side of a journal record: applies it and bumps its key's
  // version at once, while the sequence is odd (a reader whose sequence
  // did not change saw every bump of the commits before it: PartStamp).
  Journal::ApplyFn Applier() {
    return [this](uint64_t ha, uint64_t hb, Journal::Op op,
                  std::string_view blob) {
      KeyHash h{ha, hb};
      bool ok = true;
      if (op == Journal::Op::kErase) {
        map_.Erase(h);
      } else if (op == Journal::Op::kPut) {
        ok = map_.Replace(h, blob.data(), blob.size());
      } else if (!ApplyPatch(h, blob)) {
        // Only a damaged map or journal: the commit goes on (a patch is
        // never undone), the key is left as it was.
        std::fprintf(stderr, "shmkv: a journal patch does not fit its key's "
                             "blob; the key is left as it was\n");
      }
      if (ok && std::find(quiet_.begin(), quiet_.end(), ha) == quiet_.end()) {
        journal_.Bump(ha);
      }
      return ok;
    };
  }

  // A patch record's pieces written over the key's blob, all or none.
  bool ApplyPatch(const KeyHash& h, std::string_view pieces) {
    return Journal::ApplyPieces(
        pieces, [&](uint32_t offset, std::string_view bytes) {
          return map_.Overwrite(h, offset, bytes.data(), bytes.size());
        });
  }

  // Journals every change and lets the journal apply them. Keys new to
  // the map are journaled (and so applied) first: past them, each record
  // replaces or erases a key the map holds, which cannot fail once the
  // pool is known to have the nodes of every new blob (checked here,
  // before anything is written). So the only commit ever undone is one
  // whose new keys found no room in the index, and its undo erases them:
  // a replaced key's old blob is not copied into the journal (its record
  // says "kept none", an empty old blob), which spares every commit a
  // second read and a copy of each blob it replaces.
  Status CommitJournaled(const std::vector<Entry*>& dirty) {
    std::string rec, blob;
    const auto& links = map_.link_table();
    uint64_t nodes = 0;
    const std::string_view none;
    for (int pass = 0; pass < 2; ++pass) {
      for (const Entry* e : dirty) {
        bool added = e->present && !e->had_old;
        if (added != (pass == 0)) continue;
        if (!added && Patch(*e, &blob)) {
          Journal::AppendPatch(&rec, e->h.a, e->h.b, blob);
          continue;
        }
        std::string_view next_view;
        if (e->present) {
          MakeBlob(&blob, e->key, e->type, e->encoding, e->value, e->expire,
                   e->db);
          next_view = blob;
          nodes += links.NodesFor(blob.size());
        }
        Journal::AppendRecord(&rec, e->h.a, e->h.b,
                              e->present ? &next_view : nullptr,
                              e->had_old ? &none : nullptr);
      }
    }
    if (rec.size() > journal_.capacity()) return Status::kTxnTooLarge;
    // The map's pool reserves its memory in steps: the nodes the commit
    // may take are reserved before its first record applies, so that a
    // full /dev/shm fails it whole (-OOM), never halfway.
    if (!Fits(nodes) || !map_.ReserveNodes(nodes)) return Status::kFull;
    // (An undone commit bumped what it applied and undid: a WATCH of
    // those keys fails, as it did when the bumps came after.) A quiet key
    // is not bumped here; a recovery, in any process, bumps every key.
    quiet_.clear();
    for (const Entry* e : dirty) {
      if (e->quiet) quiet_.push_back(e->h.a);
    }
    bool ok = journal_.Commit(rec, dirty.size(), Applier());
    quiet_.clear();
    return ok ? Status::kOk : Status::kFull;
  }

  // A part rewritten at the same length (a sorted-set node whose counts
  // changed, a member's new score) is journaled as the bytes that differ
  // (Journal::Diff): false when it must be written whole.
  static bool Patch(const Entry& e, std::string* pieces) {
    return e.part && e.kept_orig && e.present && e.had_old &&
           Journal::Diff(e.orig, e.value, kBlobHeader + e.key.size(), pieces);
  }

  // The pool's units (nodes or granules) --memory allows, and those that
  // values hold.
  uint64_t LimitUnits() const {
    return Units::Limit(map_.link_table(), cfg_.memory);
  }
  // The limit INFO and the command layer go by: --memory, or the lower
  // one CONFIG SET maxmemory gave (0: none). As Redis's maxmemory it is
  // checked before a command runs (dispatch.cc); a commit is held to
  // --memory alone.
  uint64_t MaxMemoryBytes() const {
    const uint64_t memory = LimitUnits() * Units::kCost;
    const int64_t set = settings_.Get(Setting::kMaxMemory);
    return set > 0 ? std::min(memory, static_cast<uint64_t>(set)) : memory;
  }
  // Whether `nodes` more units keep the values within the limit (every
  // write that adds a value asks, so used_memory never passes maxmemory).
  bool Fits(uint64_t nodes) const {
    const uint64_t limit = LimitUnits(), used = UsedUnits();
    return used <= limit && nodes <= limit - used;
  }
  uint64_t UsedUnits() const {
    const auto& p = map_.link_table();
    return p.total_nodes() - p.free_nodes();
  }

  void Lock() {
    int rc = pthread_mutex_lock(&ctl_->write_lock);
    if (rc == EOWNERDEAD) {
      // A worker died holding the lock, maybe in the middle of a write.
      if (!map_.Recover()) {
        // Damaged intent record: nothing was touched; the next write
        // replaces the record, and `shmc check --fix` repairs the pool.
        std::fprintf(stderr, "shmkv: %s\n", map_.last_error().message.c_str());
      }
      journal_.Recover(Applier());
      ctl_->lock_recoveries.fetch_add(1, std::memory_order_relaxed);
      ctl_->script_busy.store(0, std::memory_order_relaxed);  // its script's
      pthread_mutex_consistent(&ctl_->write_lock);
      graves_.Count();  // it may have died between a commit and its counts
      dbs_.Count(&map_);
    } else if (rc != 0) {
      std::fprintf(stderr, "shmkv: write lock failed: %s\n",
                   std::strerror(rc));
      std::abort();
    }
    if (!graves_.Counted()) graves_.Count();
    if (!dbs_.Counted()) dbs_.Count(&map_);
  }
  void Unlock() { pthread_mutex_unlock(&ctl_->write_lock); }

  // The live blob of `key` (in scratch_); an expired one is removed.
  bool Lookup(std::string_view key, Blob* b) {
    bool found;
    for (;;) {
      uint64_t t = ReadBegin();
      found = Read(key, b);
      if (ReadValid(t)) break;
    }
    if (!found) return false;
    if (asof_ != nullptr) return !b->Expired(asof_ms_);  // nothing removed
    if (b->Expired(NowMs())) {
      if (!Replica()) ExpireNow(db_, key);  // (a replica's: hidden only)
      return false;
    }
    return true;
  }

  // A replica (server/store/repl.h) reads expired keys as gone but
  // leaves their removal to its master's stream.
  bool Replica() {
    SharedRepl* r = Repl();
    return r != nullptr && r->Mode() != ReplMode::kMaster;
  }

  // Copies the blob of `key` into scratch_; false if absent or not this key.
  bool Read(std::string_view key, Blob* b) { return ReadIn(db_, key, b); }
  bool ReadIn(uint32_t db, std::string_view key, Blob* b) {
    KeyHash h = HashKeyIn(db, key);
    if (!ReadBlob(h)) return false;
    return b->Parse(scratch_.data(), scratch_len_) && !b->part() &&
           b->db == db && b->key == key;
  }

  bool ReadBlob(const KeyHash& h) {
    if (scratch_.size() < 4096) scratch_.resize(4096);
    bool found = false;
    for (int i = 0; i < 4; ++i) {
      size_t len = scratch_.size();
      if (!map_.Find(h, scratch_.data(), &len)) break;
      if (len <= scratch_.size()) {
        scratch_len_ = len;
        found = true;
        break;
      }
      scratch_.resize(len);  // a bigger value: read again
    }
    return asof_ == nullptr ? found : AsOf(h, found);
  }

  // In a saving process: the blob `h` as the save's instant had it, given
  // what the map holds now (read just before: a writer logs first).
  bool AsOf(const KeyHash& h, bool found);

  // Under the lock: the current, unexpired blob of `key` (a part's when
  // `part`; a blob of the other kind is a collision), and in last_root_
  // the collection it holds (id 0: none). Without `whole` only its head,
  // key and root are copied (b->value is empty; scratch_len_ is still the
  // blob's full length): what a write that replaces the value needs.
  Status ReadLocked(const KeyHash& h, std::string_view key, bool part,
                    Blob* b, bool whole = true, uint32_t db = 0) {
    last_root_ = PartsRoot{0, 0};
    if (whole) {
      if (!ReadBlob(h) || !b->Parse(scratch_.data(), scratch_len_)) {
        return Status::kNotFound;
      }
      if (b->key != key || b->part() != part || (!part && b->db != db)) {
        return Status::kCollision;
      }
      if (!b->Root(&last_root_)) last_root_ = PartsRoot{0, 0};
    } else {
      size_t want = kBlobHeader + key.size() + sizeof(PartsRoot);
      if (scratch_.size() < want) scratch_.resize(want);
      size_t len = want;
      if (!map_.Find(h, scratch_.data(), &len)) return Status::kNotFound;
      BlobHead head;
      if (len < kBlobHeader) return Status::kNotFound;  // damaged, as Parse
      std::memcpy(&head, scratch_.data(), sizeof(head));  // takes it
      if (head.key_len > len - kBlobHeader) return Status::kNotFound;
      // The key's bytes were all copied (want covers them).
      if (head.key_len != key.size() ||
          std::memcmp(scratch_.data() + kBlobHeader, key.data(),
                      key.size()) != 0 ||
          (head.type == kPartType) != part || (!part && head.db != db)) {
        return Status::kCollision;
      }
      b->expire_ms = static_cast<int64_t>(head.expire_at_ms);
      b->type = static_cast<ValueType>(head.type);
      b->encoding = head.encoding;
      b->key = std::string_view(scratch_.data() + kBlobHeader, key.size());
      b->value = std::string_view();
      if (!part && (head.encoding & kEncodingParts) != 0 && len >= want) {
        std::memcpy(&last_root_, scratch_.data() + kBlobHeader + key.size(),
                    sizeof(PartsRoot));
      }
      scratch_len_ = len;
    }
    if (b->Expired(NowMs())) {
      EraseExpired(h, last_root_, db, key);
      last_root_ = PartsRoot{0, 0};
      return Status::kNotFound;
    }
    return Status::kOk;
  }

  // Removes an expired key; a collection's parts go with it, through a
  // grave (reaped now, up to a budget; the sweep finishes it).
  void EraseExpired(const KeyHash& h, PartsRoot root, uint32_t db,
                    std::string_view key) {
    if (root.id != 0) graves_.Bury(root);
    if (map_.Erase(h)) dbs_.Adjust(db, -1, -1);  // it had a TTL
    ctl_->expired_keys.fetch_add(1, std::memory_order_relaxed);
    if (root.id != 0) graves_.Reap(root.id, kReapBudget);
    if (on_expiry_) on_expiry_(dbs_.Logical(db), key);
  }

  // Removes `key` of physical database `db` if it is (still) expired.
  bool ExpireNow(uint32_t db, std::string_view key) {
    Locked lock(this);
    KeyHash h = HashKeyIn(db, key);
    if (!ReadBlob(h)) return false;
    Blob b;
    if (!b.Parse(scratch_.data(), scratch_len_) || b.part() || b.key != key ||
        b.db != db || !b.Expired(NowMs())) {
      return false;
    }
    PartsRoot root{0, 0};
    if (!b.Root(&root)) root = PartsRoot{0, 0};
    std::string name(key);  // (key may point into scratch_)
    EraseExpired(h, root, db, name);
    return true;
  }

  // Under the lock: the instant of the save `pid` makes (*at), its log
  // made and the save published, so writers log from here on.
  bool MarkSnapshot(pid_t pid, SnapshotPoint* at, std::string* err);

  // Ends, under the lock, the save `s` whose process is gone.
  void EndDeadSnapshot(uint64_t s);

  ExpiryListener on_expiry_, on_create_;
  CowLog cow_;
  std::unique_ptr<CowReader> asof_;  // a saving process's view
  int64_t asof_ms_ = 0;
  std::string asof_blob_;
  Map map_;
  shmc::ShmArray<ControlBlock, shmc::POSIX> ctl_arr_;
  Settings settings_;
  ControlBlock* ctl_ = nullptr;
  Journal journal_;
  std::vector<uint64_t> quiet_;  // the commit in progress's quiet keys
  std::vector<char> scratch_;
  size_t scratch_len_ = 0;
  TxnEntries<Entry> txn_entries_;  // the transaction holding the lock's
  std::string blob_;
  PartsRoot last_root_{0, 0};  // ReadLocked's: the collection it found
  Graves<Map> graves_{&map_, &journal_, 0};  // capacity set by Init
  DbWords<Map> dbs_;
  typename Map::TravelPos sweep_pos_;
  std::mt19937_64 rng_{std::random_device{}()};
  // This attachment, among every store this process opens (PartStamp).
  const uint64_t instance_ = NextInstance();
  static uint64_t NextInstance() {
    static std::atomic<uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

#include "server/store/store_txn.h"  // StoreT<Alloc, Values>::TxnImpl
#include "server/store/store_snapshot.h"  // a background save's members

// Whether the store's values segment exists as an extent table (or, with
// *other, as a link table): a store keeps the pool it was made with.
template <class Alloc>
bool HasPool(const StoreConfig& cfg, bool* other) {
  const std::string key =
      shmc::ShmHashMap<KeyHash, Alloc>::SegmentKeys(cfg.name).second;
  shmc::ShmExtentTable<Alloc> e;
  if (e.InitForRead(key)) return true;
  shmc::ShmLinkTable<Alloc> l;
  *other = l.InitForRead(key);
  return false;
}

template <class Alloc>
std::unique_ptr<Store> OpenT(const StoreConfig& cfg, bool master,
                             std::string* err) {
  bool links = false;
  const bool extents = HasPool<Alloc>(cfg, &links);
  std::unique_ptr<Store> s;
  if (extents || (!links && cfg.extents)) {
    auto e = std::make_unique<StoreT<Alloc, shmc::ShmExtentTable<Alloc>>>();
    if (!e->Init(cfg, master, err)) return nullptr;
    s = std::move(e);
  } else {
    auto l = std::make_unique<StoreT<Alloc>>();
    if (!l->Init(cfg, master, err)) return nullptr;
    s = std::move(l);
  }
  return s;
}

}  // namespace

std::unique_ptr<Store> Store::Open(const StoreConfig& cfg, bool master,
                                   std::string* err) {
  switch (cfg.backend) {
    case Backend::kPosix: return OpenT<shmc::POSIX>(cfg, master, err);
    case Backend::kSysv:
      if (cfg.hugepages) return OpenT<shmc::SVIPC_HugeTLB>(cfg, master, err);
      return OpenT<shmc::SVIPC>(cfg, master, err);
    case Backend::kFile: return OpenT<shmc::MAPFILE>(cfg, master, err);
  }
  return nullptr;
}

}  // namespace shmkv
