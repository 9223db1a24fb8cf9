#include "server/rdb/codec.h"

#include <lzf.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "server/rdb/codec_internal.h"
#include "server/rdb/crc64.h"

namespace shmkv {
namespace rdb {

uint64_t LoadLE(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

// The integer whose canonical decimal text `s` is (no sign but '-', no
// leading zeros, no "-0"), as Redis takes a string for an integer.
bool CanonicalInt(std::string_view s, int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || (s[i] == '0' && s.size() != 1)) return false;
  uint64_t mag = 0;
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] < '0' || s[k] > '9') return false;
    const uint64_t d = static_cast<uint64_t>(s[k] - '0');
    if (mag > (UINT64_MAX - d) / 10) return false;
    mag = mag * 10 + d;
  }
  if (i == 1) {
    if (mag > uint64_t{1} << 63) return false;
    *v = static_cast<int64_t>(0 - mag);
  } else {
    if (mag > static_cast<uint64_t>(INT64_MAX)) return false;
    *v = static_cast<int64_t>(mag);
  }
  return true;
}

// A listpack entry's back length: the length l of its encoding and data,
// 7 bits a byte, the first byte holding the highest bits.
size_t Backlen(uint64_t l, unsigned char* buf) {
  size_t n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3
                              : l < 268435455 ? 4 : 5;
  for (size_t k = 0; k < n; ++k) {
    const unsigned shift = static_cast<unsigned>(7 * (n - 1 - k));
    buf[k] = static_cast<unsigned char>(
        ((l >> shift) & 127) | (k == 0 ? 0 : 128));
  }
  return n;
}

namespace {

int64_t SignExtend(uint64_t v, int bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

// A score as text (listpack and ziplist entries, type 3): all of it a
// number, not NaN.
bool ParseScore(const std::string& s, double* d) {
  if (s.empty() || s.size() > 128) return false;
  char* end = nullptr;
  *d = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && !std::isnan(*d);
}

}  // namespace

const char* TypeName(uint8_t type) {
  switch (type) {
    case kTypeString: return "string";
    case kTypeList: case kTypeListZiplist: case kTypeListQuicklist:
    case kTypeListQuicklist2: return "list";
    case kTypeSet: case kTypeSetIntset: return "set";
    case kTypeZSet: case kTypeZSet2: case kTypeZSetZiplist:
    case kTypeZSetListpack: return "zset";
    case kTypeHash: case kTypeHashZipmap: case kTypeHashZiplist:
    case kTypeHashListpack: return "hash";
    case kTypeModule: case kTypeModule2: return "module";
    case kTypeStreamListpacks: case kTypeStreamListpacks2: return "stream";
    default: return "unknown";
  }
}

// ---- Writer --------------------------------------------------------

void Writer::Length(uint64_t n) {
  if (n < 64) {
    Byte(static_cast<uint8_t>(n));
  } else if (n < 16384) {
    Byte(static_cast<uint8_t>(0x40 | (n >> 8)));
    Byte(static_cast<uint8_t>(n & 0xff));
  } else {
    const int bytes = n <= UINT32_MAX ? 4 : 8;
    Byte(bytes == 4 ? 0x80 : 0x81);
    for (int k = bytes - 1; k >= 0; --k) {
      Byte(static_cast<uint8_t>(n >> (8 * k)));
    }
  }
}

void Writer::String(std::string_view s) {
  int64_t v = 0;
  if (s.size() <= 11 && CanonicalInt(s, &v) && v >= INT32_MIN &&
      v <= INT32_MAX) {
    const int bytes = v >= INT8_MIN && v <= INT8_MAX     ? 1
                      : v >= INT16_MIN && v <= INT16_MAX ? 2
                                                          : 4;
    Byte(static_cast<uint8_t>(0xc0 | (bytes == 1 ? 0 : bytes == 2 ? 1 : 2)));
    for (int k = 0; k < bytes; ++k) {
      Byte(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * k)));
    }
    return;
  }
  if (s.size() > 20 && s.size() <= UINT32_MAX) {
    // Kept only when it saves at least four bytes, as Redis keeps it.
    std::string packed(s.size() - 4, '\0');
    const unsigned int n = lzf_compress(
        s.data(), static_cast<unsigned int>(s.size()), packed.data(),
        static_cast<unsigned int>(packed.size()));
    if (n != 0) {
      Byte(0xc3);
      Length(n);
      Length(s.size());
      out_->append(packed.data(), n);
      return;
    }
  }
  Length(s.size());
  out_->append(s.data(), s.size());
}

