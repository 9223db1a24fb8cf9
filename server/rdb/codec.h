// Redis's RDB serialization of values (the form of RDB files, DUMP
// payloads and a replica's full sync), as Redis 7.0 writes and reads it:
// RDB version 10.
//
// A value is its type byte, then its body:
//   0  string                a string (below)
//   1  list                  a length, then that many strings
//   2  set                   a length, then that many strings
//   3  sorted set, version 1 a length, then (member string, score as text)
//   4  hash                  a length, then (field, value) strings
//   5  sorted set            a length, then (member, score as 8 bytes LE)
//   10/12/13 list/zset/hash  one string holding a ziplist
//   11 set of integers       one string holding an intset
//   14 list                  a length, then that many ziplist strings
//   16/17 hash/zset          one string holding a listpack
//   18 list                  a length, then per node: its container
//                            (1 one plain element, 2 a listpack), a string
// A length is 6 bits (00xxxxxx), 14 bits (01xxxxxx + 1 byte, big-endian),
// 32 bits (0x80 + 4 bytes BE) or 64 bits (0x81 + 8 bytes BE). A string is
// a length and its bytes, or 11xxxxxx: an integer of 8, 16 or 32 bits
// (little-endian, signed; its decimal text is the string), or LZF: the
// compressed length, the length, the compressed bytes.
//
// A DUMP payload is a value, then the RDB version (2 bytes LE) and the
// CRC-64 of everything before it (8 bytes LE, server/rdb/crc64.h).
//
// Every length, count and encoding comes from outside (a file, a client)
// and is checked before anything is sized by it; a payload is decoded
// whole and checked whole (each ziplist, listpack and intset entry by
// entry, sets and hashes free of repeats, scores not NaN) before any of it
// reaches the store. What does not decode is refused with the offset and
// the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmkv {
namespace rdb {

constexpr uint16_t kVersion = 10;  // what Redis 7.0 writes and reads

enum Type : uint8_t {
  kTypeString = 0,
  kTypeList = 1,
  kTypeSet = 2,
  kTypeZSet = 3,
  kTypeHash = 4,
  kTypeZSet2 = 5,
  kTypeModule = 6,
  kTypeModule2 = 7,
  kTypeHashZipmap = 9,
  kTypeListZiplist = 10,
  kTypeSetIntset = 11,
  kTypeZSetZiplist = 12,
  kTypeHashZiplist = 13,
  kTypeListQuicklist = 14,
  kTypeStreamListpacks = 15,
  kTypeHashListpack = 16,
  kTypeZSetListpack = 17,
  kTypeListQuicklist2 = 18,
  kTypeStreamListpacks2 = 19,
};

// The n-byte little-endian number at p (n <= 8).
uint64_t LoadLE(const char* p, int n);

// What a type byte holds, for messages ("a stream").
const char* TypeName(uint8_t type);

// A stream's entries, counters and consumer groups (types 15 and 19:
// listpacks of entries delta-coded against each node's first, then the
// counters, then the groups, each with its pending entries and its
// consumers).
struct StreamEntry {
  uint64_t ms = 0, seq = 0;
  std::vector<std::string> fields;  // field, value, ...
};
struct StreamPending {
  uint64_t ms = 0, seq = 0;
  uint64_t delivery_ms = 0, count = 0;
  std::string consumer;
};
struct StreamConsumer {
  std::string name;
  uint64_t seen_ms = 0;
};
struct StreamGroup {
  std::string name;
  uint64_t last_ms = 0, last_seq = 0;
  int64_t entries_read = -1;            // -1: not known
  bool estimate_read = false;  // type 15: entries read from the stream
  std::vector<StreamPending> pending;    // in ID order
  std::vector<StreamConsumer> consumers;  // in name order
};
struct StreamBody {
  std::vector<StreamEntry> entries;  // in ID order
  uint64_t last_ms = 0, last_seq = 0;
  uint64_t deleted_ms = 0, deleted_seq = 0;  // the largest ID deleted
  uint64_t added = 0;                        // entries ever added
  std::vector<StreamGroup> groups;           // in name order
};

// A decoded value, whatever its encoding was.
struct Value {
  enum Kind { kString, kList, kSet, kZSet, kHash, kStream } kind = kString;
  std::string str;                                         // a string
  std::vector<std::string> items;                          // list, set
  std::vector<std::pair<std::string, std::string>> pairs;  // hash
  std::vector<std::pair<std::string, double>> scored;      // sorted set
  StreamBody stream;                                       // stream
};

// Appends RDB bytes.
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void Byte(uint8_t b) { out_->push_back(static_cast<char>(b)); }
  void Length(uint64_t n);
  // As Redis writes a string: an integer encoding for the text of an
  // integer that fits 32 bits (11 bytes at most), LZF for one over 20
  // bytes that compresses, else the length and the bytes.
  void String(std::string_view s);
  void Double(double d);  // 8 bytes, little-endian
  // The type byte and body of `v` (strings, lists, sets, sorted sets and
  // hashes in their plain forms: types 0, 1, 2, 5, 4; streams as Redis
  // 7.0 writes them, type 19); a file puts the key between them.
  void ValueOf(const Value& v) {
    TypeOf(v);
    BodyOf(v);
  }
  void TypeOf(const Value& v);
  void BodyOf(const Value& v);

 private:
  std::string* out_;
};

