// The one-owner rule for collections held in parts (server/store/
// blob.h), applied to a transaction's entries before it commits.
//
// A key that holds a collection it did not hold in the map keeps the
// collection's id only when the id is new (NewCollection in this
// transaction) or was let go in this transaction by the key that held it
// (RENAME); else (COPY, or an id taken from elsewhere) it gets a copy of
// the parts under a new id. A collection the map held that no present
// key holds any more loses its parts (DEL, an overwrite, RENAME over
// it): removed in this commit when there are few, else through a grave
// (server/store/graves.h) whose id goes to *graves, reaped after the
// commit.
//
// Entry is the store's transaction entry: part, present, encoding,
// value, key and old_root (the collection it held in the map).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "server/store/blob.h"
#include "server/store/store.h"

namespace shmkv {

// The collection a present entry holds, if any.
template <class Entry>
bool RootOf(const Entry& e, PartsRoot* r) {
  if (e.part || !e.present || (e.encoding & kEncodingParts) == 0 ||
      e.value.size() < sizeof(PartsRoot)) {
    return false;
  }
  std::memcpy(r, e.value.data(), sizeof(PartsRoot));
  return r->id != 0;
}

// Gives the root `root` (a value's bytes, led by PartsRoot r) its own
// copy of the parts of collection r.id under a new id, through `t`.
inline Store::Status CopyParts(std::string* root, const PartsRoot& r,
                               Store::Txn* t, uint64_t capacity) {
  using Status = Store::Status;
  // More parts than the map has room for (a sorted set's indexes are
  // sparse: up to twice its parts): a damaged root.
  if (r.parts > 2 * capacity || root->size() < sizeof(PartsRoot)) {
    return Status::kTooLarge;
  }
  uint64_t id = t->NewCollection();
  std::string bytes;
  for (uint64_t i = 0; i < r.parts; ++i) {
    Status st = t->ReadPart(r.id, i, &bytes);
    // An index the collection does not use (or lost: the copy reads as
    // damaged as the original) stays absent.
    if (st == Status::kNotFound) continue;
    if (st != Status::kOk) return st;
    st = t->WritePart(id, i, bytes);
    if (st != Status::kOk) return st;
  }
  std::memcpy(&(*root)[0], &id, sizeof(id));
  return Status::kOk;
}

// Removes the parts of a collection the map held and no key holds now.
template <class Entries>
Store::Status FreeParts(Entries* entries, const PartsRoot& old,
                        Store::Txn* t, std::vector<uint64_t>* graves) {
  using Status = Store::Status;
  constexpr uint64_t kInline = 64;
  // Parts this transaction wrote for it go too (beyond the map's, they
  // never reach it).
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& p = (*entries)[i];
    PartKey pk;
    if (!p.part || !p.present || p.key.size() != sizeof(pk)) continue;
    std::memcpy(&pk, p.key.data(), sizeof(pk));
    if (pk.id != old.id || pk.index == kGraveIndex) continue;
    Status st = t->DeletePart(pk.id, pk.index);
    if (st != Status::kOk) return st;
  }
  if (old.parts <= kInline) {
    for (uint64_t i = 0; i < old.parts; ++i) {
      Status st = t->DeletePart(old.id, i);
      if (st != Status::kOk && st != Status::kNotFound) return st;
    }
    return Status::kOk;
  }
  std::string grave(sizeof(PartsRoot), '\0');
  std::memcpy(&grave[0], &old, sizeof(old));
  Status st = t->WritePart(old.id, kGraveIndex, grave);
  if (st == Status::kOk) graves->push_back(old.id);
  return st;
}

// The rule above over every entry of the transaction `t`; `fresh`: the
// ids NewCollection gave in it.
template <class Entries>
Store::Status SettleCollections(Entries* entries, Store::Txn* t,
                                const std::vector<uint64_t>& fresh,
                                uint64_t capacity,
                                std::vector<uint64_t>* graves) {
  using Status = Store::Status;
  using Entry = std::remove_reference_t<decltype((*entries)[0])>;
  std::vector<Entry*> roots;  // present keys that hold a collection
  std::vector<Entry*> was;    // keys that held one in the map
  for (size_t i = 0; i < entries->size(); ++i) {
    Entry* e = &(*entries)[i];
    PartsRoot r;
    if (RootOf(*e, &r)) roots.push_back(e);
    if (!e->part && e->old_root.id != 0) was.push_back(e);
  }
  if (roots.empty() && was.empty()) return Status::kOk;
  auto holds = [](const Entry* e, uint64_t id) {
    PartsRoot r;
    return RootOf(*e, &r) && r.id == id;
  };
  auto holders = [&](uint64_t id, const Entry* besides) {
    size_t n = 0;
    for (const Entry* e : roots) n += e != besides && holds(e, id);
    return n;
  };
  auto let_go = [&](uint64_t id) {
    for (const Entry* e : was) {
      if (e->old_root.id == id && !holds(e, id)) return true;
    }
    return false;
  };
  for (Entry* e : roots) {
    PartsRoot r;
    RootOf(*e, &r);
    if (e->old_root.id == r.id) continue;
    bool is_fresh = false;
    for (uint64_t id : fresh) is_fresh = is_fresh || id == r.id;
    if (holders(r.id, e) == 0 && (is_fresh || let_go(r.id))) continue;
    Status st = CopyParts(&e->value, r, t, capacity);
    if (st != Status::kOk) return st;
  }
  for (const Entry* e : was) {
    const PartsRoot old = e->old_root;
    if (holders(old.id, nullptr) != 0) continue;
    bool seen = false;
    for (uint64_t id : *graves) seen = seen || id == old.id;
    if (seen) continue;
    Status st = FreeParts(entries, old, t, graves);
    if (st != Status::kOk) return st;
  }
  return Status::kOk;
}

}  // namespace shmkv
