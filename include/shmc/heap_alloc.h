// The reference's name for the process-private allocator; see mmap_alloc.h.
#pragma once

#include "shmc/mmap_alloc.h"
