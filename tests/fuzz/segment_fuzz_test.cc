// Damaged-segment fuzzer: every container's segment is built, copied, then
// damaged in the ways a stray write, a crash of the file system or a hostile
// local user would (bit flips in the header and anywhere, truncation, zeroed
// ranges, boundary values in words and in the container's own fields, forged
// parameters with a recomputed header checksum). Each damaged copy is then
// attached as a reader (every read call), as a writer (attach, recovery,
// writes) and run through the `shmc` tool's info, check, dump and check
// --fix (the tool's own code, in process).
//
// The bar is that nothing crashes, hangs or trips a sanitizer: any answer
// is fine as long as it is an answer. Each container runs in a forked child
// with a per-input alarm, so a crash or a hang is reported with the input
// that caused it (seed, index and the damage done) and can be replayed:
//
//   SHMC_FUZZ_SEED=S SHMC_FUZZ_ONLY=kind:index segment_fuzz_test
//
// SHMC_FUZZ_INPUTS overrides the number of inputs per container (the
// default-suite binary runs a few hundred; the `stress` one 2,000).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "shmc/detail/segment.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/support/test_util.h"
#include "tools/shmc/inspect.h"
#include "tools/shmc/resolve.h"

#ifndef SHMC_FUZZ_DEFAULT_INPUTS
#define SHMC_FUZZ_DEFAULT_INPUTS 250
#endif
// The long run's tests carry another name, so that both binaries' tests
// can live side by side in one CTest directory.
#ifndef SHMC_FUZZ_SUITE
#define SHMC_FUZZ_SUITE Containers
#endif

namespace {

uint64_t EnvU64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 0) : dflt;
}

// --- what the child shares with the parent: where it is, for a report ----
struct Progress {
  uint64_t index;     // input being run
  uint64_t done;      // inputs finished
  uint64_t read_ok;   // inputs a reader attached
  uint64_t write_ok;  // inputs a writer attached
  uint64_t tool_ok;   // inputs `shmc check` found clean
  char damage[200];   // what was done to it
  char stage[32];     // reader, writer, tool ...
};

Progress* g_progress = nullptr;

void Stage(const char* s) {
  std::snprintf(g_progress->stage, sizeof(g_progress->stage), "%s", s);
}

// The bytes of a POSIX segment, or of one that is to be written back.
bool LoadBytes(const std::string& key, std::vector<char>* out) {
  int fd = shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  struct stat st;
  fstat(fd, &st);
  out->resize(static_cast<size_t>(st.st_size));
  ssize_t n = pread(fd, out->data(), out->size(), 0);
  close(fd);
  return n == static_cast<ssize_t>(out->size());
}

bool StoreBytes(const std::string& key, const std::vector<char>& bytes) {
  int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  return done == bytes.size();
}

// --- damage -----------------------------------------------------------------
class Damager {
 public:
  explicit Damager(uint64_t seed) : rng_(seed) {}

