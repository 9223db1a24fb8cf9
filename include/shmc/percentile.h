// PercentileEstimator: the p-quantile of a stream from three numbers, by
// the max-of-n method (shmc addition, docs/percentile.md).
//
// Split the stream into consecutive groups of n samples and average the
// groups' maxima. For exponentially distributed samples the expected maximum
// of n is H_n = 1 + 1/2 + ... + 1/n (in units of the mean), and the
// p-quantile is -ln(1-p); so with n the smallest integer such that
// H_n >= -ln(1-p) the mean of maxima estimates the p-quantile: n = 56 for
// p99, 561 for p99.9. It is exact in expectation for exponential tails
// only up to the rounding of n, and biased elsewhere: measured errors per
// distribution are in docs/percentile.md (e.g. useless below p~0.7, where
// n = 1 and the "estimate" is the mean; too high on heavy tails).
//
// State: the sum of completed group maxima, the sample count, and the
// running maximum of the open group. Add is O(1), no allocation, no sort.
// Merge adds two estimators' counters (other threads, processes, hosts).
//
// ShmPercentile<Alloc> keeps one such state per writer process in a
// segment; any process reads the merged estimate.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "shmc/common_utils.h"
#include "shmc/detail/process.h"
#include "shmc/detail/process_slot.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

class PercentileEstimator {
 public:
  // Largest group accepted: p beyond 1 - e^-(H_n) for this n is refused.
  static constexpr uint64_t kMaxGroupSize = 1ULL << 30;

  // 0 < p < 1; otherwise !valid(): Add is ignored and Estimate is NaN.
  explicit PercentileEstimator(double p)
      : p_(p), n_(GroupSize(p)), left_(n_) {}

  // Smallest n with 1 + 1/2 + ... + 1/n >= -ln(1 - p); 0 if p is outside
  // (0, 1) or needs more than kMaxGroupSize.
  static uint64_t GroupSize(double p) {
    if (!(p > 0 && p < 1)) return 0;
    double target = -std::log1p(-p);
    double h = 0;
    for (uint64_t n = 1; n <= kMaxGroupSize; ++n) {
      h += 1.0 / static_cast<double>(n);
      // The tolerance keeps n stable against rounding in the sum.
      if (h >= target - 1e-12) return n;
    }
    return 0;
  }

  void Add(double x) {
    if (n_ == 0 || std::isnan(x)) return;
    if (x > cur_max_) cur_max_ = x;
    ++count_;
    // A countdown, not count_ % n_: a division per sample doubled Add's
    // cost (bench/percentile_bench.cc).
    if (--left_ == 0) {
      sum_max_ += cur_max_;
      cur_max_ = -std::numeric_limits<double>::infinity();
      left_ = n_;
    }
  }

  // Mean of the completed groups' maxima. Before the first group completes:
  // the maximum so far (an underestimate); with no samples: NaN.
  double Estimate() const {
    uint64_t g = groups();
    if (g > 0) return sum_max_ / static_cast<double>(g);
    return count_ > 0 ? cur_max_ : std::numeric_limits<double>::quiet_NaN();
  }

  // Adds `other`'s samples (same p, else false and nothing changes). Two
  // open groups are joined; if together they fill a group it is closed
  // with the larger maximum (the few samples beyond n lose their maximum).
  bool Merge(const PercentileEstimator& other) {
    if (other.n_ != n_ || n_ == 0) return false;
    uint64_t open = count_ % n_ + other.count_ % n_;
    double joint = cur_max_ > other.cur_max_ ? cur_max_ : other.cur_max_;
    sum_max_ += other.sum_max_;
    count_ += other.count_;
    if (open >= n_) {
      sum_max_ += joint;
      cur_max_ = -std::numeric_limits<double>::infinity();
    } else {
      cur_max_ = joint;
    }
    left_ = n_ - count_ % n_;
    return true;
  }

  void Reset() { Restore(0, 0, -std::numeric_limits<double>::infinity()); }

  bool valid() const { return n_ != 0; }
  double p() const { return p_; }
  uint64_t group_size() const { return n_; }
  uint64_t count() const { return count_; }
  uint64_t groups() const { return n_ == 0 ? 0 : count_ / n_; }

  // The three numbers, for storing elsewhere (ShmPercentile does).
  double sum_of_maxima() const { return sum_max_; }
  double open_group_max() const { return cur_max_; }
  void Restore(double sum_of_maxima, uint64_t count, double open_group_max) {
    sum_max_ = sum_of_maxima;
    count_ = count;
    cur_max_ = open_group_max;
    left_ = n_ == 0 ? 0 : n_ - count_ % n_;
  }

