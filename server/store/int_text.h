// Integers as Redis reads them (its string2ll), for values and arguments
// alike: an optional '-', then digits with no leading zero ("0" alone is
// fine, "-0", "01", "+1", " 1" and "1 " are not), within int64.
#pragma once

#include <cstdint>
#include <string_view>

namespace shmkv {

bool ParseInt64(std::string_view s, int64_t* out);

}  // namespace shmkv