  // Damages `b` (a whole segment) and says how.
  std::string Apply(std::vector<char>* b) {
    size_t size = b->size();
    char what[160];
    switch (rng_() % 7) {
      case 0: {  // bits of the common header
        int n = 1 + static_cast<int>(rng_() % 8);
        for (int i = 0; i < n; ++i) Flip(b, rng_() % std::min<size_t>(512, size));
        std::snprintf(what, sizeof(what), "%d header bit flips", n);
        break;
      }
      case 1: {  // bits anywhere
        int n = 1 + static_cast<int>(rng_() % 32);
        for (int i = 0; i < n; ++i) Flip(b, rng_() % size);
        std::snprintf(what, sizeof(what), "%d bit flips anywhere", n);
        break;
      }
      case 2: {  // truncation (never to 0: that is an empty file, tested
                 // on its own, and every attach waits for it)
        const size_t cuts[] = {1, 7, 8, 100, 511, 512, 513, 1024, size / 2,
                               size - 1, size - 64};
        size_t to = rng_() % 2 ? 1 + rng_() % (size - 1)
                               : cuts[rng_() % (sizeof(cuts) / sizeof(*cuts))];
        if (to == 0 || to >= size) to = size - 1;
        b->resize(to);
        std::snprintf(what, sizeof(what), "truncated %zu -> %zu", size, to);
        break;
      }
      case 3: {  // a zeroed range
        size_t at = rng_() % size;
        size_t len = std::min<size_t>(size - at, 1 + rng_() % 4096);
        std::memset(b->data() + at, 0, len);
        std::snprintf(what, sizeof(what), "zeroed [%zu, %zu)", at, at + len);
        break;
      }
      case 4:    // boundary values in words anywhere
      case 5: {  // ... or in the container's own header fields
        bool own = rng_() % 4 != 0;
        size_t own_end = 1024;  // where the container's header ends
        if (size >= sizeof(sd::SegmentHeader)) {
          uint32_t hs =
              reinterpret_cast<const sd::SegmentHeader*>(b->data())->header_size;
          if (hs > 512 + 8 && hs <= size) own_end = hs;
        }
        int n = 1 + static_cast<int>(rng_() % 4);
        std::string where;
        for (int i = 0; i < n; ++i) {
          size_t lo = 0, hi = size;
          if (own && size > own_end) {
            lo = 512;
            hi = own_end;
          }
          size_t at = (lo + rng_() % (hi - lo)) & ~size_t{3};
          uint64_t v = Boundary(size);
          PutWord(b, at, v, rng_() % 2 ? 8 : 4);
          where += " @" + std::to_string(at);
        }
        std::snprintf(what, sizeof(what), "%d boundary words%s", n,
                      where.substr(0, 100).c_str());
        break;
      }
      default: {  // forged header fields, checksum recomputed
        if (size < sizeof(sd::SegmentHeader)) {
          Flip(b, rng_() % size);
          std::snprintf(what, sizeof(what), "bit flip (short segment)");
          break;
        }
        auto* h = reinterpret_cast<sd::SegmentHeader*>(b->data());
        uint64_t v = Boundary(size);
        uint32_t pc = std::min<uint32_t>(h->param_count, sd::kMaxParams);
        int field = static_cast<int>(rng_() % 6);
        if (field < 3 && pc > 0) {
          uint32_t i = static_cast<uint32_t>(rng_() % pc);
          uint64_t old = h->params[i].value;
          // Near the real value, or a boundary.
          h->params[i].value = rng_() % 2 ? old + (rng_() % 5) - 2 : v;
          std::snprintf(what, sizeof(what), "forged param %s %" PRIu64
                        " -> %" PRIu64, h->params[i].name, old,
                        h->params[i].value);
        } else if (field == 3) {
          h->total_size = rng_() % 2 ? v : h->total_size + (rng_() % 9) - 4;
          std::snprintf(what, sizeof(what), "forged total_size %" PRIu64,
                        h->total_size);
        } else if (field == 4) {
          h->header_size = static_cast<uint32_t>(v);
          std::snprintf(what, sizeof(what), "forged header_size %u",
                        h->header_size);
        } else {
          h->param_count = static_cast<uint32_t>(v);
          std::snprintf(what, sizeof(what), "forged param_count %u",
                        h->param_count);
        }
        h->header_checksum = sd::HeaderChecksum(h);
        break;
      }
    }
    return what;
  }

 private:
  void Flip(std::vector<char>* b, size_t at) {
    (*b)[at] = static_cast<char>((*b)[at] ^ (1 << (rng_() % 8)));
  }
  void PutWord(std::vector<char>* b, size_t at, uint64_t v, size_t width) {
    if (at + width > b->size()) return;
    std::memcpy(b->data() + at, &v, width);  // little-endian: low bytes
  }
  uint64_t Boundary(size_t size) {
    const uint64_t vals[] = {0,
                             1,
                             2,
                             7,
                             8,
                             63,
                             64,
                             0x7f,
                             0xff,
                             0xffff,
                             0x7fffffff,
                             0x80000000,
                             0xfffffff0,
                             0xfffffffe,
                             0xffffffff,
                             0x100000000ULL,
                             0x7fffffffffffffffULL,
                             0x8000000000000000ULL,
                             ~0ULL,
                             ~0ULL - 1,
                             size,
                             size - 1,
                             size + 1,
                             size / 2,
                             size * 2};
    return vals[rng_() % (sizeof(vals) / sizeof(*vals))];
  }
  std::mt19937_64 rng_;
};