void Writer::Double(double d) {
  char b[8];
  std::memcpy(b, &d, 8);
  out_->append(b, 8);
}

void Writer::TypeOf(const Value& v) {
  static constexpr uint8_t kTypes[] = {kTypeString, kTypeList, kTypeSet,
                                       kTypeZSet2, kTypeHash,
                                       kTypeStreamListpacks2};
  Byte(kTypes[v.kind]);
}

namespace {

}  // namespace

void Writer::BodyOf(const Value& v) {
  switch (v.kind) {
    case Value::kString:
      String(v.str);
      return;
    case Value::kList:
    case Value::kSet:
      Length(v.items.size());
      for (const std::string& s : v.items) String(s);
      return;
    case Value::kZSet:
      Length(v.scored.size());
      for (const auto& [member, score] : v.scored) {
        String(member);
        Double(score);
      }
      return;
    case Value::kHash:
      Length(v.pairs.size());
      for (const auto& [field, value] : v.pairs) {
        String(field);
        String(value);
      }
      return;
    case Value::kStream:
      WriteStream(this, v.stream);
      return;
  }
}

// ---- Reader --------------------------------------------------------

bool Reader::Fail(const std::string& why) {
  if (err_.empty()) err_ = why + " at byte " + std::to_string(at_);
  return false;
}

bool Reader::Take(size_t n, std::string_view* out) {
  if (!ok()) return false;
  if (n > left()) return Fail("truncated: " + std::to_string(n) +
                              " bytes wanted, " + std::to_string(left()) +
                              " left");
  *out = p_.substr(at_, n);
  at_ += n;
  return true;
}

bool Reader::Byte(uint8_t* b) {
  std::string_view s;
  if (!Take(1, &s)) return false;
  *b = static_cast<uint8_t>(s[0]);
  return true;
}

bool Reader::LengthOrEncoding(uint64_t* n, bool* encoded) {
  uint8_t b = 0;
  if (!Byte(&b)) return false;
  *encoded = false;
  std::string_view s;
  switch (b >> 6) {
    case 0:
      *n = b & 0x3f;
      return true;
    case 1:
      if (!Take(1, &s)) return false;
      *n = static_cast<uint64_t>(b & 0x3f) << 8 | static_cast<uint8_t>(s[0]);
      return true;
    case 2: {
      const int bytes = b == 0x80 ? 4 : b == 0x81 ? 8 : 0;
      if (bytes == 0) return Fail("unknown length encoding " +
                                  std::to_string(b));
      if (!Take(static_cast<size_t>(bytes), &s)) return false;
      *n = 0;
      for (char c : s) *n = *n << 8 | static_cast<uint8_t>(c);
      return true;
    }
    default:
      *encoded = true;
      *n = b & 0x3f;
      return true;
  }
}

bool Reader::Length(uint64_t* n) {
  bool encoded = false;
  if (!LengthOrEncoding(n, &encoded)) return false;
  if (encoded) return Fail("a string encoding where a length belongs");
  return true;
}

bool Reader::Count(uint64_t* n, size_t min_bytes) {
  if (!Length(n)) return false;
  if (*n > left() / min_bytes) {
    return Fail("a count of " + std::to_string(*n) + " past the bytes left");
  }
  return true;
}

bool Reader::String(std::string* s) {
  uint64_t n = 0;
  bool encoded = false;
  if (!LengthOrEncoding(&n, &encoded)) return false;
  std::string_view b;
  if (!encoded) {
    if (n > max_string_) return Fail("a string of " + std::to_string(n) +
                                     " bytes, past the limit");
    if (!Take(static_cast<size_t>(n), &b)) return false;
    s->assign(b.data(), b.size());
    return true;
  }
  if (n <= 2) {
    const int bytes = 1 << n;
    if (!Take(static_cast<size_t>(bytes), &b)) return false;
    *s = std::to_string(SignExtend(LoadLE(b.data(), bytes), 8 * bytes));
    return true;
  }
  // LZF: the compressed length, the length, the compressed bytes.
  uint64_t clen = 0, len = 0;
  if (!Length(&clen) || !Length(&len)) return false;
  if (len == 0 || clen == 0 || len > max_string_ || len > UINT32_MAX) {
    return Fail("a compressed string of " + std::to_string(len) +
                " bytes in " + std::to_string(clen));
  }
  if (!Take(static_cast<size_t>(clen), &b)) return false;
  s->assign(static_cast<size_t>(len), '\0');
  const unsigned int got = lzf_decompress(
      b.data(), static_cast<unsigned int>(clen), s->data(),
      static_cast<unsigned int>(len));
  if (got != len) return Fail("a compressed string that does not expand to "
                              "its length");
  return true;
}

