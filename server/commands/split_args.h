#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shmkv {

// Splits a line into words as Redis's sdssplitargs does (inline
// commands, a library's shebang): spaces part words, "double quotes"
// take \n \r \t \b \a \xHH and \<char> escapes, 'single quotes' only
// \'; a closing quote must end its word. The words are views into
// *store. False when the quotes do not balance.
bool SplitInline(const char* p, size_t n, std::vector<std::string_view>* args,
                 std::string* store);

}  // namespace shmkv
