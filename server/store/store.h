// The key-value store of shmkv: typed Redis values on one ShmHashMap
// shared by every worker process (docs/server.md, "Data").
//
// A Redis key is any byte string, a map key is fixed-size: the map is keyed
// by a 128-bit hash of the key, and each value blob carries the key itself,
// so a lookup confirms it found the right key. The blob (server/store/blob.h):
//
//   u64 expire_at_ms (CLOCK_REALTIME; 0 = never)  u32 key_len
//   u8 type  u8 encoding  u16 reserved  key bytes  value bytes
//
// The store keeps each value's type and encoding and interprets no value
// bytes but one: a large collection is a root under its key, whose bytes
// begin with a PartsRoot, and parts under keys of their own (blob.h). The
// store keeps each collection's parts with the one key that owns them:
// a commit that removes a root (DEL, an overwrite, a rename over it)
// removes its parts, one that leaves two keys with one collection's id
// (COPY) gives the new key a copy of the parts, and an expired root takes
// its parts with it. Parts of a large collection that is gone are
// removed through a grave, a part that lists them, from the highest index
// down, so a process killed while removing them leaves the rest to the
// next sweep. The command families interpret everything else (a
// string's bytes are the string; a collection's are its encoding).
//
// Reads never lock: they copy the blob out of the map (the map validates
// the copy) and check key and expiry. Writes from all workers are
// serialized by a robust process-shared mutex in the control segment; a
// worker that dies holding it is detected (EOWNERDEAD) and the next one to
// lock runs the map's crash recovery first.
//
// Every write runs as a transaction (Store::Txn) under that lock: its reads
// see its own writes, and Commit() applies all of it or none. A commit that
// changes one key is one map write (crash-safe on its own); one that
// changes several (MSET, RENAME, MULTI/EXEC) first writes every change with
// the key's old blob to a journal segment, then applies them inside a
// seqlock that lock-free readers check, so no reader sees half of it, and a
// worker killed while applying is finished (or, if the map is full, undone)
// by the next process to take the lock. The journal segment also holds the
// per-key-hash versions WATCH compares.
#pragma once

#include <pthread.h>

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/store/blob.h"
#include "server/store/dbs.h"
#include "server/store/settings.h"
#include "shmc/process_lease.h"
#include "shmc/segment_name.h"

namespace shmkv {

class ScriptCache;  // server/store/scripts.h
class SharedRepl;   // server/store/repl.h

using Backend = shmc::SegmentBackend;

struct StoreConfig {
  Backend backend = Backend::kPosix;
  std::string name = "/shmkv";  // map key (posix name, sysv key or path)
  uint64_t capacity = 1000000;  // keys
  uint64_t memory = 256ULL << 20;  // bytes for values (blobs)
  uint64_t max_value = 16ULL << 20;
  uint64_t max_key = 64ULL << 10;
  uint64_t journal = 64ULL << 20;  // bytes for one multi-key commit
  // The map's two segments on 2 MiB hugepages (SVIPC_HugeTLB; kSysv only).
  bool hugepages = false;
  // A new store keeps its values in a ShmExtentTable (each value whole,
  // 8 bytes of bookkeeping; the default) or in 64-byte link nodes; an
  // existing store keeps the pool it was made with (--value-pool).
  bool extents = true;
  // Where background saves keep their logs (--dir; server/store/cow.h).
  std::string dir = ".";
};

// The map's name as `shmc` takes it: posix:/shmkv, sysv:53670, file:PATH.
inline std::string SegName(const StoreConfig& c) {
  return shmc::SegmentName{c.backend, c.name}.Display();
}

// What WATCH remembers about a key: the version of its hash bucket, the
// store's recovery epoch, and the expiry the key had (Redis aborts EXEC
// when a watched key expired since WATCH).
struct WatchStamp {
  uint64_t version = 0;
  uint64_t epoch = 0;
  int64_t expire_ms = 0;
  uint32_t db = 0;  // the physical database the key was watched in
  // Expired already when watched: as in Redis, its deletion is then no
  // change, and neither is its expiry.
  bool expired = false;
};

// What changes whenever a part of a collection may have changed: which
// store (this process's attachment) read it, the part's WATCH version and
// the journal's recovery epoch. A process may keep what it parsed of a
// part while the stamp it read before the part is still the part's stamp
// (server/commands/zset_tree.cc): every write of a part bumps its version
// inside the journal's odd sequence, and a writer that died before its
// bumps leaves an odd sequence that readers wait out by recovering, which
// bumps the epoch.
struct PartStamp {
  uint64_t store = 0;
  uint64_t version = 0;
  uint64_t epoch = 0;
  bool operator==(const PartStamp& o) const {
    return store == o.store && version == o.version && epoch == o.epoch;
  }
};

// A value as the store holds it: its type, its encoding and its bytes,
// and its expiry (absolute CLOCK_REALTIME ms; 0: none).
struct Value {
  ValueType type = ValueType::kString;
  uint8_t encoding = 0;
  std::string bytes;
  int64_t expire_ms = 0;
};
// The same without a copy: `bytes` points into a buffer of the Store that
// answered, valid until its next call.
struct ValueView {
  ValueType type = ValueType::kString;
  uint8_t encoding = 0;
  std::string_view bytes;
  int64_t expire_ms = 0;
};

// Shared by master and workers: the write lock and the master's identity.
// Zero bytes are its initial state (a fresh segment); the master
// initializes the lock, then sets magic.
struct ControlBlock {
  std::atomic<uint64_t> magic;  // kControlMagic once initialized
  shmc::ProcessLease master;    // the live master, if any
  std::atomic<uint64_t> reloads;
  std::atomic<uint64_t> workers;
  std::atomic<uint64_t> lock_recoveries;  // locks taken over from a dead worker
  std::atomic<uint64_t> expired_keys;     // removed by lazy or active expiry
  // The script that runs now, if any (server/commands/script_lua.h,
  // ScriptBusyWord): 0 when none. These were reserved words, zero in a
  // block an older build made, which never sets them.
  std::atomic<uint64_t> script_busy;
  // The busy word (without its "wrote" bit) of a script SCRIPT KILL asked
  // to stop.
  std::atomic<uint64_t> script_kill;
  pthread_mutex_t write_lock;  // robust, process-shared
};
static_assert(std::is_standard_layout<ControlBlock>::value,
              "ControlBlock lives in shared memory: standard layout");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "its counters are shared between processes: lock-free words");
