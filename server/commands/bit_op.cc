// BITOP and BITFIELD (server/commands/string_family.cc registers them):
// the bitwise AND, OR, XOR of strings or the NOT of one, stored as a
// string; and integers of 1 to 64 bits read and written at any bit of a
// string.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/commands/command_util.h"
#include "server/commands/notify.h"
#include "server/commands/reply.h"

namespace shmkv {
namespace cmd {

using Status = Store::Status;

// BITOP AND|OR|XOR|NOT destkey key [key ...]
void BitOp(const Args& a, CommandContext* c, Reply* r) {
  enum { kAnd, kOr, kXor, kNot } op;
  if (Eq(a[1], "and")) {
    op = kAnd;
  } else if (Eq(a[1], "or")) {
    op = kOr;
  } else if (Eq(a[1], "xor")) {
    op = kXor;
  } else if (Eq(a[1], "not")) {
    op = kNot;
  } else {
    return r->Error("ERR syntax error");
  }
  if (op == kNot && a.size() != 4) {
    return r->Error("ERR BITOP NOT must be called with a single source key.");
  }
  // A missing key is an empty string, as in Redis; one of another type
  // stops the command before anything is written.
  std::vector<std::string> src(a.size() - 3);
  size_t longest = 0;
  for (size_t i = 3; i < a.size(); ++i) {
    if (ReadString(c, a[i], &src[i - 3]) == Found::kWrongType) {
      return WrongType(r);
    }
    longest = std::max(longest, src[i - 3].size());
  }
  std::string out(longest, '\0');
  for (size_t k = 0; k < longest; ++k) {
    auto byte = [&](const std::string& s) -> unsigned char {
      return k < s.size() ? static_cast<unsigned char>(s[k]) : 0;
    };
    unsigned char v = byte(src[0]);
    if (op == kNot) v = static_cast<unsigned char>(~v);
    for (size_t i = 1; i < src.size(); ++i) {
      const unsigned char b = byte(src[i]);
      if (op == kAnd) v &= b;
      if (op == kOr) v |= b;
      if (op == kXor) v ^= b;
    }
    out[k] = static_cast<char>(v);
  }
  if (longest == 0) {
    // An empty result removes the destination, as Redis does.
    Status st = c->txn->Delete(a[2]);
    if (st == Status::kOk) {
      Notify(c, kNotifyGeneric, "del", a[2]);
    } else if (st != Status::kNotFound) {
      return StoreError(st, r);
    }
    return r->Int(0);
  }
  Status st = c->txn->Write(a[2], ValueType::kString, kStringRaw, out, 0);
  if (st != Status::kOk) return StoreError(st, r);
  Notify(c, kNotifyString, "set", a[2]);
  r->Int(static_cast<int64_t>(longest));
}

namespace {

// One GET, SET or INCRBY of a BITFIELD, as parsed.
struct FieldOp {
  enum Kind { kGet, kSet, kIncrBy } kind;
  enum Overflow { kWrap, kSat, kFail } overflow;
  bool sign;
  int bits;
  uint64_t offset;  // in bits
  int64_t value;    // SET's value, INCRBY's increment
};

// "i1".."i64" or "u1".."u63".
bool FieldType(std::string_view s, bool* sign, int* bits) {
  if (s.empty() || (s[0] != 'i' && s[0] != 'u')) return false;
  *sign = s[0] == 'i';
  int64_t n = 0;
  if (!ToInt(s.substr(1), &n) || n < 1 || n > (*sign ? 64 : 63)) return false;
  *bits = static_cast<int>(n);
  return true;
}

// A field's offset: bits, or "#n" for the n-th field of this width; as
// for SETBIT, below 2^32 bits (Redis's 512 MB strings).
bool FieldOffset(std::string_view s, int bits, uint64_t* out) {
  const bool nth = !s.empty() && s[0] == '#';
  int64_t v = 0;
  if (!ToInt(nth ? s.substr(1) : s, &v)) return false;
  if (nth && __builtin_mul_overflow(v, int64_t{bits}, &v)) return false;
  if (v < 0 || (v >> 3) >= (512LL << 20)) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

// The bits [offset, offset + bits) of s, most significant first; past
// the string's end they read 0.
uint64_t FieldBits(const std::string& s, uint64_t offset, int bits) {
  uint64_t v = 0;
  for (int i = 0; i < bits; ++i) {
    const uint64_t bit = offset + static_cast<uint64_t>(i);
    const uint64_t byte = bit >> 3;
    const unsigned b =
        byte < s.size()
            ? (static_cast<unsigned char>(s[byte]) >> (7 - (bit & 7))) & 1u
            : 0u;
    v = (v << 1) | b;
  }
  return v;
}

// Writes the low `bits` of v there (s long enough).
void SetFieldBits(std::string* s, uint64_t offset, int bits, uint64_t v) {
  for (int i = 0; i < bits; ++i) {
    const uint64_t bit = offset + static_cast<uint64_t>(i);
    const unsigned on = (v >> (bits - 1 - i)) & 1u;
    unsigned char& ch = reinterpret_cast<unsigned char&>((*s)[bit >> 3]);
    const unsigned char mask = static_cast<unsigned char>(1u << (7 - (bit & 7)));
    ch = on ? (ch | mask) : (ch & static_cast<unsigned char>(~mask));
  }
}

// The field's value as an integer (signed fields sign-extended).
int64_t FieldValue(uint64_t raw, bool sign, int bits) {
  if (!sign || bits == 64) return static_cast<int64_t>(raw);
  const uint64_t top = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((raw ^ top) - top);
}

// value + incr in a field of this type, by its overflow rule: false
// when it overflows under FAIL (a SET is an increment of 0 on its value,
// an unsigned one read as unsigned: -1 is a huge value). The decision
// is Redis's to the bit, its wrap-around included: the bounds on the
// increment are taken modulo 2^64, so a signed SET of a value far below
// the type's range saturates to its maximum, as in Redis.
bool FieldAdd(const FieldOp& op, int64_t value, int64_t incr, int64_t* out) {
  const uint64_t sum = static_cast<uint64_t>(value) + static_cast<uint64_t>(incr);
  const uint64_t mask =
      op.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << op.bits) - 1;
  bool over = false, under = false;
  int64_t max = 0, min = 0;
  if (op.sign) {
    max = op.bits == 64 ? INT64_MAX : (int64_t{1} << (op.bits - 1)) - 1;
    min = -max - 1;
    const auto max_incr = static_cast<int64_t>(static_cast<uint64_t>(max) -
                                               static_cast<uint64_t>(value));
    const auto min_incr = static_cast<int64_t>(static_cast<uint64_t>(min) -
                                               static_cast<uint64_t>(value));
    over = value > max || (op.bits != 64 && incr > max_incr) ||
           (value >= 0 && incr > 0 && incr > max_incr);
    under = !over && (value < min || (op.bits != 64 && incr < min_incr) ||
                      (value < 0 && incr < 0 && incr < min_incr));
  } else {
    const auto u = static_cast<uint64_t>(value);
    const auto max_incr = static_cast<int64_t>(mask - u);
    const auto min_incr = static_cast<int64_t>(uint64_t{0} - u);
    over = u > mask || (incr > 0 && incr > max_incr);
    under = !over && incr < 0 && incr < min_incr;
    max = static_cast<int64_t>(mask);
  }
  if (!over && !under) {
    *out = static_cast<int64_t>(sum);
    return true;
  }
  switch (op.overflow) {
    case FieldOp::kFail: return false;
    case FieldOp::kSat: *out = over ? max : min; return true;
    case FieldOp::kWrap: break;
  }
  *out = FieldValue(sum & mask, op.sign, op.bits);
  return true;
}

void BitFieldGeneric(const Args& a, CommandContext* c, Reply* r,
                     bool read_only_command) {
  std::vector<FieldOp> ops;
  FieldOp::Overflow overflow = FieldOp::kWrap;
  bool writes = false;
  uint64_t highest = 0;  // the last bit a write reaches
  for (size_t j = 2; j < a.size(); ++j) {
    const size_t left = a.size() - j - 1;
    FieldOp op{};
    if (Eq(a[j], "get") && left >= 2) {
      op.kind = FieldOp::kGet;
    } else if (Eq(a[j], "set") && left >= 3) {
      op.kind = FieldOp::kSet;
    } else if (Eq(a[j], "incrby") && left >= 3) {
      op.kind = FieldOp::kIncrBy;
    } else if (Eq(a[j], "overflow") && left >= 1) {
      ++j;
      if (Eq(a[j], "wrap")) {
        overflow = FieldOp::kWrap;
      } else if (Eq(a[j], "sat")) {
        overflow = FieldOp::kSat;
      } else if (Eq(a[j], "fail")) {
        overflow = FieldOp::kFail;
      } else {
        return r->Error("ERR Invalid OVERFLOW type specified");
      }
      continue;
    } else {
      return r->Error("ERR syntax error");
    }
    if (!FieldType(a[j + 1], &op.sign, &op.bits)) {
      return r->Error("ERR Invalid bitfield type. Use something like i16 u8. "
                      "Note that u64 is not supported but i64 is.");
    }
    if (!FieldOffset(a[j + 2], op.bits, &op.offset)) {
      return r->Error("ERR bit offset is not an integer or out of range");
    }
    if (op.kind != FieldOp::kGet) {
      writes = true;
      highest = std::max(highest, op.offset + static_cast<uint64_t>(op.bits) - 1);
      if (!ToInt(a[j + 3], &op.value)) return NotInt(r);
    }
    op.overflow = overflow;
    ops.push_back(op);
    j += op.kind == FieldOp::kGet ? 2 : 3;
  }
  // (Redis refuses BITFIELD_RO's writes before it looks at the key.)
  if (writes && read_only_command) {
    return r->Error("ERR BITFIELD_RO only supports the GET subcommand");
  }
  Value value;
  const bool found = ReadValue(c, a[1], &value);
  if (found && value.type != ValueType::kString) return WrongType(r);
  std::string& v = value.bytes;
  bool grown = false;
  if (writes) {
    const uint64_t need = (highest >> 3) + 1;
    if (need > c->store->config().max_value) {
      return r->Error("ERR string exceeds maximum allowed size "
                      "(proto-max-bulk-len)");
    }
    // As Redis: the string reaches the last bit written first, even
    // when every write then fails its overflow rule.
    grown = !found || v.size() < need;
    if (v.size() < need) v.resize(need, '\0');
  }
  // Each op's reply (none: a write its overflow rule refused), sent
  // once the string is written.
  std::vector<std::pair<bool, int64_t>> out;
  out.reserve(ops.size());
  size_t changes = 0;
  for (const FieldOp& op : ops) {
    const int64_t old = FieldValue(FieldBits(v, op.offset, op.bits), op.sign,
                                   op.bits);
    if (op.kind == FieldOp::kGet) {
      out.emplace_back(true, old);
      continue;
    }
    int64_t next = 0;
    const bool incr = op.kind == FieldOp::kIncrBy;
    if (!FieldAdd(op, incr ? old : op.value, incr ? op.value : 0, &next)) {
      out.emplace_back(false, 0);
      continue;
    }
    out.emplace_back(true, incr ? next : old);
    SetFieldBits(&v, op.offset, op.bits, static_cast<uint64_t>(next));
    if (grown || next != old) ++changes;
  }
  if (writes && (grown || changes != 0 || value.encoding != kStringRaw)) {
    Status st = c->txn->Write(a[1], ValueType::kString, kStringRaw, v,
                              found ? value.expire_ms : 0);
    if (st != Status::kOk) return StoreError(st, r);
    if (changes != 0) Notify(c, kNotifyString, "setbit", a[1]);
  }
  r->Array(out.size());
  for (const auto& [ok, n] : out) {
    if (ok) {
      r->Int(n);
    } else {
      r->Null();
    }
  }
}

}  // namespace

// BITFIELD key [GET type offset | SET type offset value |
//               INCRBY type offset increment | OVERFLOW WRAP|SAT|FAIL] ...
void BitField(const Args& a, CommandContext* c, Reply* r) {
  BitFieldGeneric(a, c, r, false);
}

// BITFIELD_RO key [GET type offset] ...
void BitFieldRo(const Args& a, CommandContext* c, Reply* r) {
  BitFieldGeneric(a, c, r, true);
}

}  // namespace cmd
}  // namespace shmkv
