// Redis's integer text rule, shared by the store (values INCR reads) and
// the command layer (integer arguments).
#include "server/store/int_text.h"

#include <cstddef>
#include <cstdint>

namespace shmkv {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return false;
  if (s[i] == '0' && s.size() > i + 1) return false;
  if (neg && s[i] == '0') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    // Checked without a division per digit (as resp.cc's lengths are).
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(s[i] - '0'), &v)) {
      return false;
    }
  }
  if (neg) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = v == static_cast<uint64_t>(INT64_MAX) + 1
               ? INT64_MIN : -static_cast<int64_t>(v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

}  // namespace shmkv