static_assert(offsetof(ControlBlock, master) == 8 &&
                  offsetof(ControlBlock, write_lock) == 80 &&
                  sizeof(ControlBlock) == 80 + sizeof(pthread_mutex_t),
              "the control block's layout is fixed: change kControlMagic "
              "when it changes, so a running server of the old layout is "
              "refused rather than misread");
// "smkvclt2": the second layout (the master lease became a ProcessLease).
constexpr uint64_t kControlMagic = 0x32746c63766b6d73ULL;

// The wall clock (CLOCK_REALTIME) in ms, as expiry reads it. While a
// worker runs a command, the time that command began (FreezeNowMs), as
// Redis samples its time once a command: a key does not expire halfway
// through a command, an EXEC or a script. Elsewhere the clock itself.
int64_t NowMs();
// The clock itself, for durations.
int64_t WallMs();
// Makes NowMs answer `ms` on this thread (0: the clock again); returns
// what it answered before.
int64_t FreezeNowMs(int64_t ms);
// True while NowMs answers a frozen time on this thread.
bool NowFrozen();

// Name of the POSIX segment holding the control block (and, with
// ".stats" appended, the statistics) of a store.
std::string ControlKey(const StoreConfig& cfg);
// The POSIX segment of the commit journal and the WATCH versions.
std::string JournalKey(const StoreConfig& cfg);

// The POSIX segment of the wait board (server/store/waits.h).
std::string WaitsKey(const StoreConfig& cfg);
// The POSIX segment of the databases' words (server/store/dbs.h).
std::string DbsKey(const StoreConfig& cfg);
// The POSIX segment of the replication role and link (server/store/repl.h).
std::string ReplKey(const StoreConfig& cfg);
// The POSIX segment of the settings CONFIG SET changes (server/store/
// settings.h).
std::string SettingsKey(const StoreConfig& cfg);

// Removes every segment of the store `cfg` names (the map's two, the
// control block, the journal, the statistics and latency sketches, the
// wait board, the databases, the settings, the script cache, pub/sub's
// registry and ring, the replication state); segments that do not exist are skipped.
// Processes still attached keep their mappings. Returns false with `err`
// set when a segment exists and cannot be removed.
bool RemoveStore(const StoreConfig& cfg, std::string* err);

class Store {
 public:
  virtual ~Store() = default;

