// HyperLogLog values: the representation, the sparse form's in-place
// changes and the estimator (hll.h).
#include "server/commands/hll.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace shmkv {
namespace cmd {
namespace hll {

namespace {

constexpr size_t kDenseRegBytes = kDenseBytes - kHeader;
constexpr size_t kZeroMax = 64;   // a short zero run's longest
constexpr size_t kValRunMax = 4;  // a value run's longest
// 1 / (2 ln 2): the estimator's constant as the number of registers grows
// without bound (Ertl, "New cardinality estimation algorithms for
// HyperLogLog sketches", 2017).
constexpr double kAlphaInf = 0.721347520444481703680;

// A sparse value's opcodes.
bool IsZeroOp(uint8_t op) { return (op & 0xc0) == 0x00; }
bool IsXZeroOp(uint8_t op) { return (op & 0xc0) == 0x40; }
bool IsValOp(uint8_t op) { return (op & 0x80) != 0; }
size_t ZeroLen(uint8_t op) { return (op & 0x3f) + 1u; }
size_t XZeroLen(uint8_t op, uint8_t next) {
  return ((static_cast<size_t>(op & 0x3f) << 8) | next) + 1;
}
uint8_t ValValue(uint8_t op) {
  return static_cast<uint8_t>(((op >> 2) & 0x1f) + 1);
}
size_t ValLen(uint8_t op) { return (op & 0x3u) + 1; }
uint8_t ValOp(uint8_t value, size_t len) {
  return static_cast<uint8_t>(0x80 | ((value - 1) << 2) | (len - 1));
}
// Appends a zero run of `len` (1..16384) registers.
void PutZeros(uint8_t** out, size_t len) {
  if (len > kZeroMax) {
    size_t l = len - 1;
    *(*out)++ = static_cast<uint8_t>(0x40 | (l >> 8));
    *(*out)++ = static_cast<uint8_t>(l & 0xff);
  } else {
    *(*out)++ = static_cast<uint8_t>(len - 1);
  }
}

// Walks a sparse value's runs: f(first register, run length, value) for
// each (value 0 for a zero run). An extended zero run cut short by the
// value's end reads its missing byte as 0, as Redis reads the string's
// terminator there. Returns the registers covered.
template <class F>
uint64_t WalkRuns(std::string_view v, F f) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  size_t at = kHeader;
  uint64_t idx = 0;
  while (at < v.size()) {
    uint8_t op = p[at];
    size_t len;
    uint8_t value = 0;
    if (IsZeroOp(op)) {
      len = ZeroLen(op);
      at += 1;
    } else if (IsXZeroOp(op)) {
      len = XZeroLen(op, at + 1 < v.size() ? p[at + 1] : 0);
      at += 2;
    } else {
      len = ValLen(op);
      value = ValValue(op);
      at += 1;
    }
    if (!f(idx, len, value)) break;
    idx += len;
  }
  return idx;
}

uint8_t* Regs(std::string* v) {
  return reinterpret_cast<uint8_t*>(&(*v)[kHeader]);
}
const uint8_t* Regs(std::string_view v) {
  return reinterpret_cast<const uint8_t*>(v.data() + kHeader);
}

uint8_t RegGet(const uint8_t* r, size_t i) {
  size_t bit = i * 6;
  size_t b = bit / 8;
  unsigned fb = bit & 7;
  unsigned lo = r[b] >> fb;
  unsigned hi = b + 1 < kDenseRegBytes ? unsigned{r[b + 1]} << (8 - fb) : 0;
  return static_cast<uint8_t>((lo | hi) & 63);
}

void RegSet(uint8_t* r, size_t i, uint8_t value) {
  size_t bit = i * 6;
  size_t b = bit / 8;
  unsigned fb = bit & 7;
  r[b] = static_cast<uint8_t>((r[b] & ~(63u << fb)) | (unsigned{value} << fb));
  if (b + 1 < kDenseRegBytes) {
    r[b + 1] = static_cast<uint8_t>((r[b + 1] & ~(63u >> (8 - fb))) |
                                    (unsigned{value} >> (8 - fb)));
  }
}

int DenseRaise(std::string* v, size_t index, uint8_t value) {
  uint8_t* r = Regs(v);
  if (RegGet(r, index) >= value) return 0;
  RegSet(r, index, value);
  return 1;
}

// Ertl's sigma and tau series, summed until a term no longer changes the
// sum.
double Sigma(double x) {
  if (x == 1.) return INFINITY;
  double y = 1, z = x, before;
  do {
    x *= x;
    before = z;
    z += x * y;
    y += y;
  } while (before != z);
  return z;
}

double Tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double y = 1.0, z = 1 - x, before;
  do {
    x = std::sqrt(x);
    before = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (before != z);
  return z / 3;
}

// The estimate from the histogram of register values.
uint64_t Estimate(const int64_t* histo) {
  const double m = kRegisters;
  double z = m * Tau((m - static_cast<double>(histo[kRest + 1])) / m);
  for (int j = kRest; j >= 1; --j) {
    z += static_cast<double>(histo[j]);
    z *= 0.5;
  }
  z += m * Sigma(static_cast<double>(histo[0]) / m);
  return static_cast<uint64_t>(std::llround(kAlphaInf * m * m / z));
}

// Raise on a sparse value; Redis's steps, so the bytes come out as its.
int SparseRaise(std::string* v, size_t index, uint8_t value,
                size_t sparse_max) {
  if (value > kSparseMaxValue) goto promote;
  {
    std::string& s = *v;
    auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    // The run holding the register: its opcode at p, the one before it
    // at prev (none: the first), its first register and its length.
    size_t p = kHeader, prev = std::string::npos, first = 0, span = 0;
    size_t oplen = 1;
    while (p < s.size()) {
      uint8_t op = at(p);
      oplen = 1;
      if (IsZeroOp(op)) {
        span = ZeroLen(op);
      } else if (IsValOp(op)) {
        span = ValLen(op);
      } else {
        if (p + 1 >= s.size()) return -1;  // cut short
        span = XZeroLen(op, at(p + 1));
        oplen = 2;
      }
      if (index <= first + span - 1) break;
      prev = p;
      p += oplen;
      first += span;
    }
    if (span == 0 || p >= s.size()) return -1;
    const uint8_t op = at(p);
    const bool is_val = IsValOp(op);
    const bool is_zero = IsZeroOp(op);
    if (is_val) {
      if (ValValue(op) >= value) return 0;
      if (span == 1) {
        s[p] = static_cast<char>(ValOp(value, 1));
        goto updated;
      }
    }
    if (is_zero && span == 1) {
      s[p] = static_cast<char>(ValOp(value, 1));
      goto updated;
    }
    {
      // The run split in up to three: before, the register, after.
      uint8_t seq[5];
      uint8_t* out = seq;
      const size_t last = first + span - 1;
      if (!is_val) {
        if (index != first) PutZeros(&out, index - first);
        *out++ = ValOp(value, 1);
        if (index != last) PutZeros(&out, last - index);
      } else {
        const uint8_t cur = ValValue(op);
        if (index != first) *out++ = ValOp(cur, index - first);
        *out++ = ValOp(value, 1);
        if (index != last) *out++ = ValOp(cur, last - index);
      }
      const size_t seqlen = static_cast<size_t>(out - seq);
      if (seqlen > oplen && s.size() + (seqlen - oplen) > sparse_max) {
        goto promote;
      }
      s.replace(p, oplen, reinterpret_cast<const char*>(seq), seqlen);
    }
  updated:
    // Neighbouring value runs of one value merged, over up to five
    // opcodes from the one before the change.
    {
      size_t q = prev != std::string::npos ? prev : kHeader;
      int scan = 5;
      while (q < s.size() && scan-- > 0) {
        uint8_t o = at(q);
        if (IsXZeroOp(o)) {
          q += 2;
          continue;
        }
        if (IsZeroOp(o)) {
          q += 1;
          continue;
        }
        if (q + 1 < s.size() && IsValOp(at(q + 1)) &&
            ValValue(o) == ValValue(at(q + 1))) {
          size_t len = ValLen(o) + ValLen(at(q + 1));
          if (len <= kValRunMax) {
            s[q + 1] = static_cast<char>(ValOp(ValValue(o), len));
            s.erase(q, 1);
            continue;
          }
        }
        q += 1;
      }
    }
    Invalidate(v);
    return 1;
  }
promote:
  if (!ToDense(v)) return -1;
  return DenseRaise(v, index, value);
}

}  // namespace

bool IsHll(std::string_view v) {
  if (v.size() < kHeader || v.substr(0, 4) != "HYLL") return false;
  uint8_t enc = static_cast<uint8_t>(v[4]);
  if (enc > kSparse) return false;
  return enc != kDense || v.size() == kDenseBytes;
}

std::string NewSparse() {
  std::string v(kHeader, '\0');
  std::memcpy(&v[0], "HYLL", 4);
  v[4] = static_cast<char>(kSparse);
  uint8_t ops[2];
  uint8_t* out = ops;
  PutZeros(&out, kRegisters);
  v.append(reinterpret_cast<const char*>(ops), 2);
  return v;
}

uint8_t Encoding(std::string_view v) { return static_cast<uint8_t>(v[4]); }

uint64_t Hash(std::string_view data) {
  const uint64_t m = 0xc6a4a7935bd1e995ULL;
  const int r = 47;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  const size_t len = data.size();
  uint64_t h = 0xadc83b19ULL ^ (static_cast<uint64_t>(len) * m);
  size_t blocks = len / 8;
  for (size_t i = 0; i < blocks; ++i, p += 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; --b) k = (k << 8) | p[b];  // little-endian
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  size_t tail = len & 7;
  if (tail != 0) {
    for (size_t b = tail; b-- > 0;) h ^= static_cast<uint64_t>(p[b]) << (8 * b);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

void Pattern(std::string_view element, size_t* index, uint8_t* value) {
  uint64_t h = Hash(element);
  *index = static_cast<size_t>(h & (kRegisters - 1));
  h >>= kIndexBits;
  h |= uint64_t{1} << kRest;  // so at most kRest + 1
  *value = static_cast<uint8_t>(__builtin_ctzll(h) + 1);
}

int Raise(std::string* v, size_t index, uint8_t value, size_t sparse_max) {
  if (Encoding(*v) == kDense) {
    int changed = DenseRaise(v, index, value);
    if (changed) Invalidate(v);
    return changed;
  }
  return SparseRaise(v, index, value, sparse_max);
}

int Add(std::string* v, std::string_view element, size_t sparse_max) {
  size_t index;
  uint8_t value;
  Pattern(element, &index, &value);
  return Raise(v, index, value, sparse_max);
}

bool ToDense(std::string* v) {
  if (Encoding(*v) == kDense) return true;
  std::string d(kDenseBytes, '\0');
  std::memcpy(&d[0], v->data(), kHeader);
  d[4] = static_cast<char>(kDense);
  uint8_t* r = Regs(&d);
  bool past = false;
  uint64_t covered = WalkRuns(*v, [&](uint64_t idx, size_t len, uint8_t val) {
    if (val == 0) return true;
    past = idx + len > kRegisters;
    if (past) return false;
    for (size_t i = 0; i < len; ++i) RegSet(r, idx + i, val);
    return true;
  });
  if (past || covered != kRegisters) return false;
  *v = std::move(d);
  return true;
}

bool MergeInto(std::string_view v, uint8_t* max) {
  if (Encoding(v) == kDense) {
    const uint8_t* r = Regs(v);
    for (size_t i = 0; i < kRegisters; ++i) {
      uint8_t x = RegGet(r, i);
      if (x > max[i]) max[i] = x;
    }
    return true;
  }
  bool past = false;
  uint64_t covered = WalkRuns(v, [&](uint64_t idx, size_t len, uint8_t val) {
    if (val == 0) return true;
    past = idx + len > kRegisters;
    if (past) return false;
    for (size_t i = 0; i < len; ++i) {
      if (val > max[idx + i]) max[idx + i] = val;
    }
    return true;
  });
  return !past && covered == kRegisters;
}

bool Count(std::string_view v, uint64_t* n) {
  int64_t histo[64] = {};
  if (Encoding(v) == kDense) {
    const uint8_t* r = Regs(v);
    for (size_t i = 0; i < kRegisters; ++i) ++histo[RegGet(r, i)];
  } else {
    // Every run is counted; the total must be the registers.
    uint64_t covered = WalkRuns(v, [&](uint64_t, size_t len, uint8_t val) {
      histo[val] += static_cast<int64_t>(len);
      return true;
    });
    if (covered != kRegisters) return false;
  }
  *n = Estimate(histo);
  return true;
}

uint64_t CountRegisters(const uint8_t* regs) {
  int64_t histo[64] = {};
  for (size_t i = 0; i < kRegisters; ++i) ++histo[regs[i] & 63];
  return Estimate(histo);
}

bool CachedCount(std::string_view v, uint64_t* n) {
  if (static_cast<uint8_t>(v[15]) & 0x80) return false;
  uint64_t c = 0;
  for (int b = 7; b >= 0; --b) c = (c << 8) | static_cast<uint8_t>(v[8 + b]);
  *n = c;
  return true;
}

void SetCachedCount(std::string* v, uint64_t n) {
  for (int b = 0; b < 8; ++b)
    (*v)[8 + b] = static_cast<char>((n >> (8 * b)) & 0xff);
}

void Invalidate(std::string* v) {
  (*v)[15] = static_cast<char>(static_cast<uint8_t>((*v)[15]) | 0x80);
}

uint8_t DenseGet(std::string_view v, size_t index) {
  return RegGet(Regs(v), index);
}

std::string Decode(std::string_view v) {
  std::string out;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  char buf[48];
  for (size_t at = kHeader; at < v.size();) {
    uint8_t op = p[at];
    if (IsZeroOp(op)) {
      std::snprintf(buf, sizeof(buf), "z:%zu ", ZeroLen(op));
      at += 1;
    } else if (IsXZeroOp(op)) {
      std::snprintf(buf, sizeof(buf), "Z:%zu ",
                    XZeroLen(op, at + 1 < v.size() ? p[at + 1] : 0));
      at += 2;
    } else {
      std::snprintf(buf, sizeof(buf), "v:%u,%zu ", unsigned{ValValue(op)},
                    ValLen(op));
      at += 1;
    }
    out += buf;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string SelfTest() {
  char buf[128];
  std::mt19937_64 rng(0x5eed);
  // 1. Registers read back what was written, each of its 6 bits alone.
  {
    std::string d(kDenseBytes, '\0');
    std::vector<uint8_t> want(kRegisters);
    for (int cycle = 0; cycle < 200; ++cycle) {
      for (size_t i = 0; i < kRegisters; ++i) {
        want[i] = static_cast<uint8_t>(rng() & 63);
        RegSet(Regs(&d), i, want[i]);
      }
      for (size_t i = 0; i < kRegisters; ++i) {
        if (RegGet(Regs(&d), i) != want[i]) {
          std::snprintf(buf, sizeof(buf), "TESTFAILED Register error at %zu",
                        i);
          return buf;
        }
      }
    }
  }
  // 2. The sparse form and the dense one hold the same registers after
  // the same elements, and so count the same.
  for (int round = 0; round < 100; ++round) {
    std::string sparse = NewSparse();
    std::string dense = NewSparse();
    ToDense(&dense);
    size_t n = rng() % 200;
    for (size_t j = 0; j < n; ++j) {
      std::string e = std::to_string(rng());
      if (Add(&sparse, e, 1u << 20) < 0 || Add(&dense, e, 1u << 20) < 0) {
        return "TESTFAILED sparse value found corrupt";
      }
    }
    if (Encoding(sparse) != kSparse) {
      return "TESTFAILED sparse encoding not used";
    }
    uint64_t a = 0, b = 0;
    std::string as_dense = sparse;
    if (!Count(sparse, &a) || !Count(dense, &b) || a != b ||
        !ToDense(&as_dense) ||
        as_dense.substr(kHeader) != dense.substr(kHeader)) {
      return "TESTFAILED dense/sparse disagree";
    }
  }
  // 3. The estimate stays within five standard errors (1.04 / sqrt(m))
  // of the true count, up to a million distinct elements.
  {
    std::string d = NewSparse();
    ToDense(&d);
    const double relerr = 1.04 / std::sqrt(static_cast<double>(kRegisters));
    uint64_t check = 10;
    for (uint64_t j = 1; j <= 1000000; ++j) {
      uint64_t x = rng();
      Add(&d, std::string_view(reinterpret_cast<const char*>(&x), 8), 0);
      if (j != check) continue;
      check *= 10;
      uint64_t est = 0;
      Count(d, &est);
      double err = std::fabs(static_cast<double>(est) - static_cast<double>(j));
      if (err > 5 * relerr * static_cast<double>(j) + 1) {
        std::snprintf(buf, sizeof(buf),
                      "TESTFAILED Too big error. card:%" PRIu64 " abserr:%f", j,
                      err);
        return buf;
      }
    }
  }
  return "";
}

}  // namespace hll
}  // namespace cmd
}  // namespace shmkv
