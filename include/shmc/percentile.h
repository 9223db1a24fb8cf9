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
//
// QuantileEstimator (below) is the distribution-free one: within 3% of the
// sample quantile on any continuous distribution at 10^6 samples, in 64
// words. Use it where the tail's shape is not known to be exponential.
//
// Both assume independent samples of one distribution. Latency is not
// that (a slow period brings runs of slow samples), and on such streams
// both are off by tens of percent (docs/percentile.md has the table):
// for latency use QuantileSketch (shmc/quantile_sketch.h), which is
// within 1% of every quantile whatever the order of the samples.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <algorithm>
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

// A double as its 8 bytes and back (estimator states travel as words).
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

// QuantileEstimator: the p-quantile of a stream whatever its distribution
// (shmc addition, docs/percentile.md), in a fixed state of kWords words,
// when its samples are independent draws: on dependent streams (bursts,
// a ramp, sorted input) it is off by tens of percent, where
// QuantileSketch (shmc/quantile_sketch.h) is not.
//
// The maximum of n independent samples is below the p-quantile q with
// probability p^n, for any continuous distribution. So q is the u = p^n
// quantile of the group maxima. n = ln(0.84) / ln(p) rounded, at least 3
// (p50: 3, p90: 3, p99: 17, p99.9: 174), puts u near 0.84 for p99 and
// above, where the estimate's variance against the sample quantile's is
// 1.09 (it is (1 - u) p / (n u (1 - p))); groups also make Add cheap: a
// max and a countdown per sample, and the counting below once per group.
// The floor of 3 is for Add's cost: groups of 2 (u = 1/4 at p50, variance
// 1.5 rather than 2.3) made Add at p50 2.4x max-of-n's, groups of 3 make
// it 1.8x (docs/percentile.md has both groups' errors).
//
// The maxima are counted twice: per power of two (kOctaves coarse counts,
// placed around the first maximum: a range of 2^48), and in 32 cells per
// power of two across a window of two adjacent powers that holds the
// estimate (each cell 2.2-3.1% wide: the top 5 bits of the double's
// mantissa, so no logarithm is taken). The estimate's rank u * maxima is
// found in the coarse counts, then inside its cell by linear
// interpolation. The window is kept so that the estimate is at least a
// quarter of a power of two from either end: an estimate next to a
// boundary between two powers has cells on both sides, whichever side its
// rank falls on. When the estimate nears an end of the window (a stream
// whose level changes), the window moves by a power of two (or more): a
// power it still covers keeps its cells, a newly covered one starts from
// its count spread evenly, which later maxima refine. The counts per power
// of two stay exact, so a level change costs precision inside a power of
// two, never the rank.
//
// Samples are non-negative quantities (latencies, sizes): zero, negative
// and values below the coarse range count in its lowest power of two,
// values above it in its highest. Merge adds the counts (exact for streams
// whose estimates share a power of two) and joins the open groups as
// PercentileEstimator does.
//
// Add, with all it calls, is inlined into its caller: a loop of Adds then
// makes no call and keeps the state in registers. With a call in the loop
// (the group's close was one) the state stayed in memory, and the max and
// the countdown each waited for their own store, sample after sample.
class QuantileEstimator {
 public:
  static constexpr int kOctaves = 48;
  static constexpr int kSubBits = 5;
  static constexpr int kCells = 1 << kSubBits;  // per power of two
  static constexpr int kWindow = 2;               // powers of two with cells
  static constexpr int kWindowCells = kWindow * kCells;
  static constexpr uint64_t kMinGroup = 3;
  static constexpr double kTargetU = 0.84;
  // The state: p, u, n, samples in the open group, its maximum, maxima,
  // the lowest power of two counted, the lowest power the cells cover,
  // then kOctaves and kWindowCells 32-bit counts.
  static constexpr size_t kWords = 8 + (kOctaves + kWindowCells) / 2;

  // 0 < p < 1; otherwise !valid(): Add is ignored and Estimate is NaN.
  explicit QuantileEstimator(double p)
      : p_(p), n_(GroupSize(p)), left_(n_) {
    u_ = n_ == 0 ? 0 : std::pow(p, static_cast<double>(n_));
  }

  // round(ln(kTargetU) / ln(p)), at least kMinGroup; 0 if p is outside
  // (0, 1) or the group would exceed PercentileEstimator::kMaxGroupSize.
  static uint64_t GroupSize(double p) {
    if (!(p > 0 && p < 1)) return 0;
    double n = std::round(std::log(kTargetU) / std::log(p));
    if (!(n < static_cast<double>(PercentileEstimator::kMaxGroupSize))) {
      return 0;
    }
    return n < kMinGroup ? kMinGroup : static_cast<uint64_t>(n);
  }

