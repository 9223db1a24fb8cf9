// main() for perf test programs: link gtestx_main instead of gtest_main.
#include "gtestx/gtestx.h"

PERF_TEST_MAIN
