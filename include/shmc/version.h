#pragma once

// shmc's own version.
#define SHMC_VERSION_MAJOR 0
#define SHMC_VERSION_MINOR 1
#define SHMC_VERSION_PATCH 0
#define SHMC_VERSION_STRING "0.1.0"

// The reference's macros: the shm_container API version this library
// implements (v1.0.0), so that `#if SHMC_MAJOR_VERSION >= 1` in programs
// written for it keeps its meaning.
#define SHMC_MAJOR_VERSION 1
#define SHMC_MINOR_VERSION 0
#define SHMC_PATCH_VERSION 0
