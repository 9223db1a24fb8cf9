// gtestx runtime: flags, the timed loop, and reporting.
#include "gtestx/gtestx.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace gtestx {
namespace {

constexpr long kDefaultTimeMs = 1500;

struct Flags {
  long hz = -1;       // -1: not given
  long time_ms = -1;  // -1: not given
  std::string json_path;
};

bool ParseLong(const std::string& s, long* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

// Reads -hz / -time / --gtestx_json from the process's own command line, so
// the flags work whichever main() the program uses.
Flags LoadFlags() {
  Flags f;
  if (const char* e = std::getenv("GTESTX_HZ")) ParseLong(e, &f.hz);
  if (const char* e = std::getenv("GTESTX_TIME")) ParseLong(e, &f.time_ms);
  if (const char* e = std::getenv("GTESTX_JSON")) f.json_path = e;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) == 0) a.erase(0, 1);  // --x is accepted as -x
    auto take = [&](const char* name, long* out) {
      std::string eq = std::string("-") + name + "=";
      std::string bare = std::string("-") + name;
      bool ok = true;
      if (a.rfind(eq, 0) == 0) {
        ok = ParseLong(a.substr(eq.size()), out);
      } else if (a == bare && i + 1 < args.size()) {
        ok = ParseLong(args[++i], out);
      } else {
        return false;
      }
      if (!ok) {
        std::fprintf(stderr, "gtestx: bad value in '%s' (want a number >= 0)\n",
                     args[i].c_str());
        std::exit(2);
      }
      return true;
    };
    if (take("hz", &f.hz) || take("time", &f.time_ms)) continue;
    const std::string json = "-gtestx_json=";
    if (a.rfind(json, 0) == 0) f.json_path = a.substr(json.size());
  }
  return f;
}

const Flags& GetFlags() {
  static const Flags flags = LoadFlags();
  return flags;
}

thread_local Perf* current_perf = nullptr;
PerfResult last_result;

// Ends the running perf loop at the call that fails fatally, as PERF_ABORT
// does. Without it the loop noticed the failure only at the end of a batch
// sized for about 1 ms of passing calls, and calls that fail (each one
// recording a failure) are far slower: that batch could run for seconds.
class StopOnFatalFailure : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.fatally_failed() && current_perf != nullptr) current_perf->Abort();
  }
};

void InstallStopOnFatalFailure() {
  static bool installed = [] {
    // The listener list owns it.
    ::testing::UnitTest::GetInstance()->listeners().Append(
        new StopOnFatalFailure);
    return true;
  }();
  (void)installed;
}

double NowSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void SleepUntil(double t) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(t);
  ts.tv_nsec = static_cast<long>((t - static_cast<double>(ts.tv_sec)) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
         EINTR) {
  }
}

// 25369636 -> "25,369,636"
std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  int k = static_cast<int>(digits.size());
  for (char c : digits) {
    out += c;
    if (--k > 0 && k % 3 == 0) out += ',';
  }
  return out;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void Report(const PerfResult& r) {
  double hz = r.seconds > 0 ? static_cast<double>(r.count) / r.seconds : 0;
  std::string count = Grouped(r.count);
  std::string whole_hz = Grouped(static_cast<uint64_t>(hz));
  double frac = hz - static_cast<double>(static_cast<uint64_t>(hz));
  char frac_buf[16];
  std::snprintf(frac_buf, sizeof(frac_buf), "%.6f", frac);
  std::printf("      count: %s\n", count.c_str());
  std::printf("       time: %.6f s\n", r.seconds);
  std::printf("         HZ: %s%s\n", whole_hz.c_str(), frac_buf + 1);
  std::printf("       1/HZ: %.9f s\n", hz > 0 ? 1.0 / hz : 0.0);
  std::fflush(stdout);
  const std::string& path = GetFlags().json_path;
  if (path.empty()) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    std::fprintf(stderr, "gtestx: cannot append to %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return;
  }
  std::fprintf(f,
               "{\"test\":\"%s\",\"count\":%" PRIu64 ",\"seconds\":%.9f,"
               "\"hz\":%.6f,\"ns_per_call\":%.3f,\"target_hz\":%ld,"
               "\"target_ms\":%ld,\"aborted\":%s}\n",
               JsonEscape(r.test).c_str(), r.count, r.seconds, hz,
               r.count ? r.seconds * 1e9 / static_cast<double>(r.count) : 0.0,
               r.hz, r.time_ms, r.aborted ? "true" : "false");
  std::fclose(f);
}

}  // namespace

const PerfResult& LastResult() { return last_result; }

namespace internal {
bool AbortCurrent() {
  if (current_perf != nullptr) current_perf->Abort();
  return true;
}
}  // namespace internal

void Perf::RunLoop(long opt_hz, long opt_time_ms) {
  const Flags& flags = GetFlags();
  long hz = flags.hz >= 0 ? flags.hz : (opt_hz >= 0 ? opt_hz : 0);
  long time_ms = flags.time_ms >= 0 ? flags.time_ms
                                    : (opt_time_ms >= 0 ? opt_time_ms
                                                        : kDefaultTimeMs);
  InstallStopOnFatalFailure();
  stop_ = false;
  Perf* outer = current_perf;
  current_perf = this;
  const double duration = static_cast<double>(time_ms) / 1000.0;
  uint64_t count = 0;
  bool fatal = false;
  const double start = NowSeconds();
  double end = start;
  if (hz > 0) {
    // Fixed rate: call i is due at start + i / hz.
    const uint64_t total =
        static_cast<uint64_t>(static_cast<double>(hz) * duration + 0.5);
    const double period = 1.0 / static_cast<double>(hz);
    while (count < total && !stop_) {
      double due = start + static_cast<double>(count) * period;
      if (NowSeconds() < due) SleepUntil(due);
      TestCode();
      ++count;
      if (::testing::Test::HasFatalFailure()) {
        fatal = true;
        break;
      }
    }
    end = NowSeconds();
  } else {
    // Flat out, reading the clock once per batch; batches grow so that a
    // clock read costs well under 1% of the measured time.
    uint64_t batch = 1;
    for (;;) {
      for (uint64_t i = 0; i < batch && !stop_; ++i) {
        TestCode();
        ++count;
      }
      end = NowSeconds();
      if (stop_ || end - start >= duration) break;
      if (::testing::Test::HasFatalFailure()) {
        fatal = true;
        break;
      }
      double per_call = (end - start) / static_cast<double>(count);
      double left = duration - (end - start);
      uint64_t want = per_call > 0 ? static_cast<uint64_t>(
                                         std::min(left, 0.001) / per_call)
                                   : batch * 2;
      batch = want < 1 ? 1 : want;
    }
  }
  current_perf = outer;
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  last_result.test = info ? std::string(info->test_suite_name()) + "." +
                                info->name()
                          : std::string("?");
  last_result.count = count;
  last_result.seconds = end - start;
  last_result.hz = hz;
  last_result.time_ms = time_ms;
  last_result.aborted = stop_ || fatal;
  Report(last_result);
}

}  // namespace gtestx
