// A hash in its packed or bucketed form (server/commands/hash_value.h).
#include "server/commands/hash_value.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "server/commands/bucket_hints.h"
#include "server/commands/command_util.h"
#include "server/commands/packed.h"
#include "server/store/int_text.h"
#include "server/store/key_hash.h"

namespace shmkv {
namespace cmd {

namespace {

uint64_t FieldHash(std::string_view field) {
  return Hash2(field.data(), field.size());
}

// The bytes a bucket's pairs pack into, near enough (the lengths' bytes
// left out): what the split rule weighs.
size_t PairBytes(const std::vector<std::string_view>& items) {
  size_t n = 0;
  for (std::string_view s : items) n += s.size();
  return n;
}

}  // namespace

uint64_t HashValue::BucketOf(uint64_t hash, uint64_t buckets) {
  int level = 63 - __builtin_clzll(buckets);
  uint64_t low = hash & ((1ULL << level) - 1);
  uint64_t split = buckets - (1ULL << level);  // buckets split this round
  return low < split ? hash & ((2ULL << level) - 1) : low;
}

HashValue::Load HashValue::Open(CommandContext* c, std::string_view key) {
  c_ = c;
  exists_ = ReadValue(c, key, &value_);
  if (!exists_) {
    encoding_ = shape_.packed;
    return Load::kOk;
  }
  if (value_.type != shape_.type) return Load::kWrongType;
  encoding_ = value_.encoding;
  if ((encoding_ & kEncodingParts) != 0) {
    if (encoding_ != shape_.buckets || !ReadRoot(value_.bytes)) {
      return Load::kDamaged;
    }
    buckets_mode_ = true;
    Hints().Note(CurrentDb(c), key, id_, buckets_, stride_);
    return Load::kOk;
  }
  if (encoding_ != shape_.packed &&
      !(shape_.type == ValueType::kHash && encoding_ == kHashTable)) {
    return Load::kDamaged;
  }
  packed_.bytes = std::move(value_.bytes);
  if (!Unpack(packed_.bytes, &packed_.items) || packed_.items.size() % 2) {
    return Load::kDamaged;
  }
  count_ = packed_.items.size() / 2;
  return Load::kOk;
}

bool HashValue::ReadRoot(std::string_view bytes) {
  PartsRoot root;
  if (bytes.size() != sizeof(root) + 8) return false;
  std::memcpy(&root, bytes.data(), sizeof(root));
  std::memcpy(&count_, bytes.data() + sizeof(root), 8);
  // At least one bucket, and no more than the map could hold.
  if (root.id == 0 || root.parts == 0 ||
      root.parts > c_->store->Capacity()) {
    return false;
  }
  id_ = root.id;
  buckets_ = root.parts;
  return true;
}

HashValue::Bucket* HashValue::Get(uint64_t index) {
  if (!buckets_mode_) return &packed_;
  auto it = loaded_.find(index);
  if (it != loaded_.end()) return &it->second;
  if (index >= buckets_) {
    ok_ = false;
    return nullptr;
  }
  Bucket& b = loaded_[index];
  bool found = c_->txn != nullptr
                   ? c_->txn->ReadPart(id_, PartOf(index), &b.bytes) ==
                         Store::Status::kOk
                   : c_->store->GetPart(id_, PartOf(index), &b.bytes);
  if (!found || !Unpack(b.bytes, &b.items) || b.items.size() % 2 != 0) {
    loaded_.erase(index);
    ok_ = false;
    return nullptr;
  }
  return &b;
}

HashValue::Bucket* HashValue::BucketFor(std::string_view field) {
  if (!buckets_mode_) return &packed_;
  return Get(BucketOf(FieldHash(field), buckets_));
}

bool HashValue::Find(std::string_view field, std::string_view* value) {
  Bucket* b = BucketFor(field);
  if (b == nullptr) return false;
  for (size_t i = 0; i < b->items.size(); i += 2) {
    if (b->items[i] == field) {
      *value = b->items[i + 1];
      return true;
    }
  }
  return false;
}

void HashValue::Grow(std::string_view written) {
  int64_t n = 0;
  if (shape_.sorted_ints) {
    if (!ParseInt64(written, &n)) grow_ = true;
  } else if (written.size() > longest_) {
    longest_ = written.size();  // held against the limit when saved
  }
}

bool HashValue::Set(std::string_view field, std::string_view value) {
  Bucket* b = BucketFor(field);
  if (b == nullptr) return false;
  b->dirty = true;
  set_ = true;
  for (size_t i = 0; i < b->items.size(); i += 2) {
    if (b->items[i] == field) {
      b->items[i + 1] = value;
      return false;
    }
  }
  size_t at = b->items.size();
  int64_t v = 0;
  if (!buckets_mode_ && shape_.sorted_ints && ParseInt64(field, &v)) {
    // Packed integers stay sorted by value, as an intset keeps them.
    at = 0;
    int64_t other = 0;
    while (at < b->items.size() && ParseInt64(b->items[at], &other) &&
           other < v) {
      at += 2;
    }
  }
  b->items.insert(b->items.begin() + static_cast<ptrdiff_t>(at),
                  {field, value});
  ++count_;
  root_dirty_ = true;
  added_ = true;
  return true;
}

void HashValue::SetAllNew(
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs) {
  for (const auto& [field, value] : pairs) {
    Bucket* b = BucketFor(field);
    if (b == nullptr) {
      ok_ = false;
      return;
    }
    b->dirty = true;
    b->items.push_back(field);
    b->items.push_back(value);
    ++count_;
  }
  root_dirty_ = true;
  added_ = added_ || !pairs.empty();
  set_ = added_;
  if (buckets_mode_ || !shape_.sorted_ints) return;
  // Packed integers sorted by value, as Set keeps them (when all are
  // integers: a value with another member is no intset anyway).
  std::vector<std::pair<int64_t, std::pair<std::string_view, std::string_view>>>
      sorted;
  for (size_t i = 0; i + 1 < packed_.items.size(); i += 2) {
    int64_t v = 0;
    if (!ParseInt64(packed_.items[i], &v)) return;
    sorted.push_back({v, {packed_.items[i], packed_.items[i + 1]}});
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  packed_.items.clear();
  for (const auto& [v, fv] : sorted) {
    packed_.items.push_back(fv.first);
    packed_.items.push_back(fv.second);
  }
}

bool HashValue::Remove(std::string_view field) {
  Bucket* b = BucketFor(field);
  if (b == nullptr) return false;
  for (size_t i = 0; i < b->items.size(); i += 2) {
    if (b->items[i] == field) {
      b->items.erase(b->items.begin() + static_cast<ptrdiff_t>(i),
                     b->items.begin() + static_cast<ptrdiff_t>(i) + 2);
      b->dirty = true;
      --count_;
      root_dirty_ = true;
      return true;
    }
  }
  return false;
}

bool HashValue::All(
    std::vector<std::pair<std::string_view, std::string_view>>* out) {
  uint64_t cursor = 0;
  return Page(&cursor, SIZE_MAX, out);
}

bool HashValue::Page(
    uint64_t* cursor, size_t count,
    std::vector<std::pair<std::string_view, std::string_view>>* out) {
  uint64_t n = buckets_mode_ ? buckets_ : 1;
  uint64_t i = buckets_mode_ ? *cursor : 0;
  for (; i < n && out->size() < count; ++i) {
    Bucket* b = Get(i);
    if (b == nullptr) return false;
    for (size_t j = 0; j < b->items.size(); j += 2) {
      out->emplace_back(b->items[j], b->items[j + 1]);
    }
  }
  *cursor = i >= n ? 0 : i;
  return true;
}

bool HashValue::Random(uint64_t (*rng)(), std::string_view* field,
                       std::string_view* value) {
  auto take = [&](const Bucket& b, size_t pair) {
    *field = b.items[2 * pair];
    *value = b.items[2 * pair + 1];
    return true;
  };
  if (!buckets_mode_) {
    if (packed_.items.empty()) return ok_ = false;
    return take(packed_, rng() % (packed_.items.size() / 2));
  }
  // Every field equally likely (a bucket drawn, then one of its fields,
  // would favour the fields of sparse buckets). A table of few buckets is
  // read whole (its buckets stay loaded for the next draw) and a field
  // drawn among all; a larger one draws a bucket, then a place among K,
  // K at least the fields of any bucket seen, and takes the field there,
  // if any: each field's chance is 1 / (buckets x K).
  if (buckets_ <= kWholeDrawBuckets) {
    uint64_t total = 0;
    for (uint64_t i = 0; i < buckets_; ++i) {
      Bucket* b = Get(i);
      if (b == nullptr) return false;
      total += b->items.size() / 2;
    }
    if (total == 0) return ok_ = false;  // the root counts fields no bucket has
    uint64_t pick = rng() % total;
    for (uint64_t i = 0; i < buckets_; ++i) {
      Bucket* b = Get(i);
      size_t n = b->items.size() / 2;
      if (pick < n) return take(*b, pick);
      pick -= n;
    }
  }
  for (int tries = 0; tries < 4096; ++tries) {
    Bucket* b = Get(rng() % buckets_);
    if (b == nullptr) return false;
    size_t n = b->items.size() / 2;
    if (n > most_in_bucket_) most_in_bucket_ = n;
    uint64_t place = rng() % std::max<uint64_t>(most_in_bucket_,
                                                4 * kBucketFields);
    if (place < n) return take(*b, place);
  }
  // A sparse table: a walk from a random bucket to one that holds fields.
  uint64_t start = rng() % buckets_;
  for (uint64_t k = 0; k < buckets_; ++k) {
    Bucket* b = Get((start + k) % buckets_);
    if (b == nullptr) return false;
    if (!b->items.empty()) return take(*b, rng() % (b->items.size() / 2));
  }
  return ok_ = false;  // the root counts fields its buckets do not have
}

Store::Status HashValue::Save(CommandContext* c, std::string_view key) {
  using Status = Store::Status;
  if (count_ == 0) return exists_ ? c->txn->Delete(key) : Status::kOk;
  if (!buckets_mode_) {
    // The limits CONFIG SET gave (Redis's by default), as they are now,
    // checked when Redis checks them: a hash's count whenever a field is
    // set, a set's when a member is added, and the length of every field
    // and value written (a value packed under higher limits stays so
    // until then; a delete never converts).
    const EncodingLimits limits = c->store->Limits();
    bool over = shape_.sorted_ints
                    ? added_ && count_ > limits.set_intset_entries
                    : (set_ && count_ > limits.hash_entries) ||
                          longest_ > limits.hash_value;
    bool table = grow_ || encoding_ != shape_.packed || over;
    if (!table) return SavePacked(c, key);
    Status st = ToBuckets(c);
    if (st != Status::kOk) return st;
  }
  Status st = SaveBuckets(c);
  if (st != Status::kOk) return st;
  if (!root_dirty_) {
    c->txn->Touched(key);  // WATCH sees a change to its buckets
    return Status::kOk;
  }
  PartsRoot root{id_, buckets_};
  std::string head(sizeof(root) + 8, '\0');
  std::memcpy(&head[0], &root, sizeof(root));
  std::memcpy(&head[sizeof(root)], &count_, 8);
  return c->txn->Write(key, shape_.type, shape_.buckets, head,
                       value_.expire_ms);
}

void HashValue::Attach(CommandContext* c, uint64_t id, uint64_t buckets,
                       uint64_t stride) {
  c_ = c;
  exists_ = true;
  buckets_mode_ = true;
  id_ = id;
  buckets_ = buckets;
  stride_ = stride;
}

void HashValue::Fill(CommandContext* c, uint64_t id, uint64_t stride,
                     const std::vector<std::string_view>& pairs) {
  c_ = c;
  id_ = id;
  stride_ = stride;
  count_ = pairs.size() / 2;
  Distribute(pairs);
}

Store::Status HashValue::SaveBuckets(CommandContext* c) {
  using Status = Store::Status;
  // One split per write keeps the buckets at about kBucketFields fields;
  // a bucket written past kBucketBytes asks for one too, while there are
  // fewer buckets than fields (one huge value cannot be split).
  bool big = false;
  for (const auto& [index, b] : loaded_) {
    big = big || (b.dirty && b.items.size() > 2 &&
                  PairBytes(b.items) > kBucketBytes);
  }
  if (count_ > buckets_ * kBucketFields || (big && buckets_ < count_)) {
    Status st = SplitOne();
    if (st != Status::kOk) return st;
  }
  std::string bytes;
  for (auto& [index, b] : loaded_) {
    if (!b.dirty) continue;
    bytes.clear();
    Pack(b.items, &bytes);
    Status st = c->txn->WritePart(id_, PartOf(index), bytes);
    if (st != Status::kOk) return st;
    b.dirty = false;
  }
  return Status::kOk;
}

Store::Status HashValue::SavePacked(CommandContext* c, std::string_view key) {
  std::string bytes;
  Pack(packed_.items, &bytes);
  return c->txn->Write(key, shape_.type, shape_.packed, bytes,
                       value_.expire_ms);
}

// From packed to buckets: a fresh collection with enough buckets for
// half of kBucketFields fields each, every pair in its bucket.
Store::Status HashValue::ToBuckets(CommandContext* c) {
  id_ = c->txn->NewCollection();
  Distribute(packed_.items);
  return Store::Status::kOk;
}

void HashValue::Distribute(const std::vector<std::string_view>& pairs) {
  buckets_ = 1;
  while (buckets_ * (kBucketFields / 2) < pairs.size() / 2) buckets_ *= 2;
  for (uint64_t i = 0; i < buckets_; ++i) loaded_[i].dirty = true;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    Bucket& b = loaded_[BucketOf(FieldHash(pairs[i]), buckets_)];
    b.items.push_back(pairs[i]);
    b.items.push_back(pairs[i + 1]);
  }
  buckets_mode_ = true;
  root_dirty_ = true;
}

// Splits the next bucket in turn (linear hashing): its pairs stay or
// move to the new last bucket by one more bit of their hash.
Store::Status HashValue::SplitOne() {
  int level = 63 - __builtin_clzll(buckets_);
  uint64_t next = buckets_ - (1ULL << level);
  Bucket* from = Get(next);
  if (from == nullptr) return Store::Status::kNotFound;
  uint64_t mask = (2ULL << level) - 1;
  Bucket& to = loaded_[buckets_];
  std::vector<std::string_view> stay;
  for (size_t i = 0; i < from->items.size(); i += 2) {
    auto& dest = (FieldHash(from->items[i]) & mask) == next ? stay : to.items;
    dest.push_back(from->items[i]);
    dest.push_back(from->items[i + 1]);
  }
  from->items.swap(stay);
  from->dirty = to.dirty = true;
  ++buckets_;
  root_dirty_ = true;
  return Store::Status::kOk;
}

void RemoveFields(const Args& a, CommandContext* c, Reply* r,
                  const TableShape& shape, uint32_t cls, const char* event) {
  HashValue h(shape);
  if (!Opened(h.Open(c, a[1]), r)) return;
  int64_t removed = 0;
  for (size_t i = 2; i < a.size(); ++i) removed += h.Remove(a[i]);
  if (!h.ok()) return Damaged(r);
  if (removed > 0) {
    Notify(c, cls, event, a[1]);
    Store::Status st = h.Save(c, a[1]);
    if (!Saved(st, h.ok(), r) || !NotifyIfEmptied(c, &h, a[1])) return;
  }
  r->Int(removed);
}

void ReplyTableScan(const Args& a, CommandContext* c, Reply* r,
                    const TableShape& shape, bool pairs) {
  ScanArgs scan;
  if (!ParseScanCursor(a[2], &scan.cursor)) {
    return r->Error("ERR invalid cursor");
  }
  ReadConsistently(c, r, [&] {
    HashValue h(shape);
    if (!Opened(h.Open(c, a[1]), r)) return;
    if (!h.exists()) return EmptyScan(r);
    if (!ParseScanOptions(a, 3, false, &scan, r)) return;
    // A packed table is one page, whatever the cursor (as Redis answers
    // for a listpack or an intset); one in buckets pages bucket by
    // bucket, the cursor being the next bucket. A field there all along
    // is returned at least once: a split only moves fields to a later
    // bucket.
    uint64_t next = scan.cursor;
    std::vector<std::pair<std::string_view, std::string_view>> page;
    if (!h.Page(&next, static_cast<size_t>(scan.count), &page)) {
      return Damaged(r);
    }
    size_t hits = 0;
    for (const auto& p : page) {
      hits += scan.match.empty() || GlobMatch(scan.match, p.first);
    }
    r->Array(2);
    r->Bulk(std::to_string(next));
    r->Array(hits * (pairs ? 2 : 1));
    for (const auto& [f, v] : page) {
      if (!scan.match.empty() && !GlobMatch(scan.match, f)) continue;
      r->Bulk(f);
      if (pairs) r->Bulk(v);
    }
  });
}

}  // namespace cmd
}  // namespace shmkv