bool Reader::Score(double* d) {
  uint8_t n = 0;
  if (!Byte(&n)) return false;
  if (n >= 253) {
    if (n == 253) return Fail("a NaN score");
    *d = n == 254 ? HUGE_VAL : -HUGE_VAL;
    return true;
  }
  std::string_view b;
  if (!Take(n, &b)) return false;
  if (!ParseScore(std::string(b), d)) return Fail("a score that is not a number");
  return true;
}

bool Reader::Binary(double* d) {
  std::string_view b;
  if (!Take(8, &b)) return false;
  std::memcpy(d, b.data(), 8);
  if (std::isnan(*d)) return Fail("a NaN score");
  return true;
}

bool Reader::Listpack(std::string_view lp, std::vector<std::string>* out) {
  // Header: total bytes (4, LE), element count (2, LE; 65535: not kept).
  if (lp.size() < 7 || LoadLE(lp.data(), 4) != lp.size()) {
    return Fail("a listpack whose header does not give its size");
  }
  const uint64_t count = LoadLE(lp.data() + 4, 2);
  size_t at = 6, seen = 0;
  const size_t end = lp.size() - 1;  // where the end byte must be
  while (at < end) {
    const uint8_t b = static_cast<uint8_t>(lp[at]);
    size_t head = 1, slen = 0;
    bool is_int = true;
    int64_t iv = 0;
    auto need = [&](size_t n) { return n <= end - at; };
    if ((b & 0x80) == 0) {
      iv = b & 0x7f;
    } else if ((b & 0xc0) == 0x80) {
      is_int = false;
      slen = b & 0x3f;
    } else if ((b & 0xe0) == 0xc0) {
      head = 2;
      if (!need(2)) break;
      iv = SignExtend(static_cast<uint64_t>(b & 0x1f) << 8 |
                          static_cast<uint8_t>(lp[at + 1]), 13);
    } else if ((b & 0xf0) == 0xe0) {
      head = 2;
      is_int = false;
      if (!need(2)) break;
      slen = static_cast<size_t>(b & 0x0f) << 8 |
             static_cast<uint8_t>(lp[at + 1]);
    } else if (b == 0xf0) {
      head = 5;
      is_int = false;
      if (!need(5)) break;
      slen = static_cast<size_t>(LoadLE(lp.data() + at + 1, 4));
    } else if (b >= 0xf1 && b <= 0xf4) {
      const int bytes = b == 0xf1 ? 2 : b == 0xf2 ? 3 : b == 0xf3 ? 4 : 8;
      head = 1 + static_cast<size_t>(bytes);
      if (!need(head)) break;
      iv = SignExtend(LoadLE(lp.data() + at + 1, bytes), 8 * bytes);
    } else {
      return Fail("a listpack entry of unknown encoding " + std::to_string(b));
    }
    const size_t l = head + slen;  // the entry without its back length
    unsigned char want[5];
    const size_t blen = Backlen(l, want);
    if (slen > end - at || l + blen > end - at) break;
    if (std::memcmp(lp.data() + at + l, want, blen) != 0) {
      return Fail("a listpack entry whose back length is not its length");
    }
    if (is_int) {
      out->push_back(std::to_string(iv));
    } else {
      out->emplace_back(lp.data() + at + head, slen);
    }
    at += l + blen;
    ++seen;
  }
  if (at != end || static_cast<uint8_t>(lp[end]) != 0xff) {
    return Fail("a listpack entry that runs past its end");
  }
  if (count != 65535 && count != seen) {
    return Fail("a listpack that counts " + std::to_string(count) +
                " entries and holds " + std::to_string(seen));
  }
  return true;
}

