// The common header at offset 0 of every shmc segment (docs/layout/segment.md).
//
//   offset size  field
//        0    8  magic            "shmc.seg" (ASCII, readable with `xxd`)
//        8    4  format_version   version of this common header (kFormatVersion)
//       12    4  kind             ContainerKind
//       16   16  kind_name        "array", "hash_table", ... NUL-padded
//       32    4  layout_version   version of the container's own layout
//       36    4  header_size      bytes before the container's data
//       40    8  total_size       bytes of the segment as created
//       48    8  fingerprint      FNV-1a of layout params + ABI facts
//       56    8  creator_pid
//       64    8  create_time_ns   CLOCK_REALTIME
//       72    4  param_count      used entries of params[]
//       76    4  reserved0
//       80    8  header_checksum  FNV-1a of bytes [0,80) and params[]
//       88   40  reserved1
//      128    4  state            atomic: 0 initializing, kStateReady
//      132    4  reserved2
//      136    8  lease_pid        atomic: writer lease (see shm writers)
//      144    8  lease_start      atomic: the lease holder's start time
//      152    8  lease_epoch      atomic: bumped on every takeover
//      160   96  reserved3
//      256  192  params[8]        {char name[16]; uint64 value}
//      448   64  reserved4
//      512       (container header / data)
//
// Everything before `state` and the params are immutable once the segment is
// ready: the creator writes them, then publishes `state = kStateReady` with a
// release store, last. Attachers read `state` with acquire before any other
// field (see docs/memory-ordering.md). Reserved bytes are zero and may gain a
// meaning in a later minor version without a format bump.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace shmc {
namespace detail {

constexpr size_t kCacheLine = 64;
constexpr char kSegmentMagic[8] = {'s', 'h', 'm', 'c', '.', 's', 'e', 'g'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kStateInitializing = 0;
constexpr uint32_t kStateReady = 0x59444552;  // "REDY" little-endian
constexpr size_t kMaxParams = 8;
constexpr size_t kParamNameLen = 16;
constexpr size_t kKindNameLen = 16;

enum class ContainerKind : uint32_t {
  kArray = 1,
  kHashTable = 2,
  kHashTableM = 3,
  kLinkTable = 4,
  kHashMap = 5,
  kQueue = 6,
  kSyncBuf = 7,
  kDoubleBuf = 8,
  kSortedArray = 9,
  kPercentile = 10,
  kSortedDir = 11,
  kDoubleTable = 12,
  kExtentTable = 13,
};

struct SegmentParam {
  char name[kParamNameLen];  // NUL-padded
  uint64_t value;
};
static_assert(sizeof(SegmentParam) == 24, "params are 24 bytes each");

struct SegmentHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t kind;
  char kind_name[kKindNameLen];
  uint32_t layout_version;
  uint32_t header_size;
  uint64_t total_size;
  uint64_t fingerprint;
  uint64_t creator_pid;
  uint64_t create_time_ns;
  uint32_t param_count;
  uint32_t reserved0;
  uint64_t header_checksum;
  uint8_t reserved1[40];
  std::atomic<uint32_t> state;
  uint32_t reserved2;
  std::atomic<uint64_t> lease_pid;
  std::atomic<uint64_t> lease_start;
  std::atomic<uint64_t> lease_epoch;
  uint8_t reserved3[96];
  SegmentParam params[kMaxParams];
  uint8_t reserved4[64];
};

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free: a lock would live "
              "in one process's address space");
static_assert(sizeof(std::atomic<uint64_t>) == 8 &&
                  sizeof(std::atomic<uint32_t>) == 4,
              "atomics must have the size of the plain integer");
static_assert(std::is_standard_layout<SegmentHeader>::value,
              "segment header is shared between builds");
static_assert(sizeof(SegmentHeader) == 512, "segment header is 512 bytes");
static_assert(alignof(SegmentHeader) == 8, "segment header alignment");
static_assert(offsetof(SegmentHeader, format_version) == 8, "layout");
static_assert(offsetof(SegmentHeader, kind) == 12, "layout");
static_assert(offsetof(SegmentHeader, kind_name) == 16, "layout");
static_assert(offsetof(SegmentHeader, layout_version) == 32, "layout");
static_assert(offsetof(SegmentHeader, header_size) == 36, "layout");
static_assert(offsetof(SegmentHeader, total_size) == 40, "layout");
static_assert(offsetof(SegmentHeader, fingerprint) == 48, "layout");
static_assert(offsetof(SegmentHeader, creator_pid) == 56, "layout");
static_assert(offsetof(SegmentHeader, create_time_ns) == 64, "layout");
static_assert(offsetof(SegmentHeader, param_count) == 72, "layout");
static_assert(offsetof(SegmentHeader, header_checksum) == 80, "layout");
static_assert(offsetof(SegmentHeader, state) == 128,
              "state opens its own cache line, away from immutable fields");
static_assert(offsetof(SegmentHeader, lease_pid) == 136, "layout");
static_assert(offsetof(SegmentHeader, lease_start) == 144, "layout");
static_assert(offsetof(SegmentHeader, lease_epoch) == 152, "layout");
static_assert(offsetof(SegmentHeader, params) == 256, "layout");
static_assert(offsetof(SegmentHeader, reserved4) == 448, "layout");

// Bytes covered by header_checksum: the immutable identity fields and params.
constexpr size_t kChecksumIdentityBytes = offsetof(SegmentHeader,
                                                   header_checksum);

inline const char* KindName(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kArray: return "array";
    case ContainerKind::kHashTable: return "hash_table";
    case ContainerKind::kHashTableM: return "hash_table_m";
    case ContainerKind::kLinkTable: return "link_table";
    case ContainerKind::kHashMap: return "hash_map";
    case ContainerKind::kQueue: return "queue";
    case ContainerKind::kSyncBuf: return "sync_buf";
    case ContainerKind::kDoubleBuf: return "double_buf";
    case ContainerKind::kSortedArray: return "sorted_array";
    case ContainerKind::kPercentile: return "percentile";
    case ContainerKind::kSortedDir: return "sorted_dir";
    case ContainerKind::kDoubleTable: return "double_table";
    case ContainerKind::kExtentTable: return "extent_table";
  }
  return "unknown";
}

}  // namespace detail
}  // namespace shmc
