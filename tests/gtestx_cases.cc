// Perf tests exercising every gtestx form. Not run by CTest directly: some
// fail on purpose. gtestx_test.cc runs this program with chosen filters and
// flags and checks its exit status and JSON records.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>

#include "gtestx/gtestx.h"

namespace {

std::atomic<uint64_t> sink{0};

PERF_TEST(Forms, Plain) { sink.fetch_add(1, std::memory_order_relaxed); }
PERF_TEST_OPT(Forms, PlainOpt, -1, 40) { sink++; }

class Fix : public ::testing::Test {
 protected:
  void SetUp() override {
    ++setups_;
    // Slow set-up: must not be inside the timed loop.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  void TearDown() override {
    EXPECT_EQ(setups_, 1);
    EXPECT_GT(calls_, 0u);
  }
  int setups_ = 0;
  uint64_t calls_ = 0;
};
PERF_TEST_F(Fix, Body) { ++calls_; }
PERF_TEST_F_OPT(Fix, BodyOpt, -1, 40) { ++calls_; }

class Par : public ::testing::TestWithParam<int> {};
PERF_TEST_P(Par, Body) { sink += static_cast<uint64_t>(GetParam()); }
PERF_TEST_P_OPT(Par, BodyOpt, -1, 40) { ASSERT_GT(GetParam(), 0) << PERF_ABORT; }
INSTANTIATE_TEST_SUITE_P(Vals, Par, ::testing::Values(1, 2));

template <class T>
class Typed : public ::testing::Test {
 protected:
  T value_{};
};
using TypedTypes = ::testing::Types<int, double>;
TYPED_PERF_TEST_CASE(Typed, TypedTypes);
TYPED_PERF_TEST(Typed, Body) { this->value_ += TypeParam(1); }
TYPED_PERF_TEST_OPT(Typed, BodyOpt, -1, 40) {
  static_assert(std::is_same<TestFixture, Typed<TypeParam>>::value,
                "TestFixture names the fixture");
  this->value_ = TypeParam(2);
}

template <class T>
class TypedP : public ::testing::Test {};
TYPED_PERF_TEST_CASE_P(TypedP);
TYPED_PERF_TEST_P(TypedP, Body) { sink += sizeof(TypeParam); }
TYPED_PERF_TEST_P_OPT(TypedP, BodyOpt, -1, 40) { sink++; }
REGISTER_TYPED_PERF_TEST_CASE_P(TypedP, Body, BodyOpt);
using TypedPTypes = ::testing::Types<char, long>;
INSTANTIATE_TYPED_PERF_TEST_CASE_P(My, TypedP, TypedPTypes);

PERF_TEST_OPT(Rate, At2000Hz, 2000, 500) { sink++; }

uint64_t abort_calls = 0;
PERF_TEST_OPT(Abort, Stops, -1, 5000) {
  ASSERT_LT(++abort_calls, 1000u) << PERF_ABORT;
}
uint64_t fatal_calls = 0;
PERF_TEST_OPT(Abort, FatalStopsToo, -1, 5000) {
  ASSERT_LT(++fatal_calls, 1000u);
}

PERF_TEST_OPT(Fail, Expect, 100, 50) { EXPECT_EQ(1, 2); }

}  // namespace
