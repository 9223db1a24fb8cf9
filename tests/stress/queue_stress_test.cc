// The full-size stream: 10M records of random length 0..2 KiB from a
// producer process to a consumer process (label stress, ~10 s).
#include <gtest/gtest.h>

#include "tests/support/queue_stream.h"

namespace {
TEST(ShmQueueStress, TenMillionRecordsAcrossProcesses) {
  shmc_test::Stream(10000000);
}
}  // namespace