bool Reader::Ziplist(std::string_view zl, std::vector<std::string>* out) {
  // Header: total bytes (4, LE), offset of the last entry (4), count (2).
  if (zl.size() < 11 || LoadLE(zl.data(), 4) != zl.size()) {
    return Fail("a ziplist whose header does not give its size");
  }
  const uint64_t tail = LoadLE(zl.data() + 4, 4);
  const uint64_t count = LoadLE(zl.data() + 8, 2);
  size_t at = 10, seen = 0, prev_len = 0, last = 10;
  const size_t end = zl.size() - 1;
  while (at < end) {
    // The previous entry's length: 1 byte, or 0xfe and 4 bytes (LE).
    size_t pl = 0, ph = 1;
    const uint8_t p0 = static_cast<uint8_t>(zl[at]);
    if (p0 == 0xfe) {
      ph = 5;
      if (end - at < 5) break;
      pl = static_cast<size_t>(LoadLE(zl.data() + at + 1, 4));
    } else if (p0 == 0xff) {
      break;
    } else {
      pl = p0;
    }
    if (pl != prev_len) {
      return Fail("a ziplist entry whose previous length is wrong");
    }
    const size_t e = at + ph;
    if (e >= end) break;
    const uint8_t b = static_cast<uint8_t>(zl[e]);
    size_t head = 1, slen = 0;
    bool is_int = true;
    int64_t iv = 0;
    const size_t room = end - e;
    if ((b >> 6) == 0) {
      is_int = false;
      slen = b & 0x3f;
    } else if ((b >> 6) == 1) {
      is_int = false;
      head = 2;
      if (room < 2) break;
      slen = static_cast<size_t>(b & 0x3f) << 8 | static_cast<uint8_t>(zl[e + 1]);
    } else if (b == 0x80) {
      is_int = false;
      head = 5;
      if (room < 5) break;
      slen = 0;
      for (int k = 1; k <= 4; ++k) {
        slen = slen << 8 | static_cast<uint8_t>(zl[e + static_cast<size_t>(k)]);
      }
    } else {
      int bytes = 0;
      switch (b) {
        case 0xc0: bytes = 2; break;
        case 0xd0: bytes = 4; break;
        case 0xe0: bytes = 8; break;
        case 0xf0: bytes = 3; break;
        case 0xfe: bytes = 1; break;
        default:
          if (b >= 0xf1 && b <= 0xfd) {
            iv = (b & 0x0f) - 1;
          } else {
            return Fail("a ziplist entry of unknown encoding " +
                        std::to_string(b));
          }
      }
      head = 1 + static_cast<size_t>(bytes);
      if (room < head) break;
      if (bytes != 0) {
        iv = SignExtend(LoadLE(zl.data() + e + 1, bytes), 8 * bytes);
      }
    }
    if (slen > room || head + slen > room) break;
    if (is_int) {
      out->push_back(std::to_string(iv));
    } else {
      out->emplace_back(zl.data() + e + head, slen);
    }
    last = at;
    prev_len = ph + head + slen;
    at = e + head + slen;
    ++seen;
  }
  if (at != end || static_cast<uint8_t>(zl[end]) != 0xff) {
    return Fail("a ziplist entry that runs past its end");
  }
  if (tail != last) return Fail("a ziplist whose tail offset is wrong");
  if (count != 65535 && count != seen) {
    return Fail("a ziplist that counts " + std::to_string(count) +
                " entries and holds " + std::to_string(seen));
  }
  return true;
}

bool Reader::Intset(std::string_view is, std::vector<std::string>* out) {
  // Width (4, LE: 2, 4 or 8), count (4, LE), the integers rising.
  if (is.size() < 8) return Fail("an intset shorter than its header");
  const uint64_t width = LoadLE(is.data(), 4);
  const uint64_t n = LoadLE(is.data() + 4, 4);
  if ((width != 2 && width != 4 && width != 8) ||
      n > (is.size() - 8) / width || 8 + n * width != is.size()) {
    return Fail("an intset whose header does not give its size");
  }
  if (n == 0) return Fail("an empty intset");
  int64_t prev = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const int bits = static_cast<int>(8 * width);
    const int64_t v = SignExtend(
        LoadLE(is.data() + 8 + i * width, static_cast<int>(width)), bits);
    if (i > 0 && v <= prev) return Fail("an intset not rising");
    out->push_back(std::to_string(v));
    prev = v;
  }
  return true;
}

