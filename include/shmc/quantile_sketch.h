// QuantileSketch: every quantile of a stream of durations (or any
// non-negative integers), each answer within 1% of the sample's own
// quantile whatever the order of the samples (shmc addition,
// docs/percentile.md).
//
// Usage:
//   shmc::QuantileSketch s;
//   s.Add(latency_ns);                  // any number of times
//   double p99 = s.Quantile(0.99);      // any quantile, any time
//   other.Merge(s);                     // the sketch of both streams
//
// It is a histogram in relative-width buckets. Each power of two
// [2^e, 2^(e+1)) is cut into kPerOctave buckets of one ratio, 2^(1/39) =
// 1.0179, so every value in a bucket [lo, hi) is within (hi - lo) /
// (hi + lo) of the bucket's answer 2 lo hi / (lo + hi): 0.89%. A value's
// bucket takes no logarithm: its leading bit gives e, its next 12 bits
// index a table of the bucket each 1/4096 of a power of two falls in (so
// bucket edges sit on those 4096ths, which widens a bucket by at most
// two of them: every bucket's bound is at most kMaxRelativeError, 0.9%).
//
// The quantile q is the sample of rank ceil(q n) - 1 in sorted order
// (the nearest rank, as the other estimators' tables measure it). Its
// bucket is found by counting, so the answer is that sample's bucket's,
// within kMaxRelativeError of it, for any stream: sorted, bursty,
// regime-switching. Nothing is estimated from the shape of the stream,
// which is what QuantileEstimator and PercentileEstimator (percentile.h)
// do and why they drift on dependent samples. The answer is also clamped
// to the exact minimum and maximum seen.
//
// Values: 0 has its own count; 1 .. 2^44 - 1 (4.9 hours in nanoseconds)
// have buckets; larger values count in the last bucket (the maximum stays
// exact). Counts are 32-bit: one about to pass 2^32 - 1 first halves
// every count (rounding up), which keeps every quantile's rank within one
// bucket's count of where it was; Count() keeps the exact number of
// samples. State: kBuckets + 1 32-bit counts and five words, 6.8 KiB.
//
// Merge adds the counts: the merged sketch is the sketch of the two
// streams together, with the same bound. Add is a few instructions, all
// inlined. Not thread-safe: one writer, or one per thread and Merge.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace shmc {

namespace detail {

// For each 12-bit fraction m of a power of two (the value is 2^e (1 +
// m / 4096) .. 2^e (1 + (m + 1) / 4096)), the bucket within the power it
// falls in, and per bucket the factor its answer is of 2^e.
struct SketchTable {
  static constexpr int kFractionBits = 12;
  static constexpr int kFractions = 1 << kFractionBits;
  static constexpr int kPerOctave = 39;
  uint8_t bucket[kFractions];
  double answer[kPerOctave];
  double bound[kPerOctave];  // (hi - lo) / (hi + lo) of each bucket

  SketchTable() {
    for (int m = 0; m < kFractions; ++m) {
      double mid = 1.0 + (m + 0.5) / kFractions;
      int b = static_cast<int>(std::floor(std::log2(mid) * kPerOctave));
      bucket[m] = static_cast<uint8_t>(std::min(b, kPerOctave - 1));
    }
    for (int b = 0; b < kPerOctave; ++b) {
      int first = kFractions, last = -1;
      for (int m = 0; m < kFractions; ++m) {
        if (bucket[m] == b) {
          first = std::min(first, m);
          last = m;
        }
      }
      double lo = 1.0 + static_cast<double>(first) / kFractions;
      double hi = 1.0 + static_cast<double>(last + 1) / kFractions;
      answer[b] = 2 * lo * hi / (lo + hi);
      bound[b] = (hi - lo) / (hi + lo);
    }
  }
};

inline const SketchTable& Sketch() {
  static const SketchTable table;
  return table;
}

}  // namespace detail

class QuantileSketch {
 public:
  static constexpr int kOctaves = 44;
  static constexpr int kPerOctave = detail::SketchTable::kPerOctave;
  static constexpr int kBuckets = kOctaves * kPerOctave;
  // Every answer is within this of the sample it stands for (the widest
  // bucket's bound; a test checks the table against it).
  static constexpr double kMaxRelativeError = 0.009;

