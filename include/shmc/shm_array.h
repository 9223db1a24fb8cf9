// ShmArray<Node, Alloc>: a fixed-size array of Node in a shmc segment.
//
// Usage:
//   struct Rec { std::atomic<uint64_t> hits; uint32_t id; };
//   shmc::ShmArray<Rec, shmc::POSIX> a;        // or SVIPC, SVIPC_HugeTLB
//   if (!a.InitForWrite("/myarray", 1000))    // creates, or attaches one
//     log(a.last_error().message);           // of the same geometry
//   a[7].hits.fetch_add(1);
//   // another process: InitForRead("/myarray"), then a[7], a.size()
//
// Layout (docs/layout/array.md): the 512-byte SegmentHeader with params
// node_size, node_align (layout) and node_num (geometry), then the nodes from
// offset RoundUp(512, max(64, alignof(Node))).
//
// Thread safety: the array gives no synchronisation of its own, as in the
// reference. Node contents written by one process and read by another need
// the user's own protocol (e.g. std::atomic members inside Node).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "shmc/common_utils.h"
#include "shmc/detail/fixed_layout.h"
#include "shmc/detail/segment.h"
#include "shmc/errors.h"
#include "shmc/global_options.h"
#include "shmc/shm_alloc.h"

namespace shmc {

template <class Node, class Alloc = SVIPC>
class ShmArray {
  static_assert(std::is_standard_layout<Node>::value,
                "Node lives in shared memory: it must be standard-layout");
  // std::atomic members are welcome (they are not trivially copyable);
  // a Node must not own anything outside the segment, and all-zero bytes
  // must be a valid Node: a new array is zero-filled, never constructed.
  static_assert(std::is_trivially_destructible<Node>::value,
                "Node lives in shared memory: it must not own resources");

 public:
  static constexpr uint32_t kLayoutVersion = detail::kArrayLayoutVersion;

  ShmArray() = default;
  SHMC_NOT_COPYABLE_AND_MOVABLE(ShmArray);

  // Attaches the array `shm_key` read-write, creating it with `size` nodes
  // (zero-filled) as the default create flags allow. An existing array must
  // have the same node type and `size`.
  // Errors: create errors; kWriterBusy; kInvalidArgument for size 0 or
  // too large.
  bool InitForWrite(const std::string& shm_key, size_t size) {
    return InitForWrite(shm_key, size, size);
  }

  // shmc addition: the same, but an array this call creates has the
  // memory of its first `reserved` nodes reserved only; the rest is
  // reserved by Reserve() before it is first touched (a node never
  // reserved may not be read or written: on a full tmpfs that faults).
  // An array that exists is attached as it is.
  bool InitForWrite(const std::string& shm_key, size_t size, size_t reserved) {
    error_.Clear();
    detail::SegmentSpec spec = Spec(size);
    if (reserved < size) {
      spec.reserve_bytes = Layout(0).nodes_offset() + reserved * sizeof(Node);
    }
    if (size == 0 || spec.total_size == 0) {
      return detail::Segment<Alloc>::Fail(
          &error_, ErrorCode::kInvalidArgument, 0, shm_key,
          "ShmArray::InitForWrite", "size must be 1..%zu nodes", MaxNodes());
    }
    int flags = DefaultCreateFlags();
    if (!seg_.OpenForWrite(shm_key, spec, flags, nullptr,
                           "ShmArray::InitForWrite", &error_) ||
        !seg_.TakeWriterLease(flags, "ShmArray::InitForWrite", &error_)) {
      return false;
    }
    Bind();
    return true;
  }

  // Attaches an existing array read-only.
  // Errors: attach errors.
  bool InitForRead(const std::string& shm_key) {
    error_.Clear();
    const char* who = "ShmArray::InitForRead";
    detail::FixedLayout lay = Layout(0);
    if (!detail::OpenFixedForRead(&seg_, shm_key, &lay, who, &error_)) {
      return false;
    }
    Bind();
    return true;
  }

  const volatile Node& operator[](int index) const {
    assert(nodes_ != nullptr && index >= 0 &&
           static_cast<uint64_t>(index) < size_);
    return nodes_[index];
  }
  volatile Node& operator[](int index) {
    assert(nodes_ != nullptr && index >= 0 &&
           static_cast<uint64_t>(index) < size_);
    return nodes_[index];
  }

  size_t size() const { return size_; }

  // shmc additions
  // Reserves the memory of nodes [first, first + count) (see the
  // three-argument InitForWrite): false, kNoSpace, when the system has no
  // room for it; already reserved memory is kept as it is.
  bool Reserve(size_t first, size_t count) {
    if (nodes_ == nullptr || first > size_ || count > size_ - first) {
      return false;
    }
    return seg_.Reserve(Layout(0).nodes_offset() + first * sizeof(Node),
                        count * sizeof(Node), "ShmArray::Reserve", &error_);
  }
  // Reserves bytes [offset, offset + bytes) of node `index` only (whole
  // pages: the pages those bytes fall in), for a node larger than a page
  // whose user fills it from its start.
  bool Reserve(size_t index, size_t offset, size_t bytes) {
    if (nodes_ == nullptr || index >= size_ || offset > sizeof(Node) ||
        bytes > sizeof(Node) - offset) {
      return false;
    }
    return seg_.Reserve(
        Layout(0).nodes_offset() + index * sizeof(Node) + offset, bytes,
        "ShmArray::Reserve", &error_);
  }
  const Error& last_error() const { return error_; }
  bool is_initialized() const { return nodes_ != nullptr; }
  // For MAPFILE: flush to disk now (also done when the array is destroyed).
  bool Sync() { return seg_.Sync(); }

 private:
  static size_t MaxNodes() {
    return (std::numeric_limits<uint64_t>::max() -
            Layout(0).nodes_offset()) / sizeof(Node);
  }

  static detail::FixedLayout Layout(uint64_t node_num) {
    return detail::FixedLayout::Array(sizeof(Node), alignof(Node), node_num);
  }
  static detail::SegmentSpec Spec(uint64_t node_num) {
    return Layout(node_num).spec();
  }

  void Bind() {
    size_ = seg_.param(detail::kParamNodeNum);
    nodes_ = reinterpret_cast<volatile Node*>(seg_.base() +
                                              Layout(0).nodes_offset());
  }

  detail::Segment<Alloc> seg_;
  Error error_;
  volatile Node* nodes_ = nullptr;
  size_t size_ = 0;
};

}  // namespace shmc
