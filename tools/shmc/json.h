// The `shmc` tool's JSON values: nlohmann::ordered_json (Debian's
// nlohmann-json3-dev; an object's members keep the order they were set
// in). Every command builds one, then prints it as one line of JSON
// (--json, and each `dump` record) or as indented text for people.
//
// Strings hold bytes, not UTF-8 text: Line() writes every byte >= 0x80 as
// \u00XX (the string decoded as Latin-1 gives the exact bytes back) and
// control bytes escaped, so any byte string prints as valid JSON.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace shmc_tool {

using Json = nlohmann::ordered_json;

// Object member `key` (nullptr if absent or `j` is not an object).
const Json* Find(const Json& j, const std::string& key);
// A scalar as text: strings without quotes, null as "-".
std::string Plain(const Json& j);
// Compact, one line, byte strings as above.
std::string Line(const Json& j);
// Indented "key: value" lines for people.
std::string Text(const Json& j);

// Lower-case hex of arbitrary bytes.
std::string Hex(const void* data, size_t n);

}  // namespace shmc_tool