  QuantileSketch() : table_(detail::Sketch().bucket) { Reset(); }

  void Reset() {
    std::memset(slots_, 0, sizeof(slots_));
    shed_ = 0;
    count_ = 0;
    min_ = std::numeric_limits<uint64_t>::max();
    max_ = 0;
  }

  void Add(uint64_t v) {
    min_ = v < min_ ? v : min_;
    max_ = v > max_ ? v : max_;
    ++count_;
    uint32_t* c = &slots_[Slot(v, table_)];
    if (__builtin_expect(++*c == 0, 0)) {  // was 2^32 - 1
      --*c;
      Halve();
      ++*c;
      Resum();
    }
  }

  // The quantile q (0 <= q <= 1) of the samples: NaN when there are none
  // or q is outside [0, 1].
  double Quantile(double q) const {
    const uint64_t weight = Weight();
    if (weight == 0 || !(q >= 0 && q <= 1)) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    double want = std::ceil(q * static_cast<double>(weight));
    uint64_t rank = want < 1 ? 0 : static_cast<uint64_t>(want) - 1;
    if (rank >= weight) rank = weight - 1;
    uint64_t seen = 0;
    int slot = 0;
    for (; slot < kBuckets; ++slot) {
      seen += slots_[slot];
      if (seen > rank) break;
    }
    if (slot == 0) return 0;
    double v = Answer(slot - 1);
    return std::clamp(v, static_cast<double>(min_), static_cast<double>(max_));
  }

  // Adds other's samples: the sketch of both streams.
  void Merge(const QuantileSketch& other) {
    if (other.count_ == 0) return;
    uint64_t top = 0;
    for (int i = 0; i <= kBuckets; ++i) {
      top = std::max<uint64_t>(top, static_cast<uint64_t>(slots_[i]) +
                                        other.slots_[i]);
    }
    int shift = 0;
    while ((top >> shift) > std::numeric_limits<uint32_t>::max()) ++shift;
    for (int i = 0; i <= kBuckets; ++i) {
      uint64_t sum = static_cast<uint64_t>(slots_[i]) + other.slots_[i];
      slots_[i] =
          static_cast<uint32_t>((sum + (uint64_t{1} << shift) - 1) >> shift);
    }
    count_ += other.count_;
    Resum();
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }

