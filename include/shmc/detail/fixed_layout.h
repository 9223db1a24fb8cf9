// Layouts of the fixed-node containers, ShmArray, ShmHashTable and
// ShmHashTableM (docs/layout/array.md, docs/layout/hash_table.md), described
// by their header params alone. The containers build their segment specs
// and find their parts through FixedLayout; the `shmc` tool, which cannot
// name a program's Node type, reads the same params back from a header
// (FromHeader) and gets the same offsets. Nothing else computes them.
//
//   array:        [SegmentHeader][nodes: node_num]
//   hash table:   [SegmentHeader][HashTableHeader][bitmaps][tags][nodes]
//   hash table M: [SegmentHeader][nodes: row_num x col_num]
//
// Nodes start on a cache line, or on the node's own alignment if larger
// (NodesStart). A table's slots form rows; RowSpan says which slots of a
// row a key can reach (ShmHashTableM's row r uses its first mods[r]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shmc/detail/segment.h"
#include "shmc/detail/segment_header.h"
#include "shmc/detail/table_geometry.h"

namespace shmc {
namespace detail {

// Layout versions: a change to where anything lies bumps its kind's.
constexpr uint32_t kArrayLayoutVersion = 1;
// 2: tag array (one byte per slot) between the bitmaps and the nodes.
constexpr uint32_t kTableLayoutVersion = 2;
constexpr uint32_t kTableMLayoutVersion = 1;

// ShmHashTableM's rows: fewer cannot reach its fill, more cost a probe each.
constexpr uint64_t kTableMMinRows = 10;
constexpr uint64_t kTableMMaxRows = 200;
constexpr uint64_t kTableMMaxCols = 1ULL << 32;

// Nodes larger than this are refused when read from a header: no container
// makes them (a node is a struct), and bounding them bounds the arithmetic.
constexpr uint64_t kMaxNodeSize = 1ULL << 24;
constexpr uint64_t kMaxNodeAlign = 4096;

// Param names, as the header records them.
constexpr const char* kParamNodeSize = "node_size";
constexpr const char* kParamNodeAlign = "node_align";
constexpr const char* kParamNodeNum = "node_num";
constexpr const char* kParamHashId = "hash_id";
constexpr const char* kParamBucketSlots = "bucket_slots";
constexpr const char* kParamMainBuckets = "main_buckets";
constexpr const char* kParamOverBuckets = "over_buckets";
constexpr const char* kParamOverRows = "over_rows";
constexpr const char* kParamRowNum = "row_num";
constexpr const char* kParamColNum = "col_num";

inline bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

// The `count` largest primes <= top, descending; false if there are fewer.
// (ShmHashTableM addresses row r modulo the r-th of them.)
inline bool LargestPrimes(uint64_t top, size_t count,
                          std::vector<uint64_t>* out) {
  out->clear();
  for (uint64_t n = top; n >= 2 && out->size() < count; --n) {
    if (IsPrime(n)) out->push_back(n);
  }
  return out->size() == count;
}

struct RowSpan {
  uint64_t first;  // index of the row's first slot
  uint64_t slots;  // slots of the row a key can reach
};

class FixedLayout {
 public:
  FixedLayout() = default;

  // Described by a container from its types and creation arguments.
  static FixedLayout Array(uint64_t node_size, uint64_t node_align,
                           uint64_t node_num) {
    FixedLayout l(ContainerKind::kArray, node_size, node_align, 0);
    l.node_num_ = node_num;
    return l;
  }
  static FixedLayout Table(uint64_t node_size, uint64_t node_align,
                           uint64_t hash_id, const TableGeometry& g) {
    FixedLayout l(ContainerKind::kHashTable, node_size, node_align, hash_id);
    l.geo_ = g;
    return l;
  }
  // `mods` are LargestPrimes(cols, rows), or empty for a reader's spec.
  static FixedLayout TableM(uint64_t node_size, uint64_t node_align,
                            uint64_t hash_id, uint64_t rows, uint64_t cols,
                            std::vector<uint64_t> mods) {
    FixedLayout l(ContainerKind::kHashTableM, node_size, node_align, hash_id);
    l.rows_ = rows;
    l.cols_ = cols;
    l.mods_ = std::move(mods);
    return l;
  }

