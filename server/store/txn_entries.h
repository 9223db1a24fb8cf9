// The keys a Store transaction has touched, by name. One set per Store,
// reused from one transaction to the next (only the transaction holding
// the write lock uses it), so a write of a key or two reuses the strings
// of the last one and allocates nothing once warm. Entry needs `ident`,
// `key` and `value` strings and a default state that means "not touched";
// entries are found by `ident` (what the key is: a Redis key or a part,
// then its bytes), so two kinds of key with the same bytes never meet.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shmkv {

// An entry's ident: a kind byte (0: Redis key, 0xff: part), the database
// (a part's is 0), the key.
inline void MakeTxnIdent(std::string* ident, bool part, uint32_t db,
                         std::string_view key) {
  ident->assign(1, part ? '\xff' : '\0');
  ident->push_back(static_cast<char>(db));
  ident->append(key.data(), key.size());
}

template <class Entry>
class TxnEntries {
 public:
  static constexpr size_t kLinear = 8;  // searched in order up to this many
  static constexpr size_t kKeepEntries = 64;      // kept between transactions
  static constexpr size_t kKeepBytes = 64 << 10;  // per string kept

  // The entry of `ident`, or null when this transaction has not touched
  // it.
  Entry* Find(std::string_view ident) const {
    if (used_ > kLinear) {
      auto it = index_.find(ident);
      return it == index_.end() ? nullptr : it->second;
    }
    for (size_t i = 0; i < used_; ++i) {
      if (pool_[i]->ident == ident) return pool_[i].get();
    }
    return nullptr;
  }

  // A fresh entry for `ident` (which Find did not find), with `key` its
  // key's bytes; Find finds it from now on. It stays where it is until
  // Reset.
  Entry* Add(std::string_view ident, std::string_view key) {
    if (used_ == pool_.size()) pool_.push_back(std::make_unique<Entry>());
    Entry* e = pool_[used_++].get();
    std::string i = std::move(e->ident), k = std::move(e->key),
                v = std::move(e->value);
    *e = Entry();
    e->ident = std::move(i);
    e->key = std::move(k);
    e->value = std::move(v);
    e->ident.assign(ident.data(), ident.size());
    e->key.assign(key.data(), key.size());
    e->value.clear();
    if (used_ == kLinear + 1) {  // from now on, through the index
      for (size_t j = 0; j < used_; ++j) {
        index_[pool_[j]->ident] = pool_[j].get();
      }
    } else if (used_ > kLinear + 1) {
      index_[e->ident] = e;
    }
    return e;
  }

  size_t size() const { return used_; }
  Entry& operator[](size_t i) const { return *pool_[i]; }

  // Written entries, first write first (the transaction appends).
  std::vector<Entry*>& order() { return order_; }
  // Commit's list of entries to apply.
  std::vector<Entry*>& dirty() { return dirty_; }

  // Ends the transaction: no key touched; what a large one grew goes back.
  void Reset() {
    for (size_t i = 0; i < used_; ++i) {
      Entry* e = pool_[i].get();
      if (e->key.capacity() > kKeepBytes) std::string().swap(e->key);
      if (e->ident.capacity() > kKeepBytes) std::string().swap(e->ident);
      if (e->value.capacity() > kKeepBytes) std::string().swap(e->value);
    }
    if (pool_.size() > kKeepEntries) pool_.resize(kKeepEntries);
    used_ = 0;
    if (index_.bucket_count() > 1024) {
      decltype(index_)().swap(index_);
    } else {
      index_.clear();
    }
    if (order_.capacity() > 1024) decltype(order_)().swap(order_);
    if (dirty_.capacity() > 1024) decltype(dirty_)().swap(dirty_);
    order_.clear();
    dirty_.clear();
  }

 private:
  std::vector<std::unique_ptr<Entry>> pool_;
  size_t used_ = 0;
  std::unordered_map<std::string_view, Entry*> index_;  // past kLinear
  std::vector<Entry*> order_;
  std::vector<Entry*> dirty_;
};

}  // namespace shmkv