  // The compact form: only the counts that are not zero, as 64-bit
  // words: the count of samples, the minimum, the maximum, the number n of
  // counts, then n words of (slot << 32 | count), slots rising (slot 0
  // counts zeros, slot 1 + b bucket b). kCompactHead + n words; at most
  // kCompactMax. For a copy where most buckets are empty (a command's
  // latency spans a few powers of two): a few hundred words, not
  // kCompactMax.
  static constexpr size_t kCompactHead = 4;
  static constexpr size_t kCompactMax = kCompactHead + kBuckets + 1;
  size_t CompactWords() const {
    size_t n = 0;
    for (uint32_t c : slots_) n += c != 0;
    return kCompactHead + n;
  }
  // Writes CompactWords() words to w.
  void SaveCompact(uint64_t* w) const {
    size_t n = 0;
    for (int i = 0; i <= kBuckets; ++i) {
      if (slots_[i] != 0) {
        w[kCompactHead + n++] = static_cast<uint64_t>(i) << 32 | slots_[i];
      }
    }
    w[0] = count_;
    w[1] = min_;
    w[2] = max_;
    w[3] = n;
  }
  // Takes back a compact form of `words` words (it may be followed by
  // other words: *used tells how many were its own). Refuses what cannot
  // be one: counts past `words`, slots not rising or past the last, a
  // zero count, fewer samples than counted, a minimum above the maximum.
  bool LoadCompact(const uint64_t* w, size_t words, size_t* used) {
    if (words < kCompactHead) return false;
    const uint64_t count = w[0], lo = w[1], hi = w[2], n = w[3];
    if (n > words - kCompactHead || n > static_cast<uint64_t>(kBuckets) + 1) {
      return false;
    }
    QuantileSketch k;
    uint64_t weight = 0;
    int64_t last = -1;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t e = w[kCompactHead + i];
      const uint64_t slot = e >> 32;
      const uint32_t c = static_cast<uint32_t>(e);
      if (static_cast<int64_t>(slot) <= last || slot > kBuckets || c == 0) {
        return false;
      }
      k.slots_[slot] = c;
      weight += c;
      last = static_cast<int64_t>(slot);
    }
    if (count < weight || (count != 0) != (weight != 0) ||
        (count != 0 && lo > hi)) {
      return false;
    }
    std::memcpy(slots_, k.slots_, sizeof(slots_));
    count_ = count;
    shed_ = count - weight;
    min_ = count == 0 ? std::numeric_limits<uint64_t>::max() : lo;
    max_ = count == 0 ? 0 : hi;
    if (used != nullptr) *used = kCompactHead + static_cast<size_t>(n);
    return true;
  }

  // About how many samples are at most v: those of every bucket whose
  // answer is at most v (a bucket is counted whole or not at all, so the
  // bound is off by at most a bucket: 0.9% of v), scaled to Count() when
  // counts were halved. Exact at and past the maximum, and below the
  // minimum.
  uint64_t CountAtMost(uint64_t v) const {
    const uint64_t weight = Weight();
    if (weight == 0 || v < min_) return 0;
    if (v >= max_) return count_;
    uint64_t w = slots_[0];
    for (int b = 0; b < kBuckets && Answer(b) <= static_cast<double>(v); ++b) {
      w += slots_[b + 1];
    }
    if (shed_ == 0) return w;
    return static_cast<uint64_t>(static_cast<double>(w) *
                                 static_cast<double>(count_) /
                                 static_cast<double>(weight));
  }

  // Samples added (and merged in).
  uint64_t Count() const { return count_; }
  uint64_t Min() const { return count_ == 0 ? 0 : min_; }
  uint64_t Max() const { return max_; }

  // What a quantile in bucket b is answered with (before clamping).
  static double Answer(int b) {
    return std::ldexp(detail::Sketch().answer[b % kPerOctave], b / kPerOctave);
  }
  // The bound of bucket b: its values are within it of Answer(b).
  static double Bound(int b) { return detail::Sketch().bound[b % kPerOctave]; }
  // The bucket of a value v >= 1: kPerOctave per power of two.
  static int Bucket(uint64_t v) { return Slot(v, detail::Sketch().bucket) - 1; }

 private:
  // The slot of v: 0 for 0, 1 + its bucket for the rest. The exponent
  // and the kFractionBits bits after the leading one are those of v as a
  // double, exact below 2^53: every value from 2^kOctaves on is clamped
  // to it first (they share the last bucket). A conversion costs less
  // than counting leading zeros where that is BSR (x86-64 without LZCNT).
  static int Slot(uint64_t v, const uint8_t* table) {
    static_assert(std::numeric_limits<double>::is_iec559 &&
                      sizeof(double) == sizeof(uint64_t),
                  "the bucket is read from an IEEE-754 double's bits");
    constexpr uint64_t kTop = uint64_t{1} << kOctaves;
    constexpr int kBits = detail::SketchTable::kFractionBits;
    const double d = static_cast<double>(static_cast<int64_t>(
        v < kTop ? v : kTop));
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof(bits));
    const int e = static_cast<int>(bits >> 52) - 1023;
    const uint64_t frac = (bits >> (52 - kBits)) &
                          (detail::SketchTable::kFractions - 1);
    int slot = 1 + e * kPerOctave + table[frac];
    slot = e >= kOctaves ? kBuckets : slot;
    return v == 0 ? 0 : slot;
  }

  void Halve() {
    for (uint32_t& c : slots_) c = c / 2 + (c & 1);
  }
  // Ranks are taken in the counts' sum, which is below count_ once counts
  // were halved; Add leaves the difference as it is.
  uint64_t Weight() const { return count_ - shed_; }
  void Resum() {
    uint64_t w = 0;
    for (uint32_t c : slots_) w += c;
    shed_ = count_ - w;
  }

  const uint8_t* table_;
  uint32_t slots_[kBuckets + 1];  // zeros, then the buckets
  uint64_t shed_;  // count_ less the counts' sum (Weight)
  uint64_t count_;
  uint64_t min_, max_;
};

}  // namespace shmc
