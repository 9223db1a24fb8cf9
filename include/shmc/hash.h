// shmc::ShmHash<Key>: the hash that decides where a key lives in a segment.
//
// It must give the same value in every build and every process that shares
// the segment, so std::hash (implementation-defined) is not the default:
//
//  - integers and enums: Mix64, the 64-bit finalizer of MurmurHash3
//    (hash id 1);
//  - std::string, std::string_view and trivially copyable types without
//    padding: HashBytes over their bytes (hash id 2);
//  - any other type with a std::hash specialization (programs written for
//    the reference): Mix64(std::hash<Key>{}(key)), hash id 3. Such segments
//    are only shareable between builds whose std::hash agrees; prefer
//    specializing ShmHash for your key type:
//
//      template <> struct shmc::ShmHash<MyKey> {
//        static constexpr uint32_t kId = 1000;  // yours: >= 1000
//        uint64_t operator()(const MyKey& k) const { ... }
//      };
//
// The id is recorded in the segment (param "hash_id"); a program hashing
// keys another way is refused with layout_mismatch. Golden vectors for ids 1
// and 2 are in tests/hash_test.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

namespace shmc {

inline constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Hash of a byte string: 8-byte little-endian words folded through Mix64,
// the length mixed in so that "a" and "a\0" differ.
inline uint64_t HashBytes(const void* data, size_t len) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x243f6a8885a308d3ULL ^ (len * 0x9e3779b97f4a7c15ULL);
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ Mix64(w)) * 0x9e3779b97f4a7c15ULL;
    h = (h << 29) | (h >> 35);
    p += 8;
    len -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, len);
  h ^= Mix64(tail ^ (static_cast<uint64_t>(len) << 56));
  return Mix64(h);
}

namespace detail {
template <class T, class = void>
struct HasStdHash : std::false_type {};
template <class T>
struct HasStdHash<T, std::void_t<decltype(std::hash<T>{}(std::declval<const T&>()))>>
    : std::true_type {};
}  // namespace detail

// Hash ids recorded in a table's header (param hash_id), so that a table
// is read only by code that places keys the same way: integers (Mix64 of
// the value), plain bytes (HashBytes of the object), std::hash mixed.
constexpr uint32_t kHashIdInteger = 1;
constexpr uint32_t kHashIdBytes = 2;
constexpr uint32_t kHashIdStd = 3;

template <class Key, class Enable = void>
struct ShmHash {
  static_assert(detail::HasStdHash<Key>::value,
                "no fixed hash for this key type: specialize shmc::ShmHash");
  static constexpr uint32_t kId = kHashIdStd;
  uint64_t operator()(const Key& key) const {
    return Mix64(static_cast<uint64_t>(std::hash<Key>{}(key)));
  }
};

template <class Key>
struct ShmHash<Key, std::enable_if_t<std::is_integral<Key>::value ||
                                     std::is_enum<Key>::value>> {
  static constexpr uint32_t kId = kHashIdInteger;
  uint64_t operator()(Key key) const {
    return Mix64(static_cast<uint64_t>(key));
  }
};

template <class Key>
struct ShmHash<Key, std::enable_if_t<!std::is_integral<Key>::value &&
                                     !std::is_enum<Key>::value &&
                                     std::is_trivially_copyable<Key>::value &&
                                     std::has_unique_object_representations<Key>::value>> {
  static constexpr uint32_t kId = kHashIdBytes;
  uint64_t operator()(const Key& key) const {
    return HashBytes(&key, sizeof(key));
  }
};

template <>
struct ShmHash<std::string> {
  static constexpr uint32_t kId = kHashIdBytes;
  uint64_t operator()(const std::string& s) const {
    return HashBytes(s.data(), s.size());
  }
};

template <>
struct ShmHash<std::string_view> {
  static constexpr uint32_t kId = kHashIdBytes;
  uint64_t operator()(std::string_view s) const {
    return HashBytes(s.data(), s.size());
  }
};

}  // namespace shmc
