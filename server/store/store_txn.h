// The store's write transaction, StoreT<Alloc, Values>::TxnImpl (server/store/
// store.h, Store::Txn): an overlay of the keys it touched, read from the
// map under the write lock, applied by Commit in one map write or one
// journaled commit. Part of store.cc, which includes it inside its own
// anonymous namespace after StoreT; no other file includes it.

template <class Alloc, class Values>
class StoreT<Alloc, Values>::TxnImpl : public Store::Txn {
 public:
  explicit TxnImpl(StoreT* s)
      : s_(s), lock_(s), entries_(&s->txn_entries_), db_(s->db_),
        map_(s->dbs_.Mapping()) {}
  ~TxnImpl() override { entries_->Reset(); }  // still under the lock

  Status Read(std::string_view key, Value* v) override {
    Entry* e = nullptr;
    Status st = LoadEntry(key, false, &e);
    if (st != Status::kOk) return st;
    if (!Live(*e)) return Status::kNotFound;
    v->type = e->type;
    v->encoding = e->encoding;
    v->bytes.assign(e->value);
    v->expire_ms = e->expire;
    return Status::kOk;
  }

  Status Write(std::string_view key, ValueType type, uint8_t encoding,
               std::string_view bytes, int64_t expire_ms) override {
    if (key.size() > s_->cfg_.max_key || bytes.size() > s_->cfg_.max_value) {
      return Status::kTooLarge;
    }
    Entry* e = nullptr;
    Status st = LoadEntry(key, false, &e, false);
    if (st != Status::kOk) return st;
    // New: not in the map when the transaction began, nor live now (a
    // key a *STORE deletes and writes again is replaced, not new).
    bool fresh = !e->had_old && !Live(*e);
    e->sole = !e->dirty;
    e->quiet = false;
    e->present = true;
    e->type = type;
    e->encoding = encoding;
    e->value.assign(bytes.data(), bytes.size());
    e->expire = expire_ms;
    st = Touch(e);
    if (st == Status::kOk && fresh && s_->on_create_) {
      s_->on_create_(s_->dbs_.Logical(db_), key);
    }
    return st;
  }

  Status Delete(std::string_view key) override {
    Entry* e = nullptr;
    Status st = LoadEntry(key, false, &e, false);
    if (st != Status::kOk) return st;
    if (!Live(*e)) return Status::kNotFound;
    e->sole = e->quiet = false;
    e->present = false;
    e->value.clear();
    return Touch(e);
  }

  uint64_t NewCollection() override {
    uint64_t id = s_->journal_.Counter(Journal::kNextCollection) + 1;
    s_->journal_.SetWord(Journal::kNextCollection, id);
    fresh_.push_back(id);
    return id;
  }

  Status ReadPart(uint64_t id, uint64_t index, std::string* bytes) override {
    char kb[16];
    Entry* e = nullptr;
    Status st = LoadEntry(PartKeyBytes(PartKey{id, index}, kb), true, &e);
    if (st != Status::kOk) return st;
    if (!e->present) return Status::kNotFound;
    bytes->assign(e->value);
    return Status::kOk;
  }

  Status WritePart(uint64_t id, uint64_t index,
                   std::string_view bytes) override {
    if (bytes.size() > s_->cfg_.max_value) return Status::kTooLarge;
    char kb[16];
    Entry* e = nullptr;
    Status st =
        LoadEntry(PartKeyBytes(PartKey{id, index}, kb), true, &e, false);
    if (st != Status::kOk) return st;
    if (e->pristine) {
      e->orig.swap(e->value);
      e->kept_orig = true;
    }
    e->present = true;
    e->type = static_cast<ValueType>(kPartType);
    e->encoding = 0;
    e->value.assign(bytes.data(), bytes.size());
    e->expire = 0;
    return Touch(e);
  }

  bool StampPart(uint64_t id, uint64_t index, PartStamp* s) override {
    char kb[16];
    MakeTxnIdent(&ident_, true, 0, PartKeyBytes(PartKey{id, index}, kb));
    if (entries_->Find(ident_) != nullptr) return false;
    s_->StampPartNow(id, index, s);
    return true;
  }

  Status DeletePart(uint64_t id, uint64_t index) override {
    char kb[16];
    Entry* e = nullptr;
    Status st =
        LoadEntry(PartKeyBytes(PartKey{id, index}, kb), true, &e, false);
    if (st != Status::kOk) return st;
    if (!e->present) return Status::kNotFound;
    e->present = false;
    e->value.clear();
    return Touch(e);
  }

