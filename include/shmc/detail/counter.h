// Statistics counters in a segment that exactly one process writes (a
// queue's producer or consumer, a sync buffer's writer) and any process
// reads.
#pragma once

#include <atomic>
#include <cstdint>

namespace shmc {
namespace detail {

// The writing process's handle on such a counter. It keeps the value
// locally, so an update is one relaxed store to the shared line: no locked
// instruction (fetch_add is `lock xadd` on x86, which drains the store
// buffer and waits for the line) and no load (the line usually also holds
// the index the other side polls, so a load there misses whenever that
// side has just read it). queue_bench measured both on the push/pop path.
// Readers see the old or the new value, never a torn one.
class OwnedCounter {
 public:
  // Takes the counter over with its current value (a new writer after a
  // crash continues the old one's count).
  void Bind(std::atomic<uint64_t>* c) {
    c_ = c;
    v_ = c->load(std::memory_order_relaxed);
  }
  void Add(uint64_t by) {
    v_ += by;
    c_->store(v_, std::memory_order_relaxed);
  }
  uint64_t value() const { return v_; }
  // Raises the counter to x if it is below (a high-water mark).
  void Max(uint64_t x) {
    if (x <= v_) return;
    v_ = x;
    c_->store(v_, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t>* c_ = nullptr;
  uint64_t v_ = 0;
};

}  // namespace detail
}  // namespace shmc