  __attribute__((always_inline)) void Add(double x) {
    if (n_ == 0 || std::isnan(x)) return;
    // Branch-free: in a small group which sample is the maximum is a coin
    // toss, and with the state in a register the max is one instruction.
    open_max_ = x > open_max_ ? x : open_max_;
    if (__builtin_expect(--left_ == 0, 0)) CloseGroup();
  }

  // The u-quantile of the group maxima. Before the first group completes:
  // the maximum so far (an underestimate); with no samples: NaN.
  double Estimate() const {
    if (n_ == 0 || count() == 0) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (maxima_ == 0) return open_max_ > 0 ? open_max_ : 0;
    double in = 0;  // rank inside power of two o
    int o = RankPower(&in);
    int64_t oct = low_ + o;
    const uint32_t* cells = WindowCells(oct);
    if (cells != nullptr && coarse_[o] > 0) {
      double s = 0;
      for (int c = 0; c < kCells; ++c) {
        if (cells[c] > 0 && s + cells[c] >= in) {
          double lo = Low(oct, c), hi = Low(oct, c + 1);
          return lo + (hi - lo) * ((in - s) / cells[c]);
        }
        s += cells[c];
      }
      return Low(oct, kCells);
    }
    // Not where the cells are (only between moves): even in log scale.
    double frac = coarse_[o] > 0 ? in / coarse_[o] : 0.5;
    return Low(oct, 0) * std::exp2(frac);
  }

  // Adds `other`'s samples (same p, else false and nothing changes).
  bool Merge(const QuantileEstimator& other) {
    if (other.n_ != n_ || n_ == 0) return false;
    if (other.maxima_ > 0) {
      if (maxima_ == 0) {
        Start(other.low_ + kOctaves / 2);
        cells_at_ = other.cells_at_;
      }
      for (int o = 0; o < kOctaves; ++o) {
        if (other.coarse_[o] == 0) continue;
        int64_t oct = other.low_ + o;
        int i = Slot(oct);
        coarse_[i] += other.coarse_[o];
        maxima_ += other.coarse_[o];
        if (!InWindow(low_ + i)) continue;
        int mine = CellsOf(low_ + i);
        const uint32_t* theirs = other.WindowCells(oct);
        if (theirs != nullptr && low_ + i == oct) {
          for (int c = 0; c < kCells; ++c) cells_[mine + c] += theirs[c];
        } else {  // no cells of the other's for it (or clamped here)
          Spread(mine, other.coarse_[o], false);
        }
      }
    }
    // The open groups, as PercentileEstimator::Merge joins them.
    uint64_t open = (n_ - left_) + (other.n_ - other.left_);
    double joint = open_max_ > other.open_max_ ? open_max_ : other.open_max_;
    if (open >= n_) {
      AddMaximum(joint);
      open_max_ = -std::numeric_limits<double>::infinity();
      open -= n_;
    } else {
      open_max_ = joint;
    }
    left_ = n_ - open;
    return true;
  }

  void Reset() { *this = QuantileEstimator(p_); }

  bool valid() const { return n_ != 0; }
  double p() const { return p_; }
  uint64_t group_size() const { return n_; }
  // Samples added (a merge that joins two open groups into one full group
  // drops the samples beyond it, as PercentileEstimator's does).
  uint64_t count() const { return n_ == 0 ? 0 : maxima_ * n_ + (n_ - left_); }
  uint64_t groups() const { return maxima_; }