 private:
  double p_;
  uint64_t n_;
  double sum_max_ = 0;
  uint64_t count_ = 0;
  double cur_max_ = -std::numeric_limits<double>::infinity();
  uint64_t left_;  // samples until the open group closes (from count_)
};

namespace detail {

// One writer process's estimator state in a ShmPercentile segment. The
// writer updates it under a sequence word (odd while writing); readers copy
// the three numbers and retry if the word changed.
struct PercentileSlot {
  std::atomic<uint64_t> owner_pid;    // 0: free
  std::atomic<uint64_t> owner_start;  // the owner's start time
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> sum_bits;     // double
  std::atomic<uint64_t> count;
  std::atomic<uint64_t> max_bits;     // double
  uint8_t reserved[16];
};
static_assert(sizeof(PercentileSlot) == kCacheLine,
              "one slot per cache line: writers never share a line");

inline uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
inline double BitsDouble(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

}  // namespace detail

// Shared-memory percentile: up to `slots` writer processes each Add to a
// slot of their own (no contention, no lock), any process reads the merged
// Estimate. A slot whose process died is taken over by the next writer,
// keeping its samples.
template <class Alloc = SVIPC>
class ShmPercentile {
 public:
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr uint64_t kMaxSlots = 4096;

  ShmPercentile() : local_(0.5) {}
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmPercentile);
  ~ShmPercentile() { Release(); }