  // Opens the map (created if missing) and the control block. The master
  // (master true) creates what is missing, initializes the write lock of a
  // new control block and recovers a write a kill -9 interrupted.
  static std::unique_ptr<Store> Open(const StoreConfig& cfg, bool master,
                                     std::string* err);

  enum class SetMode { kAlways, kIfMissing, kIfExists };
  enum class Status {
    kOk,
    kNotFound,
    kExists,       // SET NX on an existing key
    kNotInteger,   // INCR on a non-integer
    kOverflow,     // INCR past the int64 range
    kTooLarge,     // key or value over the limits
    kFull,         // the map has no room left
    kCollision,    // two keys with one 128-bit hash (never seen in practice)
    kTxnTooLarge,  // a multi-key commit larger than the journal
    kWrongType,    // the key holds a value of another type
  };

  // A write transaction: holds the write lock until it is destroyed.
  // Nothing it writes is visible to anyone else before Commit().
  class Txn {
   public:
    virtual ~Txn() = default;
    // The key's live value, of any type, as this transaction sees it:
    // kOk, kNotFound or kCollision.
    virtual Status Read(std::string_view key, Value* v) = 0;
    // Writes the key's value, replacing whatever it held (any type):
    // kOk, kTooLarge, kCollision or kTxnTooLarge.
    virtual Status Write(std::string_view key, ValueType type,
                         uint8_t encoding, std::string_view bytes,
                         int64_t expire_ms) = 0;
    // A string key: as Read, and kWrongType when it holds another type.
    Status ReadString(std::string_view key, std::string* value,
                      int64_t* expire_ms);
    // Writes a string value (replacing a value of any type, as SET does).
    Status Put(std::string_view key, std::string_view value,
               int64_t expire_ms) {
      return Write(key, ValueType::kString, 0, value, expire_ms);
    }
    // kOk when the key existed, kNotFound, kCollision or kTxnTooLarge.
    virtual Status Delete(std::string_view key) = 0;

    // The parts of collections (server/store/blob.h, kEncodingParts).
    // A fresh collection id, never given before.
    virtual uint64_t NewCollection() = 0;
    // Part `index` of collection `id` as this transaction sees it: kOk,
    // kNotFound or kCollision.
    virtual Status ReadPart(uint64_t id, uint64_t index,
                            std::string* bytes) = 0;
    // Writes (creates or replaces) a part: kOk, kTooLarge, kCollision or
    // kTxnTooLarge.
    virtual Status WritePart(uint64_t id, uint64_t index,
                             std::string_view bytes) = 0;
    // kOk when the part existed, kNotFound, kCollision or kTxnTooLarge.
    virtual Status DeletePart(uint64_t id, uint64_t index) = 0;
    // The part's stamp (PartStamp), taken before it is read: false when
    // this transaction holds the part itself (what it reads is its own).
    virtual bool StampPart(uint64_t, uint64_t, PartStamp*) { return false; }
    // Marks `key` changed for WATCH although its own blob may not be
    // written (a collection whose parts changed, its root unchanged).
    virtual void Touched(std::string_view key) = 0;
    // The key's write just made, its first in this transaction, changes
    // nothing a client reads but the encoding OBJECT ENCODING names (a
    // SETBIT of a bit to what it was, which Redis turns raw without
    // touching the key): it moves no WATCH version and wakes no blocked
    // client. A later write of the key in this transaction counts again.
    virtual void Quiet(std::string_view key) = 0;
    // Deletes every key (inside MULTI: bounded by the journal); *n keys.
    virtual Status FlushAll(uint64_t* n) = 0;
    // Databases (server/store/dbs.h). The physical database this
    // transaction's key calls use from now on (at first, the store's).
    virtual void UseDb(uint32_t physical) = 0;
    virtual uint32_t db() const = 0;
    // Logical database `logical`'s physical one, SWAPDBs of this
    // transaction included.
    virtual uint32_t Physical(uint32_t logical) = 0;
    // SWAPDB: logical databases a and b trade places when this commits.
    virtual void SwapDb(uint32_t a, uint32_t b) = 0;
    // Deletes every key of physical database `physical`, as FlushAll.
    virtual Status FlushDb(uint32_t physical, uint64_t* n) = 0;
    // False when `key` changed (or expired) since Watch() gave `stamp`
    // (in the stamp's database), or a SWAPDB moved databases since.
    virtual bool Unchanged(std::string_view key, const WatchStamp& stamp) = 0;
    // What this transaction did to a key, as the commands that look at
    // the whole keyspace inside EXEC (DBSIZE, KEYS, SCAN, RANDOMKEY, SAVE)
    // see it. A key written with a time already past is counted by DBSIZE
    // (as Redis counts a key it has not reaped yet) and listed by none.
    enum class Change {
      kCreated,        // a new key
      kCreatedGone,    // a new key written with a time already past
      kDeleted,        // a key that was there, deleted
      kRewrittenGone,  // a key that was there, written with a past time
    };
    // f(key, change) for each key of the current database this transaction
    // changed so (not for a key it only rewrote, live).
    virtual void Changed(
        const std::function<void(std::string_view, Change)>& f) = 0;
    // Applies every write, all or none: kOk, kFull or kTxnTooLarge (then
    // nothing changed). The transaction is over either way.
    virtual Status Commit() = 0;
  };
  virtual std::unique_ptr<Txn> Begin() = 0;
  virtual WatchStamp Watch(std::string_view key) = 0;

