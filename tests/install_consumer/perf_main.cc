// A perf test built against the installed shmc::gtestx_main (its main()).
#include <gtestx/gtestx.h>
#include <shmc/shm_array.h>

#include <cstdint>

class InstalledArray : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(array_.InitForWrite("", 64)); }
  shmc::ShmArray<uint64_t, shmc::HEAP> array_;
  uint64_t i_ = 0;
};

PERF_TEST_F_OPT(InstalledArray, Write, -1, 50) {
  array_[i_ % 64] = i_;
  ++i_;
}
