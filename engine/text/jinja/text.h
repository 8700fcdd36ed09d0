// Text helpers with Python str semantics over UTF-8 byte strings.
//
// Template strings are UTF-8; Python counts, strips and cases them per code point, so these helpers
// do the same. Bytes that are not valid UTF-8 are treated as one opaque "code point" each and are
// copied through unchanged, so no input can make them fail. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engine::jinja::text {

struct CodePoint {
  char32_t value;  // meaningless when !valid
  size_t length;   // bytes consumed, >= 1
  bool valid;
};

// Decodes the code point starting at byte i (i < s.size()).
CodePoint decode(std::string_view s, size_t i);
void append_utf8(std::string& out, char32_t cp);
size_t count_code_points(std::string_view s);
// Byte offset of every code point, followed by s.size().
std::vector<size_t> code_point_offsets(std::string_view s);

// Python str.isspace() for one code point.
bool is_space(char32_t cp);
// Byte length of the whitespace code point at s[i], or 0 if there is none.
size_t space_length(std::string_view s, size_t i);

// str.strip()/lstrip()/rstrip(): Unicode whitespace, or any code point of `chars` when given.
std::string_view strip_space(std::string_view s, bool left, bool right);
std::string_view strip_chars(std::string_view s, std::string_view chars, bool left, bool right);

// str.split()/rsplit(): without a separator, on runs of whitespace dropping empty parts.
// maxsplit < 0 means no limit. Precondition: sep is not empty.
std::vector<std::string> split_space(std::string_view s, int64_t maxsplit, bool from_right);
std::vector<std::string> split_sep(std::string_view s, std::string_view sep, int64_t maxsplit,
                                   bool from_right);
std::vector<std::string> split_lines(std::string_view s, bool keep_ends);

// str.replace(old, new, count); count < 0 replaces all.
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);

// Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; other scripts are
// copied unchanged (full Unicode tables are out of scope for chat templates).
std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
std::string capitalize(std::string_view s);  // first code point upper, the rest lower
std::string title(std::string_view s);       // str.title()
bool is_upper_cp(char32_t cp);
bool is_lower_cp(char32_t cp);

// repr() of a float and of a str, as Python prints them.
std::string float_repr(double d);
std::string string_repr(std::string_view s);
// The body of a JSON string literal as json.dumps writes it (without the quotes).
void append_json_escaped(std::string& out, std::string_view s, bool ensure_ascii);
std::string html_escape(std::string_view s);

}  // namespace engine::jinja::text