  // Databases (server/store/dbs.h). The physical database the key reads,
  // Watch, Scan, RandomKey and the transactions begun from here use
  // (0 until told).
  void UseDb(uint32_t physical) { db_ = physical % kDatabases; }
  uint32_t db() const { return db_; }
  // Logical database `logical`'s physical one, as SWAPDB left them.
  virtual uint32_t Physical(uint32_t logical) = 0;
  // Redis keys in physical database `physical` (DBSIZE, INFO keyspace)
  // and, in *expires, how many of them have a TTL. Read under the write
  // lock, which the caller holds when `locked` (a command in EXEC).
  virtual uint64_t KeysIn(uint32_t physical, uint64_t* expires,
                          bool locked) = 0;
  // INFO's avg_ttl of physical database `physical`: the mean remaining
  // TTL in ms of a sample of its keys that have one (0: none met).
  virtual int64_t AverageTtl(uint32_t physical) = 0;
  // FLUSHDB outside a transaction: as FlushAll, for one database.
  virtual uint64_t FlushDb(uint32_t physical) = 0;

  // notify-keyspace-events (server/commands/notify.h), shared by every
  // process of the store: 0 (none) in a store an older build made.
  virtual uint32_t NotifyFlags() = 0;
  virtual void SetNotifyFlags(uint32_t flags) = 0;
  // The settings CONFIG SET changes (server/store/settings.h), shared by
  // every process of the store.
  virtual int64_t GetSetting(Setting s) = 0;
  virtual void SetSetting(Setting s, int64_t v) = 0;
  virtual EncodingLimits Limits() = 0;
  // Every setting to its default (server/store/settings.h): a master's
  // start.
  virtual void ResetSettings() = 0;
  // The save points CONFIG SET save gave (false: none given, the
  // server's --save holds); setting them takes the write lock unless the
  // caller holds it (`locked`: inside a transaction).
  virtual bool GetSavePoints(std::vector<SavePoint>* out) = 0;
  virtual void SetSavePoints(const std::vector<SavePoint>& points,
                             bool locked) = 0;
  // Called under the write lock for each key expiry removes (lazily, on
  // access, or by Sweep) with the key's logical database, for the
  // "expired" keyspace event. Null: none.
  using ExpiryListener =
      std::function<void(uint32_t logical, std::string_view key)>;
  virtual void SetExpiryListener(ExpiryListener f) = 0;
  // Called under the write lock when a transaction's Write makes a key
  // that was not there when it began (or had expired), for the "new"
  // keyspace event.
  virtual void SetCreateListener(ExpiryListener f) = 0;

