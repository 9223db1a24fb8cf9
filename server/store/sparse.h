// Sparse shared arrays (statistics, latency sketches, the wait board): a
// node larger than a page, filled from its start, whose memory is
// reserved as its used part grows (shmc::ShmArray::Reserve), so a segment
// holds what is used and a full tmpfs is a refusal, never a SIGBUS.
#pragma once

#include <algorithm>
#include <cstddef>

namespace shmkv {

// Makes sure the first `need` units (of `unit` bytes, from byte `offset`)
// of node `index` of `arr` are reserved. `*reserved` is how many this
// process reserved before: it doubles (at least `least`, at most `most`
// units) so a growing user reserves a few times only, and when the
// doubled amount does not fit the exact need is tried. False when the
// system has no room for `need`.
template <class Array>
bool ReserveGrowing(Array* arr, size_t index, size_t offset, size_t unit,
                    size_t need, size_t least, size_t most,
                    size_t* reserved) {
  if (need <= *reserved) return true;
  const size_t want = std::min(most, std::max({need, 2 * *reserved, least}));
  for (size_t n : {want, need}) {
    if (arr->Reserve(index, offset, n * unit)) {
      *reserved = n;
      return true;
    }
  }
  return false;
}

}  // namespace shmkv
