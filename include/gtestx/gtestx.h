// gtestx: performance tests on GoogleTest.
//
//   PERF_TEST(Suite, Name) { body }        // like TEST; body runs in a loop
//   PERF_TEST_F(Fixture, Name) { body }    // like TEST_F
//   PERF_TEST_P(Fixture, Name) { body }    // like TEST_P (GetParam() works)
//   TYPED_PERF_TEST(Fixture, Name)         // like TYPED_TEST
//   TYPED_PERF_TEST_P(Fixture, Name)       // like TYPED_TEST_P, with
//   REGISTER_TYPED_PERF_TEST_CASE_P / INSTANTIATE_TYPED_PERF_TEST_CASE_P
//   ..._OPT(..., hz, time_ms)              // per-test rate and duration
//
// By default the body runs flat out for 1500 ms; with a rate (hz > 0) its
// calls are spread evenly over the time. -1 in an _OPT argument means "the
// default". Command-line flags override the _OPT values for every perf test:
//   -hz=N  (--hz=N, -hz N)      calls per second, 0 = flat out
//   -time=MS  (--time=MS)       duration in milliseconds
//   --gtestx_json=FILE          append one JSON line per perf test run
// They are read from /proc/self/cmdline, so they work with any main()
// (gtest_main included); GTESTX_HZ, GTESTX_TIME and GTESTX_JSON in the
// environment are used when the command line has none.
//
// Each perf test prints, as the reference gtestx did:
//        count: 25,369,636
//         time: 1.508939 s
//           HZ: 16,812,897.009090
//         1/HZ: 0.000000059 s
//
// SetUp()/TearDown() run once, outside the timed loop. An ASSERT that fails
// inside the body returns from that call only: stream PERF_ABORT into it to
// end the loop at once (ASSERT_TRUE(ok) << PERF_ABORT). The loop also stops
// by itself after a fatal failure is recorded.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#define GTESTX_VERSION_STRING "2.0.0"

namespace gtestx {

// Base of every perf test: owns the timed loop.
class Perf {
 public:
  virtual ~Perf() = default;
  // The perf test's body, called once per iteration.
  virtual void TestCode() = 0;
  // Runs the loop with these defaults (-1: library default), which the
  // command-line flags override.
  void RunLoop(long opt_hz, long opt_time_ms);
  // Ends the running loop after the current call (see PERF_ABORT).
  void Abort() { stop_ = true; }

 private:
  bool stop_ = false;
};

// Result of the last perf loop run in this process (for tests of gtestx).
struct PerfResult {
  std::string test;      // "Suite.Name" as gtest reports it
  uint64_t count = 0;    // calls made
  double seconds = 0;    // duration of the timed loop
  long hz = 0;           // requested rate, 0 = flat out
  long time_ms = 0;      // requested duration
  bool aborted = false;  // ended by PERF_ABORT or a fatal failure
};
const PerfResult& LastResult();

namespace internal {
// Aborts the perf loop running on this thread, if any; returns true.
bool AbortCurrent();
}  // namespace internal

}  // namespace gtestx

#define PERF_ABORT \
  (::gtestx::internal::AbortCurrent(), "gtestx: perf loop aborted")

#define GTESTX_PERF_CLASS_(suite, name) suite##_##name##_GtestxPerf

// --- PERF_TEST / PERF_TEST_F ----------------------------------------------

// The class between a fixture and gtest's test class: it declares the perf
// body (TestCode); the test class's TestBody runs the loop.
#define GTESTX_DEFINE_PERF_CLASS_(suite, name, fixture)      \
  class GTESTX_PERF_CLASS_(suite, name) : public fixture,   \
                                          public ::gtestx::Perf { \
   protected:                                               \
    void TestCode() override;                               \
  }
#define GTESTX_DEFINE_TYPED_PERF_CLASS_(suite, name)                 \
  template <typename gtestx_T>                                       \
  class GTESTX_PERF_CLASS_(suite, name) : public suite<gtestx_T>,    \
                                          public ::gtestx::Perf {    \
   protected:                                                        \
    typedef suite<gtestx_T> TestFixture;                             \
    typedef gtestx_T TypeParam;                                      \
    void TestCode() override;                                        \
  }

#define GTESTX_PERF_TEST_(suite, name, fixture, fixture_id, hz, time_ms)  \
  GTESTX_DEFINE_PERF_CLASS_(suite, name, fixture);                        \
  GTEST_TEST_(suite, name, GTESTX_PERF_CLASS_(suite, name), fixture_id) { \
    RunLoop(hz, time_ms);                                                 \
  }                                                                       \
  void GTESTX_PERF_CLASS_(suite, name)::TestCode()

#define PERF_TEST_OPT(suite, name, hz, time_ms)                      \
  GTESTX_PERF_TEST_(suite, name, ::testing::Test,                    \
                    ::testing::internal::GetTestTypeId(), hz, time_ms)
#define PERF_TEST(suite, name) PERF_TEST_OPT(suite, name, -1, -1)

#define PERF_TEST_F_OPT(fixture, name, hz, time_ms)                          \
  GTESTX_PERF_TEST_(fixture, name, fixture,                                  \
                    ::testing::internal::GetTypeId<fixture>(), hz, time_ms)
#define PERF_TEST_F(fixture, name) PERF_TEST_F_OPT(fixture, name, -1, -1)

