// shmkv's HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG,
// PFSELFTEST) with Redis 7's replies and error texts: string values in
// Redis's representation (server/commands/hll.h; docs/server.md,
// "HyperLogLog").
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/hll.h"
#include "server/commands/notify.h"
#include "server/commands/reply.h"
#include "server/store/repl.h"

namespace shmkv {
namespace cmd {

namespace {

using Status = Store::Status;

void NotHll(Reply* r) {
  r->Error("WRONGTYPE Key is not a valid HyperLogLog string value.");
}
void Corrupt(Reply* r) { r->Error("INVALIDOBJ Corrupted HLL object detected"); }

size_t SparseMax(CommandContext* c) {
  return static_cast<size_t>(c->store->GetSetting(Setting::kHllSparseMaxBytes));
}

// Reads `key` as a HyperLogLog: kNo when missing; false after replying
// the error when it is another type or a string that is not one.
bool ReadHll(CommandContext* c, std::string_view key, std::string* v, Found* f,
             Reply* r, int64_t* expire = nullptr) {
  *f = ReadString(c, key, v, expire);
  if (*f == Found::kWrongType) {
    WrongType(r);
    return false;
  }
  if (*f == Found::kYes && !hll::IsHll(*v)) {
    NotHll(r);
    return false;
  }
  return true;
}

bool Kept(Status st, Reply* r) {
  if (st == Status::kOk) return true;
  StoreError(st, r);
  return false;
}

// PFADD key [element ...]
void PfAdd(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  Found f;
  int64_t expire = 0;
  if (!ReadHll(c, a[1], &v, &f, r, &expire)) return;
  bool updated = false;
  if (f == Found::kNo) {
    v = hll::NewSparse();
    expire = 0;
    updated = true;
  }
  const size_t sparse_max = SparseMax(c);
  for (size_t i = 2; i < a.size(); ++i) {
    int changed = hll::Add(&v, a[i], sparse_max);
    if (changed < 0) return Corrupt(r);
    updated = updated || changed > 0;
  }
  if (updated) {
    hll::Invalidate(&v);
    if (!Kept(c->txn->Write(a[1], ValueType::kString, kStringRaw, v, expire),
              r)) {
      return;
    }
    Notify(c, kNotifyString, "pfadd", a[1]);
  }
  r->Int(updated ? 1 : 0);
}

// Whether this client may have PFCOUNT keep the count it worked out (a
// replica's clients may not write; its master's PFCOUNT does).
bool MayKeepCount(CommandContext* c) {
  if (c->from_master) return true;
  SharedRepl* repl = c->store->Repl();
  return repl == nullptr || repl->Mode() == ReplMode::kMaster;
}

// PFCOUNT key [key ...]
//
// One key: the count the value keeps, or worked out and then kept in it
// (as Redis does, under the write lock here: a read that finds the count
// not known takes the lock and reads again). Several: the count of their
// union, nothing kept.
void PfCount(const Args& a, CommandContext* c, Reply* r) {
  if (a.size() > 2) {
    std::vector<uint8_t> max(hll::kRegisters);
    return ReadConsistently(c, r, [&] {
      std::fill(max.begin(), max.end(), 0);
      std::string v;
      Found f;
      for (size_t i = 1; i < a.size(); ++i) {
        if (!ReadHll(c, a[i], &v, &f, r)) return;
        if (f == Found::kNo) continue;
        if (!hll::MergeInto(v, max.data())) return Corrupt(r);
      }
      r->Int(static_cast<int64_t>(hll::CountRegisters(max.data())));
    });
  }
  std::string v;
  Found f;
  int64_t expire = 0;
  if (!ReadHll(c, a[1], &v, &f, r, &expire)) return;
  if (f == Found::kNo) return r->Int(0);
  uint64_t n = 0;
  if (hll::CachedCount(v, &n)) return r->Int(static_cast<int64_t>(n));
  const bool keep = MayKeepCount(c);
  std::unique_ptr<Store::Txn> own;
  if (keep && c->txn == nullptr) {
    own = BeginOwn(c);
    c->txn = own.get();
    bool read = ReadHll(c, a[1], &v, &f, r, &expire);
    c->txn = nullptr;
    if (!read) return;
    if (f == Found::kNo) return r->Int(0);
    if (hll::CachedCount(v, &n)) return r->Int(static_cast<int64_t>(n));
  }
  if (!hll::Count(v, &n)) return Corrupt(r);
  if (keep) {
    hll::SetCachedCount(&v, n);
    Store::Txn* t = own != nullptr ? own.get() : c->txn;
    Status st = t->Write(a[1], ValueType::kString, kStringRaw, v, expire);
    if (st == Status::kOk && own != nullptr) st = own->Commit();
    // A count that could not be kept is still the count.
    (void)st;
  }
  r->Int(static_cast<int64_t>(n));
}

// PFMERGE destkey [sourcekey ...]
void PfMerge(const Args& a, CommandContext* c, Reply* r) {
  std::vector<uint8_t> max(hll::kRegisters, 0);
  bool dense = false;
  std::string v;
  Found f;
  // The destination is one of the sources.
  for (size_t i = 1; i < a.size(); ++i) {
    if (!ReadHll(c, a[i], &v, &f, r)) return;
    if (f == Found::kNo) continue;
    dense = dense || hll::Encoding(v) == hll::kDense;
    if (!hll::MergeInto(v, max.data())) return Corrupt(r);
  }
  int64_t expire = 0;
  if (!ReadHll(c, a[1], &v, &f, r, &expire)) return;
  if (f == Found::kNo) {
    v = hll::NewSparse();
    expire = 0;
  }
  if (dense && !hll::ToDense(&v)) return Corrupt(r);
  const size_t sparse_max = SparseMax(c);
  for (size_t i = 0; i < hll::kRegisters; ++i) {
    if (max[i] != 0) hll::Raise(&v, i, max[i], sparse_max);
  }
  hll::Invalidate(&v);
  if (!Kept(c->txn->Write(a[1], ValueType::kString, kStringRaw, v, expire),
            r)) {
    return;
  }
  Notify(c, kNotifyString, "pfadd", a[1]);
  r->Simple("OK");
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
void PfDebug(const Args& a, CommandContext* c, Reply* r) {
  std::string v;
  Found f;
  int64_t expire = 0;
  if (!ReadHll(c, a[2], &v, &f, r, &expire)) return;
  if (f == Found::kNo) return r->Error("ERR The specified key does not exist");
  const std::string_view sub = a[1];
  // GETREG and TODENSE leave the value dense (its kept count as it was).
  auto make_dense = [&]() -> int {
    if (hll::Encoding(v) == hll::kDense) return 0;
    if (!hll::ToDense(&v)) return -1;
    Status st = c->txn->Write(a[2], ValueType::kString, kStringRaw, v, expire);
    if (!Kept(st, r)) return -2;
    return 1;
  };
  if (Eq(sub, "getreg")) {
    int made = make_dense();
    if (made == -1) return Corrupt(r);
    if (made == -2) return;
    r->Array(hll::kRegisters);
    for (size_t i = 0; i < hll::kRegisters; ++i) r->Int(hll::DenseGet(v, i));
  } else if (Eq(sub, "decode")) {
    if (hll::Encoding(v) != hll::kSparse) {
      return r->Error("ERR HLL encoding is not sparse");
    }
    r->Bulk(hll::Decode(v));
  } else if (Eq(sub, "encoding")) {
    r->Simple(hll::Encoding(v) == hll::kDense ? "dense" : "sparse");
  } else if (Eq(sub, "todense")) {
    int made = make_dense();
    if (made == -1) return Corrupt(r);
    if (made == -2) return;
    r->Int(made);
  } else {
    r->Error("ERR Unknown PFDEBUG subcommand '" + std::string(sub) + "'");
  }
}

// PFSELFTEST
void PfSelfTest(const Args&, CommandContext*, Reply* r) {
  std::string failed = hll::SelfTest();
  if (!failed.empty()) return r->Error("ERR " + failed);
  r->Simple("OK");
}

// name, id (never changed), arity, flags, first/last key and step, handler
const CommandRow kHllRows[] = {
    {"pfadd", 209, -2, kWrite | kDenyOom | kFast, 1, 1, 1, PfAdd},
    // Read-only as Redis flags it, though it may keep the count it works
    // out in the value (taking the write lock then).
    {"pfcount", 210, -2, kReadOnly | kMayReplicate, 1, -1, 1, PfCount},
    {"pfmerge", 211, -2, kWrite | kDenyOom, 1, -1, 1, PfMerge},
    {"pfdebug", 212, 3, kWrite | kDenyOom | kAdmin, 2, 2, 1, PfDebug},
    {"pfselftest", 213, 1, kAdmin, 0, 0, 0, PfSelfTest},
};

}  // namespace

void RegisterHllFamily(Registry* r) { r->Add(kHllRows, "hyperloglog"); }

}  // namespace cmd
}  // namespace shmkv