// Reads RDB bytes, every read checked against what is left; a failed
// read says where and why (error(), offset()) and every later one fails.
class Reader {
 public:
  // `max_string`: the largest string (decompressed) accepted.
  Reader(std::string_view bytes, size_t max_string)
      : p_(bytes), max_string_(max_string) {}
  bool ok() const { return err_.empty(); }
  const std::string& error() const { return err_; }
  size_t offset() const { return at_; }
  size_t left() const { return p_.size() - at_; }

  bool Byte(uint8_t* b);
  bool Skip(size_t n) {
    std::string_view s;
    return Take(n, &s);
  }
  bool Bytes(size_t n, std::string_view* out) { return Take(n, out); }
  bool Length(uint64_t* n);
  bool String(std::string* s);
  // A value's body after its type byte (`type`).
  bool ValueBody(uint8_t type, Value* v);
  bool Fail(const std::string& why);

 private:
  // A length, or with *encoded set, a string's special encoding (0..3).
  bool LengthOrEncoding(uint64_t* n, bool* encoded);
  bool Take(size_t n, std::string_view* out);
  // A count of items each at least `min_bytes` long: no more than fit.
  bool Count(uint64_t* n, size_t min_bytes);
  bool Score(double* d);   // type 3: text with a length byte
  bool Binary(double* d);  // type 5: 8 bytes LE
  bool Listpack(std::string_view lp, std::vector<std::string>* out);
  bool Ziplist(std::string_view zl, std::vector<std::string>* out);
  bool Intset(std::string_view is, std::vector<std::string>* out);
  bool Stream(uint8_t type, StreamBody* s);
  bool Groups(uint8_t type, uint64_t groups, StreamBody* s);
  // Items taken as pairs (hash, sorted set), and checked free of repeats.
  bool Pairs(std::vector<std::string>* flat, Value* v);
  bool Unique(const Value& v);

  std::string_view p_;
  size_t at_ = 0;
  size_t max_string_;
  std::string err_;
};

// A DUMP payload of `v`.
std::string Dump(const Value& v);
// Decodes a DUMP payload: false, with *why, when its version is newer than
// kVersion, its CRC does not match, or its value does not decode whole.
// *checksum_ok tells the first two apart from the last (RESTORE answers
// them with different errors).
bool Undump(std::string_view payload, size_t max_string, Value* v,
            bool* checksum_ok, std::string* why);

// Function libraries, as RDB files and FUNCTION DUMP hold them: opcode
// 245 and the library's code (opcode 246, the format of Redis 7.0's
// release candidates, is read too: name, engine, a description, the
// body; read as the code it stands for).
constexpr uint8_t kOpFunction2 = 245;
constexpr uint8_t kOpFunction = 246;
void WriteFunction(Writer* w, std::string_view code);
bool ReadFunction(Reader* r, uint8_t op, std::string* code);
// A FUNCTION DUMP payload of these libraries' codes, and its reading:
// false with *why; *checksum_ok false when the footer is wrong (RESTORE
// answers that apart), else *why is Redis's text for what is wrong.
std::string DumpFunctions(const std::vector<std::string>& codes);
bool UndumpFunctions(std::string_view payload, size_t max_string,
                     std::vector<std::string>* codes, bool* checksum_ok,
                     std::string* why);

}  // namespace rdb
}  // namespace shmkv

namespace shmkv {
namespace rdb {

// RDB files: "REDIS" and the version as 4 digits, auxiliary fields
// (0xfa, name, value), then per database 0xfe and its number, 0xfb and
// its sizes, and its keys (an optional 0xfc and the expiry in ms, 8 bytes
// LE; the type byte, the key, the body), 0xff, and the CRC-64 of
// everything before it (8 bytes LE; 0: not computed).

// One key as a file holds it.
struct Entry {
  uint32_t db = 0;
  std::string key;
  int64_t expire_ms = 0;  // 0: none
  Value value;
};

// Writes a file through `sink` (called with each run of bytes as the
// buffer fills, and at Finish), keeping its CRC as it goes.
class FileWriter {
 public:
  explicit FileWriter(std::function<bool(std::string_view)> sink);
  // The header and the auxiliary fields (redis-ver, redis-bits, ctime,
  // used-mem, aof-base as Redis 7.0 writes them).
  bool Begin(int64_t unix_time, uint64_t used_memory);
  // A database's opening: its number and how many keys (and of them
  // with an expiry) follow.
  bool Database(uint32_t db, uint64_t keys, uint64_t expires);
  bool Key(std::string_view key, const Value& v, int64_t expire_ms);
  // A function library's code (before the databases, as Redis).
  bool Function(std::string_view code);
  // The end marker and the CRC: false when the sink failed anywhere.
  bool Finish();

 private:
  bool Flush(bool all);
  std::function<bool(std::string_view)> sink_;
  std::string buf_;
  uint64_t crc_ = 0;
  bool ok_ = true;
};

// Reads a whole file: calls `f` for each key (false from f stops the read
// and fails it with f's *why); false with *why (the offset and the
// reason) when the file is not an RDB of version 1..kVersion, does not
// decode whole, holds what shmkv does not (a stream, a module value, a
// function library without on_function: named), or its CRC does not match. Nothing is
// called for a file refused before its first key; a caller that must not
// apply part of a file reads it twice (once with a counting f).
// Function libraries go to `on_function` (their code): without one, a
// file that holds any is refused.
bool ReadFile(std::string_view bytes, size_t max_string,
              const std::function<bool(Entry&, std::string*)>& f,
              std::string* why,
              const std::function<bool(std::string_view, std::string*)>&
                  on_function = nullptr);

}  // namespace rdb
}  // namespace shmkv