// --- PERF_TEST_P ----------------------------------------------------------
// As TEST_P, registering a test class derived from the perf class.

#define PERF_TEST_P_OPT(suite, name, hz, time_ms)                             \
  GTESTX_DEFINE_PERF_CLASS_(suite, name, suite);                              \
  class GTEST_TEST_CLASS_NAME_(suite, name)                                   \
      : public GTESTX_PERF_CLASS_(suite, name) {                              \
   public:                                                                    \
    void TestBody() override { RunLoop(hz, time_ms); }                            \
                                                                              \
   private:                                                                   \
    static int AddToRegistry() {                                              \
      ::testing::UnitTest::GetInstance()                                      \
          ->parameterized_test_registry()                                     \
          .GetTestSuitePatternHolder<suite>(                                  \
              #suite, ::testing::internal::CodeLocation(__FILE__, __LINE__))  \
          ->AddTestPattern(                                                   \
              #suite, #name,                                                  \
              new ::testing::internal::TestMetaFactory<                       \
                  GTEST_TEST_CLASS_NAME_(suite, name)>(),                     \
              ::testing::internal::CodeLocation(__FILE__, __LINE__));         \
      return 0;                                                               \
    }                                                                         \
    static int gtestx_registered_;                                            \
  };                                                                          \
  int GTEST_TEST_CLASS_NAME_(suite, name)::gtestx_registered_ =               \
      GTEST_TEST_CLASS_NAME_(suite, name)::AddToRegistry();                   \
  void GTESTX_PERF_CLASS_(suite, name)::TestCode()
#define PERF_TEST_P(suite, name) PERF_TEST_P_OPT(suite, name, -1, -1)

// --- TYPED_PERF_TEST ------------------------------------------------------

#define TYPED_PERF_TEST_OPT(suite, name, hz, time_ms)                         \
  GTESTX_DEFINE_TYPED_PERF_CLASS_(suite, name);                               \
  template <typename gtestx_T>                                                \
  class GTEST_TEST_CLASS_NAME_(suite, name)                                   \
      : public GTESTX_PERF_CLASS_(suite, name)<gtestx_T> {                    \
   private:                                                                   \
    void TestBody() override { this->RunLoop(hz, time_ms); }                      \
  };                                                                          \
  static bool gtestx_##suite##_##name##_registered_ GTEST_ATTRIBUTE_UNUSED_ = \
      ::testing::internal::TypeParameterizedTest<                             \
          suite,                                                              \
          ::testing::internal::TemplateSel<GTEST_TEST_CLASS_NAME_(suite,      \
                                                                  name)>,     \
          GTEST_TYPE_PARAMS_(suite)>::                                        \
          Register("", ::testing::internal::CodeLocation(__FILE__, __LINE__), \
                   #suite, #name, 0,                                          \
                   ::testing::internal::GenerateNames<                        \
                       GTEST_NAME_GENERATOR_(suite),                          \
                       GTEST_TYPE_PARAMS_(suite)>());                         \
  template <typename gtestx_T>                                                \
  void GTESTX_PERF_CLASS_(suite, name)<gtestx_T>::TestCode()
#define TYPED_PERF_TEST(suite, name) TYPED_PERF_TEST_OPT(suite, name, -1, -1)
// The empty last argument is GoogleTest's default type-name generator,
// given explicitly: with none, clang -Wpedantic refuses the expansion
// (zero arguments for a variadic macro's `...`).
#define TYPED_PERF_TEST_CASE(suite, types) TYPED_TEST_SUITE(suite, types, )

// --- TYPED_PERF_TEST_P ----------------------------------------------------

#define TYPED_PERF_TEST_P_OPT(suite, name, hz, time_ms)                  \
  namespace GTEST_SUITE_NAMESPACE_(suite) {                              \
    GTESTX_DEFINE_TYPED_PERF_CLASS_(suite, name);                        \
    template <typename gtestx_T>                                         \
    class name : public GTESTX_PERF_CLASS_(suite, name)<gtestx_T> {      \
     private:                                                            \
      void TestBody() override { this->RunLoop(hz, time_ms); }               \
    };                                                                   \
    static bool gtestx_##name##_defined_ GTEST_ATTRIBUTE_UNUSED_ =       \
        GTEST_TYPED_TEST_SUITE_P_STATE_(suite).AddTestName(              \
            __FILE__, __LINE__, #suite, #name);                          \
  }                                                                      \
  template <typename gtestx_T>                                           \
  void GTEST_SUITE_NAMESPACE_(suite)::GTESTX_PERF_CLASS_(                \
      suite, name)<gtestx_T>::TestCode()
#define TYPED_PERF_TEST_P(suite, name) \
  TYPED_PERF_TEST_P_OPT(suite, name, -1, -1)
#define TYPED_PERF_TEST_CASE_P(suite) TYPED_TEST_SUITE_P(suite)
#define REGISTER_TYPED_PERF_TEST_CASE_P(suite, ...) \
  REGISTER_TYPED_TEST_SUITE_P(suite, __VA_ARGS__)
#define INSTANTIATE_TYPED_PERF_TEST_CASE_P(prefix, suite, types) \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, suite, types, )

// A main() for perf test programs (linking gtestx_main does the same).
#define PERF_TEST_MAIN                          \
  int main(int argc, char** argv) {             \
    ::testing::InitGoogleTest(&argc, argv);     \
    return RUN_ALL_TESTS();                     \
  }
