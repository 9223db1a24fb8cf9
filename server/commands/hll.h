// HyperLogLog values (docs/server.md, "HyperLogLog"): string values in
// Redis's own representation, so GET, DUMP, RESTORE and an RDB file carry
// them to and from redis-server unchanged.
//
// A value is a 16-byte header, then its registers:
//   "HYLL"  encoding (0 dense, 1 sparse)  3 unused bytes  8-byte count
//   (little-endian; its top bit set: not known, to be worked out again)
// Dense: 16384 registers of 6 bits, packed from the low bit of each byte
// (12,288 bytes, 12,304 in all). Sparse: runs, each one opcode:
//   00xxxxxx           xxxxxx + 1 registers at 0 (1..64)
//   01xxxxxx yyyyyyyy  xxxxxxyyyyyyyy + 1 registers at 0 (1..16384)
//   1vvvvvxx           xx + 1 registers (1..4) at vvvvv + 1 (1..32)
// An element's register is the low 14 bits of its 64-bit MurmurHash2
// (seed 0xadc83b19); its value one more than the trailing zero bits of
// the other 50 (at most 51).
//
// A sparse value is changed in place as Redis changes it (the run holding
// the register split in up to three, then neighbouring runs of one value
// merged over the next few opcodes), so a sequence of PFADDs leaves the
// very bytes Redis leaves; it turns dense when a register needs more than
// 32 or the value would grow past hll-sparse-max-bytes.
//
// Every value here may be any bytes a client wrote (SETRANGE, APPEND,
// RESTORE): each opcode and length is checked before it is used, and a
// value whose runs do not cover exactly 16384 registers is corrupt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmkv {
namespace cmd {
namespace hll {

constexpr size_t kHeader = 16;
constexpr int kIndexBits = 14;
constexpr size_t kRegisters = size_t{1} << kIndexBits;
constexpr int kRest = 64 - kIndexBits;  // the bits counted for a value
constexpr size_t kDenseBytes = kHeader + kRegisters * 6 / 8;
constexpr uint8_t kDense = 0;
constexpr uint8_t kSparse = 1;
constexpr uint8_t kSparseMaxValue = 32;

// Redis's test of a string as a HyperLogLog: the magic, a known encoding,
// and a dense one's exact length.
bool IsHll(std::string_view v);
// A new value: sparse, every register 0, its count known (0).
std::string NewSparse();
uint8_t Encoding(std::string_view v);

// MurmurHash64A of `data` with Redis's seed.
uint64_t Hash(std::string_view data);
// The register an element goes to and the value it offers.
void Pattern(std::string_view element, size_t* index, uint8_t* value);

// Raises register `index` of the value `v` (an IsHll one) to `value`:
// 1 when it changed, 0 when it held as much already, -1 when the value is
// corrupt (its bytes then as far as they were changed). A sparse value
// may turn dense on the way (see above).
int Raise(std::string* v, size_t index, uint8_t value, size_t sparse_max);
// Adds an element (Raise of its pattern).
int Add(std::string* v, std::string_view element, size_t sparse_max);
// Makes a sparse value dense (a dense one is left): false when corrupt.
bool ToDense(std::string* v);
// Raises each of `max`'s kRegisters registers to the value's: false when
// corrupt.
bool MergeInto(std::string_view v, uint8_t* max);
// The estimated number of distinct elements of a value (false when
// corrupt) / of a whole register array.
bool Count(std::string_view v, uint64_t* n);
uint64_t CountRegisters(const uint8_t* regs);
// The count the header keeps: false when it is marked not known.
bool CachedCount(std::string_view v, uint64_t* n);
void SetCachedCount(std::string* v, uint64_t n);
void Invalidate(std::string* v);
// A dense value's register (no bounds beyond kRegisters needed).
uint8_t DenseGet(std::string_view v, size_t index);
// PFDEBUG DECODE's text of a sparse value's runs (an extended zero run
// cut short by the value's end reads its missing byte as 0, as Redis).
std::string Decode(std::string_view v);
// PFSELFTEST: the registers, the sparse form against the dense one, and
// the estimate's error against known counts. Empty when all hold, else
// the failure, as Redis words its TESTFAILED replies.
std::string SelfTest();

}  // namespace hll
}  // namespace cmd
}  // namespace shmkv
