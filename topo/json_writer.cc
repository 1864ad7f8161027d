#include "topo/json_writer.h"

#include <cstdio>

namespace coll {
namespace topo {

namespace {

// Length of the well-formed UTF-8 sequence starting at text[i] (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when the byte there does not start one.
size_t utf8SequenceLength(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  auto continuation = [&](size_t k, unsigned lo, unsigned hi) { return byte(k) >= lo && byte(k) <= hi; };
  unsigned lead = byte(i);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    unsigned lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
    return continuation(i + 1, lo, hi) && continuation(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    unsigned lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
    return continuation(i + 1, lo, hi) && continuation(i + 2, 0x80, 0xBF) && continuation(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

void appendEscapedAscii(char c, std::string* out) {
  switch (c) {
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    case '\b':
      *out += "\\b";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
    default:
      break;
  }
  if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
    char escaped[8];
    snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    *out += escaped;
  } else {
    *out += c;
  }
}

}  // namespace

std::string jsonQuote(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    size_t length = utf8SequenceLength(text, i);
    if (length == 1) {
      appendEscapedAscii(text[i], &out);
    } else if (length > 1) {
      out.append(text, i, length);
    } else {
      out += "\\ufffd";  // a byte that is not UTF-8: the replacement character
      length = 1;
    }
    i += length;
  }
  out += '"';
  return out;
}

bool JsonWriter::insideInline() const { return !levels_.empty() && levels_.back().layout == Layout::kInline; }

void JsonWriter::separate() {
  if (afterKey_) {  // the value of a member whose key is written
    afterKey_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (!level.empty) out_ += insideInline() ? ", " : ",";
  if (!insideInline()) out_ += "\n" + std::string(2 * levels_.size(), ' ');
  level.empty = false;
}

JsonWriter& JsonWriter::raw(const std::string& token) {
  separate();
  out_ += token;
  return *this;
}

JsonWriter& JsonWriter::open(char bracket, Layout layout) {
  separate();
  out_ += bracket;
  // A block inside an inline container would break the line it promised to stay on.
  levels_.push_back({insideInline() ? Layout::kInline : layout, true});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  if (levels_.empty()) return *this;
  bool wasEmpty = levels_.back().empty;
  bool wasInline = insideInline();
  levels_.pop_back();
  if (!wasEmpty && !wasInline) out_ += "\n" + std::string(2 * levels_.size(), ' ');
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::beginObject(Layout layout) { return open('{', layout); }
JsonWriter& JsonWriter::endObject() { return close('}'); }
JsonWriter& JsonWriter::beginArray(Layout layout) { return open('[', layout); }
JsonWriter& JsonWriter::endArray() { return close(']'); }

JsonWriter& JsonWriter::key(const std::string& name) {
  separate();
  out_ += jsonQuote(name) + ": ";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& text) { return raw(jsonQuote(text)); }
JsonWriter& JsonWriter::value(const char* text) { return text != nullptr ? value(std::string(text)) : null(); }
JsonWriter& JsonWriter::value(bool flag) { return raw(flag ? "true" : "false"); }
JsonWriter& JsonWriter::null() { return raw("null"); }

}  // namespace topo
}  // namespace coll