  // Creates or attaches the segment for quantile p with `slots` writer
  // slots, and claims a slot for this process: kNoSlot when every slot
  // is held by a live process; kSizeMismatch if the segment exists with
  // another p or slot count.
  // Errors: create errors, and the two above; kInvalidArgument for p
  // outside (0, 1) or slots out of range.
  bool InitForWrite(const std::string& shm_key, double p, size_t slots) {
    error_.Clear();
    const char* who = "ShmPercentile::InitForWrite";
    uint64_t n = PercentileEstimator::GroupSize(p);
    if (n == 0 || slots == 0 || slots > kMaxSlots) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key, who,
          "p must be in (0, 1) and slots 1..%llu",
          static_cast<unsigned long long>(kMaxSlots));
    }
    uint64_t p_bits = detail::DoubleBits(p);
    if (!seg_.OpenForWrite(shm_key, Spec(p_bits, n, slots),
                           DefaultCreateFlags(), nullptr, who, &error_)) {
      return false;
    }
    Bind(p, n, slots);
    return Claim(who);
  }

  // Reader: attaches read-only and merges every slot when asked.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmPercentile::InitForRead";
    if (!seg_.OpenForRead(shm_key, Spec(0, 0, 0), false, who, &error_)) {
      return false;
    }
    uint64_t p_bits = seg_.param(kPParam);
    double p = detail::BitsDouble(p_bits);
    uint64_t n = seg_.param(kGroupParam), slots = seg_.param(kSlotsParam);
    bool plausible = PercentileEstimator::GroupSize(p) == n && n != 0 &&
                     slots != 0 && slots <= kMaxSlots;
    if (!seg_.AcceptGeometry(plausible,
                             Spec(p_bits, n, slots).total_size,
                             "p/group_size/slots", who, &error_)) {
      return false;
    }
    Bind(p, n, slots);
    return true;
  }

  // Writer: adds a sample to this process's slot.
  void Add(double x) {
    if (mine_ == nullptr) return;
    local_.Add(x);
    uint64_t s = mine_->seq.load(std::memory_order_relaxed);
    mine_->seq.store(s + 1, std::memory_order_relaxed);
    // SYNC POINT (release fence): the odd seq is visible before the data
    // it guards; pairs with the reader's acquire fence in Snapshot.
    std::atomic_thread_fence(std::memory_order_release);
    mine_->sum_bits.store(detail::DoubleBits(local_.sum_of_maxima()),
                          std::memory_order_relaxed);
    mine_->count.store(local_.count(), std::memory_order_relaxed);
    mine_->max_bits.store(detail::DoubleBits(local_.open_group_max()),
                          std::memory_order_relaxed);
    // SYNC POINT (release): closes the update.
    mine_->seq.store(s + 2, std::memory_order_release);
  }

  // All slots merged (a slot being written is retried until its copy is
  // consistent).
  PercentileEstimator Merged() const {
    PercentileEstimator all(p_);
    for (uint64_t i = 0; i < slots_; ++i) {
      PercentileEstimator one(p_);
      if (Snapshot(i, &one)) all.Merge(one);
    }
    return all;
  }
  double Estimate() const { return Merged().Estimate(); }
  uint64_t count() const { return Merged().count(); }

  double p() const { return p_; }
  size_t slots() const { return slots_; }
  const Error& last_error() const { return error_; }

 private:
  static constexpr uint64_t kSlotsOffset =
      sizeof(detail::SegmentHeader);

  static constexpr const char* kPParam = "p_bits";
  static constexpr const char* kGroupParam = "group_size";
  static constexpr const char* kSlotsParam = "slots";

  static detail::SegmentSpec Spec(uint64_t p_bits, uint64_t n,
                                  uint64_t slots) {
    return detail::SegmentSpec::Geometry(
        detail::ContainerKind::kPercentile, kLayoutVersion, kSlotsOffset,
        kSlotsOffset + slots * sizeof(detail::PercentileSlot),
        {{kPParam, p_bits}, {kGroupParam, n}, {kSlotsParam, slots}});
  }

  void Bind(double p, uint64_t n, uint64_t slots) {
    (void)n;
    p_ = p;
    slots_ = slots;
    local_ = PercentileEstimator(p);
    slot_ = reinterpret_cast<detail::PercentileSlot*>(seg_.base() +
                                                      kSlotsOffset);
  }

  // Takes a free slot, or one whose owner died (keeping its samples).
  bool Claim(const char* who) {
    detail::PercentileSlot* s = detail::ClaimProcessSlot(slot_, slots_);
    if (s == nullptr) {
      std::string key = seg_.key();
      seg_.Reset();
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kNoSlot, 0, key, who,
          "all %llu writer slots are held by live processes",
          static_cast<unsigned long long>(slots_));
    }
    // A dead writer may have stopped mid-update (odd seq): make it even,
    // and continue from its samples.
    uint64_t q = s->seq.load(std::memory_order_acquire);
    if (q & 1) s->seq.store(q + 1, std::memory_order_release);
    PercentileEstimator prev(p_);
    if (Snapshot(static_cast<uint64_t>(s - slot_), &prev)) local_ = prev;
    mine_ = s;
    return true;
  }

  void Release() {
    if (mine_ != nullptr) {
      // The samples stay; the slot is free for the next writer.
      detail::ReleaseProcessSlot(mine_);
      mine_ = nullptr;
    }
  }

  // A consistent copy of slot i (false: empty or damaged). A live writer
  // holds its sequence word odd for a few stores only, so the reader
  // retries until it gets a clean copy: giving up after a few tries made
  // a busy slot vanish from Merged() and counts go backwards (caught by
  // ReaderDuringLiveWriterSeesConsistentStates). A word left odd by a
  // writer that died mid-update never clears; then the fields are taken
  // as they are (each is a value that writer stored: at most its last
  // sample is half applied).
  //
  // A word that stays odd under an owner that looks alive (a damaged or
  // forged slot: a live writer is odd for a few stores) is waited for at
  // most kStuckNs, then taken as it is too: a reader never spins forever
  // on what a segment says.
  bool Snapshot(uint64_t i, PercentileEstimator* out) const {
    const detail::PercentileSlot* s = &slot_[i];
    uint64_t deadline = 0;
    for (uint64_t attempt = 0;; ++attempt) {
      uint64_t q1 = s->seq.load(std::memory_order_acquire);
      bool stuck = false;
      if (q1 & 1) {
        if (attempt < kCleanTries) {
          if (attempt % 64 == 63) sched_yield();
          continue;
        }
        if (!detail::SlotOwnerGone(s)) {
          uint64_t now = detail::MonotonicNs();
          if (deadline == 0) deadline = now + kStuckNs;
          if (now < deadline) {
            sched_yield();
            continue;
          }
        }
        stuck = true;
      }
      double sum = detail::BitsDouble(s->sum_bits.load(
          std::memory_order_relaxed));
      uint64_t count = s->count.load(std::memory_order_relaxed);
      double max = detail::BitsDouble(s->max_bits.load(
          std::memory_order_relaxed));
      // SYNC POINT (acquire fence): the data loads above complete before
      // seq is read again; pairs with the writer's release fence in Add.
      std::atomic_thread_fence(std::memory_order_acquire);
      if (!stuck && s->seq.load(std::memory_order_relaxed) != q1) continue;
      if (count == 0) return false;
      if (!(sum >= 0 || sum < 0)) return false;  // NaN: damaged bytes
      out->Restore(sum, count, max);
      return true;
    }
  }

  static constexpr uint64_t kCleanTries = 1 << 12;
  static constexpr uint64_t kStuckNs = 1000ULL * 1000 * 1000;

  detail::Segment<Alloc> seg_;
  Error error_;
  double p_ = 0.5;
  uint64_t slots_ = 0;
  PercentileEstimator local_;
  detail::PercentileSlot* slot_ = nullptr;
  detail::PercentileSlot* mine_ = nullptr;
};

}  // namespace shmc