  // Reads: lock-free. A reader of several keys that must not see half of
  // a multi-key commit brackets them: t = ReadBegin(); reads;
  // retry unless ReadValid(t).
  // The key's live value of any type: true when found.
  virtual bool Get(std::string_view key, Value* v) = 0;
  // As Get, without a copy (ValueView's bytes point into this Store).
  virtual bool GetView(std::string_view key, ValueView* v) = 0;
  // A string key's value: false when absent or of another type.
  bool GetString(std::string_view key, std::string* value,
                 int64_t* expire_ms = nullptr);
  virtual bool Exists(std::string_view key) = 0;
  // A hint, before the reads or writes of `keys` (this database's) come:
  // their index lines and values' first lines are requested from memory
  // at once, so the lookups that follow overlap their misses (a worker's
  // pipelined requests: docs/server.md). Changes and returns nothing;
  // keys past the first kPrefetchMost are left out.
  static constexpr size_t kPrefetchMost = 64;
  virtual void Prefetch(const std::string_view* keys, size_t n) {
    (void)keys;
    (void)n;
  }
  // The same for parts of collections (id, index), at most kPrefetchMost.
  virtual void PrefetchParts(const PartKey* parts, size_t n) {
    (void)parts;
    (void)n;
  }
  // Part `index` of collection `id`: false when absent. A reader of a
  // collection brackets its root and parts with ReadBegin/ReadValid.
  virtual bool GetPart(uint64_t id, uint64_t index, std::string* bytes) = 0;
  // As GetPart, the part's first `max` bytes at most (fewer when it is
  // shorter): reading a large part's head costs its head alone.
  virtual bool GetPartHead(uint64_t id, uint64_t index, size_t max,
                           std::string* bytes) = 0;
  virtual uint64_t ReadBegin() = 0;
  virtual bool ReadValid(uint64_t token) = 0;
  // The part's stamp (PartStamp), taken before it is read: false when no
  // stamp holds for what this store reads (a save's view of the past).
  virtual bool StampPart(uint64_t, uint64_t, PartStamp*) { return false; }
  // Some live key, chosen at random; false when the store is empty.
  virtual bool RandomKey(std::string* key) = 0;

  // One-command writes, each its own transaction. expire_ms: absolute,
  // 0 = none; keep_ttl keeps an existing TTL.
  // SET: a string, replacing a value of any type.
  Status Set(std::string_view key, std::string_view value, int64_t expire_ms,
             SetMode mode, bool keep_ttl);
  // Sets every pair in one commit (MSET is atomic).
  Status MSet(
      const std::vector<std::pair<std::string_view, std::string_view>>&
          pairs);
  bool Del(std::string_view key);
  Status IncrBy(std::string_view key, int64_t by, int64_t* out);
  // Outside a transaction and not journaled: a worker killed during it
  // leaves part of the keys (docs/server.md).
  virtual uint64_t FlushAll() = 0;

  // The same writes inside a transaction (MULTI/EXEC).
  static Status SetIn(Txn* t, std::string_view key, std::string_view value,
                      int64_t expire_ms, SetMode mode, bool keep_ttl);
  static Status IncrByIn(Txn* t, std::string_view key, int64_t by,
                         int64_t* out);
  // expire_ms 0 = persist; *changed: false when the key does not exist
  // (or, to persist, has no TTL). A deadline in the past deletes.
  static Status SetExpireIn(Txn* t, std::string_view key, int64_t expire_ms,
                            bool* changed);

  // Iteration: visits up to `count` slots from *cursor (0 = start), calls
  // f(key, type) for each live key; *cursor is 0 when the pass is complete.
  virtual void Scan(
      uint64_t* cursor, size_t count,
      const std::function<void(std::string_view, ValueType)>& f) = 0;
  // Active expiry: examines up to `count` slots, removes expired keys.
  virtual uint64_t Sweep(size_t count) = 0;

  // Redis keys (the map's blobs, less the parts of collections).
  virtual uint64_t Keys() = 0;
  // Blobs in the map that are parts of collections (graves included).
  virtual uint64_t Parts() = 0;
  virtual uint64_t Capacity() = 0;
  // The limit in force (INFO's maxmemory: --memory, or a lower CONFIG SET
  // maxmemory, which commands are refused past) and what values hold.
  virtual uint64_t MemoryTotal() = 0;
  virtual uint64_t MemoryUsed() = 0;
  // What a blob of `bytes` (head, key and value) holds of the store: its
  // value nodes (--memory's accounting) and its index node.
  virtual uint64_t BlobCost(uint64_t bytes) = 0;
  // The bytes of the index, held whole (capacity's).
  virtual uint64_t IndexBytes() = 0;
  // The value pool: "nodes" (64-byte link nodes) or "extents"
  // (--value-pool), and the bytes of its segment reserved so far (what it
  // holds of the machine's memory, free space among the values included).
  virtual const char* ValuePool() = 0;
  virtual uint64_t PoolReservedBytes() = 0;
  // The bytes of the pool's units below its high-water mark: the values'
  // and the free space among them (a free extent at the end goes back).
  virtual uint64_t PoolTopBytes() = 0;
  virtual ControlBlock* control() = 0;
  // Multi-key commits that needed more than the plain path.
  struct JournalStats {
    uint64_t recovered = 0;  // a dead writer's, finished by another process
    uint64_t undone = 0;     // undone because the map was full
    uint64_t dropped = 0;    // a damaged journal, dropped by recovery
  };
  virtual JournalStats journal_stats() = 0;
  const StoreConfig& config() const { return cfg_; }
  // The script cache every worker shares (server/store/scripts.h),
  // attached on first use; null with *err when it cannot be.
  ScriptCache* Scripts(std::string* err);
  // The store's function libraries (FUNCTION LOAD), made on first use.
  ScriptCache* Functions(std::string* err);
  // The replication role and link (server/store/repl.h), attached on
  // first use; null with *err when it cannot be.
  SharedRepl* Repl(std::string* err = nullptr);

