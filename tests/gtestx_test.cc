// Runs gtestx_cases (perf tests of every form) as a subprocess and checks
// what it did through its exit status and its --gtestx_json records.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#ifndef GTESTX_CASES
#error "GTESTX_CASES must name the gtestx_cases binary"
#endif

namespace {

struct Record {
  std::string test;
  uint64_t count = 0;
  double seconds = 0;
  long target_hz = 0;
  long target_ms = 0;
  bool aborted = false;
};

std::string Field(const std::string& line, const std::string& name) {
  std::string key = "\"" + name + "\":";
  size_t p = line.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  if (line[p] == '"') {
    size_t e = line.find('"', p + 1);
    return line.substr(p + 1, e - p - 1);
  }
  size_t e = line.find_first_of(",}", p);
  return line.substr(p, e - p);
}

struct CasesRun {
  int exit_code = -1;
  std::vector<Record> records;
  std::map<std::string, Record> by_test;
};

// Runs gtestx_cases with `args` (and optional env assignments prefixed).
CasesRun RunCases(const std::string& args, const std::string& env = "") {
  char path[] = "/tmp/gtestx_json_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::string cmd = env + " " GTESTX_CASES " " + args + " --gtestx_json=" +
                    path + " > " + path + ".out 2>&1";
  int status = std::system(cmd.c_str());
  CasesRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    Record r;
    r.test = Field(line, "test");
    r.count = std::strtoull(Field(line, "count").c_str(), nullptr, 10);
    r.seconds = std::atof(Field(line, "seconds").c_str());
    r.target_hz = std::atol(Field(line, "target_hz").c_str());
    r.target_ms = std::atol(Field(line, "target_ms").c_str());
    r.aborted = Field(line, "aborted") == "true";
    run.records.push_back(r);
    run.by_test[r.test] = r;
  }
  std::remove(path);
  std::remove((std::string(path) + ".out").c_str());
  return run;
}

TEST(Gtestx, EveryFormRunsAndTimesOnlyTheBody) {
  CasesRun run = RunCases("--gtest_filter=-Rate.*:Abort.*:Fail.* -time=60");
  EXPECT_EQ(run.exit_code, 0);
  const char* expected[] = {
      "Forms.Plain",          "Forms.PlainOpt",       "Fix.Body",
      "Fix.BodyOpt",          "Vals/Par.Body/0",      "Vals/Par.Body/1",
      "Vals/Par.BodyOpt/0",   "Vals/Par.BodyOpt/1",   "Typed/0.Body",
      "Typed/1.Body",         "Typed/0.BodyOpt",      "Typed/1.BodyOpt",
      "My/TypedP/0.Body",     "My/TypedP/1.Body",     "My/TypedP/0.BodyOpt",
      "My/TypedP/1.BodyOpt"};
  EXPECT_EQ(run.records.size(), sizeof(expected) / sizeof(expected[0]));
  for (const char* name : expected) {
    auto it = run.by_test.find(name);
    ASSERT_NE(it, run.by_test.end()) << name << " did not run";
    EXPECT_GT(it->second.count, 0u) << name;
    EXPECT_EQ(it->second.target_ms, 60) << name << ": -time overrides _OPT";
    EXPECT_FALSE(it->second.aborted) << name;
  }
  // Fix::SetUp sleeps 300 ms; the timed loop (60 ms) must not include it.
  EXPECT_LT(run.by_test["Fix.Body"].seconds, 0.25);
}

TEST(Gtestx, FixedRateSpreadsCallsOverTheTime) {
  CasesRun run = RunCases("--gtest_filter=Rate.At2000Hz");
  EXPECT_EQ(run.exit_code, 0);
  const Record& r = run.by_test["Rate.At2000Hz"];
  EXPECT_EQ(r.target_hz, 2000);
  EXPECT_EQ(r.target_ms, 500);
  EXPECT_GE(r.count, 900u);
  EXPECT_LE(r.count, 1100u);
  // Calls are spread, not bunched: the loop lasts about its duration.
  EXPECT_GT(r.seconds, 0.4);
}

TEST(Gtestx, CommandLineOverridesOpt) {
  CasesRun a = RunCases("--gtest_filter=Rate.At2000Hz -time=100");
  EXPECT_EQ(a.by_test["Rate.At2000Hz"].target_ms, 100);
  EXPECT_NEAR(static_cast<double>(a.by_test["Rate.At2000Hz"].count), 200, 20);
  CasesRun b = RunCases("--gtest_filter=Rate.At2000Hz --hz=1000 --time=100");
  EXPECT_EQ(b.by_test["Rate.At2000Hz"].target_hz, 1000);
  EXPECT_NEAR(static_cast<double>(b.by_test["Rate.At2000Hz"].count), 100, 10);
  CasesRun c = RunCases("--gtest_filter=Rate.At2000Hz -hz 500 -time 100");
  EXPECT_NEAR(static_cast<double>(c.by_test["Rate.At2000Hz"].count), 50, 5);
  CasesRun d = RunCases("--gtest_filter=Forms.Plain", "GTESTX_TIME=30");
  EXPECT_EQ(d.by_test["Forms.Plain"].target_ms, 30);
}

// Runs case `name`, whose 1000th call fails, and checks that the failure
// fails the test and ends its loop there. The count, not the clock, shows
// the 5 s loop stopped: a loop that ran on would count millions of calls.
void ExpectStopsAtTheFailingCall(const std::string& name) {
  CasesRun run = RunCases("--gtest_filter=" + name);
  EXPECT_NE(run.exit_code, 0) << "the failed assertion must fail the test";
  const Record& r = run.by_test[name];
  EXPECT_TRUE(r.aborted);
  EXPECT_EQ(r.count, 1000u) << "stops right after the failing call";
}

TEST(Gtestx, PerfAbortEndsTheLoopAndFailsTheTest) {
  ExpectStopsAtTheFailingCall("Abort.Stops");
}

TEST(Gtestx, FatalFailureAlsoStopsTheLoop) {
  ExpectStopsAtTheFailingCall("Abort.FatalStopsToo");
}

TEST(Gtestx, FailingExpectFailsTheTest) {
  CasesRun run = RunCases("--gtest_filter=Fail.Expect");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_EQ(run.by_test["Fail.Expect"].count, 5u);  // 100 Hz for 50 ms
}

TEST(Gtestx, WorksWithRepeatShuffleAndFilters) {
  CasesRun run = RunCases(
      "--gtest_filter=Forms.*:Typed/* --gtest_repeat=2 --gtest_shuffle "
      "-time=20");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.records.size(), 12u);  // (2 + 4) tests x 2 repetitions
}

TEST(Gtestx, BadFlagValueIsRefused) {
  CasesRun run = RunCases("--gtest_filter=Forms.Plain -time=abc");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(run.records.empty());
}

}  // namespace