// The tool's commands, as `shmc info|check|dump|check --fix` run them.
bool RunTool(const Target& t) {
  shmc_test::ScopedCreateFlags never_create(0);  // as the tool sets it
  shmc_tool::SegName name{shmc_tool::Backend::kPosix, t.base};
  shmc_tool::Container c;
  std::string err;
  Stage("tool resolve");
  if (shmc_tool::Resolve(name, &c, &err) != shmc_tool::kExitOk) return false;
  shmc_tool::Json out;
  Stage("tool info");
  shmc_tool::Info(c, &out, &err);
  Stage("tool check");
  bool clean = shmc_tool::Check(c, false, &out, &err) == shmc_tool::kExitOk;
  Stage("tool dump");
  shmc_tool::DumpOptions opt;
  opt.limit = 2000;
  size_t lines = 0;
  shmc_tool::Dump(c, opt, [&](const shmc_tool::Json&) { ++lines; }, &err);
  return clean;
}

// `shmc check --fix`, on its own copy of the damage.
void RunToolFix(const Target& t) {
  shmc_test::ScopedCreateFlags never_create(0);
  shmc_tool::SegName name{shmc_tool::Backend::kPosix, t.base};
  shmc_tool::Container c;
  std::string err;
  Stage("tool resolve (fix)");
  if (shmc_tool::Resolve(name, &c, &err) != shmc_tool::kExitOk) return;
  shmc_tool::Json out;
  Stage("tool check --fix");
  shmc_tool::Check(c, true, &out, &err);
}

struct Outcome {
  bool ok = true;
  std::string report;
  uint64_t done = 0, read_ok = 0, write_ok = 0, tool_ok = 0;
};

// Runs `inputs` damaged copies of `t` in a child; reports the first crash
// or hang with its input.
Outcome Fuzz(const Target& t, uint64_t seed, uint64_t inputs,
             int64_t only_index) {
  Outcome o;
  // Pristine segments, made by a child that then exits: nothing in them
  // points at a live creator or writer, as after a restart.
  pid_t b = fork();
  if (b == 0) {
    t.build();
    _exit(0);
  }
  int status = 0;
  waitpid(b, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    o.ok = false;
    o.report = t.kind + ": building the pristine segments failed";
    return o;
  }
  std::vector<std::vector<char>> pristine(t.keys.size());
  for (size_t i = 0; i < t.keys.size(); ++i) {
    if (!LoadBytes(t.keys[i], &pristine[i])) {
      o.ok = false;
      o.report = t.kind + ": cannot read " + t.keys[i];
      return o;
    }
  }
  auto* progress = static_cast<Progress*>(
      mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(progress, 0, sizeof(*progress));
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    g_progress = progress;
    bool verbose = EnvU64("SHMC_FUZZ_VERBOSE", 0) != 0;
    shmc::SetLogHandler(shmc::kError, nullptr);  // damage is expected
    for (uint64_t i = 0; i < inputs; ++i) {
      if (only_index >= 0 && i != static_cast<uint64_t>(only_index)) continue;
      Damager d(seed * 1000003 + i);
      size_t which = (seed + i) % t.keys.size();
      std::vector<char> bytes = pristine[which];
      std::string what = d.Apply(&bytes);
      progress->index = i;
      std::snprintf(progress->damage, sizeof(progress->damage), "%s: %s",
                    t.keys[which].c_str(), what.c_str());
      // Each role gets the damaged copy as it was made: a writer's
      // recovery or a repair must not hide the damage from the next one.
      auto restore = [&] {
        for (size_t s = 0; s < t.keys.size(); ++s) {
          if (!StoreBytes(t.keys[s], s == which ? bytes : pristine[s])) {
            _exit(2);
          }
        }
      };
      restore();
      alarm(30);  // a hang ends the child with SIGALRM
      Stage("reader");
      bool read_ok = t.read();
      progress->read_ok += read_ok;
      Stage("tool");
      bool clean = RunTool(t);
      progress->tool_ok += clean;
      if (verbose) {
        std::printf("%s input %" PRIu64 ": %s; reader %s, check %s\n",
                    t.kind.c_str(), i, progress->damage,
                    read_ok ? "attached" : "refused",
                    clean ? "clean" : "found damage");
      }
      restore();
      Stage("writer");
      bool write_ok = t.write();
      progress->write_ok += write_ok;
      if (verbose) {
        std::printf("%s input %" PRIu64 ": writer %s\n", t.kind.c_str(), i,
                    write_ok ? "attached" : "refused");
      }
      Stage("reader after writer");
      t.read();
      restore();
      RunToolFix(t);
      alarm(0);
      ++progress->done;
    }
    _exit(0);
  }
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    o.ok = false;
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s: input %" PRIu64 " (seed %" PRIu64 ") %s in %s: %s "
                  "(replay: SHMC_FUZZ_SEED=%" PRIu64 " SHMC_FUZZ_ONLY=%s:%"
                  PRIu64 ")",
                  t.kind.c_str(), progress->index, seed,
                  WIFSIGNALED(status)
                      ? (WTERMSIG(status) == SIGALRM ? "hung" : "crashed")
                      : "failed",
                  progress->stage, progress->damage, seed, t.kind.c_str(),
                  progress->index);
    o.report = buf;
  }
  o.done = progress->done;
  o.read_ok = progress->read_ok;
  o.write_ok = progress->write_ok;
  o.tool_ok = progress->tool_ok;
  munmap(progress, sizeof(Progress));
  for (const std::string& k : t.keys) shm_unlink(k.c_str());
  if (t.kind == "sorted_array") shm_unlink((t.base + "0").c_str());
  return o;
}

class SegmentFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(SegmentFuzz, DamageIsAnErrorNeverACrash) {
  uint64_t seed = EnvU64("SHMC_FUZZ_SEED", 20261123);
  uint64_t inputs = EnvU64("SHMC_FUZZ_INPUTS", SHMC_FUZZ_DEFAULT_INPUTS);
  int64_t only = -1;
  if (const char* o = std::getenv("SHMC_FUZZ_ONLY")) {
    std::string s = o;
    size_t colon = s.find(':');
    if (s.substr(0, colon) != GetParam()) GTEST_SKIP() << "not selected";
    if (colon != std::string::npos) {
      only = std::strtoll(s.c_str() + colon + 1, nullptr, 10);
    }
  }
  std::string prefix = "/shmc_test_" + std::to_string(getpid()) + "_fuzz_";
  for (const Target& t : Targets(prefix)) {
    if (t.kind != GetParam()) continue;
    Outcome o = Fuzz(t, seed, inputs, only);
    EXPECT_TRUE(o.ok) << o.report;
    std::printf("%s: %" PRIu64 " damaged inputs; reader attached %" PRIu64
                ", writer attached %" PRIu64 ", shmc check clean %" PRIu64
                "\n", t.kind.c_str(), o.done, o.read_ok, o.write_ok,
                o.tool_ok);
    RecordProperty("inputs", static_cast<int>(o.done));
    if (only < 0) {
      EXPECT_EQ(o.done, inputs);
      // A fuzzer whose every input is refused at the door tests nothing
      // past the header: damage must also reach the container's data.
      EXPECT_GE(o.read_ok * 5, inputs) << "too few inputs got past attach";
      EXPECT_GE(o.write_ok * 5, inputs) << "too few inputs got past attach";
      // And the checker must find most of it.
      EXPECT_LT(o.tool_ok, inputs) << "check found no damage at all";
    }
    return;
  }
  FAIL() << "no target " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    SHMC_FUZZ_SUITE, SegmentFuzz,
    ::testing::Values("array", "hash_table", "hash_table_m", "link_table",
                      "hash_map", "extent_map", "queue", "sync_buf", "double_buf",
                      "double_table", "sorted_array", "percentile"),
    [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
