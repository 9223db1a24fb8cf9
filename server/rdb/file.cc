// RDB files (server/rdb/codec.h): FileWriter and ReadFile.
#include <cstdio>
#include <string>
#include <string_view>

#include "server/rdb/codec.h"
#include "server/rdb/crc64.h"

namespace shmkv {
namespace rdb {

namespace {

constexpr uint8_t kOpModuleAux = 247;
constexpr uint8_t kOpIdle = 248;
constexpr uint8_t kOpFreq = 249;
constexpr uint8_t kOpAux = 250;
constexpr uint8_t kOpResizeDb = 251;
constexpr uint8_t kOpExpireMs = 252;
constexpr uint8_t kOpExpireSec = 253;
constexpr uint8_t kOpSelectDb = 254;
constexpr uint8_t kOpEof = 255;
constexpr size_t kFlushAt = 1 << 20;
constexpr uint32_t kDatabases = 16;

}  // namespace

FileWriter::FileWriter(std::function<bool(std::string_view)> sink)
    : sink_(std::move(sink)) {}

bool FileWriter::Flush(bool all) {
  if (!ok_) return false;
  if (!all && buf_.size() < kFlushAt) return true;
  crc_ = Crc64(crc_, buf_.data(), buf_.size());
  ok_ = sink_(buf_);
  buf_.clear();
  return ok_;
}

bool FileWriter::Begin(int64_t unix_time, uint64_t used_memory) {
  char head[16];
  std::snprintf(head, sizeof(head), "REDIS%04u", static_cast<unsigned>(kVersion));
  buf_ += head;
  Writer w(&buf_);
  auto aux = [&](std::string_view name, const std::string& value) {
    w.Byte(kOpAux);
    w.String(name);
    w.String(value);
  };
  aux("redis-ver", "7.0.0");
  aux("redis-bits", "64");
  aux("ctime", std::to_string(unix_time));
  aux("used-mem", std::to_string(used_memory));
  aux("aof-base", "0");
  return Flush(false);
}

bool FileWriter::Database(uint32_t db, uint64_t keys, uint64_t expires) {
  Writer w(&buf_);
  w.Byte(kOpSelectDb);
  w.Length(db);
  w.Byte(kOpResizeDb);
  w.Length(keys);
  w.Length(expires);
  return Flush(false);
}

bool FileWriter::Function(std::string_view code) {
  Writer w(&buf_);
  WriteFunction(&w, code);
  return Flush(false);
}

bool FileWriter::Key(std::string_view key, const Value& v,
                     int64_t expire_ms) {
  Writer w(&buf_);
  if (expire_ms != 0) {
    w.Byte(kOpExpireMs);
    for (int k = 0; k < 8; ++k) {
      w.Byte(static_cast<uint8_t>(static_cast<uint64_t>(expire_ms) >> (8 * k)));
    }
  }
  w.TypeOf(v);
  w.String(key);
  w.BodyOf(v);
  return Flush(false);
}

bool FileWriter::Finish() {
  Writer(&buf_).Byte(kOpEof);
  if (!ok_) return false;
  crc_ = Crc64(crc_, buf_.data(), buf_.size());
  for (int k = 0; k < 8; ++k) buf_.push_back(static_cast<char>(crc_ >> (8 * k)));
  ok_ = sink_(buf_);
  buf_.clear();
  return ok_;
}

bool ReadFile(std::string_view bytes, size_t max_string,
              const std::function<bool(Entry&, std::string*)>& f,
              std::string* why,
              const std::function<bool(std::string_view, std::string*)>&
                  on_function) {
  if (bytes.size() < 9 || bytes.substr(0, 5) != "REDIS") {
    *why = "not an RDB file (no REDIS header)";
    return false;
  }
  unsigned version = 0;
  for (size_t i = 5; i < 9; ++i) {
    if (bytes[i] < '0' || bytes[i] > '9') {
      *why = "not an RDB file (no version after REDIS)";
      return false;
    }
    version = version * 10 + static_cast<unsigned>(bytes[i] - '0');
  }
  if (version < 1 || version > kVersion) {
    *why = "RDB version " + std::to_string(version) +
           (version > kVersion ? " is newer than " + std::to_string(kVersion)
                               : " does not exist");
    return false;
  }
  // From version 5 on the file ends with the CRC of all before it.
  std::string_view body = bytes;
  if (version >= 5) {
    if (bytes.size() < 9 + 1 + 8) {
      *why = "truncated: no end marker and CRC";
      return false;
    }
    body = bytes.substr(0, bytes.size() - 8);
    const uint64_t stored = LoadLE(bytes.data() + body.size(), 8);
    if (stored != 0 && stored != Crc64(0, body.data(), body.size())) {
      *why = "the CRC does not match (the file is damaged or truncated)";
      return false;
    }
  }
  Reader r(body, max_string);
  r.Skip(9);
  Entry e;
  int64_t expire = 0;
  bool eof = false;
  while (r.ok() && !eof) {
    uint8_t op = 0;
    if (!r.Byte(&op)) break;
    std::string scratch;
    uint64_t n = 0;
    switch (op) {
      case kOpAux:
        r.String(&scratch) && r.String(&scratch);
        break;
      case kOpResizeDb:
        r.Length(&n) && r.Length(&n);
        break;
      case kOpSelectDb:
        if (r.Length(&n) && n >= kDatabases) {
          r.Fail("database " + std::to_string(n) + ", past the " +
                 std::to_string(kDatabases) + " shmkv has");
        }
        e.db = static_cast<uint32_t>(n);
        break;
      case kOpExpireMs:
      case kOpExpireSec: {
        const int width = op == kOpExpireMs ? 8 : 4;
        std::string_view b;
        if (!r.Bytes(static_cast<size_t>(width), &b)) break;
        const uint64_t t = LoadLE(b.data(), width);
        expire = op == kOpExpireMs ? static_cast<int64_t>(t)
                                   : static_cast<int64_t>(t) * 1000;
        if (expire <= 0) r.Fail("an expiry that is not a time");
        break;
      }
      case kOpIdle:
        r.Length(&n);
        break;
      case kOpFreq: {
        uint8_t b = 0;
        r.Byte(&b);
        break;
      }
      case kOpModuleAux:
        r.Fail("module data, which shmkv does not hold");
        break;
      case kOpFunction:
      case kOpFunction2: {
        if (on_function == nullptr) {
          r.Fail("a function library, which this reader does not take");
          break;
        }
        std::string code, stop;
        if (!ReadFunction(&r, op, &code)) break;
        if (!on_function(code, &stop)) {
          *why = "function library: " + stop;
          return false;
        }
        break;
      }
      case kOpEof:
        eof = true;
        break;
      default: {
        e.key.clear();
        if (!r.String(&e.key)) break;
        const size_t at = r.offset();
        if (!r.ValueBody(op, &e.value)) {
          *why = "key '" + e.key.substr(0, 64) + "' (at byte " +
                 std::to_string(at) + "): " + r.error();
          return false;
        }
        e.expire_ms = expire;
        expire = 0;
        std::string stop;
        if (!f(e, &stop)) {
          *why = "key '" + e.key.substr(0, 64) + "': " + stop;
          return false;
        }
        break;
      }
    }
  }
  if (r.ok() && !eof) r.Fail("truncated: no end marker");
  if (r.ok() && r.left() != 0) r.Fail("bytes after the end marker");
  if (!r.ok()) {
    *why = r.error();
    return false;
  }
  return true;
}

}  // namespace rdb
}  // namespace shmkv