  // The state as kWords words, for storing elsewhere (shmkv's statistics
  // segment does), and back. Load refuses words of another p, group size
  // or impossible counts (false, nothing changed).
  void Save(uint64_t* w) const {
    w[0] = detail::DoubleBits(p_);
    w[1] = detail::DoubleBits(u_);
    w[2] = n_;
    w[3] = n_ - left_;  // samples in the open group
    w[4] = detail::DoubleBits(open_max_);
    w[5] = maxima_;
    w[6] = static_cast<uint64_t>(low_);
    w[7] = static_cast<uint64_t>(cells_at_);
    const uint32_t* counts[2] = {coarse_, cells_};
    int sizes[2] = {kOctaves, kWindowCells};
    size_t k = 8;
    for (int t = 0; t < 2; ++t) {
      for (int i = 0; i < sizes[t]; i += 2, ++k) {
        w[k] = counts[t][i] | static_cast<uint64_t>(counts[t][i + 1]) << 32;
      }
    }
  }
  bool Load(const uint64_t* w) {
    QuantileEstimator e(detail::BitsDouble(w[0]));
    if (e.n_ == 0 || e.n_ != w[2] || w[3] >= e.n_) return false;
    e.left_ = e.n_ - w[3];
    e.open_max_ = detail::BitsDouble(w[4]);
    e.maxima_ = w[5];
    // The powers of two are checked before any arithmetic on them: the
    // range where Start can put it, and a window inside the range.
    const uint64_t highest = kMaxOctave + 1 - kOctaves;
    const uint64_t last_part = kOctaves - kWindow;
    if (w[6] > highest || w[7] < w[6] || w[7] - w[6] > last_part) {
      return false;
    }
    e.low_ = static_cast<int64_t>(w[6]);
    e.cells_at_ = static_cast<int64_t>(w[7]);
    uint32_t* counts[2] = {e.coarse_, e.cells_};
    int sizes[2] = {kOctaves, kWindowCells};
    uint64_t coarse_sum = 0, part_sum[kWindow] = {};
    size_t k = 8;
    for (int t = 0; t < 2; ++t) {
      for (int i = 0; i < sizes[t]; i += 2, ++k) {
        counts[t][i] = static_cast<uint32_t>(w[k]);
        counts[t][i + 1] = static_cast<uint32_t>(w[k] >> 32);
        uint64_t two = counts[t][i] + uint64_t{counts[t][i + 1]};
        if (t == 0) {
          coarse_sum += two;
        } else {
          part_sum[i / kCells] += two;  // the cells of one parity
        }
      }
    }
    // Each power of two in the window: its cells hold its count.
    int64_t at = e.cells_at_ - e.low_;
    bool cells_ok = e.maxima_ > 0 || part_sum[0] + part_sum[1] == 0;
    for (int part = 0; cells_ok && e.maxima_ > 0 && part < kWindow; ++part) {
      int64_t oct = e.cells_at_ + part;
      cells_ok = part_sum[CellsOf(oct) / kCells] == e.coarse_[at + part];
    }
    if (coarse_sum != e.maxima_ || !cells_ok) return false;
    *this = e;
    return true;
  }

 private:
  static constexpr int64_t kMaxOctave = 2046;  // finite doubles' exponents

  // A positive double's bits grow with its value: the exponent is its
  // power of two, the next kSubBits bits its cell (zero and below: both 0).
  static uint64_t CellKey(double x) {
    return x > 0 ? detail::DoubleBits(x) >> (52 - kSubBits) : 0;
  }
  // The lowest value of cell c (0..kCells) of power of two `oct`.
  static double Low(int64_t oct, int c) {
    if (oct <= 0) return 0;
    if (c == kCells) {
      return oct >= kMaxOctave ? std::numeric_limits<double>::max()
                               : Low(oct + 1, 0);
    }
    return detail::BitsDouble(static_cast<uint64_t>(oct) << 52 |
                    static_cast<uint64_t>(c) << (52 - kSubBits));
  }
  // Index of power of two `oct` in the coarse counts (clamped to the range).
  int Slot(int64_t oct) const {
    int64_t i = oct - low_;
    return static_cast<int>(i < 0 ? 0 : i >= kOctaves ? kOctaves - 1 : i);
  }

  // The coarse range, centered on power of two `oct`; the window from it.
  __attribute__((always_inline)) void Start(int64_t oct) {
    int64_t low = oct - kOctaves / 2;
    const int64_t highest = kMaxOctave + 1 - kOctaves;
    low_ = low < 0 ? 0 : low > highest ? highest : low;
    cells_at_ = WindowAt(oct);
  }
  // The lowest power of a window that starts at `oct`, kept in the range.
  int64_t WindowAt(int64_t oct) const {
    const int64_t last = low_ + kOctaves - kWindow;
    return oct < low_ ? low_ : oct > last ? last : oct;
  }
  // The 32 cells of power of two `oct`, or null outside the window. A
  // power's cells are at its parity: moving the window by one power
  // rewrites the cells of the power it takes in, and moves none.
  static int CellsOf(int64_t oct) {
    return static_cast<int>(oct & (kWindow - 1)) * kCells;
  }
  bool InWindow(int64_t oct) const {
    return static_cast<uint64_t>(oct - cells_at_) < kWindow;
  }
  const uint32_t* WindowCells(int64_t oct) const {
    return InWindow(oct) ? cells_ + CellsOf(oct) : nullptr;
  }

  // Once per group (inlined, as all below that Add reaches: see above).
  __attribute__((always_inline)) void CloseGroup() {
    double m = open_max_;
    open_max_ = -std::numeric_limits<double>::infinity();
    left_ = n_;
    AddMaximum(m);
  }