  // Background saves (BGSAVE; server/store/cow.h). The instant a save
  // reads: its time, the databases' places and their keys then.
  struct SnapshotPoint {
    int64_t ms = 0;
    uint32_t physical[kDatabases] = {};
    uint64_t keys[kDatabases] = {};
    uint64_t expires[kDatabases] = {};
  };
  // Forks a process that reads the store as it is at one instant, taken
  // under the write lock after the fork (the caller holds the lock
  // already when `locked`: a command in EXEC), and makes every writer log
  // what it changes from that instant until the process calls
  // EndSnapshot. Returns the child's pid in
  // the caller and 0 in the child (which reads as of *at once it called
  // ReadAsOfSnapshot); -1 with *err when it cannot, *busy when a save is
  // in progress already.
  virtual pid_t ForkSnapshot(bool locked, SnapshotPoint* at, bool* busy,
                             std::string* err) = 0;
  // In the forked process: from now on the key and part reads answer as
  // of the instant (no key expires); false with *err.
  virtual bool ReadAsOfSnapshot(const SnapshotPoint& at,
                                std::string* err) = 0;
  // In the forked process: f(key) for every key physical database
  // `physical` held at the instant and that had not expired then (it
  // may be called for a key made since: reading it finds nothing).
  // False when the log was unreadable.
  virtual bool SnapshotKeys(
      uint32_t physical, const std::function<void(std::string_view)>& f) = 0;
  // In the forked process, when it has read all it needs (or failed):
  // under the write lock, when every change was logged, publish() puts
  // the saved file in place; then the save's outcome (whole and
  // published) is recorded and the save ends, writers stop logging and
  // the log is removed. A reader that sees the save ended sees its
  // outcome and its file. Returns the outcome: false when a writer could
  // not log a change (the copy read is not the instant's), publish is
  // null or failed, or another process ended the save.
  virtual bool EndSnapshot(const std::function<bool()>& publish) = 0;
  // Anyone: the save in progress and the last one's outcome.
  struct SnapshotState {
    pid_t pid = 0;           // 0: none in progress
    int64_t started_s = 0;   // when it began (CLOCK_REALTIME seconds)
    uint64_t log_bytes = 0;  // its log (or the last save's), in bytes
    bool last_failed = false;
  };
  virtual SnapshotState Snapshot() = 0;
  // Changes counted since the store was made (every key a commit
  // changes, each part of a collection as one): save points compare two
  // readings.
  virtual uint64_t ChangeCount() = 0;
  // When the save in progress has lost its process (killed): ends it as
  // failed and removes its files. True when it did.
  virtual bool ReapSnapshot() = 0;

  // Told, after each commit a transaction (Txn::Commit) makes and still
  // under the write lock, of every Redis key the commit changed (its
  // HashKey(key).a), parts of collections as their key: how a worker
  // learns which blocked clients to wake (server/store/waits.h). A commit
  // that moves databases (SWAPDB) changes every key of two of them: it
  // reports kEveryKey.
  static constexpr uint64_t kEveryKey = 0;
  using CommitObserver = void (*)(void* arg, uint64_t key_hash);
  void set_commit_observer(CommitObserver f, void* arg) {
    observer_ = f;
    observer_arg_ = arg;
  }

 protected:
  void Observe(uint64_t key_hash) {
    if (observer_ != nullptr) observer_(observer_arg_, key_hash);
  }

  StoreConfig cfg_;
  uint32_t db_ = 0;
  std::shared_ptr<ScriptCache> scripts_;
  std::shared_ptr<ScriptCache> functions_;
  std::shared_ptr<SharedRepl> repl_;
  CommitObserver observer_ = nullptr;
  void* observer_arg_ = nullptr;
};

const char* StatusText(Store::Status s);

}  // namespace shmkv