  void Quiet(std::string_view key) override {
    MakeTxnIdent(&ident_, false, db_, key);
    Entry* e = entries_->Find(ident_);
    if (e != nullptr && e->sole && e->present) e->quiet = true;
  }

  void Touched(std::string_view key) override {
    touched_.push_back(HashKeyIn(db_, key).a);
  }

  void UseDb(uint32_t physical) override { db_ = physical % kDatabases; }
  uint32_t db() const override { return db_; }
  uint32_t Physical(uint32_t logical) override {
    return PhysicalDb(map_, logical);
  }
  void SwapDb(uint32_t a, uint32_t b) override {
    map_ = SwappedMap(map_, a, b);
  }

  Status FlushDb(uint32_t physical, uint64_t* n) override {
    return FlushWhere(static_cast<int>(physical), n);
  }

  Status FlushAll(uint64_t* n) override { return FlushWhere(kEveryDb, n); }

  // Deletes the keys of physical database `db` (-1: of every one).
  Status FlushWhere(int db, uint64_t* n) {
    std::vector<std::pair<uint32_t, std::string>> keys;
    int64_t now = NowMs();
    EachKey(&s_->map_, db, [&](const KeyHash&, const Blob& b) {
      if (!b.Expired(now)) keys.emplace_back(b.db, b.key);
    });
    // Keys this transaction created are not in the map yet.
    for (size_t i = 0; i < entries_->size(); ++i) {
      const Entry& e = (*entries_)[i];
      if (!e.part && e.present && !e.had_old && (db < 0 || e.db == db)) {
        keys.emplace_back(e.db, e.key);
      }
    }
    *n = 0;
    uint32_t was = db_;
    for (const auto& [d, k] : keys) {
      db_ = d;
      Status st = Delete(k);
      if (st == Status::kOk) ++*n;
      if (st == Status::kTxnTooLarge) {
        db_ = was;
        return st;
      }
    }
    db_ = was;
    return Status::kOk;
  }

  void Changed(const std::function<void(std::string_view, Change)>& f)
      override {
    for (size_t i = 0; i < entries_->size(); ++i) {
      const Entry& e = (*entries_)[i];
      if (e.part || e.db != db_) continue;
      if (!e.had_old && e.present) {
        f(e.key, Live(e) ? Change::kCreated : Change::kCreatedGone);
      } else if (e.had_old && !e.present) {
        f(e.key, Change::kDeleted);
      } else if (e.had_old && !Live(e)) {
        f(e.key, Change::kRewrittenGone);
      }
    }
  }

  bool Unchanged(std::string_view key, const WatchStamp& w) override {
    KeyHash h = HashKeyIn(w.db, key);
    if (s_->journal_.Epoch() != w.epoch) return false;
    const uint64_t version = s_->journal_.Version(h.a);
    if (w.expired) {
      // Only a write that brought it back is a change: one commit since
      // the WATCH that left it out of the map deleted it (the sweep, a
      // read, DEL or FLUSHALL). Two or more may have written it between.
      Blob b;
      return version == w.version ||
             (version == w.version + 1 && !s_->ReadIn(w.db, key, &b));
    }
    if (version != w.version) return false;
    return w.expire_ms == 0 || w.expire_ms > NowMs();
  }