  __attribute__((always_inline)) void AddMaximum(double m) {
    uint64_t key = CellKey(m);
    int64_t octave = static_cast<int64_t>(key >> kSubBits);
    if (maxima_ == 0) Start(octave);
    int i = Slot(octave);
    ++coarse_[i];
    // No branch on whether the maximum is in the window: with
    // small groups it is a coin toss. Outside, a cell gets 0 added: a
    // different one each time, so those adds do not wait for each other.
    // The cell is chosen with masks: GCC made `in ? cell : spin` a
    // branch, which mispredicted as often.
    int64_t oct = low_ + i;
    bool in = InWindow(oct);
    int spin = static_cast<int>(maxima_ & (kWindowCells - 1));
    int cell = CellsOf(oct) | static_cast<int>(key & (kCells - 1));
    cells_[spin ^ ((cell ^ spin) & -static_cast<int>(in))] += in;
    if (__builtin_expect((++maxima_ & (kCheckEvery - 1)) == 0, 0)) Follow();
  }

  // The coarse count that holds the estimate's rank u * maxima, and in
  // *in the rank inside it.
  __attribute__((always_inline)) int RankPower(double* in) const {
    double rank = u_ * static_cast<double>(maxima_);
    double seen = 0;
    int o = 0;
    for (; o < kOctaves - 1; ++o) {
      if (seen + coarse_[o] >= rank) break;
      seen += coarse_[o];
    }
    *in = rank - seen;
    return o;
  }

  // Keeps the estimate a quarter of a power of two (8 cells) or more from
  // either end of the window. When it comes closer, the window moves so
  // that the estimate's power and the neighbour on its nearer side are
  // covered: the estimate is then 8 cells or more from both ends, so noise
  // in the rank cannot make the window flap.
  static constexpr uint64_t kCheckEvery = 64;
  static constexpr int kMargin = kCells / 4;
  __attribute__((always_inline)) void Follow() {
    double in = 0;
    int o = RankPower(&in);
    int64_t oct = low_ + o;
    int c = 0;  // the estimate's cell in its power of two
    if (InWindow(oct)) {
      int at = CellsOf(oct);
      double s = 0;
      for (; c < kCells - 1 && s + cells_[at + c] < in; ++c) {
        s += cells_[at + c];
      }
    } else if (coarse_[o] > 0) {  // even in log scale, as Estimate
      c = static_cast<int>(kCells * in / coarse_[o]);
      c = c < 0 ? 0 : c >= kCells ? kCells - 1 : c;
    }
    int64_t pos = (oct - cells_at_) * kCells + c;
    if (pos >= kMargin && pos < kWindowCells - kMargin) return;
    int64_t to = WindowAt(c < kCells / 2 ? oct - 1 : oct);
    // A power still covered keeps its cells; a new one is spread.
    for (int64_t x = to; x < to + kWindow; ++x) {
      if (!InWindow(x)) Spread(CellsOf(x), coarse_[x - low_], true);
    }
    cells_at_ = to;
  }

  // Adds `k` maxima of one power of two to its cells (cells_[at] on),
  // positions unknown: evenly; with `replace`, they are all its cells
  // hold. (Not a memset and an add: GCC makes a zeroing loop a call to
  // memset, and a call in the caller's loop of Adds keeps the state in
  // memory. Indexes, not a pointer, for the same reason: GCC kept the
  // state in memory when the cells were reached through a pointer.)
  __attribute__((always_inline)) void Spread(int at, uint64_t k,
                                             bool replace) {
    for (int c = 0; c < kCells; ++c) {
      uint64_t extra = static_cast<uint64_t>(c) < k % kCells ? 1 : 0;
      uint32_t add = static_cast<uint32_t>(k / kCells + extra);
      cells_[at + c] = replace ? add : cells_[at + c] + add;
    }
  }

  double p_;
  double u_ = 0;
  uint64_t n_;
  uint64_t left_;  // samples until the open group closes
  double open_max_ = -std::numeric_limits<double>::infinity();
  uint64_t maxima_ = 0;
  int64_t low_ = 0;       // the lowest power of two counted (exponent bits)
  int64_t cells_at_ = 0;  // the lowest power of two of the window
  uint32_t coarse_[kOctaves] = {};
  uint32_t cells_[kWindowCells] = {};  // kCells per power, at CellsOf()
};
static_assert(sizeof(QuantileEstimator) <= QuantileEstimator::kWords * 8,
              "the estimator's state is its kWords words");

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
