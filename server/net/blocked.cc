#include "server/net/blocked.h"

#include <algorithm>
#include <cstring>

namespace shmkv {

namespace {

constexpr uint32_t kMaxItems = 1u << 20;  // keys or arguments in a command

template <class T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <class T>
bool Get(std::string_view* in, T* v) {
  if (in->size() < sizeof(T)) return false;
  std::memcpy(v, in->data(), sizeof(T));
  in->remove_prefix(sizeof(T));
  return true;
}

}  // namespace

void BlockedCommand::Encode(std::string* out) const {
  Put(out, ticket);
  Put(out, deadline_ns);
  Put(out, static_cast<uint32_t>(keys.size()));
  for (uint64_t k : keys) Put(out, k);
  Put(out, static_cast<uint32_t>(args.size()));
  for (const std::string& a : args) {
    Put(out, static_cast<uint32_t>(a.size()));
    out->append(a);
  }
}

bool BlockedCommand::Decode(std::string_view* in) {
  uint32_t n = 0;
  if (!Get(in, &ticket) || !Get(in, &deadline_ns) || !Get(in, &n) ||
      n > kMaxItems || n > in->size() / sizeof(uint64_t)) {
    return false;
  }
  keys.resize(n);
  for (uint64_t& k : keys) Get(in, &k);
  if (!Get(in, &n) || n == 0 || n > kMaxItems ||
      n > in->size() / sizeof(uint32_t)) {
    return false;
  }
  args.resize(n);
  for (std::string& a : args) {
    uint32_t len = 0;
    if (!Get(in, &len) || len > in->size()) return false;
    a.assign(in->data(), len);
    in->remove_prefix(len);
  }
  return ticket != 0;
}

void BlockedClients::Add(int fd, const BlockedCommand& b) {
  Remove(b.ticket);
  by_ticket_[b.ticket] = Entry{fd, b.deadline_ns, b.keys};
  if (b.deadline_ns != 0) by_deadline_.emplace(b.deadline_ns, b.ticket);
}

void BlockedClients::Remove(uint64_t ticket) {
  auto it = by_ticket_.find(ticket);
  if (it == by_ticket_.end()) return;
  if (it->second.deadline_ns != 0) {
    auto range = by_deadline_.equal_range(it->second.deadline_ns);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == ticket) {
        by_deadline_.erase(d);
        break;
      }
    }
  }
  by_ticket_.erase(it);
}

int BlockedClients::Fd(uint64_t ticket) const {
  auto it = by_ticket_.find(ticket);
  return it == by_ticket_.end() ? -1 : it->second.fd;
}

const std::vector<uint64_t>& BlockedClients::Keys(uint64_t ticket) const {
  static const std::vector<uint64_t> kNone;
  auto it = by_ticket_.find(ticket);
  return it == by_ticket_.end() ? kNone : it->second.keys;
}

std::vector<uint64_t> BlockedClients::Waiting(
    const std::vector<uint64_t>& keys) const {
  std::vector<uint64_t> out;
  for (const auto& kv : by_ticket_) {
    for (uint64_t k : kv.second.keys) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
        out.push_back(kv.first);
        break;
      }
    }
  }
  return out;
}

std::vector<uint64_t> BlockedClients::All() const {
  std::vector<uint64_t> out;
  for (const auto& kv : by_ticket_) out.push_back(kv.first);
  return out;
}

std::vector<uint64_t> BlockedClients::Expired(uint64_t now_ns) const {
  std::vector<uint64_t> out;
  for (auto it = by_deadline_.begin();
       it != by_deadline_.end() && it->first <= now_ns; ++it) {
    out.push_back(it->second);
  }
  return out;
}

int BlockedClients::WaitMs(uint64_t now_ns, int cap) const {
  if (by_deadline_.empty()) return cap;
  uint64_t next = by_deadline_.begin()->first;
  if (next <= now_ns) return 0;
  uint64_t ms = (next - now_ns + 999999) / 1000000;
  return ms < static_cast<uint64_t>(cap) ? static_cast<int>(ms) : cap;
}

}  // namespace shmkv