  // Read from a header of one of the three kinds, node shape included (for
  // a tool that knows no Node type). False, with *why, when the params
  // cannot describe a segment: they may come from a damaged one.
  static bool FromHeader(const SegmentHeader& h, FixedLayout* out,
                         std::string* why) {
    auto kind = static_cast<ContainerKind>(h.kind);
    if (!IsFixed(kind)) {
      *why = "not a fixed-node container";
      return false;
    }
    return FromParams(kind, h, out, why);
  }
  // A hash table's layout from the table params of a header of any kind
  // (a container holding tables, e.g. ShmDoubleTable's halves).
  static bool TableFromHeader(const SegmentHeader& h, FixedLayout* out,
                              std::string* why) {
    return FromParams(ContainerKind::kHashTable, h, out, why);
  }
  static bool FromParams(ContainerKind kind, const SegmentHeader& h,
                         FixedLayout* out, std::string* why) {
    FixedLayout l(kind, ParamByName(h, kParamNodeSize),
                  ParamByName(h, kParamNodeAlign),
                  ParamByName(h, kParamHashId));
    if (kind == ContainerKind::kHashTable) {
      uint64_t s = ParamByName(h, kParamBucketSlots);
      l.geo_.slots = s > 4096 ? 0 : static_cast<uint32_t>(s);
    }
    if (!l.NodePlausible()) {
      *why = "impossible node_size/node_align";
      return false;
    }
    if (!l.ReadGeometry(h)) {
      *why = std::string("impossible ") + l.GeometryWhat();
      return false;
    }
    *out = std::move(l);
    return true;
  }

  static bool IsFixed(ContainerKind kind) {
    return kind == ContainerKind::kArray ||
           kind == ContainerKind::kHashTable ||
           kind == ContainerKind::kHashTableM;
  }

  // Reads the geometry params of a header whose layout params match this
  // layout's (a container's reader): false if they are impossible. Then
  // spec().total_size is what the header's total_size must be.
  bool ReadGeometry(const SegmentHeader& h) {
    switch (kind_) {
      case ContainerKind::kArray:
        node_num_ = ParamByName(h, kParamNodeNum);
        return node_num_ != 0 && node_num_ <= MaxNodes();
      case ContainerKind::kHashTable: {
        uint64_t over_rows = ParamByName(h, kParamOverRows);
        geo_.main_buckets = ParamByName(h, kParamMainBuckets);
        geo_.over_buckets = ParamByName(h, kParamOverBuckets);
        geo_.over_rows = over_rows > kMaxOverRows
                             ? 0 : static_cast<uint32_t>(over_rows);
        return geo_.Derive() && total_size() != 0;
      }
      case ContainerKind::kHashTableM:
        rows_ = ParamByName(h, kParamRowNum);
        cols_ = ParamByName(h, kParamColNum);
        return TableMShapeOk(rows_, cols_) &&
               LargestPrimes(cols_, rows_, &mods_) && total_size() != 0;
      default:
        return false;
    }
  }
  // What ReadGeometry checks, for error messages.
  const char* GeometryWhat() const {
    switch (kind_) {
      case ContainerKind::kArray: return "node_num";
      case ContainerKind::kHashTable: return "hash table geometry";
      default: return "rows x cols";
    }
  }
  // Rows and columns ShmHashTableM accepts (before looking for primes).
  static bool TableMShapeOk(uint64_t rows, uint64_t cols) {
    return rows >= kTableMMinRows && rows <= kTableMMaxRows && cols > rows &&
           cols <= kTableMMaxCols;
  }

  // The spec the container creates and validates with. total_size is 0
  // when the geometry would overflow.
  SegmentSpec spec() const {
    SegmentSpec s;
    s.kind = kind_;
    s.total_size = total_size();
    using R = ParamRole;
    switch (kind_) {
      case ContainerKind::kArray:
        s.layout_version = kArrayLayoutVersion;
        s.header_size = static_cast<uint32_t>(nodes_offset());
        s.params = {{kParamNodeSize, node_size_, R::kLayout},
                    {kParamNodeAlign, node_align_, R::kLayout},
                    {kParamNodeNum, node_num_, R::kGeometry}};
        break;
      case ContainerKind::kHashTable:
        s.layout_version = kTableLayoutVersion;
        s.header_size = static_cast<uint32_t>(kTableBitmapOffset);
        s.params = {{kParamNodeSize, node_size_, R::kLayout},
                    {kParamNodeAlign, node_align_, R::kLayout},
                    {kParamHashId, hash_id_, R::kLayout},
                    {kParamBucketSlots, geo_.slots, R::kLayout},
                    {kParamMainBuckets, geo_.main_buckets, R::kGeometry},
                    {kParamOverBuckets, geo_.over_buckets, R::kGeometry},
                    {kParamOverRows, geo_.over_rows, R::kGeometry}};
        break;
      default:
        s.layout_version = kTableMLayoutVersion;
        s.header_size = static_cast<uint32_t>(nodes_offset());
        s.params = {{kParamNodeSize, node_size_, R::kLayout},
                    {kParamNodeAlign, node_align_, R::kLayout},
                    {kParamHashId, hash_id_, R::kLayout},
                    {kParamRowNum, rows_, R::kGeometry},
                    {kParamColNum, cols_, R::kGeometry}};
        break;
    }
    return s;
  }

