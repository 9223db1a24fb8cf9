// Every allocator: SVIPC (default), SVIPC_HugeTLB, POSIX, ANON, HEAP and the
// file-backed MAPFILE. See detail/alloc_base.h for the interface.
#pragma once

#include "shmc/common_utils.h"
#include "shmc/detail/alloc_base.h"
#include "shmc/mapfile_alloc.h"
#include "shmc/mmap_alloc.h"
#include "shmc/posix_shm_alloc.h"
#include "shmc/svipc_shm_alloc.h"
