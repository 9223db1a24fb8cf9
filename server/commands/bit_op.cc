// BITOP (server/commands/string_family.cc registers it): the bitwise
// AND, OR, XOR of strings or the NOT of one, stored as a string.
#include <algorithm>
#include <string>
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

}  // namespace cmd
}  // namespace shmkv