  ContainerKind kind() const { return kind_; }
  uint64_t node_size() const { return node_size_; }
  uint64_t hash_id() const { return hash_id_; }
  const TableGeometry& geometry() const { return geo_; }
  uint64_t rows() const { return rows_; }
  uint64_t cols() const { return cols_; }
  const std::vector<uint64_t>& mods() const { return mods_; }

  // Where the nodes start.
  uint64_t nodes_offset() const {
    return kind_ == ContainerKind::kHashTable
               ? TableNodesOffset(geo_, node_align_)
               : NodesStart(sizeof(SegmentHeader), node_align_);
  }
  // Node slots in the segment (a table M's include the ones past mods[r]).
  uint64_t slots() const {
    switch (kind_) {
      case ContainerKind::kArray: return node_num_;
      case ContainerKind::kHashTable: return geo_.total_slots();
      default: return rows_ * cols_;
    }
  }
  // Bytes of the whole segment; 0 if that overflows.
  uint64_t total_size() const {
    if (kind_ == ContainerKind::kHashTable && geo_.slots == 0) return 0;
    uint64_t start = nodes_offset(), n = slots(), bytes, total;
    if (__builtin_mul_overflow(n, node_size_, &bytes) ||
        __builtin_add_overflow(bytes, start, &total)) {
      return 0;
    }
    return total;
  }
  uint64_t node_offset(uint64_t slot) const {
    return nodes_offset() + slot * node_size_;
  }

  // Rows: an array is one row; a table's main rows are rows 0 and 1.
  size_t row_count() const {
    switch (kind_) {
      case ContainerKind::kArray: return 1;
      case ContainerKind::kHashTable: return geo_.rows();
      default: return mods_.size();
    }
  }
  RowSpan row(size_t r) const {
    switch (kind_) {
      case ContainerKind::kArray: return {0, node_num_};
      case ContainerKind::kHashTable:
        return {geo_.row_first[r] * geo_.slots,
                geo_.row_buckets[r] * geo_.slots};
      default: return {r * cols_, mods_[r]};
    }
  }

  // ShmHashTable only: the byte holding slot `slot`'s tag.
  uint64_t tag_byte_offset(uint64_t slot) const {
    return TableTagByteOffset(geo_.main_buckets, geo_.slots, slot);
  }

 private:
  FixedLayout(ContainerKind kind, uint64_t node_size, uint64_t node_align,
              uint64_t hash_id)
      : kind_(kind), node_size_(node_size), node_align_(node_align),
        hash_id_(hash_id) {}

  bool NodePlausible() const {
    return node_size_ != 0 && node_size_ <= kMaxNodeSize &&
           PowerOfTwo(node_align_) && node_align_ <= kMaxNodeAlign &&
           node_size_ % node_align_ == 0;
  }
  uint64_t MaxNodes() const {
    uint64_t start = nodes_offset();
    return (~uint64_t{0} - start) / node_size_;
  }

  ContainerKind kind_ = ContainerKind::kArray;
  uint64_t node_size_ = 0, node_align_ = 0, hash_id_ = 0;
  uint64_t node_num_ = 0;       // array
  TableGeometry geo_;           // hash table
  uint64_t rows_ = 0, cols_ = 0;  // hash table M
  std::vector<uint64_t> mods_;  // hash table M: row r reaches mods_[r] slots
};

// A reader's attach of a fixed-node segment: the header checked against
// `lay`'s spec (its geometry params ignored), then the geometry read back
// into `lay` and checked against the header's size. On failure the
// segment is not attached and *err says why.
template <class Alloc>
bool OpenFixedForRead(Segment<Alloc>* seg, const std::string& key,
                      FixedLayout* lay, const char* who, Error* err) {
  if (!seg->OpenForRead(key, lay->spec(), false, who, err)) return false;
  bool plausible = lay->ReadGeometry(*seg->header());
  return seg->AcceptGeometry(plausible, lay->total_size(),
                             lay->GeometryWhat(), who, err);
}

}  // namespace detail
}  // namespace shmc