  Status Commit() override {
    if (failed_) return Status::kTxnTooLarge;
    std::vector<uint64_t> graves;
    Status settled = SettleCollections(entries_, this, fresh_,
                                       s_->cfg_.capacity, &graves);
    if (settled != Status::kOk) return settled;
    if (failed_) return Status::kTxnTooLarge;
    std::vector<Entry*>& dirty = entries_->dirty();
    for (Entry* e : entries_->order()) {
      if (e->present || e->had_old) dirty.push_back(e);
    }
    Status st = Status::kOk;
    if (dirty.size() == 1) {
      // One key: one map write, crash-safe on its own.
      // A part is written inside an odd sequence, its version bumped
      // there (PartStamp); a key alone needs no sequence.
      Entry& e = *dirty[0];
      bool ok = true;
      if (e.present) {
        MakeBlob(&s_->blob_, e.key, e.type, e.encoding, e.value, e.expire,
                 e.db);
        // (Counted whole, the old value's units not taken back, as a
        // journaled commit counts them.)
        if (!s_->Fits(s_->map_.link_table().NodesFor(s_->blob_.size()))) {
          return Status::kFull;
        }
      }
      if (e.part) s_->journal_.BeginUnjournaled();
      if (e.present) {
        ok = s_->map_.Replace(e.h, s_->blob_);
      } else {
        s_->map_.Erase(e.h);
      }
      if (ok && !e.quiet) s_->journal_.Bump(e.h.a);
      if (e.part) s_->journal_.EndUnjournaled();
      if (!ok) return Status::kFull;
    } else if (!dirty.empty()) {
      st = s_->CommitJournaled(dirty);
    }
    if (st != Status::kOk) return st;
    for (uint64_t h : touched_) {
      s_->journal_.Bump(h);
      s_->Observe(h);
    }
    int64_t parts = 0;
    for (const Entry* e : dirty) {
      int64_t delta = (e->present ? 1 : 0) - (e->had_old ? 1 : 0);
      if (e->part) parts += delta;
      if (!e->part) {
        int64_t ttl = (e->present && e->expire != 0 ? 1 : 0) -
                      (e->had_old && e->old_ttl ? 1 : 0);
        if (delta != 0 || ttl != 0) s_->dbs_.Adjust(e->db, delta, ttl);
        if (!e->quiet) s_->Observe(e->h.a);
      }
    }
    if (parts != 0) s_->graves_.Adjust(parts);
    if (map_ != s_->dbs_.Mapping()) {
      // SWAPDB: one word; every WATCH fails (the keys under a watched
      // name changed databases).
      s_->dbs_.SetMapping(map_);
      s_->journal_.SetWord(Journal::kEpoch, s_->journal_.Epoch() + 1);
      s_->Observe(kEveryKey);
    }
    for (uint64_t id : graves) s_->graves_.Reap(id, kReapBudget);
    return Status::kOk;
  }

 private:
  // A key this transaction wrote with a time already past (SET ... PXAT
  // 1) reads as gone, as the map's expired keys do (ReadLocked).
  static bool Live(const Entry& e) {
    return e.present && (e.expire == 0 || e.expire > NowMs());
  }

  // The key's entry, made from the map on its first use. Without
  // with_value only the blob's head, key and collection root are read,
  // not its value: for writes that set or drop the value at once, so
  // the entry's value is never read unloaded.
  Status LoadEntry(std::string_view key, bool part, Entry** out,
                   bool with_value = true) {
    uint32_t db = part ? 0 : db_;
    MakeTxnIdent(&ident_, part, db, key);
    if (Entry* known = entries_->Find(ident_)) {
      *out = known;
      return Status::kOk;
    }
    KeyHash h = part ? PartHash(key) : HashKeyIn(db, key);
    Blob b;
    Status st = s_->ReadLocked(h, key, part, &b, with_value, db);
    if (st == Status::kCollision) return st;
    Entry* e = entries_->Add(ident_, key);
    e->h = h;
    e->part = part;
    e->db = static_cast<uint16_t>(db);
    if (st == Status::kOk) {
      e->present = e->had_old = true;
      e->type = b.type;
      e->encoding = b.encoding;
      e->value.assign(b.value.data(), b.value.size());
      e->expire = b.expire_ms;
      e->old_ttl = b.expire_ms != 0;
      e->old_root = s_->last_root_;
      // (A part as WritePart writes them: only its value bytes differ.)
      e->pristine = part && with_value &&
                    b.type == static_cast<ValueType>(kPartType) &&
                    b.encoding == 0 && b.expire_ms == 0 && b.db == 0;
    }
    *out = e;
    return Status::kOk;
  }

  static KeyHash PartHash(std::string_view key) {
    PartKey pk;
    std::memcpy(&pk, key.data(), sizeof(pk));
    return HashPart(pk.id, pk.index);
  }

  // Marks `e` written; refuses once the journal could not hold it all.
  Status Touch(Entry* e) {
    e->pristine = false;
    if (!e->dirty) {
      e->dirty = true;
      entries_->order().push_back(e);
      bytes_ += Journal::kRecordOverhead;
    }
    bytes_ += kBlobHeader + e->key.size() + e->value.size();
    if (entries_->order().size() > 1 && bytes_ > s_->journal_.capacity()) {
      failed_ = true;
      return Status::kTxnTooLarge;
    }
    return Status::kOk;
  }

  StoreT* s_;
  Locked lock_;
  TxnEntries<Entry>* entries_;  // the store's, cleared when this ends
  std::string ident_;
  std::vector<uint64_t> touched_;  // WATCH versions to move on commit
  std::vector<uint64_t> fresh_;    // collection ids made in this one
  size_t bytes_ = 0;  // journal bytes needed (an upper bound)
  bool failed_ = false;
  uint32_t db_;   // the physical database key calls use
  uint64_t map_;  // the databases' map, with this one's SWAPDBs
};
