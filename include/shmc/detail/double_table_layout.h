// Layout of ShmDoubleTable (docs/layout/double_table.md): two hash-table
// images behind one state word and a line of pins per reader process.
//
//   [SegmentHeader 512][DoubleBufHeader 64][pin slots: 64 each][pad to 4 KiB]
//   [half 0][half 1]
//   half: [DoubleTableHalf 512][HashTableHeader][bitmaps][tags][nodes][pad]
//
// Each half is laid out as a ShmHashTable segment whose 512-byte segment
// header is replaced by the half's own header (its version and checksum),
// so a table view bound at the half's first byte finds every part where a
// table segment keeps it (detail/fixed_layout.h computes them). Halves
// start on 4 KiB, the largest node alignment accepted.
//
// The checksum covers a half's bytes after its header: tags, bitmaps,
// table header and nodes, as sealed by the writer before the flip.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "shmc/detail/double_pins.h"
#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/segment.h"

namespace shmc {
namespace detail {

constexpr uint32_t kDoubleTableLayoutVersion = 1;
constexpr const char* kParamReaderSlots = "reader_slots";

struct DoubleTableHalf {
  // Version this half was sealed as (0: being built, or never sealed).
  // Written by the writer before the flip that publishes the half.
  std::atomic<uint64_t> sealed;
  uint64_t checksum;   // HalfChecksum of the half's bytes after this header
  uint64_t sealed_ns;  // CLOCK_REALTIME of the seal
  uint8_t reserved[488];
};
static_assert(sizeof(DoubleTableHalf) == sizeof(SegmentHeader),
              "a half's header takes the place of a table's segment header");
static_assert(offsetof(DoubleTableHalf, sealed) == 0 &&
                  offsetof(DoubleTableHalf, checksum) == 8 &&
                  offsetof(DoubleTableHalf, sealed_ns) == 16,
              "fields of layout version 1: moving one needs a version bump");

// A 64-bit checksum of `n` bytes (n a multiple of 32), four independent
// lanes of 8-byte words. Each step of a lane is a bijection of its state
// for a given word, so any change confined to one word per lane changes
// the result; other damage escapes with probability about 2^-64.
class HalfSum {
 public:
  void Add(const unsigned char* p, uint64_t n) {
    for (uint64_t i = 0; i + 32 <= n; i += 32) {
      uint64_t w[4];
      std::memcpy(w, p + i, sizeof(w));
      for (int l = 0; l < 4; ++l) lane_[l] = Step(lane_[l], w[l]);
    }
    bytes_ += n;
  }
  uint64_t Final() const {
    uint64_t h = bytes_ * kMul;
    for (int l = 0; l < 4; ++l) h = Step(h, lane_[l]);
    return Step(h, h >> 31);
  }

 private:
  static constexpr uint64_t kMul = 0xd6e8feb86659fd93ULL;
  static uint64_t Step(uint64_t s, uint64_t w) {
    s = (s ^ w) * kMul;
    return s ^ (s >> 29);
  }
  uint64_t lane_[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                       0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  uint64_t bytes_ = 0;
};

inline uint64_t HalfChecksum(const char* half_data, uint64_t n) {
  HalfSum s;
  s.Add(reinterpret_cast<const unsigned char*>(half_data), n);
  return s.Final();
}

// Copies `n` bytes (a multiple of 64) and returns the source's checksum,
// read once: a copy-and-edit build both starts from and verifies the
// current half in one pass.
inline uint64_t CopyWithChecksum(char* dst, const char* src, uint64_t n) {
  constexpr uint64_t kChunk = 64 * 1024;
  HalfSum s;
  for (uint64_t off = 0; off < n; off += kChunk) {
    uint64_t len = n - off < kChunk ? n - off : kChunk;
    std::memcpy(dst + off, src + off, len);
    s.Add(reinterpret_cast<const unsigned char*>(dst + off), len);
  }
  return s.Final();
}

class DoubleTableLayout {
 public:
  DoubleTableLayout() = default;
  DoubleTableLayout(const FixedLayout& table, uint64_t reader_slots)
      : table_(table), reader_slots_(reader_slots) {}

  // From a header (a reader, the `shmc` tool); false with *why when its
  // params cannot describe a double table.
  static bool FromHeader(const SegmentHeader& h, DoubleTableLayout* out,
                         std::string* why) {
    FixedLayout t;
    if (!FixedLayout::TableFromHeader(h, &t, why)) return false;
    uint64_t slots = ParamByName(h, kParamReaderSlots);
    if (slots == 0 || slots > kMaxPinSlots) {
      *why = "impossible reader_slots";
      return false;
    }
    *out = DoubleTableLayout(t, slots);
    if (out->total_size() == 0) {
      *why = "impossible hash table geometry";
      return false;
    }
    return true;
  }

  // Geometry params zero: a reader's spec, its layout params to match.
  SegmentSpec spec() const {
    SegmentSpec s = table_.spec();
    s.kind = ContainerKind::kDoubleTable;
    s.layout_version = kDoubleTableLayoutVersion;
    s.header_size = static_cast<uint32_t>(slots_offset());
    s.total_size = total_size();
    s.params.push_back(
        {kParamReaderSlots, reader_slots_, ParamRole::kGeometry});
    return s;
  }

  const FixedLayout& table() const { return table_; }
  uint64_t reader_slots() const { return reader_slots_; }
  static constexpr uint64_t header_offset() { return sizeof(SegmentHeader); }
  static constexpr uint64_t slots_offset() {
    return sizeof(SegmentHeader) + sizeof(DoubleBufHeader);
  }
  uint64_t halves_offset() const {
    return RoundUp(slots_offset() + reader_slots_ * sizeof(DoubleBufSlot),
                   kHalfAlign);
  }
  // Bytes of one half; 0 when the table's geometry overflows.
  uint64_t half_bytes() const {
    uint64_t t = table_.total_size();
    return t == 0 || t > (1ULL << 46) ? 0 : RoundUp(t, kHalfAlign);
  }
  uint64_t half_offset(uint32_t h) const {
    return halves_offset() + h * half_bytes();
  }
  // Bytes a half's checksum covers, after its header.
  uint64_t summed_bytes() const {
    return half_bytes() - sizeof(DoubleTableHalf);
  }
  uint64_t total_size() const {
    uint64_t half = half_bytes();
    return half == 0 ? 0 : halves_offset() + 2 * half;
  }

 private:
  static constexpr uint64_t kHalfAlign = 4096;
  static_assert(kHalfAlign >= kMaxNodeAlign, "halves keep node alignment");

  FixedLayout table_;
  uint64_t reader_slots_ = 0;
};

}  // namespace detail
}  // namespace shmc