bool Reader::Pairs(std::vector<std::string>* flat, Value* v) {
  if (flat->size() % 2 != 0) return Fail("pairs with one missing");
  for (size_t i = 0; i < flat->size(); i += 2) {
    if (v->kind == Value::kHash) {
      v->pairs.emplace_back(std::move((*flat)[i]), std::move((*flat)[i + 1]));
    } else {
      double d = 0;
      if (!ParseScore((*flat)[i + 1], &d)) {
        return Fail("a score that is not a number");
      }
      v->scored.emplace_back(std::move((*flat)[i]), d);
    }
  }
  return true;
}

bool Reader::Unique(const Value& v) {
  std::unordered_set<std::string_view> seen;
  bool dup = false;
  auto add = [&](const std::string& s) {
    dup = dup || !seen.insert(s).second;
  };
  if (v.kind == Value::kSet) for (const auto& s : v.items) add(s);
  if (v.kind == Value::kHash) for (const auto& p : v.pairs) add(p.first);
  if (v.kind == Value::kZSet) for (const auto& p : v.scored) add(p.first);
  if (dup) return Fail("a repeated member or field");
  return true;
}

bool Reader::ValueBody(uint8_t type, Value* v) {
  *v = Value();
  uint64_t n = 0;
  std::string blob;
  std::vector<std::string> flat;
  switch (type) {
    case kTypeString:
      v->kind = Value::kString;
      return String(&v->str);
    case kTypeList:
    case kTypeSet:
      v->kind = type == kTypeList ? Value::kList : Value::kSet;
      if (!Count(&n, 1)) return false;
      v->items.resize(static_cast<size_t>(n));
      for (std::string& s : v->items) {
        if (!String(&s)) return false;
      }
      break;
    case kTypeZSet:
    case kTypeZSet2:
      v->kind = Value::kZSet;
      if (!Count(&n, type == kTypeZSet ? 2 : 9)) return false;
      v->scored.resize(static_cast<size_t>(n));
      for (auto& [member, score] : v->scored) {
        if (!String(&member) ||
            !(type == kTypeZSet ? Score(&score) : Binary(&score))) {
          return false;
        }
      }
      break;
    case kTypeHash:
      v->kind = Value::kHash;
      if (!Count(&n, 2)) return false;
      v->pairs.resize(static_cast<size_t>(n));
      for (auto& [field, value] : v->pairs) {
        if (!String(&field) || !String(&value)) return false;
      }
      break;
    case kTypeListZiplist:
    case kTypeZSetZiplist:
    case kTypeHashZiplist:
    case kTypeHashListpack:
    case kTypeZSetListpack: {
      const bool lp = type == kTypeHashListpack || type == kTypeZSetListpack;
      if (!String(&blob)) return false;
      if (!(lp ? Listpack(blob, &flat) : Ziplist(blob, &flat))) return false;
      if (type == kTypeListZiplist) {
        v->kind = Value::kList;
        v->items = std::move(flat);
        break;
      }
      v->kind = type == kTypeHashZiplist || type == kTypeHashListpack
                    ? Value::kHash
                    : Value::kZSet;
      if (!Pairs(&flat, v)) return false;
      break;
    }
    case kTypeSetIntset:
      v->kind = Value::kSet;
      if (!String(&blob) || !Intset(blob, &v->items)) return false;
      break;
    case kTypeListQuicklist:
    case kTypeListQuicklist2:
      v->kind = Value::kList;
      if (!Count(&n, type == kTypeListQuicklist ? 1 : 2)) return false;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t container = 2;  // type 14: every node a ziplist
        if (type == kTypeListQuicklist2 && !Length(&container)) return false;
        if (container != 1 && container != 2) {
          return Fail("a list node of unknown container " +
                      std::to_string(container));
        }
        if (!String(&blob)) return false;
        if (container == 1) {
          v->items.push_back(std::move(blob));
        } else if (!(type == kTypeListQuicklist ? Ziplist(blob, &v->items)
                                                : Listpack(blob, &v->items))) {
          return false;
        }
      }
      break;
    case kTypeStreamListpacks:
    case kTypeStreamListpacks2:
      v->kind = Value::kStream;
      return Stream(type, &v->stream);  // a stream may be empty
    default:
      return Fail(std::string("a ") + TypeName(type) + " value (type " +
                  std::to_string(type) + "), which shmkv does not hold");
  }
  if (v->items.empty() && v->pairs.empty() && v->scored.empty()) {
    return Fail("an empty collection");
  }
  return Unique(*v);
}

