// The full-size stream: 10M records of random length 0..2 KiB from a
// producer process to a consumer process, with the single forms and with
// single, batched and zero-copy forms mixed (label stress, ~15 s).
#include <gtest/gtest.h>

#include "tests/support/queue_stream.h"

namespace {
TEST(ShmQueueStress, TenMillionRecordsAcrossProcesses) {
  shmc_test::Stream(10000000);
}
TEST(ShmQueueStress, TenMillionRecordsInMixedForms) {
  shmc_test::Stream(10000000, true);
}
}  // namespace