// ---- DUMP payloads ---------------------------------------------------

namespace {
// A payload's footer: the RDB version (2 bytes LE) and the CRC-64 of
// everything before the CRC (8 bytes LE).
void AppendFooter(std::string* out) {
  Writer w(out);
  w.Byte(static_cast<uint8_t>(kVersion & 0xff));
  w.Byte(static_cast<uint8_t>(kVersion >> 8));
  const uint64_t crc = Crc64(0, out->data(), out->size());
  for (int k = 0; k < 8; ++k) w.Byte(static_cast<uint8_t>(crc >> (8 * k)));
}
bool FooterOk(std::string_view payload, std::string* why) {
  if (payload.size() < 10) {
    *why = "shorter than its footer";
    return false;
  }
  const char* footer = payload.data() + payload.size() - 10;
  const uint64_t version = LoadLE(footer, 2);
  if (version > kVersion) {
    *why = "RDB version " + std::to_string(version) + " is newer than " +
           std::to_string(kVersion);
    return false;
  }
  if (LoadLE(footer + 2, 8) !=
      Crc64(0, payload.data(), payload.size() - 8)) {
    *why = "its CRC does not match";
    return false;
  }
  return true;
}
}  // namespace

std::string Dump(const Value& v) {
  std::string out;
  Writer w(&out);
  w.ValueOf(v);
  AppendFooter(&out);
  return out;
}

bool Undump(std::string_view payload, size_t max_string, Value* v,
            bool* checksum_ok, std::string* why) {
  *checksum_ok = false;
  if (!FooterOk(payload, why)) return false;
  *checksum_ok = true;
  Reader r(payload.substr(0, payload.size() - 10), max_string);
  uint8_t type = 0;
  if (r.Byte(&type) && r.ValueBody(type, v) && r.left() != 0) {
    r.Fail("bytes after the value");
  }
  if (!r.ok()) {
    *why = r.error();
    return false;
  }
  return true;
}

void WriteFunction(Writer* w, std::string_view code) {
  w->Byte(kOpFunction2);
  w->String(code);
}

bool ReadFunction(Reader* r, uint8_t op, std::string* code) {
  if (op == kOpFunction2) {
    return r->String(code) || r->Fail("Failed loading library payload");
  }
  std::string name, engine, desc, body;
  uint64_t has_desc = 0;
  if (!r->String(&name)) return r->Fail("Failed loading library name");
  if (!r->String(&engine)) return r->Fail("Failed loading engine name");
  if (!r->Length(&has_desc)) {
    return r->Fail("Failed loading library description indicator");
  }
  if (has_desc != 0 && !r->String(&desc)) {
    return r->Fail("Failed loading library description");
  }
  if (!r->String(&body)) return r->Fail("Failed loading library blob");
  *code = "#!" + engine + " name=" + name + "\n" + body;
  return true;
}

std::string DumpFunctions(const std::vector<std::string>& codes) {
  std::string out;
  Writer w(&out);
  for (const std::string& c : codes) WriteFunction(&w, c);
  AppendFooter(&out);
  return out;
}

bool UndumpFunctions(std::string_view payload, size_t max_string,
                     std::vector<std::string>* codes, bool* checksum_ok,
                     std::string* why) {
  codes->clear();
  *checksum_ok = false;
  if (!FooterOk(payload, why)) return false;
  *checksum_ok = true;
  // As Redis reads it: over the whole payload, while more than the
  // footer is left (a library may run into the footer's bytes).
  Reader r(payload, max_string);
  while (r.ok() && r.left() > 10) {
    uint8_t op = 0;
    if (!r.Byte(&op)) break;
    if (op != kOpFunction2 && op != kOpFunction) {
      *why = "given type is not a function";
      return false;
    }
    std::string code;
    if (!ReadFunction(&r, op, &code)) break;
    codes->push_back(std::move(code));
  }
  if (!r.ok()) {
    *why = r.error();
    return false;
  }
  return true;
}

}  // namespace rdb
}  // namespace shmkv
